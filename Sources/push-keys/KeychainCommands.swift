import PushSealJSON
import Foundation
import PushSealCLI
import PushSealCrypto
import PushSealWire
import PushSealKeychain

/// Shared pieces of the `push-keys keychain …` subcommands: options, identity, error mapping,
/// JSON shapes.
enum KeychainCommands {
    /// Every `keychain` subcommand, for the tool's dispatcher.
    static let all: [any Command] = [
        KeychainInitCommand(), KeychainAddCommand(), KeychainGetCommand(), KeychainUpdateCommand(),
        KeychainDeleteCommand(), KeychainListCommand(), KeychainDeviceStateCommand(), KeychainMigrateCommand(),
        KeychainBackupCommand(), KeychainRestoreCommand(),
    ]

    static let keychainOption = KeystoreOptions.keychain.withHelp("the emulated device keychain directory (required)").spec
    /// `--service S` (kSecAttrService); a command that describes it otherwise lists ``Option/withHelp(_:)``.
    static let service = Option.text("--service", "S", "kSecAttrService (required)")
    /// `--account A` (kSecAttrAccount).
    static let account = Option.text("--account", "A", "kSecAttrAccount (required)")
    /// `--accessibility A` (kSecAttrAccessible), read by ``accessibility(_:)``.
    static let accessibilityOption = Option.text("--accessibility", "A", "kSecAttrAccessible: \(KeychainCommands.accessibilityNames)")
    static let entitlements = IdentityOptions.declarations().entitlements.withHelp("the caller's identity: JSON or plist with application-identifier, keychain-access-groups, application-groups")
    static let accessGroup = IdentityOptions.declarations().accessGroup.withHelp("without --entitlements: a keychain access group of the caller (repeat it for more, in order; the first is the default group); with --entitlements: at most one, the item's access group")
    static let appGroup = IdentityOptions.declarations().appGroup.withHelp("without --entitlements: an App Group (application group) of the caller (repeat it for more)")
    static let applicationIdentifier = IdentityOptions.declarations().applicationIdentifier.withHelp("without --entitlements: the caller's application-identifier entitlement, TEAMID.bundle.id (not the bundle id alone)")

    static let identityOptions: [OptionSpec] = [
        KeychainCommands.entitlements.spec,
        KeychainCommands.accessGroup.spec,
        KeychainCommands.appGroup.spec,
        KeychainCommands.applicationIdentifier.spec,
    ]
    static let itemClassOption = Option.text("--class", "C", "item class: genericPassword (default) or key")
    static let accessibilityNames = Accessibility.allCases.map(\.rawValue).joined(separator: ", ")

    /// The usage placeholder for the caller's identity, spelled out in ``identityNote``.
    static let identityUsage = "IDENTITY"

    /// Exit-code help lines of a `keychain` subcommand: the common ones with what each means for
    /// this subcommand (`nil` leaves a code out).
    /// - Parameters:
    ///   - keychainError: what an OSStatus error (exit 1) typically is here.
    ///   - usage: usage errors besides unknown options, missing arguments and text that is not UTF-8.
    ///   - dataError: what makes the input bad (65), besides a damaged keychain file.
    ///   - noInput: which inputs can be missing (66), besides the keychain.
    ///   - cannotCreate: when 73 happens, if it can.
    ///   - opensKeychain: the subcommand opens an existing keychain (every one but init).
    ///   - readsSecrets: the subcommand seals or opens item data, which the device state can
    ///     forbid (errSecInteractionNotAllowed, exit 77).
    static func exitCodes(keychainError: String?, usage: [String] = [], dataError: String? = nil, noInput: String? = nil, cannotCreate: String? = nil,
                          opensKeychain: Bool = true, readsSecrets: Bool = false) -> [String] {
        var lines = [
            "0   success",
            keychainError.map { "1   keychain error (\($0)): the OSStatus name and number on stderr, osStatus and statusName in --json; or an internal error" }
                ?? "1   internal error (stderr says what failed)",
            "64  usage error (" + (["unknown option", "missing argument"] + usage + ["an argument that is not UTF-8"]).joined(separator: ", ") + ")",
        ]
        let damaged = opensKeychain ? ["a damaged keychain file"] : []
        let bad = (dataError.map { [$0] } ?? []) + damaged
        if !bad.isEmpty { lines.append("65  bad input data: " + bad.joined(separator: "; ")) }
        let missing = (opensKeychain ? ["no keychain at DIR, or its device secret not where keychain.meta or PUSHSEAL_DEVICE_SECRET_FILE says"] : []) + (noInput.map { [$0] } ?? [])
        if !missing.isEmpty { lines.append("66  " + missing.joined(separator: "; ")) }
        if let cannotCreate { lines.append("73  \(cannotCreate)") }
        lines.append("74  I/O error (the keychain, or writing standard output)" + (opensKeychain ? ", or a symbolic link inside the keychain" : ""))
        lines.append("77  permission denied, or the keychain is not 0700 (files 0600) or not yours"
            + (readsSecrets ? "; or the keychain's device state does not allow it (\(lockedCause))" : ""))
        return lines
    }

