import PushSealJSON
import PushSealSystem
// Shared pieces of the key-lifecycle subcommands (generate, export, import, list, rotate,
// promote, prune, revoke, due): identity options, opening key stores, error mapping, JSON output.
import Foundation
import PushSealCLI
import PushSealKeychain
import PushSealKeyRecords
import PushSealServerKeys
import PushSealRegistry
import PushSealRegistryCLI

/// Options, exit codes and notes shared by the key-lifecycle commands.
enum KeyOptions {
    static let keychain = KeystoreOptions.keychain.withHelp("the keychain directory, server or device (required)")
    /// `--keychain` of rotate, which takes the device keychain as `--device-keychain`.
    static let serverKeychain = KeystoreOptions.keychain.withHelp("the server keychain directory (required)")
    /// `--keychain` of the commands that create the keychain when it does not exist (generate, import).
    static let keychainCreated = KeystoreOptions.keychain.withHelp("the keychain directory, server or device (required; created when it does not exist)")
    static let entitlements = IdentityOptions.declarations().entitlements.withHelp("identity: entitlements JSON or plist (default: the server identity, access group pushseal.server)")
    static let accessGroup = IdentityOptions.declarations().accessGroup.withHelp("without --entitlements: a keychain-access-groups entry of the identity, in order; with --entitlements: the keysets' access group (at most one)")
    static let appGroup = IdentityOptions.declarations().appGroup.withHelp("without --entitlements: an application group of the identity")
    static let auditLog = Option.text("--audit-log", "FILE", "audit lines to FILE, or - for stderr (default: DIR/keys-audit.log)")
    static let appID = KeysetOptions.appIDOption.withHelp("the app's bundle identifier, the APNs topic (required)")
    static let recipient = KeysetOptions.recipientOption.withHelp("the recipient, one app installation (required)")
    static let now = Option.integer("--now", "UNIX", "the current time in Unix seconds, 0 to 253402300799 = 9999-12-31T23:59:59Z (default: the clock)")
    /// `--accessibility` of generate and import.
    static let accessibility = KeychainCommands.accessibilityOption.withHelp(
        "accessibility of a new keyset item: \(KeychainCommands.accessibilityNames) (default afterFirstUnlockThisDeviceOnly; a class the extension cannot read while the phone is locked gets a warning)")
    /// `--grace` of import, promote and rotate.
    static func grace(_ help: String) -> Option<Int64> { gracePeriod.withHelp(help + "; now + grace must not pass 9999-12-31T23:59:59Z") }
    /// `--grace DURATION` as ``keyGrace(_:now:)`` reads it (commands list ``grace(_:)``).
    static let gracePeriod = Option.durationWithDefault("--grace", "the grace window", default: KeyTime.defaultGraceSeconds)
    /// The usage-error clause of `--now` for ``exitCodes(failure:usage:dataError:noInput:createsKeychain:cannotCreate:ioError:noPermission:)``.
    static let badNow = "a --now that is not an integer from 0 to 253402300799 (9999-12-31T23:59:59Z)"
    /// The usage-error clause of `--grace`.
    static let badGrace = "a --grace that is not a duration or takes now + grace past 9999-12-31T23:59:59Z"
    /// The identity options, and the registry's (`--registry`, `--kek-file`: every command that
    /// takes the identity opens the server store through ``KeyStoreOptions/open(create:accessibility:)``).
    static let identity = OptionSpec.list(entitlements, accessGroup, appGroup) + RegistryOptions.all
    /// The options of a command that changes keysets (and so writes audit lines).
    static let changing = [keychain.spec] + identity + [auditLog.spec]
    /// The options of a read-only command: nothing is audited.
    static let reading = [keychain.spec] + identity

