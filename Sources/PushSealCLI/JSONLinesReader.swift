public import PushSealSystem

/// The CLI kit's one JSON Lines reader (`push-seal batch`'s input, `push-send`'s input and its
/// `--resume` file). Reads lines from a file with a per-line byte limit: an overlong line is reported
/// by its length and its bytes are skipped, never buffered. The limit and the reported length
/// do not count the line ending, `\n` or `\r\n`. Reads 64 KiB at a time and finds newlines
/// with `memchr` (``Memory/firstIndex(of:in:)``).
///
/// It never blocks unasked: ``next(_:)`` answers ``Next/notReady`` when the next line would
/// need a read that has no data yet (a quiet pipe) and the caller did not ask to wait, or its
/// wake-up pipe was woken first, so a caller can seal and write what it has. A stop request (``StopSignals``) is honoured before each read:
/// the complete lines already read still come out, a partial line is dropped.
public struct JSONLinesReader {
    /// One line read.
    public struct Line: Sendable {
        /// 1-based line number in the input (counting blank and overlong lines).
        public var number: Int
        /// The line's bytes without the newline and a trailing `\r` (empty when it was too long).
        public var bytes: [UInt8]
        /// When the line was longer than the reader's limit: its length in bytes; its bytes were dropped.
        public var overlongByteCount: Int?
    }

    /// How ``next(_:)`` may wait for input.
    public enum Waiting: Sendable {
        /// Block until input arrives (or a stop).
        case block
        /// Never wait: answer ``Next/notReady`` when no input is ready now.
        case never
        /// Wait for input until `pipe` is woken (then ``Next/notReady``); the caller drains it.
        case untilWoken(WakeUpPipe)
    }

    /// What ``next(_:)`` found.
    public enum Next: Sendable {
        /// The next line.
        case line(Line)
        /// The end of the input.
        case end
        /// The next line needs input that is not there yet (not when blocking).
        case notReady
        /// SIGINT or SIGTERM arrived; no more input is read (a partial line is not returned).
        case stopped
    }

    /// The file read.
    public let input: FileDescriptor
    /// The longest line returned, in bytes (without its line ending).
    public let maxLineByteCount: Int
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var end = 0
    private var eof = false
    /// The number of the last complete line returned (the first line is `firstLineNumber`).
    public private(set) var lineNumber: Int
    // The line being read, kept across a ``Next/notReady``: its bytes so far, its length
    // (counting skipped bytes of an overlong line), its last byte, and whether it is overlong.
    private var line: [UInt8] = []
    private var length = 0
    private var lastByte: UInt8 = 0
    private var overlong = false

    /// A reader of `input` (read from where it is).
    /// - Parameters:
    ///   - maxLineByteCount: the longest line returned; longer ones come back empty with their length.
    ///   - firstLineNumber: the number of the first line (`--first-line`, default 1).
    public init(input: FileDescriptor, maxLineByteCount: Int, firstLineNumber: Int = 1) {
        self.input = input
        self.maxLineByteCount = maxLineByteCount
        self.lineNumber = firstLineNumber - 1
    }

    /// The next line (without `\n`, and without a trailing `\r`), the end, or why there is none.
    /// - Parameter waiting: whether to wait when no input is ready (a read that would block
    ///   is never made otherwise).
    /// - Throws: `CLIError` 74 on a read error.
    public mutating func next(_ waiting: Waiting) throws -> Next {
        while true {
            if start == end {
                if eof { break }
                if StopSignals.isRequested { return .stopped }
                let n: Int
                do {
                    if try !input.isReadable(timeoutMilliseconds: 0) {
                        switch waiting {
                        case .never: return .notReady
                        case .block:
                            switch try StopSignals.wait(for: input) {
                            case .stopped: return .stopped
                            case .readable, .woken: break
                            }
                        case .untilWoken(let wake):
                            switch try StopSignals.wait(for: input, wake: wake) {
                            case .stopped: return .stopped
                            case .woken: return .notReady
                            case .readable: break
                            }
                        }
                    }
                    n = try buffer.withUnsafeMutableBytes { try input.read(into: $0) }
                } catch let e as SystemError {
                    throw CLIError(code: "ioError", "cannot read the input: \(errnoText(e.errno))", exitCode: .ioError)
                }
                if n == 0 { eof = true; break }
                start = 0
                end = n
            }
            let (s, e) = (start, end)
            let newline = Memory.firstIndex(of: 0x0A, in: buffer, s..<e)
            let stop = newline ?? end
            let piece = stop - start
            length += piece
            if piece > 0 { lastByte = buffer[stop - 1] }
            // Up to one byte over the limit is kept: it may be the `\r` of a `\r\n` ending.
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
                return .line(finish())
            }
            start = end
        }
        if length == 0 && line.isEmpty && !overlong { return .end }
        return .line(finish())
    }

    /// The line read so far, numbered, without its trailing `\r`; over the limit (measured
    /// without the `\r`), a line with no bytes and its length. Resets the line state.
    private mutating func finish() -> Line {
        lineNumber += 1
        let contentLength = length > 0 && lastByte == 0x0D ? length - 1 : length
        var l: [UInt8] = []
        swap(&l, &line)
        let wasOverlong = overlong
        (length, lastByte, overlong) = (0, 0, false)
        if wasOverlong || contentLength > maxLineByteCount {
            return Line(number: lineNumber, bytes: [], overlongByteCount: contentLength)
        }
        if l.last == 0x0D { l.removeLast() }
        return Line(number: lineNumber, bytes: l, overlongByteCount: nil)
    }
}