    /// When errSecInteractionNotAllowed (-25308) happens, for the exit-code help (exit 77).
    static let lockedCause = "errSecInteractionNotAllowed -25308: a whenUnlocked item while locked, any item before first unlock"

    static let identityNote = """
        IDENTITY: the caller, an app or its extension: --entitlements FILE [--access-group G], or --access-group G... [--app-group G...] [--application-identifier ID]. With --entitlements, one --access-group names the item's group; naming one the caller lacks fails with errSecMissingEntitlement (-34018). Without --entitlements, the identity is given by its parts: an add goes to its first group, a search covers all of them. Access-group order is keychain-access-groups, application-identifier, application-groups, as on iOS.
        """

    /// The keychain directory from `--keychain` (required).
    static func keychainURL(_ a: Arguments) throws -> URL {
        URL(fileURLWithPath: try a.required(KeystoreOptions.keychain), isDirectory: true)
    }

    static func open(_ url: URL, as entitlements: Entitlements) throws -> Keychain {
        do { return try Keychain(opening: url, as: entitlements) } catch let e as KeychainError { throw cliError(e) }
    }

    /// The path a device secret location stands for, for messages and `--json`.
    static func deviceSecretPath(_ location: DeviceSecretLocation, keychain url: URL) -> String {
        let root = url.standardizedFileURL.path
        switch location {
        case .insideDirectory: return root + "/device-secret"
        case .besideDirectory: return root + ".secret"
        case .file(let path): return path
        }
    }

    static func itemClass(_ a: Arguments) throws -> ItemClass {
        guard let v = a[itemClassOption] else { return .genericPassword }
        guard let c = ItemClass(rawValue: v) else { throw CLIError.usage("unknown --class \(quoted(v))", hint: "use genericPassword or key") }
        return c
    }

    static func accessibility(_ a: Arguments) throws -> Accessibility? {
        guard let v = a[accessibilityOption] else { return nil }
        guard let acc = Accessibility(rawValue: v) else { throw CLIError.usage("unknown \(accessibilityOption.name) \(quoted(v))", hint: "use one of \(accessibilityNames)") }
        return acc
    }

    /// Secret data from `--data-file F` (`-` = standard input), at most `Keychain.maxDataByteCount`
    /// bytes. There is no option taking the secret itself: argv is visible to other users (`ps`).
    static func data(file: String) throws -> SecretBytes {
        var bytes = try InputReader.readAll(file, limitByteCount: Keychain.maxDataByteCount)
        defer { SecretBytes.wipe(&bytes) }
        return SecretBytes(copying: bytes)
    }

    /// A passcode from `--passcode-file F` (first line; `-` = stdin), or `nil`.
    static func passcode(file: String?) throws -> String? {
        guard let file else { return nil }
        var bytes = try InputReader.readAll(file, limitByteCount: 4096)
        defer { SecretBytes.wipe(&bytes) }
        let line = bytes.prefix(while: { $0 != 0x0A && $0 != 0x0D })
        guard !line.isEmpty, let s = String(validating: line, as: UTF8.self) else { throw CLIError.dataError("the passcode file's first line is empty or not UTF-8") }
        return s
    }

