import PushSealSystem

/// One option a command accepts, as the parser and `--help` see it. A command declares each
/// option once as an ``Option`` (which carries this spec and the typed reader its ``kind``
/// names) and lists the specs in its `options`: the parser accepts exactly them, `--help` lists
/// exactly them (``HelpText/render(options:)``), and the command's ``CommandOptions`` reads each
/// through the same ``Option``; CLIDeclarationTests checks for every command of every tool that
/// each declared option is read, each read option is declared, and each read uses the declared
/// kind.
public struct OptionSpec: Sendable, Hashable {
    /// How an option's value is read: the reader of ``Arguments`` that parses it.
    public enum Kind: Sendable, Hashable {
        /// No value: ``Arguments/has(_:)``.
        case flag
        /// Text: ``Arguments/value(_:)``, ``Arguments/values(_:)``, ``Arguments/required(_:hint:)``
        /// or ``Arguments/valueWithDefault(_:)`` (a command may parse the text further, e.g. as an
        /// enumeration).
        case text
        /// A decimal integer: ``Arguments/integer(_:)`` or ``Arguments/integerWithDefault(_:)``.
        case integer
        /// A duration: ``Arguments/duration(_:)`` or ``Arguments/durationWithDefault(_:)``.
        case duration
    }

    /// The long name with dashes, e.g. `--keychain`.
    public let name: String
    /// How the value is read (``Kind/flag`` for an option without a value).
    public let kind: Kind
    /// `true` when the option may be given more than once (values are collected in order).
    public let repeatable: Bool
    /// Placeholder for help and for the `missing`/`needs a value` errors, e.g. `DIR`.
    public let valueName: String
    /// One-line help text, as declared (``HelpText/render(options:)`` appends the range, the
    /// default and, for a duration, the accepted forms).
    public let help: String
    /// The values an ``Kind/integer`` option accepts, when bounded: ``Arguments/integer(_:)``
    /// refuses others (64) and `--help` states the range.
    public let range: ClosedRange<Int64>?
    /// The value, as it would be given on the command line, that the readers return when the
    /// option is absent (`nil`: none); `--help` states it.
    public let defaultValue: String?

    /// `true` when the option takes a value (`--keychain DIR` or `--keychain=DIR`).
    public var takesValue: Bool { kind != .flag }

    /// Creates a declaration; the static constructors are the short forms.
    init(name: String, kind: Kind, repeatable: Bool = false, valueName: String, help: String,
         range: ClosedRange<Int64>? = nil, defaultValue: String? = nil) {
        self.name = name
        self.kind = kind
        self.repeatable = repeatable
        self.valueName = valueName
        self.help = help
        self.range = range
        self.defaultValue = defaultValue
    }

    /// An option taking a text value; `default` is what ``Arguments/value(_:)`` returns when it
    /// is absent. A command declares it through ``Option/text(_:_:_:default:)`` and its kin.
    public static func value(_ name: String, _ valueName: String, _ help: String, repeatable: Bool = false, default: String? = nil) -> OptionSpec {
        OptionSpec(name: name, kind: .text, repeatable: repeatable, valueName: valueName, help: help, defaultValue: `default`)
    }

    /// An option taking a decimal integer, read with ``Arguments/integer(_:)``: within `range`
    /// when given, `default` when absent.
    public static func integer(_ name: String, _ valueName: String, _ help: String, range: ClosedRange<Int64>? = nil, default: Int64? = nil) -> OptionSpec {
        OptionSpec(name: name, kind: .integer, valueName: valueName, help: help, range: range, defaultValue: `default`.map { String($0) })
    }

    /// A flag without a value.
    public static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .flag, valueName: "", help: help)
    }
}

/// Parsed command-line arguments of one (sub)command: options by name, then positionals.
///
/// A command reads an option through its declaration, `try arguments[option]` (``Option``); the
/// readers by name below are the kit's own, which those declarations call.
///
/// Rules: `--name VALUE` or `--name=VALUE`; `--` ends options; `-` alone is a positional
/// (standard input); an unknown option, a missing value or a repeated non-repeatable option is
/// a usage error (exit 64). `-h` is accepted as `--help`.
public struct Arguments: Sendable {
    private var values: [String: [String]] = [:]
    /// Positional arguments in order.
    public private(set) var positionals: [String] = []
    /// The declared options by name, `--help` and `--json` included.
    private let byName: [String: OptionSpec]
    /// Records the reads when a test probes a command's parsing (``ReadLog``); `nil` otherwise.
    let log: ReadLog?

