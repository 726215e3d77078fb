import PushSealSystem
import Foundation
import PushSealCLI
import PushSealCrypto
import PushSealWire
import PushSealKeyRecords
import PushSealServerKeys
import PushSealServerKeyProviders
import PushSealRegistryCLI
import PushSealSender
import PushSealServer

/// push-seal's own exit codes, beyond the common ones.
enum SealExit {
    /// 2: `batch` processed every line but at least one failed (its output line says why).
    static let someLinesFailed = ExitCode(2)
    /// 3: the payload is over the 4096-byte APNs budget (without `--fit`), or cannot be fitted.
    static let tooLarge = ExitCode(3)
    /// 4: the recipient's primary key reached 2^32 seals (rotate the keyset).
    static let sealLimit = ExitCode(4)
    /// 67 `EX_NOUSER`: unknown recipient, or no usable primary key (destroyed or disabled).
    static let unknownRecipient = ExitCode(67)

    /// Exit-code help lines of the single seal (`push-seal [options] NOTIFICATION.json`).
    static let sealHelpLines = [
        "0   success: the payload (with --with-headers, {headers, payload}) is on stdout",
        internalErrorLine,
        "3   payload over the 4096-byte APNs budget (add --fit), or --fit cannot make it fit, or the clear part alone (fallback alert, --sound, …) is over it",
        "4   the recipient's primary key reached 2^32 seals: rotate the keyset (push-keys rotate)",
        "64  usage error (unknown option, missing argument, no notification, an invalid APNs option such as --priority 7, an empty fallback title or body, an --app-id or --recipient that breaks the naming rules, a --ttl past 9999-12-31T23:59:59Z)",
        "65  bad notification: not UTF-8, not JSON, wrong JSON types, over 1 MiB, empty or white-space-only title, subtitle and body, a member a device would reject (media.url not an absolute http(s) URL, a bad locale tag), or a time out of range; an argument that is not UTF-8",
        "66  NOTIFICATION.json missing or a directory, or no keychain at DIR (not a directory, or not a keychain)",
        "67  unknown recipient (no keyset and no v2 registration; with --format, none of that version), or the recipient's primary key is destroyed or disabled, or its v2 registration revoked",
        "74  I/O error (reading the input or writing standard output), or a damaged keychain, or a full one (keyStoreUnwritable: errSecDiskFull -34, the seal count cannot be recorded)",
        "77  permission denied, the keychain is group- or world-accessible (it must be 0700), or its device state does not allow reading the keyset (errSecInteractionNotAllowed -25308, e.g. beforeFirstUnlock: unlock it)",
    ].withRegistry(lostMidRun: "74 (keyStoreUnreadable)")

    /// Exit-code help lines of `push-seal batch`: failures of single lines are in the output.
    static let batchHelpLines = [
        "0   success: every line was sealed",
        internalErrorLine,
        "2   at least one line failed (its output line says why); every other line was sealed and written",
        "64  usage error (unknown option, missing argument, an invalid APNs option, an --app-id that breaks the naming rules, a --ttl past 9999-12-31T23:59:59Z, --jobs not 1 to 256, a --first-line that is not an integer of at least 1, an argument that is not UTF-8)",
        "66  LINES.jsonl missing or a directory, or no keychain at DIR (not a directory, or not a keychain)",
        "74  I/O error reading the input or writing the output, or a damaged keychain (a full keychain fails each line as keyStoreUnwritable, exit 2)",
        "77  permission denied, or the keychain is group- or world-accessible (it must be 0700)",
        "130 stopped by SIGINT or SIGTERM: the lines read were sealed and written, stderr says 'stopped after line N'",
    ].withRegistry(lostMidRun: "the line's error keyStoreUnreadable (exit 2)")

    /// Exit-code help lines of `push-seal media`.
    static let mediaHelpLines = [
        "0   success: the descriptor is on stdout (or in --descriptor-out FILE), the blob in BLOB",
        internalErrorLine,
        "64  usage error (unknown option, missing FILE or --out, --url not an absolute https:// or http:// URL, --type not a MIME type type/subtype, no --descriptor-out while stdout is a terminal or a regular file that is not 0600, an argument that is not UTF-8)",
        "65  FILE is empty or larger than 64 MiB",
        "66  FILE missing (or a directory)",
        "73  BLOB cannot be created (it exists: add --force; or it is a symbolic link), or the --descriptor-out FILE exists or cannot be created",
        "74  I/O error (reading FILE, writing BLOB, the descriptor or standard output)",
        "77  permission denied reading FILE or writing BLOB or the descriptor",
    ]

