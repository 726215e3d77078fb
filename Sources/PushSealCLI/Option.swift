/// Anything that declares one option for `--help` and the parser: an ``Option`` (the typed
/// declaration a command reads through) or a bare ``OptionSpec``.
public protocol OptionDeclaration: Sendable {
    /// The declaration as the parser and `--help` see it.
    var spec: OptionSpec { get }
}

extension OptionSpec: OptionDeclaration {
    /// The spec itself.
    public var spec: OptionSpec { self }

    /// The specs of `declarations`, in order: a command's `options` list built from its typed
    /// declarations, e.g. `OptionSpec.list(Self.title, Self.force) + KeystoreOptions.all`.
    public static func list(_ declarations: any OptionDeclaration...) -> [OptionSpec] {
        declarations.map(\.spec)
    }
}

/// One option declared once (issue 27): its ``OptionSpec`` (name, value name, help, range,
/// default: what the parser accepts and `--help` lists) and its reader, which yields a `Value`
/// of the option's own type from parsed ``Arguments``.
///
/// A command declares each option as a static and builds its `options` list from the
/// declarations, then reads each value through the same declaration, so the name is written in
/// one place:
///
/// ```swift
/// static let title = Option.text("--title", "TEXT", "notification title")
/// static let badge = Option.integer("--badge", "N", "aps.badge")
/// let options = OptionSpec.list(Self.title, Self.badge)
/// // in Options(parsing a:)
/// title = try a[SealCommand.title]      // String?
/// badge = try a[SealCommand.badge]      // Int64?
/// ```
///
/// The readers are ``Arguments``' own (``Arguments/value(_:)``, ``Arguments/integer(_:)``, …),
/// so every read is checked and logged as before (CLIDeclarationTests), and errors and defaults
/// are theirs. The kinds and their `Value`s:
///
/// | constructor | `Value` | absent |
/// |---|---|---|
/// | ``flag(_:_:)`` | `Bool` | `false` |
/// | ``text(_:_:_:default:)`` | `String?` | the default, else `nil` |
/// | ``textWithDefault(_:_:_:default:)`` | `String` | the default |
/// | ``required(_:_:_:hint:)`` | `String` | usage error (64) `missing --NAME VALUE` |
/// | ``repeated(_:_:_:)`` | `[String]` | `[]` |
/// | ``integer(_:_:_:range:default:)`` | `Int64?` | the default, else `nil` |
/// | ``integerWithDefault(_:_:_:range:default:)`` | `Int64` | the default |
/// | ``duration(_:_:default:)`` | `Int64?` (seconds) | the default, else `nil` |
/// | ``durationWithDefault(_:_:default:)`` | `Int64` (seconds) | the default |
public struct Option<Value: Sendable>: OptionDeclaration {
    /// The declaration as the parser and `--help` see it.
    public let spec: OptionSpec
    /// Reads the value from parsed arguments; throws as the ``Arguments`` reader it calls.
    let reader: @Sendable (Arguments, OptionSpec) throws -> Value

    /// The long name with dashes, e.g. `--title`.
    public var name: String { spec.name }

    /// A declaration from its spec and reader (the static constructors are the short forms).
    init(spec: OptionSpec, reader: @escaping @Sendable (Arguments, OptionSpec) throws -> Value) {
        self.spec = spec
        self.reader = reader
    }

    /// The same option (name, kind, reader) with another help text (and, when given, another
    /// value name, e.g. `--kek-file OLD`): a shared group declares an option once and a command
    /// that describes it in its own words lists this copy; reading either declaration reads the
    /// same option.
    public func withHelp(_ help: String, valueName: String? = nil) -> Option {
        Option(spec: OptionSpec(name: spec.name, kind: spec.kind, repeatable: spec.repeatable, valueName: valueName ?? spec.valueName,
                                help: help, range: spec.range, defaultValue: spec.defaultValue),
               reader: reader)
    }
}

extension Option where Value == Bool {
    /// A flag without a value: `true` when given (``Arguments/has(_:)``).
    public static func flag(_ name: String, _ help: String) -> Option {
        Option(spec: .flag(name, help)) { a, s in a.has(s.name) }
    }
}

extension Option where Value == String? {
    /// A text option given at most once: its value, else `default`, else `nil`
    /// (``Arguments/value(_:)``).
    public static func text(_ name: String, _ valueName: String, _ help: String, default: String? = nil) -> Option {
        Option(spec: .value(name, valueName, help, default: `default`)) { a, s in a.value(s.name) }
    }
}

