/// Process exit codes shared by the PushSeal tools (BSD sysexits, STYLE.md §7).
/// Each tool's `--help` lists the ones it uses, including tool-specific codes.
public struct ExitCode: Hashable, Sendable, CustomStringConvertible {
    /// The numeric process status, 0...255.
    public let rawValue: Int32

    /// Creates an exit code; tools define their own (e.g. `push-open`'s 2 = not invoked).
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// 0: everything asked for was done.
    public static let success = ExitCode(0)
    /// 1: the operation ran but failed (e.g. a keychain OSStatus error); tool-specific.
    public static let failure = ExitCode(1)
    /// 64 `EX_USAGE`: the command line is wrong.
    public static let usage = ExitCode(64)
    /// 65 `EX_DATAERR`: the input data is malformed.
    public static let dataError = ExitCode(65)
    /// 66 `EX_NOINPUT`: an input file or keychain does not exist or cannot be opened.
    public static let noInput = ExitCode(66)
    /// 73 `EX_CANTCREAT`: an output file cannot be created (e.g. it already exists).
    public static let cannotCreate = ExitCode(73)
    /// 74 `EX_IOERR`: an I/O error while reading or writing.
    public static let ioError = ExitCode(74)
    /// 77 `EX_NOPERM`: permission denied, or insecure permissions refused.
    public static let noPermission = ExitCode(77)

    public var description: String { String(rawValue) }

    /// Help-text lines for the common codes, for an `EXIT CODES` section.
    public static let commonHelpLines: [String] = [
        "0   success",
        "64  usage error (unknown option, missing argument, an argument that is not UTF-8)",
        "65  bad input data",
        "66  input file or keychain missing",
        "73  cannot create output (e.g. file exists)",
        "74  I/O error (e.g. writing standard output)",
        "77  permission denied or insecure permissions",
    ]
}