    /// Exit-code help lines of a key-lifecycle command: the codes every one can exit with, plus
    /// what each means for this command.
    /// - Parameters:
    ///   - failure: exit-1 causes besides keychain OSStatus errors and internal errors.
    ///   - usage: usage errors besides unknown options, missing arguments and an identity without groups.
    ///   - dataError: bad input besides a damaged keyset or keychain or entitlements file.
    ///   - noInput: missing inputs besides the keychain and the entitlements file.
    ///   - createsKeychain: the command creates DIR when absent (66 only when DIR holds no keychain).
    ///   - cannotCreate: when 73 happens, if it can.
    ///   - ioError: what is read or written (74).
    ///   - noPermission: 77 causes besides the keychain's permissions.
    static func exitCodes(failure: String? = nil, usage: [String] = [], dataError: String? = nil, noInput: String? = nil,
                          createsKeychain: Bool = false, cannotCreate: String? = nil,
                          ioError: String = "the keychain, its lock file or the audit log", noPermission: String? = nil) -> [String] {
        var lines = [
            "0   success",
            "1   " + (failure.map { $0 + "; " } ?? "")
                + "a keychain error, e.g. errSecMissingEntitlement -34018 (an access group the identity lacks): the OSStatus name and number on stderr, osStatus and statusName in --json; or an internal error",
            "64  usage error (" + (["unknown option", "missing argument"] + usage + ["an identity without an access group or App Group", "an argument that is not UTF-8"])
                .joined(separator: ", ") + ")",
            "65  bad input data: " + ((dataError.map { [$0] } ?? []) + ["a damaged keyset or keychain file", "a malformed entitlements file"])
                .joined(separator: "; "),
            "66  " + (createsKeychain ? "DIR exists but holds no keychain" : "no keychain at DIR") + ", or its device secret not found" + (noInput.map { "; " + $0 } ?? "")
                + "; an entitlements file missing",
        ]
        if let cannotCreate { lines.append("73  " + cannotCreate) }
        lines.append("74  I/O error (\(ioError); writing standard output), or a symbolic link inside the keychain")
        lines.append("77  permission denied, or the keychain is not 0700 (files 0600) or not yours" + (noPermission.map { "; " + $0 } ?? "")
            + "; or the keychain's device state does not allow reading the keysets (" + KeychainCommands.lockedCause + ")")
        return RegistryOptions.exitCodeLines(merging: lines)
    }

    /// The IDENTITY paragraph of the notes (the usage lines' `[IDENTITY]`).
    static let identityNote = "IDENTITY: optional; as for push-keys keychain, without --application-identifier: --entitlements FILE [--access-group G], or --access-group G... [--app-group G...]. With --entitlements, one --access-group names the keysets' group; a group the identity lacks fails with errSecMissingEntitlement (-34018). Without --entitlements, the identity is given by its parts, access groups in order. Without any, the keychain is opened as the server identity (access group pushseal.server). Unless named, keysets are stored in the identity's first keychain-access-groups entry, else its first application group (the group the app shares with its Notification Service Extension)."

    /// The AUDIT paragraph of the notes, for commands that change keysets.
    static let auditNote = "AUDIT: every state change appends one JSON line (key ids only, never key bytes) to DIR/keys-audit.log (0600), or to --audit-log FILE, or to stderr with --audit-log -."

    /// The REGISTRY paragraph of the notes.
    static let registryNote = "REGISTRY: --registry URI (or $PUSHSEAL_REGISTRY without --keychain) uses a PostgreSQL registry instead of the keychain directory, e.g. --registry postgresql:///pushseal?host=/run/postgresql --kek-file /etc/pushseal/kek; the identity options do not apply there. Key bytes are wrapped under the key-encryption key of --kek-file F (or $PUSHSEAL_KEK_FILE), needed by every command that reads or writes key bytes; audit lines go to the registry's pushseal_audit table. See docs/registry.md."

    /// Help notes: the command's own paragraphs, then IDENTITY, (for commands that change
    /// keysets) AUDIT and REGISTRY, one line per paragraph, separated by blank lines.
    static func notes(_ paragraphs: [String] = [], audited: Bool) -> String {
        (paragraphs + [identityNote] + (audited ? [auditNote] : []) + [registryNote]).joined(separator: "\n\n")
    }
}

/// The store option group of the key commands: where the keysets are (``KeystoreOptions``,
/// `--keychain DIR`), who opens them (``IdentityOptions``; none: the server identity, access
/// group pushseal.server) and where audit lines go (`--audit-log`); or a PostgreSQL registry
/// (`--registry URI --kek-file F`, ``KeystoreOptions/registry``), opened by ``open(create:accessibility:)``.
struct KeyStoreOptions: CommandOptions {
    /// `--keychain DIR`, or `--registry URI` with `--kek-file F`.
    let keystore: KeystoreOptions
    /// `--entitlements`, `--access-group`, `--app-group`.
    let identity: IdentityOptions
    /// `--audit-log FILE` (`-`: stderr), `nil` for DIR/keys-audit.log.
    let auditLog: String?

