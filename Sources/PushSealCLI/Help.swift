/// A command's `--help` text in the STYLE.md shape: OVERVIEW, USAGE, OPTIONS, EXAMPLES, EXIT CODES.
///
/// Rendering wraps prose at ``HelpText/wrapColumn`` columns with a hanging indent: the OVERVIEW,
/// option descriptions, exit-code lines and the notes. USAGE and EXAMPLES lines are printed as
/// written, so they can be copied whole.
public struct HelpText: Sendable {
    /// The column prose is wrapped at (95): no wrapped line is longer unless one word is.
    public static let wrapColumn = 95

    /// One or two sentences on what the command does (one paragraph; reflowed when rendered).
    public let overview: String
    /// Usage lines, e.g. `push-keys keychain init --keychain DIR`; never wrapped.
    public let usage: [String]
    /// Example command lines, each optionally followed by `  # comment`; never wrapped.
    public let examples: [String]
    /// Exit code lines (`"65  bad input data …"`): exactly the codes this command can exit with.
    public let exitCodes: [String]
    /// Free text appended at the end (notes), may be empty. Each line is a paragraph: a line
    /// longer than ``wrapColumn`` is wrapped with a hanging indent (aligned after a leading
    /// `LABEL: ` such as `IDENTITY: `, else two spaces); shorter lines are kept as written.
    public let notes: String
    /// The description of the implicit `--json` flag, when the default ("print exactly one JSON
    /// object (errors too)") does not fit the command.
    public let jsonHelp: String?

    /// Creates a help text.
    public init(overview: String, usage: [String], examples: [String] = [], exitCodes: [String] = ExitCode.commonHelpLines,
                notes: String = "", jsonHelp: String? = nil) {
        self.overview = overview
        self.usage = usage
        self.examples = examples
        self.exitCodes = exitCodes
        self.notes = notes
        self.jsonHelp = jsonHelp
    }

    /// Renders the help with `options` (the `--help` and `--json` flags are listed too), each
    /// described by its ``OptionSpec/helpLine``.
    public func render(options: [OptionSpec]) -> String {
        var out = HelpText.wrap(overview, firstPrefix: "OVERVIEW: ", indent: 10) + "\n\nUSAGE:\n"
        for u in usage { out += "  \(u)\n" }
        let json = Arguments.jsonFlag.withHelp(jsonHelp ?? "print exactly one JSON object (errors too)")
        let all = options + [json.spec, Arguments.helpFlag.spec]
        out += "\nOPTIONS:\n"
        let left = all.map { $0.takesValue ? "\($0.name) \($0.valueName)" : $0.name }
        let width = min((left.map(\.count).max() ?? 0) + 2, 34)
        for (l, o) in zip(left, all) {
            let pad = l.count < width ? String(repeating: " ", count: width - l.count) : "  "
            let text = o.helpLine
            out += HelpText.wrap(text, firstPrefix: "  \(l)\(pad)", indent: 2 + width) + "\n"
        }
        if !examples.isEmpty {
            out += "\nEXAMPLES:\n"
            for e in examples { out += "  \(e)\n" }
        }
        out += "\nEXIT CODES:\n"
        for e in exitCodes {
            // "65  text": continuation lines align with the text after the code column.
            let code = e.prefix { $0.isNumber }
            let codeColumn = code.isEmpty ? e.prefix { $0 == " " }.count : e.prefix { $0.isNumber || $0 == " " }.count
            out += HelpText.wrap(String(e.dropFirst(codeColumn)), firstPrefix: "  " + e.prefix(codeColumn), indent: 2 + codeColumn) + "\n"
        }
        if !notes.isEmpty {
            out += "\n"
            for line in notes.split(separator: "\n", omittingEmptySubsequences: false) {
                out += HelpText.wrapNote(String(line)) + "\n"
            }
        }
        return out
    }

    /// Wraps `text` at spaces so that no line is longer than `width` columns (a longer word
    /// stays whole on its own line). The first line starts with `firstPrefix`, the following
    /// ones with `indent` spaces. Runs of whitespace, newlines included, become one space.
    /// - Returns: the lines joined by `\n`, without a trailing newline.
    public static func wrap(_ text: String, firstPrefix: String, indent: Int, width: Int = wrapColumn) -> String {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
        var lines: [String] = []
        var line = firstPrefix
        var lineHasWord = false
        let hanging = String(repeating: " ", count: indent)
        for word in words {
            if lineHasWord && line.count + 1 + word.count > width {
                lines.append(line)
                line = hanging + word
            } else {
                line += (lineHasWord ? " " : "") + word
            }
            lineHasWord = true
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }

    /// One line of notes: kept as written when it fits, else wrapped with a hanging indent after
    /// its leading spaces and a leading upper-case `LABEL: ` (e.g. `IDENTITY: `), if any.
    static func wrapNote(_ line: String) -> String {
        guard line.count > wrapColumn else { return line }
        let leading = line.prefix { $0 == " " }
        let rest = line.dropFirst(leading.count)
        var prefix = String(leading)
        var body = Substring(rest)
        if let space = rest.firstIndex(of: " "), rest[rest.startIndex..<space].hasSuffix(":"),
           rest.prefix(2).allSatisfy({ $0.isUppercase }) {
            prefix += rest[rest.startIndex...space]
            body = rest[rest.index(after: space)...]
        }
        let indent = prefix.count == leading.count ? leading.count + 2 : prefix.count
        return wrap(String(body), firstPrefix: prefix, indent: indent)
    }
}

extension OptionSpec {
    /// A duration option (value `DURATION`): `--help` appends the accepted forms, so every
    /// duration option says the same; `default` (seconds) is what ``Arguments/duration(_:)``
    /// returns when it is absent, shown as ``durationText(_:)``.
    public static func duration(_ name: String, _ help: String, default: Int64? = nil) -> OptionSpec {
        OptionSpec(name: name, kind: .duration, valueName: "DURATION", help: help, defaultValue: `default`.map(durationText))
    }

    /// The description `--help` gives: the declared help, then in parentheses the range and the
    /// default (`1 to 16; default 1`), then for a duration the accepted forms, then
    /// ` (repeatable)` for a repeatable option whose help does not say so.
    public var helpLine: String {
        var text = help
        var facts: [String] = []
        if let range { facts.append("\(range.lowerBound) to \(range.upperBound)") }
        if let defaultValue { facts.append("default \(defaultValue)") }
        if !facts.isEmpty { text += " (\(facts.joined(separator: "; ")))" }
        if kind == .duration { text += "; seconds, or a number with a unit s, m, h, d or w (90m, 12h, 30d, 2w)" }
        if repeatable && !help.contains("repeat") { text += " (repeatable)" }
        return text
    }

    /// `seconds` in the largest unit of ``Arguments/parseDuration(_:)`` that divides it, weeks
    /// aside (`30d`, `1h`, `90m`; `0`): what `--help` shows as a duration's default.
    public static func durationText(_ seconds: Int64) -> String {
        guard seconds > 0 else { return "0" }
        for (unit, size) in [("d", Int64(86400)), ("h", 3600), ("m", 60)] where seconds % size == 0 {
            return "\(seconds / size)\(unit)"
        }
        return "\(seconds)s"
    }
}