    /// Exit 1 as PushSealCLI's `Tool` uses it (and a failed seal).
    static let internalErrorLine = "1   internal error (stderr says what failed)"
}

extension SealCommand {
    /// 65: the single seal's help documents text that is not UTF-8 as bad input (65), so an
    /// argument that is not UTF-8 (`--title $'\xff'`) exits 65 too, not the default 64.
    var notUTF8ExitCode: ExitCode { .dataError }
}

/// Checks a command's required options in the order its USAGE line names them, so the first
/// one missing is reported (not whichever the code happens to read first).
/// - Parameters:
///   - a: the parsed arguments.
///   - options: the required text options in USAGE order, e.g. ``SealOptionSpecs/appID``.
///   - helpCommand: the help to point at, e.g. `push-seal --help`.
/// - Throws: `CLIError` 64 `missing NAME VALUE` with `hint: see 'HELP'`.
func requireInUsageOrder(_ a: Arguments, _ options: [Option<String?>], helpCommand: String) throws {
    // With --registry (or $PUSHSEAL_REGISTRY), --keychain is not needed.
    let registry = ((try? RegistryLocation(parsing: a)) ?? nil) != nil
    for o in options where (a[o] ?? "").isEmpty && !(registry && o.name == KeystoreOptions.keychain.name) {
        throw CLIError.usage("missing \(o.name) \(o.spec.valueName)", hint: "see '\(helpCommand)'")
    }
}

/// The options shared by the single seal, `batch` and `retract`, each declared once (parsed by
/// ``SealOptionGroup``).
enum SealOptionSpecs {
    /// `--app-id APP`.
    static let appID = KeysetOptions.appIDOption.withHelp("the app's bundle identifier (APNs topic), bound into the AAD (required)")
    /// `--keychain DIR`.
    static let keychain = KeystoreOptions.keychain.withHelp("the server keychain holding the recipients' keysets and v2 registrations (required unless --registry; push-keys generate makes one)")
    /// `--format v1|v2` (``sealFormat(_:)``).
    static let format = Option.text("--format", "V", "v1 or v2: seal only that wire format (default: v2 for a recipient with a v2 registration, v1 for one with a keyset; v2 is auth mode when the app has a sender key)")
    /// `--fallback-title TEXT`.
    static let fallbackTitle = Option.text("--fallback-title", "TEXT", "clear-text alert title (default \"\(FallbackAlert.defaultTitle)\")")
    /// `--fallback-body TEXT`.
    static let fallbackBody = Option.text("--fallback-body", "TEXT", "clear-text alert body (default \"\(FallbackAlert.defaultBody)\")")
    /// `--ttl DURATION`.
    static let ttl = Option.duration("--ttl", "expiry for notifications without their own exp or ttl, from now (default 30d, the keys' grace window): sets exp (checked on the device) and apns-expiration; 0 is APNs' \"deliver now or never\" (apns-expiration 0, sealed exp = iat + 60 s); exp must not pass 9999-12-31T23:59:59Z")
    /// `--no-expiry`.
    static let noExpiry = Option.flag("--no-expiry", "seal no exp and send no apns-expiration for notifications without their own exp or ttl (the device's replay guard then keeps their id for 30 days after iat and refuses them after that)")
    /// `--priority N`.
    static let priority = Option.integer("--priority", "N", "apns-priority: 10 (default) or 5")
    /// `--collapse-id ID`.
    static let collapseID = Option.text("--collapse-id", "ID", "apns-collapse-id (at most 64 bytes)")
    /// `--sound NAME`.
    static let sound = Option.text("--sound", "NAME", "aps.sound, in clear")
    /// `--badge N`.
    static let badge = Option.integer("--badge", "N", "aps.badge, in clear")
    /// `--thread-id ID`.
    static let threadID = Option.text("--thread-id", "ID", "aps.thread-id, in clear")
    /// `--category ID`.
    static let category = Option.text("--category", "ID", "aps.category, in clear")
    /// `--interruption-level LEVEL`.
    static let interruptionLevel = Option.text("--interruption-level", "LEVEL", "aps.interruption-level: passive, active, time-sensitive, critical")
    /// `--relevance-score X`.
    static let relevanceScore = Option.text("--relevance-score", "X", "aps.relevance-score, 0 to 1")
    /// `--target-content-id ID`.
    static let targetContentID = Option.text("--target-content-id", "ID", "aps.target-content-id, in clear")
    /// `--filter-criteria ID`.
    static let filterCriteria = Option.text("--filter-criteria", "ID", "aps.filter-criteria, in clear")
    /// `--fit`.
    static let fit = Option.flag("--fit", "over budget: drop padding, then media, then shorten the body with an ellipsis")
    /// `--no-padding`.
    static let noPadding = Option.flag("--no-padding", "do not pad the plaintext to its Padmé length (padding hides the exact text length from APNs)")

