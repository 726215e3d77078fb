import PushSealSystem

/// The caller identity option group, one parser for every tool that opens a keychain as someone
/// (push-keys keychain …, push-keys key commands, push-open): `--entitlements FILE` with at most
/// one `--access-group G` naming the group to use, or the identity by its parts,
/// `--access-group G…` (in order), `--app-group G…` and (where offered)
/// `--application-identifier ID`.
///
/// ``prefix`` gives the same group another spelling (`--device-entitlements` … of
/// `push-keys rotate`). The group holds the values only; a tool turns them into its
/// entitlements with ``resolve(load:make:)``, so this module needs no keychain.
public struct IdentityOptions: Sendable, Equatable {
    /// The prefix after `--` of every option name, e.g. `device-` (empty by default).
    public let prefix: String
    /// `--entitlements FILE`, when given.
    public let entitlementsFile: String?
    /// Every `--access-group G`, in order.
    public let accessGroups: [String]
    /// Every `--app-group G`, in order.
    public let appGroups: [String]
    /// `--application-identifier ID`, when given (only where the command offers it).
    public let applicationIdentifier: String?
    /// What an access group named next to `--entitlements` selects, for the error text, e.g.
    /// `the item's group`.
    public let namedGroupMeaning: String

    /// `true` when no identity option was given.
    public var isEmpty: Bool { entitlementsFile == nil && accessGroups.isEmpty && appGroups.isEmpty && applicationIdentifier == nil }

    /// Reads the group from `arguments`.
    /// - Parameters:
    ///   - prefix: e.g. `device-` for `--device-entitlements`.
    ///   - namedGroupMeaning: what the one access group next to `--entitlements` names.
    public init(parsing arguments: Arguments, prefix: String = "", namedGroupMeaning: String = "the keysets' group") {
        self.prefix = prefix
        self.namedGroupMeaning = namedGroupMeaning
        let read = Self.declarations(prefix: prefix)
        entitlementsFile = arguments[read.entitlements]
        accessGroups = arguments[read.accessGroup]
        appGroups = arguments[read.appGroup]
        // Only where the command offers it.
        applicationIdentifier = arguments.declares(read.applicationIdentifier) ? arguments[read.applicationIdentifier] : nil
    }

    /// The group's options with the `prefix` after `--` (`device-`: `--device-entitlements` …):
    /// the one place their names and value names are written. A command lists them with its
    /// own help (``Option/withHelp(_:)``); ``init(parsing:prefix:namedGroupMeaning:)`` reads
    /// them.
    /// - Returns: `--entitlements FILE`, `--access-group G` (repeatable), `--app-group G`
    ///   (repeatable) and `--application-identifier ID`.
    public static func declarations(prefix: String = "") -> (entitlements: Option<String?>, accessGroup: Option<[String]>,
                                                             appGroup: Option<[String]>, applicationIdentifier: Option<String?>) {
        (.text("--\(prefix)entitlements", "FILE", "the caller's entitlements file"),
         .repeated("--\(prefix)access-group", "G", "a keychain access group of the caller"),
         .repeated("--\(prefix)app-group", "G", "an App Group of the caller"),
         .text("--\(prefix)application-identifier", "ID", "the caller's application-identifier entitlement"))
    }

    /// The shared rules: no empty group or application identifier; with `--entitlements`, no
    /// `--app-group` or `--application-identifier` and at most one `--access-group`.
    /// - Throws: `CLIError` (64).
    public func validate() throws {
        for g in accessGroups + appGroups where g.isEmpty { throw CLIError.usage("an access group cannot be empty") }
        if applicationIdentifier == "" { throw CLIError.usage("--\(prefix)application-identifier cannot be empty") }
        guard entitlementsFile != nil else { return }
        if !appGroups.isEmpty || applicationIdentifier != nil {
            let names = ["--\(prefix)app-group"] + (applicationIdentifier != nil ? ["--\(prefix)application-identifier"] : [])
            throw CLIError.usage("\(names.joined(separator: " and ")) cannot be combined with --\(prefix)entitlements",
                                 hint: "put \(applicationIdentifier != nil ? "them" : "it") in the entitlements file")
        }
        if accessGroups.count > 1 {
            throw CLIError.usage("with --\(prefix)entitlements, give at most one --\(prefix)access-group (\(namedGroupMeaning))")
        }
    }

