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
        KeychainDeleteCommand(), KeychainListCommand(), KeychainDeviceStateCommand(),
    ]

    static let keychainOption = OptionSpec.value("--keychain", "DIR", "the emulated device keychain directory (required)")
    static let identityOptions: [OptionSpec] = [
        .value("--entitlements", "FILE", "the caller's identity: JSON or plist with application-identifier, keychain-access-groups, application-groups"),
        .value("--access-group", "G", "without --entitlements: a keychain access group of the caller (repeat it for more, in order; the first is the default group); with --entitlements: at most one, the item's access group", repeatable: true),
        .value("--app-group", "G", "without --entitlements: an App Group (application group) of the caller (repeat it for more)", repeatable: true),
        .value("--application-identifier", "ID", "without --entitlements: the caller's application-identifier entitlement, TEAMID.bundle.id (not the bundle id alone)"),
    ]
    static let itemClassOption = OptionSpec.value("--class", "C", "item class: genericPassword (default) or key")
    static let accessibilityNames = Accessibility.allCases.map(\.rawValue).joined(separator: ", ")

    /// The usage placeholder for the caller's identity, spelled out in ``identityNote``.
    static let identityUsage = "IDENTITY"

    /// Exit-code help lines of a `keychain` subcommand: the common ones with what each means for
    /// this subcommand (`nil` leaves a code out).
    /// - Parameters:
    ///   - keychainError: what an OSStatus error (exit 1) typically is here.
    ///   - dataError: what makes the input bad (65), besides a damaged keychain file.
    ///   - noInput: which inputs can be missing (66), besides the keychain.
    ///   - cannotCreate: when 73 happens, if it can.
    ///   - opensKeychain: the subcommand opens an existing keychain (every one but init).
    ///   - readsSecrets: the subcommand seals or opens item data, which the device state can
    ///     forbid (errSecInteractionNotAllowed, exit 77).
    static func exitCodes(keychainError: String?, dataError: String? = nil, noInput: String? = nil, cannotCreate: String? = nil,
                          opensKeychain: Bool = true, readsSecrets: Bool = false) -> [String] {
        var lines = [
            "0   success",
            keychainError.map { "1   keychain error (\($0)): the OSStatus name and number on stderr, osStatus and statusName in --json; or an internal error" }
                ?? "1   internal error (stderr says what failed)",
            "64  usage error (unknown option, missing argument, an argument that is not UTF-8)",
        ]
        let damaged = opensKeychain ? ["a damaged keychain file"] : []
        let bad = (dataError.map { [$0] } ?? []) + damaged
        if !bad.isEmpty { lines.append("65  bad input data: " + bad.joined(separator: "; ")) }
        let missing = (opensKeychain ? ["no keychain at DIR"] : []) + (noInput.map { [$0] } ?? [])
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

    /// The keychain directory from `--keychain`.
    static func keychainURL(_ a: Arguments) throws -> URL {
        URL(fileURLWithPath: try a.required("--keychain", "DIR"), isDirectory: true)
    }

    /// The caller's identity and the explicit access group for the item or query (if any).
    /// - Parameter required: when `false` and no identity option is given, returns `nil`.
    static func identity(_ a: Arguments, required: Bool = true) throws -> (Entitlements, String?)? {
        if let file = a.value("--entitlements") {
            if a.has("--app-group") || a.has("--application-identifier") {
                throw CLIError.usage("--app-group and --application-identifier cannot be combined with --entitlements", hint: "put them in the entitlements file")
            }
            let groups = a.values("--access-group")
            if groups.count > 1 { throw CLIError.usage("with --entitlements, give at most one --access-group (the item's group)") }
            let entitlements: Entitlements
            do {
                entitlements = try Entitlements.load(from: URL(fileURLWithPath: file))
            } catch let e as KeychainError {
                if e.code == .keychainMissing { throw CLIError(code: "inputMissing", "no such file: \(file)", exitCode: .noInput) }
                if e.code == .decode { throw CLIError.dataError(e.reason) }
                throw cliError(e)
            }
            return (entitlements, groups.first)
        }
        let groups = a.values("--access-group"), appGroups = a.values("--app-group"), appID = a.value("--application-identifier")
        if groups.isEmpty && appGroups.isEmpty && appID == nil {
            guard required else { return nil }
            throw CLIError.usage("missing caller identity", hint: "give --entitlements FILE, or --access-group G (repeatable), --app-group G and --application-identifier TEAMID.bundle.id")
        }
        for g in groups + appGroups where g.isEmpty { throw CLIError.usage("an access group cannot be empty") }
        if appID == "" { throw CLIError.usage("--application-identifier cannot be empty") }
        return (Entitlements(applicationIdentifier: appID, keychainAccessGroups: groups, applicationGroups: appGroups), nil)
    }

    static func open(_ a: Arguments, as entitlements: Entitlements) throws -> Keychain {
        do { return try Keychain(opening: try keychainURL(a), as: entitlements) } catch let e as KeychainError { throw cliError(e) }
    }

    /// The caller's identity and the item named by `--class`, `--service`, `--account` and the
    /// identity's `--access-group` (get, update, delete); `nil` when the identity is incomplete.
    static func identifiedQuery(_ a: Arguments) throws -> (Entitlements, ItemQuery)? {
        guard let (entitlements, group) = try identity(a) else { return nil }
        let query = ItemQuery(itemClass: try itemClass(a), service: try a.required("--service", "S"),
                              account: try a.required("--account", "A"), accessGroup: group)
        return (entitlements, query)
    }

    static func itemClass(_ a: Arguments) throws -> ItemClass {
        guard let v = a.value("--class") else { return .genericPassword }
        guard let c = ItemClass(rawValue: v) else { throw CLIError.usage("unknown --class \(quoted(v))", hint: "use genericPassword or key") }
        return c
    }

    static func accessibility(_ a: Arguments, _ name: String = "--accessibility") throws -> Accessibility? {
        guard let v = a.value(name) else { return nil }
        guard let acc = Accessibility(rawValue: v) else { throw CLIError.usage("unknown \(name) \(quoted(v))", hint: "use one of \(accessibilityNames)") }
        return acc
    }

    /// Secret data from `--data-file F` (`-` = stdin) or `--data-base64 B`; `nil` when neither.
    static func data(_ a: Arguments, required: Bool) throws -> SecretBytes? {
        switch (a.value("--data-file"), a.value("--data-base64")) {
        case (.some, .some):
            throw CLIError.usage("give either --data-file or --data-base64, not both")
        case (.some(let file), nil):
            var bytes = try InputReader.readAll(file, limitByteCount: Keychain.maxDataByteCount)
            defer { SecretBytes.wipe(&bytes) }
            return SecretBytes(copying: bytes)
        case (nil, .some(let b64)):
            guard let d = Data(base64Encoded: b64) else { throw CLIError.dataError("--data-base64 is not valid base64") }
            var bytes = Array(d)
            defer { SecretBytes.wipe(&bytes) }
            return SecretBytes(copying: bytes)
        case (nil, nil):
            if required { throw CLIError.usage("missing secret data", hint: "give --data-file FILE (- for standard input) or --data-base64 B") }
            return nil
        }
    }

    /// A passcode from `--passcode-file F` (first line; `-` = stdin), or `nil`.
    static func passcode(_ a: Arguments) throws -> String? {
        guard let file = a.value("--passcode-file") else { return nil }
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
        var out = "class: \(a.itemClass)\nservice: \(a.service)\naccount: \(a.account)\n"
        if let l = a.label { out += "label: \(l)\n" }
        out += "accessGroup: \(a.accessGroup)\naccessibility: \(a.accessibility)\n"
        out += "creationDate: \(iso8601(a.creationDate))\nmodificationDate: \(iso8601(a.modificationDate))\n"
        return out
    }
}