    /// The app, the store and the format.
    static let keys: [OptionSpec] = OptionSpec.list(appID, keychain, format) + RegistryOptions.all
    /// The payload options of the single seal and `batch`.
    static let payload: [OptionSpec] = OptionSpec.list(fallbackTitle, fallbackBody, ttl, noExpiry, priority, collapseID, sound, badge,
                                                       threadID, category, interruptionLevel, relevanceScore, targetContentID,
                                                       filterCriteria, fit, noPadding)
    /// The payload options of `retract` (its payload is fixed: no alert, background priority).
    static let retractPayload: [OptionSpec] = OptionSpec.list(ttl, noExpiry, noPadding)
}

/// The seal option group of the single seal and `batch`: `--app-id`, the keystore
/// (``KeystoreOptions``, `--keychain DIR`) and the payload options (``SealOptionSpecs/payload``)
/// as the sender's `SealOptions`. A new payload option is one declaration in ``SealOptionSpecs``
/// and one line here.
struct SealOptionGroup: Sendable {
    /// `--app-id APP`.
    let appID: String
    /// `--keychain DIR`, or `--registry URI` with `--kek-file F`.
    let keystore: KeystoreOptions
    /// The payload options (fallback alert, APNs headers and aps fields, `--fit`, padding).
    let options: SealOptions
    /// `--format v1|v2`, `.automatic` without it.
    let format: SealFormatPolicy

    /// Reads the group; `--app-id` and `--keychain` must be present (the command checks them
    /// first, in its USAGE order).
    /// - Throws: `CLIError` 64 for a malformed number or duration.
    init(parsing a: Arguments) throws {
        typealias S = SealOptionSpecs
        appID = try a.required(S.appID)
        keystore = try KeystoreOptions(parsing: a, allowingRegistry: true)
        format = try sealFormat(a)
        var options = SealOptions()
        if a[S.noExpiry] {
            guard !a.has(S.ttl) else { throw CLIError.usage("give either --ttl or --no-expiry, not both") }
            options.defaultTTLSeconds = nil
        } else if let ttl = try a[S.ttl] {
            options.defaultTTLSeconds = ttl
        }
        options.padding = !a[S.noPadding]
        // The alert and APNs options: every payload option but the three above, which are all
        // that `push-seal retract` offers (its payload is fixed: no alert, background priority).
        guard a.declares(S.fallbackTitle) else {
            self.options = options
            return
        }
        options.fallback = FallbackAlert(title: a[S.fallbackTitle] ?? FallbackAlert.defaultTitle,
                                         body: a[S.fallbackBody] ?? FallbackAlert.defaultBody)
        if let p = try a[S.priority] { options.priority = Int(truncatingIfNeeded: p) }
        options.collapseID = a[S.collapseID]
        options.aps = APSFields(sound: a[S.sound], badge: try a[S.badge], threadID: a[S.threadID],
                                category: a[S.category], interruptionLevel: a[S.interruptionLevel],
                                relevanceScore: try a[S.relevanceScore].map { v in
                                    guard let d = Double(v) else { throw CLIError.usage("--relevance-score needs a number from 0 to 1, got \(quoted(v))") }
                                    return d
                                }, targetContentID: a[S.targetContentID], filterCriteria: a[S.filterCriteria])
        options.fit = a[S.fit]
        self.options = options
    }

