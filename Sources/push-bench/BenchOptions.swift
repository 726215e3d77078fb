import PushSealCLI

/// push-bench's options, each declared once (PushSealCLI's `Option`) and parsed by the CLI kit's
/// `Arguments`, as the other tools' are: the main run's and `push-bench media`'s. Its help stays
/// the hand-written `usage` text of main.swift (push-bench is not a `Tool`).
enum BenchOptions {
    /// `--quick`: fewer iterations.
    static let quick = Option.flag("--quick", "fewer iterations for a fast look")
    /// `--self-test`: the smallest settings.
    static let selfTest = Option.flag("--self-test", "the smallest settings")
    /// `--markdown`: only the Markdown report.
    static let markdown = Option.flag("--markdown", "print only the Markdown report")
    /// `--batch-lines N`: lines per batch run (checked by ``batchLines(_:)``).
    static let batchLines = Option.text("--batch-lines", "N", "lines per batch run")
    /// `--section NAME`, repeatable: time only these sections.
    static let section = Option.repeated("--section", "NAME", "time only this section's rows")
    /// `--version`.
    static let version = Option.flag("--version", "print the version")
    /// The main run's options.
    static let main = OptionSpec.list(quick, selfTest, markdown, batchLines, section, version)

    /// `push-bench media --key BASE64`: the media key of a sealed download.
    static let key = Option.text("--key", "BASE64", "the media key")
    /// `push-bench media --sha256 HEX`: the digest the download must match.
    static let sha256 = Option.text("--sha256", "HEX", "the media's SHA-256")
    /// The options of `push-bench media`.
    static let media = OptionSpec.list(key, sha256)

    /// Parses `argv` against `specs`, refusing `--json` (push-bench prints no JSON object) and
    /// more than `positionals` positional arguments.
    /// - Returns: the arguments, or `nil` after writing `push-bench: error: …` and a `hint:`
    ///   line (`hint` unless the kit's error has its own) to standard error: exit 64.
    static func parse(_ argv: [String], _ specs: [OptionSpec], positionals: Int, hint: String) -> Arguments? {
        do {
            let a = try Arguments(argv, specs: specs)
            if a[Arguments.jsonFlag] { throw CLIError.usage("unknown option \(Arguments.jsonFlag.name)") }
            try a.expectPositionals(max: positionals)
            return a
        } catch let e as CLIError {
            writeStandardError("push-bench: error: \(e.message)\nhint: \(e.hint ?? hint)\n")
        } catch {
            writeStandardError("push-bench: error: \(error)\n")
        }
        return nil
    }
}