    init(parsing a: Arguments) throws {
        keystore = try KeystoreOptions(parsing: a, allowingRegistry: true)
        identity = IdentityOptions(parsing: a)
        auditLog = a.declares(KeyOptions.auditLog) ? a[KeyOptions.auditLog] : nil  // commands that change keys offer it
    }

    func validate() throws { try identity.validate() }

    /// Where the audit lines go.
    var audit: KeyAudit {
        guard let v = auditLog else { return .keychainFile }
        return v == "-" ? .standardError : .file(v)
    }

    /// Opens the key store as the options say: the registry of `--registry`, else the file
    /// keychain as the identity options say, seen (as every key command sees its store) through
    /// the `ServerKeyStore` protocol. Validate every option before calling it: with `create`, it
    /// creates the keychain.
    /// - Parameter create: create the keychain directory when it does not exist (generate, import).
    func open(create: Bool = false, accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly) throws -> any ServerKeyStore {
        if let registry = keystore.registry { return try registry.open() }
        return try openKeychain(create: create, accessibility: accessibility)
    }

    /// Opens the file keychain itself (``KeyStore``), for what only a keychain does: a device's
    /// import of a revocation record. Same rules as ``open(create:accessibility:)``.
    /// - Throws: a usage error when `--registry` was given instead of `--keychain`.
    func openKeychain(create: Bool = false, accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly) throws -> KeyStore {
        guard let path = keystore.keychainPath else { throw CLIError.usage("missing --keychain DIR") }
        let url = URL(fileURLWithPath: path)
        let (entitlements, group) = try keyEntitlements(identity) ?? (KeyStore.serverIdentity, nil)
        return try keyMapErrors {
            if create, !FileManager.default.fileExists(atPath: url.path) {
                // A server keychain made on the fly: its device secret beside it (DIR.secret), not inside.
                // PUSHSEAL_DEVICE_SECRET_FILE, when set, names the place instead.
                let env = ProcessInfo.processInfo.environment[Keychain.deviceSecretFileVariable] ?? ""
                try Keychain.create(at: url, deviceSecret: env.hasPrefix("/") ? .file(env) : .besideDirectory)
            }
            return try KeyStore(keychain: try Keychain(opening: url, as: entitlements), accessGroup: group,
                                accessibility: accessibility, audit: audit)
        }
    }
}

/// The entitlements of an identity option group, and the access group named next to
/// `--entitlements` (`nil` when none); `nil` when no identity option was given.
/// - Throws: `CLIError` 66 for a missing entitlements file, 65 for a malformed one.
func keyEntitlements(_ identity: IdentityOptions) throws -> (Entitlements, String?)? {
    try identity.resolve(load: { try Entitlements.load(from: URL(fileURLWithPath: $0)) },
                         make: { Entitlements(applicationIdentifier: $0, keychainAccessGroups: $1, applicationGroups: $2) })
        .map { ($0.entitlements, $0.accessGroup) }
}

/// `--now`, else the clock: Unix seconds from 0 to `KeyTime.maxTimeSeconds` (9999-12-31T23:59:59Z).
/// - Throws: `CLIError` (64) for a value that is not an integer or is out of that range.
func keyNow(_ a: Arguments) throws -> Int64 {
    let now = try a[KeyOptions.now] ?? KeyTime.now()
    try keyUsageErrors { try KeyTime.checkTime(now, named: a.has(KeyOptions.now) ? KeyOptions.now.name : "the clock") }
    return now
}

/// `--grace` (its declared default: `KeyTime.defaultGraceSeconds`) for a command running at `now` (from ``keyNow(_:)``): a duration
/// that keeps `now + grace` at or before `KeyTime.maxTimeSeconds`.
/// - Throws: `CLIError` (64) for a malformed or too long grace.
func keyGrace(_ a: Arguments, now: Int64) throws -> Int64 {
    let grace = try a[KeyOptions.gracePeriod]
    _ = try keyUsageErrors { try KeyTime.time(now, plus: grace, named: KeyOptions.gracePeriod.name, nowNamed: a.has(KeyOptions.now) ? KeyOptions.now.name : "now") }
    return grace
}