extension Option where Value == String {
    /// A text option with a default: its value (even empty), else `default`
    /// (``Arguments/valueWithDefault(_:)``); `--help` states the default.
    public static func textWithDefault(_ name: String, _ valueName: String, _ help: String, default: String) -> Option {
        Option(spec: .value(name, valueName, help, default: `default`)) { a, s in try a.valueWithDefault(s.name) }
    }

    /// A text option that must be given, not empty (``Arguments/required(_:hint:)``).
    /// - Parameter hint: the `hint:` line of the `missing --NAME VALUE` usage error (64).
    public static func required(_ name: String, _ valueName: String, _ help: String, hint: String? = nil) -> Option {
        Option(spec: .value(name, valueName, help)) { a, s in try a.required(s.name, hint: hint) }
    }
}

extension Option where Value == [String] {
    /// A repeatable text option: every value in order, `[]` when absent (``Arguments/values(_:)``).
    public static func repeated(_ name: String, _ valueName: String, _ help: String) -> Option {
        Option(spec: .value(name, valueName, help, repeatable: true)) { a, s in a.values(s.name) }
    }
}

extension Option where Value == Int64? {
    /// A decimal integer option: within `range` when given, else `default`, else `nil`
    /// (``Arguments/integer(_:)``: a usage error (64) for text that is not an integer or is out
    /// of `range`).
    public static func integer(_ name: String, _ valueName: String, _ help: String, range: ClosedRange<Int64>? = nil,
                               default: Int64? = nil) -> Option {
        Option(spec: .integer(name, valueName, help, range: range, default: `default`)) { a, s in try a.integer(s.name) }
    }

    /// A duration option (value `DURATION`) in seconds: `90`, `90s`, `15m`, `12h`, `30d` or `2w`;
    /// else `default`, else `nil` (``Arguments/duration(_:)``: a usage error (64) for a
    /// malformed value).
    public static func duration(_ name: String, _ help: String, default: Int64? = nil) -> Option {
        Option(spec: .duration(name, help, default: `default`)) { a, s in try a.duration(s.name) }
    }
}

extension Option where Value == Int64 {
    /// A decimal integer option with a default: its value within `range`, else `default`
    /// (``Arguments/integerWithDefault(_:)``).
    public static func integerWithDefault(_ name: String, _ valueName: String, _ help: String, range: ClosedRange<Int64>? = nil,
                                          default: Int64) -> Option {
        Option(spec: .integer(name, valueName, help, range: range, default: `default`)) { a, s in try a.integerWithDefault(s.name) }
    }

    /// A duration option with a default, in seconds: its value, else `default`
    /// (``Arguments/durationWithDefault(_:)``).
    public static func durationWithDefault(_ name: String, _ help: String, default: Int64) -> Option {
        Option(spec: .duration(name, help, default: `default`)) { a, s in try a.durationWithDefault(s.name) }
    }
}

extension Arguments {
    /// The value of `option`, read by the reader its declaration names (see ``Option``).
    /// - Throws: `CLIError` (64) as that reader: a malformed value, a missing required option.
    public subscript<Value>(_ option: Option<Value>) -> Value {
        get throws { try option.reader(self, option.spec) }
    }

    /// The value of a flag: `true` when given (never throws, unlike the generic reader).
    public subscript(_ option: Option<Bool>) -> Bool { has(option.spec.name) }

    /// The value of a text option given at most once (``Option/text(_:_:_:default:)``): its
    /// value, else its default, else `nil` (never throws).
    public subscript(_ option: Option<String?>) -> String? { value(option.spec.name) }

    /// Every value of a repeatable text option (``Option/repeated(_:_:_:)``), in order (never
    /// throws).
    public subscript(_ option: Option<[String]>) -> [String] { values(option.spec.name) }

    /// `true` when `option` was given (any kind): for the rules that relate options to each
    /// other (`--ttl` with `--no-expiry`).
    public func has(_ option: some OptionDeclaration) -> Bool { has(option.spec.name) }

    /// `true` when the command declares `option` (a shared group reads an option only where the
    /// command offers it).
    public func declares(_ option: some OptionDeclaration) -> Bool { declares(option.spec.name) }

    /// The value of a text `option` that this command requires, though the declaration does not
    /// (`--p8` unless `--no-worker`).
    /// - Throws: `CLIError` (64) `missing --NAME VALUENAME`, with `hint`, when it is absent or empty.
    public func required(_ option: Option<String?>, hint: String? = nil) throws -> String {
        try required(option.spec.name, hint: hint)
    }
}
