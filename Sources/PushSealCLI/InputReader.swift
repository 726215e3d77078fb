#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealSystem

/// Reads a command's input file or standard input with clear, sysexits-coded errors.
public enum InputReader {
    /// Reads all of `path` (`-` or `nil` means standard input), at most `limitByteCount` bytes.
    /// - Parameters:
    ///   - path: a file path, `-` or `nil` for standard input.
    ///   - limitByteCount: refuse larger inputs (default 16 MiB).
    /// - Throws: `CLIError` 66 when the file is missing, 77 when unreadable, 74 on I/O errors,
    ///   65 when larger than the limit.
    public static func readAll(_ path: String?, limitByteCount: Int = 16 << 20) throws -> [UInt8] {
        let isStandardInput = path == nil || path == "-"
        let name = isStandardInput ? "standard input" : (path ?? "")
        let file: FileDescriptor
        if isStandardInput {
            file = .standardInput
        } else {
            do {
                file = try FileDescriptor.open(name, .readOnly)
            } catch let e as SystemError {
                throw openError(name, errno: e.errno)
            }
        }
        do {
            return try file.readAll(limit: limitByteCount)
        } catch let e as SystemError {
            if e.code == .tooLarge {
                throw CLIError(code: "inputTooLarge", "\(name) is larger than \(limitByteCount) bytes", exitCode: .dataError)
            }
            if e.code == .isDirectory { throw CLIError(code: "ioError", "\(name) is a directory", exitCode: .noInput) }
            throw CLIError(code: "ioError", "cannot read \(name): \(errnoText(e.errno))", exitCode: .ioError)
        }
    }

    /// Reads a whole private file holding a secret (a key file): a regular file of the user's,
    /// no group or other permission bits, not a symbolic link (PushSealSystem's `PrivateFile`
    /// rules), at most `limitByteCount` bytes. Wipe the returned bytes when done.
    /// - Parameters:
    ///   - path: the file (never standard input: its permissions cannot be checked).
    ///   - limitByteCount: the most bytes accepted.
    ///   - what: the file's role in messages, e.g. `device key file`.
    /// - Throws: `CLIError` 66 `inputMissing`; 77 `insecurePermissions` (hint `chmod 600`) or
    ///   `permissionDenied`; 65 `invalidKey` (not a regular file, a link, too large); 74 `ioError`.
    public static func readPrivateFile(_ path: String, limitByteCount: Int, what: String) throws -> [UInt8] {
        do {
            guard let bytes = try PrivateFile.read(path, maxByteCount: limitByteCount) else {
                throw CLIError(code: "inputMissing", "no such file: \(path)", exitCode: .noInput)
            }
            return bytes
        } catch let e as SystemError {
            switch e.code {
            case .insecureMode, .wrongOwner:
                throw CLIError(code: "insecurePermissions", e.reason, hint: "chmod 600 \(path)", exitCode: .noPermission)
            case .permissionDenied: throw CLIError(code: "permissionDenied", "permission denied: \(path)", exitCode: .noPermission)
            case .tooLarge, .notRegularFile, .symbolicLink:
                throw CLIError(code: "invalidKey", "\(path) is not a \(what): \(e.reason)", exitCode: .dataError)
            default: throw CLIError(code: "ioError", e.reason, exitCode: .ioError)
            }
        }
    }

    /// Maps an `open(2)` errno to a CLI error for `name`.
    public static func openError(_ name: String, errno e: Int32) -> CLIError {
        switch SystemError.call("open", name, errno: e).code {
        case .notFound: CLIError(code: "inputMissing", "no such file: \(name)", exitCode: .noInput)
        case .permissionDenied: CLIError(code: "permissionDenied", "permission denied: \(name)", exitCode: .noPermission)
        default: CLIError(code: "ioError", "cannot open \(name): \(errnoText(e))", exitCode: .ioError)
        }
    }
}