    /// The app id's naming rule (FORMAT.md §3.2), before any keychain is read.
    /// - Throws: `CLIError` 64.
    func validate() throws {
        try checkKeysetNames(appID: appID)
    }

    /// Opens the server store (the keychain of `--keychain DIR` or the registry of
    /// `--registry URI`; every seal counts against the primary key's limit) and builds the
    /// sealer; the sender refuses a bad APNs option here (64).
    /// - Throws: `CLIError` (registry errors with the codes of `RegistryLocation.open()`).
    func sealer() throws -> NotificationSealer { try sealerAndStore().sealer }

    /// The app's sealing sender key id as the store says now (its primary), for a running batch
    /// to notice a promotion or rotation; `nil` when the store has none or cannot say.
    func currentSenderKeyID(in store: any ServerKeyStore) -> String? {
        guard format != .v1, let registrations = store as? any RegistrationStore else { return nil }
        return (try? registrations.senderKeys(appID: appID))?.last { $0.status == .primary }?.keyID
    }

    /// ``sealer()``, the server store it seals from (for `batch --device-tokens`) and the sender
    /// key id it seals auth mode with (`nil`: none, base mode or version 1 only).
    /// - Throws: as ``sealer()``.
    func sealerAndStore() throws -> (sealer: NotificationSealer, store: any ServerKeyStore, senderKeyID: String?) {
        let store: ServerStore
        if let registry = keystore.registry {
            store = try RegistryOptions.mapping { try ServerStore.open(.registry(connectionString: registry.connectionString, kekFile: registry.kekFile)) }
        } else if let path = keystore.keychainPath {
            store = try mappingSenderErrors { try ServerStore.open(.keychain(path: path)) }
        } else {
            throw CLIError.usage("missing --keychain DIR")
        }
        let made = try mappingSenderErrors { try store.sealerAndSenderKey(SealerConfiguration(appID: appID, options: options, format: format)) }
        return (made.sealer, store.store, made.senderKeyID)
    }
}

/// Runs `body`, turning a `SenderError` (or an error that converts to one, such as a key
/// provider's `SealingKeyError`) into the CLI error of ``cliError(_:)``.
func mappingSenderErrors<R>(_ body: () throws -> R) throws -> R {
    do {
        return try body()
    } catch let e as SenderError {
        throw cliError(e)
    } catch let e as any SenderErrorConvertible {
        throw cliError(e.senderError)
    }
}

/// Checks `--app-id` and `--recipient` by the keyset naming rules (PushSealKeyRecords' `KeyID`, the
/// `--app-id` rule push-open and push-keys apply too) before any keychain is read.
/// - Throws: `CLIError` 64 `invalidOption` naming the rule.
func checkKeysetNames(appID: String? = nil, recipient: String? = nil) throws {
    do {
        if let appID { try KeyID.validateAppID(appID) }
        if let recipient { try KeyID.validateRecipient(recipient) }
    } catch let e as KeysError {
        throw cliError(SenderError(.invalidOption, e.reason))
    }
}

extension [String] {
    /// Exit-code help lines (in numeric order, 77 present) with a registry's (`--registry`):
    /// 69 before the first code above it, the KEK's causes added to 77, 78 after it.
    /// - Parameter lostMidRun: what a seal fails with when the database is lost later.
    func withRegistry(lostMidRun: String) -> [String] {
        let unreachable = "69  with --registry: the database cannot be reached when the command starts (refused, no socket, authentication failed); lost later for more than 30 s, a seal fails with \(lostMidRun)"
        let schema = "78  with --registry: the registry's schema is older than this build (run push-keys registry migrate) or newer (refused)"
        var lines: [String] = []
        // 69 and 78 go in numeric order among the tool's own lines.
        for line in self {
            let code = Int(line.prefix(3).trimmingCharacters(in: .whitespaces)) ?? 0
            if code > 69, !lines.contains(unreachable) { lines.append(unreachable) }
            if code > 78, !lines.contains(schema) { lines.append(schema) }
            lines.append(code == 77 ? line + "; with --registry: the --kek-file (or $PUSHSEAL_KEK_FILE) is not private (0600, yours, not a link) or not 32 bytes, or not the registry's key-encryption key" : line)
        }
        if !lines.contains(unreachable) { lines.append(unreachable) }
        if !lines.contains(schema) { lines.append(schema) }
        return lines
    }
}