    /// Turns the group into a tool's entitlements and the access group named next to
    /// `--entitlements` (`nil` when none), or `nil` when no identity option was given.
    /// - Parameters:
    ///   - load: reads an entitlements file (JSON or plist); its keychain errors are mapped
    ///     here: a missing file is exit 66 `no such file: FILE`, a malformed one 65, any other
    ///     by ``CLIError/init(keychain:)``.
    ///   - make: builds entitlements from (application identifier, access groups, App Groups).
    /// - Throws: `CLIError` as above.
    public func resolve<E>(load: (String) throws -> E, make: (String?, [String], [String]) -> E) throws -> (entitlements: E, accessGroup: String?)? {
        if let file = entitlementsFile {
            do {
                return (try load(file), accessGroups.first)
            } catch let e as any StatusCodedError {
                switch e.code.description {
                case "keychainMissing": throw CLIError(code: "inputMissing", "no such file: \(file)", exitCode: .noInput)
                case "decode": throw CLIError.dataError(e.reason)
                default: throw CLIError(keychain: e)
                }
            }
        }
        if isEmpty { return nil }
        return (make(applicationIdentifier, accessGroups, appGroups), nil)
    }
}

/// The keystore option group: where a server-side command finds its keysets: `--keychain DIR`
/// (a file keychain) or, where the command takes a server store, `--registry URI` with
/// `--kek-file F` (a PostgreSQL registry, issue 15; ``RegistryLocation``). Every command that
/// opens keysets through this group gets both at once; the tool turns a registry location into
/// a store (push-keys and push-seal through PushSealRegistryCLI), so this module needs no libpq.
public struct KeystoreOptions: Sendable, Equatable {
    /// `--keychain DIR`: the one declaration of the option; a command lists it with its own
    /// help (``Option/withHelp(_:)``).
    public static let keychain = Option.text("--keychain", "DIR", "the keychain directory (required)")

    /// `--keychain DIR`; `nil` when a registry is selected.
    public let keychainPath: String?
    /// The registry of `--registry` (or `PUSHSEAL_REGISTRY` without `--keychain`); `nil` for the keychain.
    public let registry: RegistryLocation?

    /// Reads the group.
    /// - Parameters:
    ///   - hint: the `hint:` line of the missing-option error.
    ///   - allowingRegistry: `true` where a server store may be a registry (`--registry`,
    ///     `--kek-file`, `PUSHSEAL_REGISTRY`, `PUSHSEAL_KEK_FILE`); `false` (the default) reads
    ///     `--keychain DIR` only.
    /// - Throws: `CLIError` (64) `missing --keychain DIR` (with `hint` when given), or
    ///   `give --keychain DIR or --registry URI, not both`.
    public init(parsing arguments: Arguments, hint: String? = nil, allowingRegistry: Bool = false) throws {
        if allowingRegistry, let registry = try RegistryLocation(parsing: arguments) {
            guard !arguments.has(Self.keychain) else { throw CLIError.usage("give --keychain DIR or --registry URI, not both") }
            self.registry = registry
            keychainPath = nil
        } else {
            registry = nil
            keychainPath = try Self.keychainDirectory(parsing: arguments, hint: hint)
        }
    }

    /// `--keychain DIR` alone, for a command that only ever opens a file keychain.
    /// - Throws: `CLIError` (64) `missing --keychain DIR` (with `hint` when given).
    public static func keychainDirectory(parsing arguments: Arguments, hint: String? = nil) throws -> String {
        guard let dir = arguments[keychain], !dir.isEmpty else {
            throw CLIError.usage("missing --keychain DIR", hint: hint)
        }
        return dir
    }
}

