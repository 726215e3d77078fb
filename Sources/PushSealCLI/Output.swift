#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `write(2)` under a name `Output`'s own methods do not shadow.
private func systemWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int { write(fd, p, n) }

/// Writing to stdout and stderr without buffering surprises, and small helpers for output.
public enum Output {
    /// Writes `text` to standard output (data only).
    public static func stdout(_ text: String) { write(text, fd: 1) }

    /// Writes `text` to standard error (diagnostics).
    public static func stderr(_ text: String) { write(text, fd: 2) }

    /// Writes raw bytes to standard output.
    public static func stdout(bytes: [UInt8]) {
        bytes.withUnsafeBytes { writeAll($0, fd: 1) }
    }

    private static func write(_ text: String, fd: Int32) {
        var t = text
        t.withUTF8 { writeAll(UnsafeRawBufferPointer($0), fd: fd) }
    }

    private static func writeAll(_ buffer: UnsafeRawBufferPointer, fd: Int32) {
        guard var p = buffer.baseAddress else { return }
        var left = buffer.count
        while left > 0 {
            let n = systemWrite(fd, p, left)
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            p += n
            left -= n
        }
    }

    /// `true` when file descriptor `fd` is a terminal (e.g. 1 for stdout).
    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// A JSON string literal for `s` (quotes, backslashes and control characters escaped;
    /// everything else raw UTF-8; never `\/`).
    public static func jsonString(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
