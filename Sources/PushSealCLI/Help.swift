/// A command's `--help` text in the STYLE.md shape: OVERVIEW, USAGE, OPTIONS, EXAMPLES, EXIT CODES.
public struct HelpText: Sendable {
    /// One or two sentences on what the command does.
    public let overview: String
    /// Usage lines, e.g. `push-keys keychain init --keychain DIR`.
    public let usage: [String]
    /// Example command lines, each optionally followed by `  # comment`.
    public let examples: [String]
    /// Exit code lines; tool-specific codes first, then ``ExitCode/commonHelpLines``.
    public let exitCodes: [String]
    /// Free text appended at the end (notes), may be empty.
    public let notes: String

    /// Creates a help text.
    public init(overview: String, usage: [String], examples: [String] = [], exitCodes: [String] = ExitCode.commonHelpLines, notes: String = "") {
        self.overview = overview
        self.usage = usage
        self.examples = examples
        self.exitCodes = exitCodes
        self.notes = notes
    }

    /// Renders the help with `options` (the `--help` and `--json` flags are listed too).
    public func render(options: [OptionSpec]) -> String {
        var out = "OVERVIEW: \(overview)\n\nUSAGE:\n"
        for u in usage { out += "  \(u)\n" }
        let all = options + [.flag("--json", "print exactly one JSON object (errors too)"), .flag("--help", "show this help")]
        out += "\nOPTIONS:\n"
        let left = all.map { $0.takesValue ? "\($0.name) \($0.valueName)" : $0.name }
        let width = min((left.map(\.count).max() ?? 0) + 2, 34)
        for (l, o) in zip(left, all) {
            let pad = l.count < width ? String(repeating: " ", count: width - l.count) : "  "
            out += "  \(l)\(pad)\(o.help)\(o.repeatable ? " (repeatable)" : "")\n"
        }
        if !examples.isEmpty {
            out += "\nEXAMPLES:\n"
            for e in examples { out += "  \(e)\n" }
        }
        out += "\nEXIT CODES:\n"
        for e in exitCodes { out += "  \(e)\n" }
        if !notes.isEmpty { out += "\n\(notes)\n" }
        return out
    }
}
