/// One option a command accepts.
public struct OptionSpec: Sendable, Hashable {
    /// The long name with dashes, e.g. `--keychain`.
    public let name: String
    /// `true` when the option takes a value (`--keychain DIR` or `--keychain=DIR`).
    public let takesValue: Bool
    /// `true` when the option may be given more than once (values are collected in order).
    public let repeatable: Bool
    /// Placeholder for help, e.g. `DIR`.
    public let valueName: String
    /// One-line help text.
    public let help: String

    /// An option taking a value.
    public static func value(_ name: String, _ valueName: String, _ help: String, repeatable: Bool = false) -> OptionSpec {
        OptionSpec(name: name, takesValue: true, repeatable: repeatable, valueName: valueName, help: help)
    }

    /// A flag without a value.
    public static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, takesValue: false, repeatable: false, valueName: "", help: help)
    }
}

/// Parsed command-line arguments of one (sub)command: options by name, then positionals.
///
/// Rules: `--name VALUE` or `--name=VALUE`; `--` ends options; `-` alone is a positional
/// (standard input); an unknown option, a missing value or a repeated non-repeatable option is
/// a usage error (exit 64). `-h` is accepted as `--help`.
public struct Arguments: Sendable {
    private var values: [String: [String]] = [:]
    /// Positional arguments in order.
    public private(set) var positionals: [String] = []

    /// Parses `argv` (without the tool and subcommand names) against `specs`.
    /// `--help` and `--json` are always accepted.
    /// - Throws: `CLIError` with exit code 64.
    public init(_ argv: [String], specs: [OptionSpec]) throws {
        let all = specs + [.flag("--help", "show this help"), .flag("--json", "print one JSON object")]
        var byName: [String: OptionSpec] = [:]
        for s in all { byName[s.name] = s }
        var i = 0
        var optionsEnded = false
        while i < argv.count {
            let arg = argv[i]
            i += 1
            if optionsEnded || arg == "-" || !arg.hasPrefix("-") {
                positionals.append(arg)
                continue
            }
            if arg == "--" { optionsEnded = true; continue }
            var name = arg == "-h" ? "--help" : arg
            var inlineValue: String?
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let spec = byName[name] else {
                let known = all.map(\.name).filter { $0.hasPrefix(String(name.prefix(4))) }
                throw CLIError.usage("unknown option \(name)", hint: known.isEmpty ? "see --help" : "did you mean \(known.joined(separator: " or "))?")
            }
            var value = ""
            if spec.takesValue {
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard i < argv.count else { throw CLIError.usage("option \(name) needs a value (\(spec.valueName))") }
                    value = argv[i]
                    i += 1
                }
            } else if inlineValue != nil {
                throw CLIError.usage("option \(name) takes no value")
            }
            if values[name] != nil && !spec.repeatable && spec.takesValue {
                throw CLIError.usage("option \(name) given more than once")
            }
            values[name, default: []].append(value)
        }
    }

    /// `true` when the flag or option was given.
    public func has(_ name: String) -> Bool { values[name] != nil }

    /// The value of a single-valued option, or `nil` when absent.
    public func value(_ name: String) -> String? { values[name]?.last }

    /// Every value of a repeatable option, in order (empty when absent).
    public func values(_ name: String) -> [String] { values[name] ?? [] }

    /// The value of a required option.
    /// - Throws: `CLIError` (64) naming the option when it is missing.
    public func required(_ name: String, _ valueName: String = "VALUE", hint: String? = nil) throws -> String {
        guard let v = value(name), !v.isEmpty else {
            throw CLIError.usage("missing \(name) \(valueName)", hint: hint)
        }
        return v
    }

    /// An integer option, or `nil` when absent.
    /// - Throws: `CLIError` (64) when the value is not an integer.
    public func integer(_ name: String) throws -> Int64? {
        guard let v = value(name) else { return nil }
        guard let i = Int64(v) else { throw CLIError.usage("\(name) needs an integer, got \(quoted(v))") }
        return i
    }

    /// A duration option in seconds: `90`, `90s`, `15m`, `12h`, `30d`, or `2w`.
    /// - Throws: `CLIError` (64) when the value is not a duration.
    public func duration(_ name: String) throws -> Int64? {
        guard let v = value(name) else { return nil }
        guard let seconds = Arguments.parseDuration(v) else {
            throw CLIError.usage("\(name) needs a duration like 3600, 90m, 12h or 30d, got \(quoted(v))")
        }
        return seconds
    }

    /// Parses `90`, `90s`, `15m`, `12h`, `30d`, `2w` into seconds; `nil` if malformed or negative.
    public static func parseDuration(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800]
        var digits = Substring(text)
        var multiplier: Int64 = 1
        if let last = text.last, let m = units[last] {
            multiplier = m
            digits = text.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let n = Int64(digits), n >= 0 else { return nil }
        let (product, overflow) = n.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : product
    }

    /// Rejects positionals beyond `max`.
    /// - Throws: `CLIError` (64).
    public func expectPositionals(max: Int) throws {
        if positionals.count > max {
            throw CLIError.usage("unexpected argument \(quoted(positionals[max]))")
        }
    }
}

/// Quotes a user-supplied string for an error message (at most 60 characters shown).
public func quoted(_ s: String) -> String {
    let shown = s.count > 60 ? String(s.prefix(57)) + "..." : s
    return "'\(shown)'"
}