    /// Maps a keychain error to the tool's exit codes: OSStatus errors exit 1 (errSecInteractionNotAllowed
    /// 77, as in the key commands and push-seal) with `errSecX (N)` in the message and
    /// `osStatus`/`statusName` in `--json`.
    static func cliError(_ e: KeychainError) -> CLIError { CLIError(keychain: e) }

    /// Runs `body`, turning keychain errors into CLI errors.
    static func mapping<R>(_ body: () throws -> R) throws -> R {
        do { return try body() } catch let e as KeychainError { throw cliError(e) }
    }

    static func iso8601(_ d: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: d)
    }

    /// Attributes as a JSON object (never the secret).
    static func json(_ a: ItemAttributes) -> JSONObject {
        var o: JSONObject = [
            "class": .string(a.itemClass.rawValue), "service": .string(a.service), "account": .string(a.account),
            "accessGroup": .string(a.accessGroup), "accessibility": .string(a.accessibility.rawValue),
        ]
        o["label"] = a.label.map { .string($0) } ?? .null
        o["creationDate"] = .string(iso8601(a.creationDate))
        o["modificationDate"] = .string(iso8601(a.modificationDate))
        return o
    }

    /// Attributes as `name: value` lines for people.
    static func text(_ a: ItemAttributes) -> String {
        // Service, account, label and access group are anyone's text: shown escaped (terminalSafe).
        let t = Output.terminalSafe
        var out = "class: \(a.itemClass)\nservice: \(t(a.service))\naccount: \(t(a.account))\n"
        if let l = a.label { out += "label: \(t(l))\n" }
        out += "accessGroup: \(t(a.accessGroup))\naccessibility: \(a.accessibility)\n"
        out += "creationDate: \(iso8601(a.creationDate))\nmodificationDate: \(iso8601(a.modificationDate))\n"
        return out
    }
}

/// The options every `keychain` subcommand but init and device-state shares: `--keychain DIR`
/// and the caller (IDENTITY, ``IdentityOptions``).
struct KeychainCallerOptions: Sendable {
    /// `--keychain DIR`.
    let keychain: URL
    /// The caller's identity options.
    let identity: IdentityOptions

    init(parsing a: Arguments) throws {
        keychain = try KeychainCommands.keychainURL(a)
        identity = IdentityOptions(parsing: a, namedGroupMeaning: "the item's group")
    }

    /// The identity rules; with `required`, an identity must be given.
    /// - Throws: `CLIError` 64.
    func validate(required: Bool = true) throws {
        try identity.validate()
        if required, identity.isEmpty {
            throw CLIError.usage("missing caller identity", hint: "give --entitlements FILE, or --access-group G (repeatable), --app-group G and --application-identifier TEAMID.bundle.id")
        }
    }

    /// The caller's entitlements and the access group named next to `--entitlements`, or `nil`
    /// when no identity was given (only where ``validate(required:)`` allowed that).
    func resolve() throws -> (Entitlements, String?)? { try keyEntitlements(identity) }

    /// Opens the keychain as the caller (whose identity was validated as required).
    func open() throws -> (keychain: Keychain, accessGroup: String?) {
        guard let (entitlements, group) = try resolve() else { throw CLIError.usage("missing caller identity") }
        return (try KeychainCommands.open(keychain, as: entitlements), group)
    }
}

/// The item an item subcommand works on (get, update, delete): `--class`, `--service`, `--account`.
struct KeychainItemOptions: Sendable {
    let itemClass: ItemClass, service: String, account: String

    init(parsing a: Arguments) throws {
        itemClass = try KeychainCommands.itemClass(a)
        service = try a.required(KeychainCommands.service)
        account = try a.required(KeychainCommands.account)
    }

    /// The query for this item in `accessGroup` (`nil`: every group of the caller).
    func query(accessGroup: String?) -> ItemQuery {
        ItemQuery(itemClass: itemClass, service: service, account: account, accessGroup: accessGroup)
    }
}
