import PushSealCLI
import PushSealSystem

/// Reads `\n`-terminated lines (a trailing `\r` dropped) from a file descriptor, 64 KiB at a
/// time; a line over ``maxLineByteCount`` comes back empty with `overlong` set, its bytes skipped.
/// A read interrupted by a signal returns `nil` when `stop()` says so (SIGINT/SIGTERM).
struct InputLines {
    static let maxLineByteCount = 1 << 20
    let file: FileDescriptor
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0
    private var eof = false
    private(set) var lineNumber = 0

    init(file: FileDescriptor) { self.file = file }

    /// The next line, or `nil` at the end of input (or when `stop()` is true after a signal).
    /// - Throws: `CLIError` 74 on a read error.
    mutating func next(stop: () -> Bool) throws -> (bytes: [UInt8], overlong: Bool)? {
        var line: [UInt8] = []
        var overlong = false
        var any = false
        while true {
            if start == end {
                if stop() { return nil } // a partial line was not read in full: it is not sent
                if eof { break }
                let read: Int?
                do {
                    read = try buffer.withUnsafeMutableBytes { try file.readUnlessInterrupted(into: $0) }
                } catch let e as SystemError {
                    throw CLIError(code: "ioError", "cannot read the input: \(Output.errorText(e.errno))", exitCode: .ioError)
                }
                guard let n = read else { continue } // a signal: look at stop() again
                if n == 0 { eof = true; break }
                start = 0
                end = n
            }
            any = true
            let (from, to) = (start, end)
            let newline = buffer.withUnsafeBytes { raw in
                Memory.firstIndex(of: 0x0A, in: UnsafeRawBufferPointer(rebasing: raw[from..<to])).map { from + $0 }
            }
            let stopAt = newline ?? end
            if !overlong {
                if line.count + (stopAt - start) > Self.maxLineByteCount + 1 {
                    overlong = true
                    line = []
                } else {
                    line.append(contentsOf: buffer[start..<stopAt])
                }
            }
            if let newline {
                start = newline + 1
                lineNumber += 1
                if line.last == 0x0D { line.removeLast() }
                return (line, overlong)
            }
            start = end
        }
        guard any && (!line.isEmpty || overlong) else { return nil }
        lineNumber += 1
        if line.last == 0x0D { line.removeLast() }
        return (line, overlong)
    }
}