/// Where a PostgreSQL registry is (issue 15): `--registry URI` (any libpq connection URI or
/// key=value string; `PUSHSEAL_REGISTRY` when the option and `--keychain` are absent) and the
/// key-encryption key file `--kek-file F` (`PUSHSEAL_KEK_FILE` when absent). Values only:
/// the file is read and the database opened by the tool.
public struct RegistryLocation: Sendable, Equatable {
    /// `PUSHSEAL_REGISTRY`: the connection string used when neither `--registry` nor `--keychain` is given.
    public static let environmentVariable = "PUSHSEAL_REGISTRY"
    /// `PUSHSEAL_KEK_FILE`: the KEK file used when `--kek-file` is absent.
    public static let kekEnvironmentVariable = "PUSHSEAL_KEK_FILE"
    /// `--registry URI`: the one declaration of the option (a command whose help says more
    /// lists it with ``Option/withHelp(_:)``).
    public static let registryOption = Option.text("--registry", "URI",
        "a PostgreSQL registry instead of --keychain: any libpq connection URI or string, e.g. postgresql:///pushseal?host=/run/postgresql (default: $PUSHSEAL_REGISTRY when --keychain is absent). ARGV IS VISIBLE to every local user (ps): never put a password in it; use PGPASSFILE or ~/.pgpass (or $PUSHSEAL_REGISTRY)")
    /// `--kek-file F`: the key-encryption key file of a registry.
    public static let kekFileOption = Option.text("--kek-file", "F",
        "with a registry: the key-encryption key file (32 bytes or 64 hex digits, 0600, yours, not a link; default: $PUSHSEAL_KEK_FILE)")

    /// The libpq connection string (URI or key=value).
    public let connectionString: String
    /// The KEK file path, `nil` when neither `--kek-file` nor `PUSHSEAL_KEK_FILE` gives one.
    public let kekFile: String?

    /// Builds a location from its values.
    public init(connectionString: String, kekFile: String?) {
        self.connectionString = connectionString
        self.kekFile = kekFile
    }

    /// Reads `--registry` (else `PUSHSEAL_REGISTRY` when `--keychain` is absent) and `--kek-file`
    /// (else `PUSHSEAL_KEK_FILE`); `nil` when no registry is selected.
    /// - Parameter kekOption: the KEK option (``kekFileOption``; the environment applies to it only).
    /// - Throws: `CLIError` (64) for an empty `--registry` or `--kek-file`.
    public init?(parsing arguments: Arguments, kekOption: Option<String?> = kekFileOption) throws {
        let connectionString: String
        if let r = arguments[Self.registryOption] {
            guard !r.isEmpty else { throw CLIError.usage("\(Self.registryOption.name) cannot be empty") }
            connectionString = r
        } else if !(arguments.declares(KeystoreOptions.keychain) && arguments.has(KeystoreOptions.keychain)), let r = Self.environment(Self.environmentVariable) {
            connectionString = r
        } else {
            return nil
        }
        self.init(connectionString: connectionString, kekFile: try Self.kekFile(parsing: arguments, option: kekOption))
    }

    /// The KEK file of `option`, else (for ``kekFileOption``) `PUSHSEAL_KEK_FILE`, else `nil`.
    /// - Throws: `CLIError` (64) for an empty value.
    public static func kekFile(parsing arguments: Arguments, option: Option<String?> = kekFileOption) throws -> String? {
        if let f = arguments[option] {
            guard !f.isEmpty else { throw CLIError.usage("\(option.name) cannot be empty") }
            return f
        }
        return option.name == kekFileOption.name ? environment(kekEnvironmentVariable) : nil
    }

    /// A non-empty environment variable.
    static func environment(_ name: String) -> String? {
        guard let v = Environment.value(name), !v.isEmpty else { return nil }
        return v
    }
}

/// The keyset option group: which keyset a command works on, `--app-id APP --recipient R`.
/// The naming rules (FORMAT.md §3.2) are checked by the tool, which owns them.
public struct KeysetOptions: Sendable, Equatable {
    /// `--app-id APP`: the one declaration of the option; a command lists it with its own help
    /// (``Option/withHelp(_:)``).
    public static let appIDOption = Option.text("--app-id", "APP", "the app's bundle identifier, the APNs topic (required)")
    /// `--recipient R`, as ``appIDOption``.
    public static let recipientOption = Option.text("--recipient", "R", "the recipient, one app installation (required)")

    /// `--app-id APP`, the app's bundle identifier (APNs topic).
    public let appID: String
    /// `--recipient R`, one app installation.
    public let recipient: String

    /// Reads the group: `--app-id` first, then `--recipient`, as the usage lines name them.
    /// - Throws: `CLIError` (64) for the first one missing (with `hint` when given).
    public init(parsing arguments: Arguments, hint: String? = nil) throws {
        appID = try arguments.required(Self.appIDOption, hint: hint)
        recipient = try arguments.required(Self.recipientOption, hint: hint)
    }
}
