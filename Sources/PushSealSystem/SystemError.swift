#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call, or a file that breaks the private-file rules of ``FileDescriptor``.
///
/// The reason names the operation, the path and the errno text, never file contents. Callers
/// that word errors their own way (the keychain) read ``code``, ``path``, ``errno``,
/// ``fileMode`` and ``fileOwner``.
public struct SystemError: CodedError {
    /// The stable codes of this domain.
    public typealias Code = ErrorCode<SystemError>
    /// `system`.
    public static let domain = "system"

    /// The stable code.
    public let code: Code
    /// A human explanation: operation, path, errno text.
    public let reason: String
    /// The path the operation was about, or `""`.
    public let path: String
    /// The `errno` of the failed call, or 0 when the failure is a rule (mode, owner, type).
    public let errno: Int32
    /// The failed operation as ``call(_:_:errno:)`` named it (`open`, `create`, `write`,
    /// `fsync`, `rename into`, `lock`, …), or `""` for a rule.
    public let operation: String
    /// For ``Code/insecureMode``: the file's permission bits (e.g. `0o644`).
    public let fileMode: UInt32?
    /// For ``Code/wrongOwner``: the file's owner uid.
    public let fileOwner: UInt32?

    /// Creates an error (`reason` without secrets).
    public init(_ code: Code, _ reason: String, path: String = "", errno: Int32 = 0, operation: String = "",
                fileMode: UInt32? = nil, fileOwner: UInt32? = nil) {
        self.code = code
        self.operation = operation
        self.reason = reason
        self.path = path
        self.errno = errno
        self.fileMode = fileMode
        self.fileOwner = fileOwner
    }

    /// The error for the call `what` on `path` that failed with `e`: `.notFound` (`ENOENT`,
    /// `ENOTDIR`), `.alreadyExists` (`EEXIST`), `.permissionDenied` (`EACCES`, `EPERM`),
    /// `.symbolicLink` (`ELOOP` from `O_NOFOLLOW`), `.isDirectory` (`EISDIR`), else `.io`.
    /// Reason: `cannot WHAT PATH: errno text` (lower case).
    public static func call(_ what: String, _ path: String, errno e: Int32) -> SystemError {
        let code: Code = switch e {
        case ENOENT, ENOTDIR: .notFound
        case EEXIST: .alreadyExists
        case EACCES, EPERM: .permissionDenied
        case ELOOP: .symbolicLink
        case EISDIR: .isDirectory
        default: .io
        }
        return SystemError(code, "cannot \(what) \(path): \(errnoText(e).lowercased())", path: path, errno: e, operation: what)
    }
}

extension ErrorCode<SystemError> {
    /// The path does not exist (`ENOENT`, `ENOTDIR`).
    public static var notFound: Self { Self("notFound") }
    /// An exclusive create found the path taken (`EEXIST`).
    public static var alreadyExists: Self { Self("alreadyExists") }
    /// The system refused access (`EACCES`, `EPERM`).
    public static var permissionDenied: Self { Self("permissionDenied") }
    /// The path is a symbolic link where links are refused (`ELOOP` under `O_NOFOLLOW`, or `lstat`).
    public static var symbolicLink: Self { Self("symbolicLink") }
    /// The path is a directory where a file was needed (`EISDIR`).
    public static var isDirectory: Self { Self("isDirectory") }
    /// A private file is not a regular file (a FIFO, a device, a directory).
    public static var notRegularFile: Self { Self("notRegularFile") }
    /// A private file or directory belongs to another user (see ``SystemError/fileOwner``).
    public static var wrongOwner: Self { Self("wrongOwner") }
    /// A private file or directory is accessible by group or others (see ``SystemError/fileMode``).
    public static var insecureMode: Self { Self("insecureMode") }
    /// A read found more bytes than its limit (or the file grew while it was read).
    public static var tooLarge: Self { Self("tooLarge") }
    /// Any other failed call (see ``SystemError/errno``).
    public static var io: Self { Self("io") }
}

/// `strerror(e)` as a Swift string, e.g. `No space left on device` (as the C library words it).
/// - Parameter e: an `errno` value.
public func errnoText(_ e: Int32) -> String { String(cString: strerror(e)) }

/// ``errnoText(_:)`` of the calling thread's current `errno`.
public func errnoText() -> String { errnoText(errno) }

extension SystemError {
    /// `EPIPE`: a write to a pipe whose reader has gone.
    public static var brokenPipe: Int32 { EPIPE }
}

/// The calling thread's current `errno`.
public var currentErrno: Int32 { errno }