/// Maps a sender error to the CLI's exit codes.
extension SealExit {
    /// The hint the single seal gives for a failure with this code (`nil` for codes whose
    /// remedy depends on the line, such as `invalidJSON`), for `push-seal batch`'s summary.
    static func hint(forFailureCode name: String) -> String? {
        let codes: [SenderError.Code] = [.keyStoreLocked, .keyStoreInsecure, .keyStoreMissing, .keyStoreUnreadable, .keyStoreUnwritable, .unknownRecipient,
                                         .noDeviceToken, .keyUnavailable, .sealLimitReached, .payloadTooLarge, .clearPartTooLarge]
        guard let code = codes.first(where: { $0.name == name }) else { return nil }
        return cliError(SenderError(code, "")).hint
    }
}

func cliError(_ e: SenderError) -> CLIError {
    switch e.code {
    case .payloadTooLarge:
        return CLIError(code: e.code.name, e.reason, hint: "add --fit to drop padding, then media, then shorten the body", exitCode: SealExit.tooLarge)
    case .cannotFit:
        return CLIError(code: e.code.name, e.reason, hint: "shorten the title, subtitle, localizations or data", exitCode: SealExit.tooLarge)
    case .clearPartTooLarge:
        return CLIError(code: e.code.name, e.reason, hint: "shorten what travels in clear: --fallback-title, --fallback-body, --sound, --thread-id, --category (--fit shortens only the sealed body)", exitCode: SealExit.tooLarge)
    case .unknownRecipient:
        return CLIError(code: e.code.name, e.reason, hint: "list the keysets with: push-keys list --keychain DIR (v2 registrations: push-keys registrations --keychain DIR)", exitCode: SealExit.unknownRecipient)
    case .noDeviceToken:
        return CLIError(code: e.code.name, e.reason, hint: "store the app's token: push-keys token add --keychain DIR --app-id APP --recipient R --environment production TOKEN (list them: push-keys token list)", exitCode: SealExit.unknownRecipient)
    case .keyUnavailable:
        return CLIError(code: e.code.name, e.reason, hint: "give the keyset a new primary key: push-keys rotate --keychain DIR --app-id APP --recipient R", exitCode: SealExit.unknownRecipient)
    case .sealLimitReached:
        return CLIError(code: e.code.name, e.reason, hint: "rotate the keyset: push-keys rotate --keychain DIR --app-id APP --recipient R", exitCode: SealExit.sealLimit)
    case .keyStoreMissing:
        return CLIError(code: e.code.name, e.reason, hint: e.suggestion ?? "create one with: push-keys generate --keychain DIR --app-id APP --recipient R",
                        exitCode: .noInput)
    case .keyStoreInsecure:
        return CLIError(code: e.code.name, e.reason, hint: e.suggestion ?? KeychainHint.permissions, exitCode: .noPermission)
    case .keyStoreLocked:
        return CLIError(code: e.code.name, e.reason, hint: KeychainHint.unlock, exitCode: .noPermission)
    case .keyStoreUnreadable:
        return CLIError(code: e.code.name, e.reason, hint: e.suggestion, exitCode: .ioError)
    case .keyStoreUnwritable:
        return CLIError(code: e.code.name, e.reason, hint: e.suggestion ?? "free space on the keychain's file system and retry", exitCode: .ioError)
    case .invalidOption, .emptyFallbackAlert:
        return CLIError(code: e.code.name, e.reason, exitCode: .usage)
    case .sealFailed:
        return CLIError(code: e.code.name, e.reason, exitCode: .failure)
    case .emptyNotification:
        return CLIError(code: e.code.name, e.reason, hint: "give --title or --body, or a title or body in the notification, with a character that is not white space (a device would show nothing: blankContent)", exitCode: .dataError)
    default:
        return CLIError(code: e.code.name, e.reason, exitCode: .dataError)
    }
}
