import PushSealSystem
import PushSealCLI
import PushSealSender

/// Reads lines from a file with a per-line byte limit: an overlong line is reported
/// by its length and its bytes are skipped, never buffered. The limit and the reported length
/// do not count the line ending, `\n` or `\r\n`. Reads 64 KiB at a time and finds newlines
/// with `memchr` (``Memory/firstIndex(of:in:)``).
struct LineReader {
    let input: FileDescriptor
    let maxLineByteCount: Int
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0
    private var eof = false
    private(set) var lineNumber = 0

    init(input: FileDescriptor, maxLineByteCount: Int) {
        self.input = input
        self.maxLineByteCount = maxLineByteCount
    }

    /// The next line (without `\n`, and without a trailing `\r`), or `nil` at the end.
    /// - Throws: `CLIError` 74 on a read error.
    mutating func next() throws -> BatchSealer.Line? {
        var line: [UInt8] = []
        var length = 0
        var lastByte: UInt8 = 0
        // Up to one byte over the limit is kept: it may be the `\r` of a `\r\n` ending.
        var overlong = false
        while true {
            if start == end {
                if eof { break }
                let n: Int
                do {
                    n = try buffer.withUnsafeMutableBytes { try input.read(into: $0) }
                } catch let e as SystemError {
                    throw CLIError(code: "ioError", "cannot read the input: \(errnoText(e.errno))", exitCode: .ioError)
                }
                if n == 0 { eof = true; break }
                start = 0
                end = n
            }
            let (s, e) = (start, end)
            let newline: Int? = buffer.withUnsafeBytes { b -> Int? in
                Memory.firstIndex(of: 0x0A, in: UnsafeRawBufferPointer(rebasing: b[s..<e])).map { s + $0 }
            }
            let stop = newline ?? end
            let piece = stop - start
            length += piece
            if piece > 0 { lastByte = buffer[stop - 1] }
            if !overlong {
                if length > maxLineByteCount + 1 {
                    overlong = true
                    line = []
                } else if line.isEmpty, let newline, newline > start, buffer[newline - 1] != 0x0D {
                    // The whole line is in the buffer (the common case): one exact-size copy.
                    line = Array(buffer[start..<stop])
                } else {
                    line.append(contentsOf: buffer[start..<stop])
                }
            }
            if let newline {
                start = newline + 1
                lineNumber += 1
                return finish(line, length: length, lastByte: lastByte, overlong: overlong)
            }
            start = end
        }
        if length == 0 && line.isEmpty && !overlong { return nil }
        lineNumber += 1
        return finish(line, length: length, lastByte: lastByte, overlong: overlong)
    }

    /// The line without its trailing `\r`; over the limit (measured without the `\r`), a line
    /// with no bytes and its length.
    private func finish(_ line: [UInt8], length: Int, lastByte: UInt8, overlong: Bool) -> BatchSealer.Line {
        let contentLength = length > 0 && lastByte == 0x0D ? length - 1 : length
        if overlong || contentLength > maxLineByteCount {
            return BatchSealer.Line(number: lineNumber, bytes: [], overlongByteCount: contentLength)
        }
        var l = line
        if l.last == 0x0D { l.removeLast() }
        return BatchSealer.Line(number: lineNumber, bytes: l)
    }
}
