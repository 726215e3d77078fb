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

/// Reads a command's input file or standard input with clear, sysexits-coded errors.
public enum InputReader {
    /// Reads all of `path` (`-` or `nil` means standard input), at most `limitByteCount` bytes.
    /// - Parameters:
    ///   - path: a file path, `-` or `nil` for standard input.
    ///   - limitByteCount: refuse larger inputs (default 16 MiB).
    /// - Throws: `CLIError` 66 when the file is missing, 77 when unreadable, 74 on I/O errors,
    ///   65 when larger than the limit.
    public static func readAll(_ path: String?, limitByteCount: Int = 16 << 20) throws -> [UInt8] {
        let fd: Int32
        let name = (path == nil || path == "-") ? "standard input" : (path ?? "")
        if path == nil || path == "-" {
            fd = 0
        } else {
            fd = open(name, O_RDONLY | O_CLOEXEC)
            if fd < 0 { throw openError(name, errno: errno) }
        }
        defer { if fd != 0 { close(fd) } }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                let e = errno
                if e == EISDIR { throw CLIError(code: "ioError", "\(name) is a directory", exitCode: .noInput) }
                throw CLIError(code: "ioError", "cannot read \(name): \(String(cString: strerror(e)))", exitCode: .ioError)
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
            if out.count > limitByteCount {
                throw CLIError(code: "inputTooLarge", "\(name) is larger than \(limitByteCount) bytes", exitCode: .dataError)
            }
        }
        return out
    }

    /// Maps an `open(2)` errno to a CLI error for `name`.
    public static func openError(_ name: String, errno e: Int32) -> CLIError {
        switch e {
        case ENOENT, ENOTDIR: CLIError(code: "inputMissing", "no such file: \(name)", exitCode: .noInput)
        case EACCES, EPERM: CLIError(code: "permissionDenied", "permission denied: \(name)", exitCode: .noPermission)
        default: CLIError(code: "ioError", "cannot open \(name): \(String(cString: strerror(e)))", exitCode: .ioError)
        }
    }
}