/// Runs a check of option values, turning its `KeysError` into a usage error (exit 64) with the
/// same message.
func keyUsageErrors<R>(_ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let e as KeysError {
        throw CLIError(code: e.code.name, e.reason, exitCode: .usage)
    }
}

extension KeysetOptions {
    /// Checks the app id by the keyset naming rule (`KeyID.validateAppID`, FORMAT.md §3.2).
    /// - Throws: `CLIError` 64 `invalidName`.
    func validateNames() throws { try keyUsageErrors { try KeyID.validateAppID(appID) } }
}

/// `--app-id` when given, checked by the keyset naming rule (`KeyID.validateAppID`, the rule
/// push-seal and push-open apply to their `--app-id`).
/// - Throws: `CLIError` 64 `invalidName` for a malformed app id.
func keyAppID(_ a: Arguments) throws -> String? {
    guard let app = a[KeysetOptions.appIDOption] else { return nil }
    try keyUsageErrors { try KeyID.validateAppID(app) }
    return app
}

/// Runs `body`, turning library errors into CLI errors with STYLE.md exit codes.
func keyMapErrors<R>(_ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let e as CLIError {
        throw e
    } catch let e as RegistryError {
        throw RegistryOptions.cliError(e)
    } catch let e as KeysError {
        let exit: ExitCode
        var hint: String?
        switch e.code {
        case .unknownKeyset, .unknownKey:
            exit = .noInput
            if e.code == .unknownKeyset { hint = "run 'push-keys list --keychain DIR' to see the keysets, or 'push-keys generate' to create one" }
        case .keysetExists: exit = .cannotCreate
        case .malformedRecord, .wrongAppID, .duplicateKeyID, .corruptKeyset, .keysetRolledBack, .corruptKey, .lowOrderPoint,
             .lowOrderPublicKey, .staleRegistration, .futureRegistration, .registrationRevoked: exit = .dataError
        case .sealCountInUse: exit = .dataError; hint = "seal with the key in one store only; if the other store has stopped sealing with it for good, import again with --accept-seal-count (keys.md: one key, one sealing store)"
        case .invalidName, .noSharedAccessGroup, .timeOutOfRange: exit = .usage
        case .io: exit = .ioError
        case .noPrimaryKey: exit = .failure; hint = "run 'push-keys rotate' to give the keyset a new primary key"
        case .sealLimitReached: exit = .failure; hint = "run 'push-keys rotate' for this keyset"
        default: exit = .failure
        }
        throw CLIError(code: e.code.name, e.reason, hint: hint, exitCode: exit)
    } catch let e as KeychainError {
        throw CLIError(keychain: e)
    }
}

// MARK: JSON output (one object on stdout)

/// Command output as JSON values (``JSONValue``).
enum KeyJSON {
    static func opt(_ v: Int64?) -> JSONValue { v.map { .integer($0) } ?? .null }

    static func key(_ k: KeyInfo) -> JSONValue {
        // sealCount is at most 2^32 (the nonce limit), so it fits an Int64.
        .object(JSONObject([("keyId", .string(k.keyID)), ("status", .string(k.status.rawValue)), ("createdAt", .integer(k.createdAt)),
                 ("promotedAt", opt(k.promotedAt)), ("retiredAt", opt(k.retiredAt)), ("notAfter", opt(k.notAfter)),
                 ("sealCount", .integer(Int64(clamping: k.sealCount)))]))
    }

    static func keyset(_ ks: KeysetInfo) -> JSONValue {
        .object(JSONObject([("appId", .string(ks.appID)), ("recipient", .string(ks.recipient)), ("accessGroup", .string(ks.accessGroup)),
                 ("primaryKeyId", ks.primary.map { .string($0.keyID) } ?? .null),
                 ("rotationKeyId", ks.rotationKeyID.map { .string($0) } ?? .null), ("keys", .array(ks.keys.map(key)))]))
    }
}

func keyPrintJSON(_ v: JSONValue) { Output.stdout(Output.json(v) + "\n") }

/// Formats Unix seconds as `2026-01-01T00:00:00Z` for text output.
func keyTime(_ t: Int64?) -> String {
    guard let t else { return "-" }
    let f = ISO8601DateFormatter()
    f.timeZone = TimeZone(identifier: "UTC")
    return f.string(from: Date(timeIntervalSince1970: TimeInterval(t)))
}
