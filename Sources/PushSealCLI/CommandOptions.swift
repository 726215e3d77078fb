/// A command's options as typed values: parsed from ``Arguments`` (each value's own type and
/// form), then checked as a whole by ``validate()`` before the command runs.
///
/// Parsing reads one value at a time through the option's declaration, `try arguments[option]`
/// (``Option``: the same declaration the command's `options` list gives `--help`; an integer that
/// is not an integer, a missing required option: `CLIError` 64); ``validate()`` holds the rules that relate options to each other
/// (`--app-group` cannot be combined with `--entitlements`) and the naming rules of values.
/// Neither opens a file or a keychain, so every usage error comes before any effect.
public protocol CommandOptions: Sendable {
    /// Reads the options from `arguments`.
    /// - Throws: `CLIError` (64, usage) for a missing required option or a malformed value.
    init(parsing arguments: Arguments) throws
    /// Checks the options together, before ``OptionsCommand/run(_:_:)``.
    /// - Throws: `CLIError` (usually 64, usage) naming the option that is wrong.
    func validate() throws
}

extension CommandOptions {
    /// Nothing to check beyond what parsing checked.
    public func validate() throws {}
}

/// A command whose `run` receives its options parsed into ``Options`` and validated.
///
/// `run(_ context:)` of ``Command`` is implemented here: parse, ``CommandOptions/validate()``,
/// then ``run(_:_:)``. A command never re-reads ``CommandContext/arguments`` for its options.
public protocol OptionsCommand: Command {
    /// The command's typed options.
    associatedtype Options: CommandOptions
    /// Runs the command with options that parsed and validated; returns the exit code.
    func run(_ options: Options, _ context: CommandContext) throws -> ExitCode
}

extension OptionsCommand {
    /// Parses ``Options``, validates them, then runs ``run(_:_:)``.
    public func run(_ context: CommandContext) throws -> ExitCode {
        let options = try Options(parsing: context.arguments)
        try options.validate()
        return try run(options, context)
    }
}

/// A command's positional arguments: at most `max` of them, else a usage error.
public struct Positionals: Sendable {
    /// The positionals in order.
    public let values: [String]
    /// The first one, if any.
    public var first: String? { values.first }

    /// Reads the positionals of `arguments`.
    /// - Throws: `CLIError` (64) `unexpected argument 'X'` beyond `max`.
    public init(_ arguments: Arguments, max: Int) throws {
        try arguments.expectPositionals(max: max)
        values = arguments.positionals
    }
}
