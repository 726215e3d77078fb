public import PushSealJSON
import PushSealSystem

/// An error a command reports to its user: one line on stderr as `TOOL: error: MESSAGE`
/// (lower case, no full stop), an optional `hint: …` line, and an exit code. With `--json`
/// it becomes `{"error": {"code": CODE, "message": MESSAGE}}` on stdout.
public struct CLIError: Error, Sendable, CustomStringConvertible {
    /// A stable machine-readable code, e.g. `usage`, `keychainMissing`, `errSecItemNotFound`.
    public let code: String
    /// The human message: lower case, no full stop, no secrets.
    public let message: String
    /// An optional hint, e.g. the corrected command.
    public let hint: String?
    /// The process exit code.
    public let exitCode: ExitCode
    /// Extra members for the `--json` error object (e.g. `osStatus`).
    public let details: [(key: String, value: String)]
    /// Extra typed members for the `--json` error object, after ``details`` (e.g. `osStatus`
    /// as an integer: `"osStatus": -25308`).
    public var jsonDetails: [(key: String, value: JSONValue)] = []
    /// `true` when the error is reported by its exit code alone, with no line on stderr (a
    /// reader that closed standard output: see ``standardOutputFailed(errno:)``).
    public var isSilent = false
    /// `false` for an error that `--json` does not turn into a JSON object on stdout, because
    /// the output already says it (`push-seal batch`'s summary of failed lines, each of which
    /// has its error line): it is reported on stderr only.
    public var reportsInJSON = true

    /// Creates an error.
    /// - Parameters:
    ///   - code: stable code for `--json`.
    ///   - message: lower case, no full stop.
    ///   - hint: optional `hint:` line.
    ///   - exitCode: the process status.
    ///   - details: extra string members for the JSON error object.
    public init(code: String, _ message: String, hint: String? = nil, exitCode: ExitCode, details: [(key: String, value: String)] = []) {
        self.code = code
        self.message = message
        self.hint = hint
        self.exitCode = exitCode
        self.details = details
    }

    /// A usage error (exit 64).
    public static func usage(_ message: String, hint: String? = nil) -> CLIError {
        CLIError(code: "usage", message, hint: hint, exitCode: .usage)
    }

    /// Bad input data (exit 65).
    public static func dataError(_ message: String, hint: String? = nil) -> CLIError {
        CLIError(code: "badInput", message, hint: hint, exitCode: .dataError)
    }

    /// A write to standard output failed (exit 74, code `ioError`):
    /// `cannot write to standard output: STRERROR`. For `EPIPE` (the reader closed the pipe, as
    /// `head` does once it has its lines) the error is silent: the reader chose to stop, so only
    /// the exit code says that the output was cut short.
    /// - Parameter e: the `errno` of the failed `write(2)`.
    public static func standardOutputFailed(errno e: Int32) -> CLIError {
        var error = CLIError(code: "ioError", "cannot write to standard output: \(Output.errorText(e))", exitCode: .ioError)
        error.isSilent = e == SystemError.brokenPipe
        return error
    }

    public var description: String { message }
}