    /// `--help` (and `-h`): every command accepts it without declaring it.
    public static let helpFlag = Option.flag("--help", "show this help")
    /// `--json`: every command accepts it without declaring it (``CommandContext/json``).
    public static let jsonFlag = Option.flag("--json", "print one JSON object")
    /// The options every command accepts without declaring them.
    static let implicit: [OptionSpec] = OptionSpec.list(helpFlag, jsonFlag)

    /// Parses `argv` (without the tool and subcommand names) against `specs`.
    /// `--help` and `--json` are always accepted.
    /// - Throws: `CLIError` with exit code 64.
    public init(_ argv: [String], specs: [OptionSpec]) throws {
        try self.init(argv, specs: specs, log: nil)
    }

    /// Parses as ``init(_:specs:)``, recording every read in `log`.
    init(_ argv: [String], specs: [OptionSpec], log: ReadLog?) throws {
        self.log = log
        let all = specs + Arguments.implicit
        var byName: [String: OptionSpec] = [:]
        for s in all { byName[s.name] = s }
        self.byName = byName
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

    /// `true` when the command declares `name` (a shared option group reads an option only
    /// where the command offers it).
    func declares(_ name: String) -> Bool { byName[name] != nil }

    /// `true` when the flag or option was given.
    func has(_ name: String) -> Bool {
        log?.record(name, as: .presence, declared: byName[name])
        return values[name] != nil
    }

    /// The value of a single-valued text option, or `nil` when absent.
    func value(_ name: String) -> String? {
        log?.record(name, as: .text, declared: byName[name])
        return values[name]?.last ?? byName[name]?.defaultValue
    }

    /// Every value of a repeatable text option, in order (empty when absent).
    func values(_ name: String) -> [String] {
        log?.record(name, as: .repeatedText, declared: byName[name])
        return values[name] ?? []
    }

    /// The value of a required text option.
    /// - Throws: `CLIError` (64) `missing --NAME VALUENAME` (the declared value name) when it is
    ///   missing or empty.
    func required(_ name: String, hint: String? = nil) throws -> String {
        log?.record(name, as: .text, declared: byName[name])
        guard let v = values[name]?.last, !v.isEmpty else {
            if let log, log.lenient { return log.samples[name] ?? "x" }
            throw CLIError.usage("missing \(name) \(byName[name]?.valueName ?? "VALUE")", hint: hint)
        }
        return v
    }

    /// An integer option: its value, else its declared default, else `nil`.
    /// - Throws: `CLIError` (64) `--NAME needs an integer, got 'V'`, or `--NAME needs LOW to
    ///   HIGH, got N` outside its declared range.
    func integer(_ name: String) throws -> Int64? {
        log?.record(name, as: .integer, declared: byName[name])
        let spec = byName[name]
        guard let v = values[name]?.last ?? spec?.defaultValue else { return nil }
        guard let i = Int64(v) else { throw CLIError.usage("\(name) needs an integer, got \(quoted(v))") }
        if let range = spec?.range, !range.contains(i) {
            throw CLIError.usage("\(name) needs \(range.lowerBound) to \(range.upperBound), got \(i)")
        }
        return i
    }

    /// An integer option declared with a default: its value, else the default.
    /// - Throws: as ``integer(_:)``; `CLIError` `internal` (exit 1) when the declaration has no default.
    func integerWithDefault(_ name: String) throws -> Int64 {
        try withDefault(name, as: .integerWithDefault, placeholder: 0, read: integer)
    }

    /// A duration option in seconds: `90`, `90s`, `15m`, `12h`, `30d`, or `2w`.
    /// - Throws: `CLIError` (64) when the value is not a duration.
    func duration(_ name: String) throws -> Int64? {
        log?.record(name, as: .duration, declared: byName[name])
        guard let v = values[name]?.last ?? byName[name]?.defaultValue else { return nil }
        guard let seconds = Arguments.parseDuration(v) else {
            throw CLIError.usage("\(name) needs a duration like 3600, 90m, 12h or 30d, got \(quoted(v))")
        }
        return seconds
    }

    /// A duration option declared with a default: its value, else the default, in seconds.
    /// - Throws: as ``duration(_:)``; `CLIError` `internal` (exit 1) when the declaration has no default.
    func durationWithDefault(_ name: String) throws -> Int64 {
        try withDefault(name, as: .durationWithDefault, placeholder: 0, read: duration)
    }

    /// A text option declared with a default: its value (even empty), else the default.
    /// - Throws: `CLIError` `internal` (exit 1) when the declaration has no default.
    func valueWithDefault(_ name: String) throws -> String {
        try withDefault(name, as: .textWithDefault, placeholder: "x", read: value)
    }

    /// `read(name)`, which applies the declared default; a missing default is a programming error.
    private func withDefault<T>(_ name: String, as kind: ReadLog.Read, placeholder: T, read: (String) throws -> T?) throws -> T {
        log?.record(name, as: kind, declared: byName[name])
        guard let value = try read(name) else {
            if let log, log.lenient { return placeholder }
            throw CLIError(code: "internal", "option \(name) is read with its default but declares none", exitCode: .failure)
        }
        return value
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

/// What a test learns by parsing a command's options with a probe: the options read, how, and
/// the reads that disagree with the declarations (`DeclarationTests` in CLITests).
final class ReadLog: Sendable {
    /// How an option was read.
    enum Read: Sendable, Hashable {
        case presence, text, textWithDefault, repeatedText, integer, integerWithDefault, duration, durationWithDefault
    }
    /// `true`: a missing required option reads as its ``samples`` value (else `x`) instead of
    /// throwing, so the probe reads on.
    let lenient: Bool
    /// Values by option name for ``lenient`` reads of missing required options.
    let samples: [String: String]
    private let state = Locked<(read: Set<String>, mismatches: [String])>(([], []))

    /// A log; `lenient` and `samples` as ``lenient`` and ``samples``.
    init(lenient: Bool, samples: [String: String] = [:]) {
        self.lenient = lenient
        self.samples = samples
    }

    /// The names read so far.
    var read: Set<String> { state.withLock { $0.read } }
    /// One line per read that is not what the declaration says (undeclared, or another kind).
    var mismatches: [String] { state.withLock { $0.mismatches } }

    /// Records a read of `name` as `read`; notes it when `declared` (the command's declaration of
    /// `name`, `nil` when it declares none) does not allow that reader.
    func record(_ name: String, as read: Read, declared: OptionSpec?) {
        let problem: String?
        switch (read, declared) {
        case (_, nil): problem = "\(name) is read but not declared"
        case (.presence, _?): problem = nil
        case (.text, let d?): problem = d.kind == .text && !d.repeatable ? nil : "\(name) is read as text but declared \(d.kind)\(d.repeatable ? " repeatable" : "")"
        case (.repeatedText, let d?): problem = d.kind == .text && d.repeatable ? nil : "\(name) is read as repeatable text but declared \(d.kind)\(d.repeatable ? " repeatable" : "")"
        case (.integer, let d?): problem = d.kind == .integer ? nil : "\(name) is read as an integer but declared \(d.kind)"
        case (.textWithDefault, let d?), (.integerWithDefault, let d?), (.durationWithDefault, let d?):
            problem = d.defaultValue != nil ? nil : "\(name) is read with its default but declares none"
        case (.duration, let d?): problem = d.kind == .duration ? nil : "\(name) is read as a duration but declared \(d.kind)"
        }
        state.withLock {
            $0.read.insert(name)
            if let problem, !$0.mismatches.contains(problem) { $0.mismatches.append(problem) }
        }
    }
}

/// Quotes a user-supplied string for an error message (at most 60 characters shown).
public func quoted(_ s: String) -> String {
    let shown = s.count > 60 ? String(s.prefix(57)) + "..." : s
    return "'\(shown)'"
}
