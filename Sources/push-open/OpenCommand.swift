import PushSealJSON
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCLI
import PushSealCrypto
import PushSealExtension
import PushSealKeyRecords
import PushSealDeviceKeyProviders
import PushSealWire
import PushSealKeychain

/// `push-open`: runs one payload through the emulated host and the decrypting service
/// extension, reading the key from an emulated device keychain as the extension's identity,
/// and prints one JSON object describing what the user sees.
struct OpenCommand: OptionsCommand {
    let path: [String] = []

    static let keychain = KeystoreOptions.keychain.withHelp("the device keychain directory (required; push-keys keychain init makes one)")
    static let appID = KeysetOptions.appIDOption.withHelp("the app's bundle identifier (APNs topic), bound into the AAD (required; never read from the payload)")
    static let entitlements = IdentityOptions.declarations().entitlements.withHelp("the extension's identity: JSON or plist with keychain-access-groups and application-groups")
    static let accessGroup = IdentityOptions.declarations().accessGroup.withHelp("without --entitlements: a keychain access group of the extension (repeat it for more, in order); with --entitlements: at most one, the group the key is read from (default: every group of the identity)")
    static let appGroup = IdentityOptions.declarations().appGroup.withHelp("without --entitlements: an App Group of the extension (repeat it for more; the first is the media and replay container)")
    static let locale = Option.text("--locale", "L", "the device locale, e.g. pt-BR: picks the sealed localization and the --strings table (default: the notification's default texts)")
    static let budget = Option.text("--budget", "SECONDS", "the extension's time budget in seconds, up to 3600, e.g. 30 or 2.5 (default 30)")
    static let now = Option.integer("--now", "UNIX", "the device clock for exp and key grace windows, seconds since 1970 UTC, 0 to 253402300799 = 9999-12-31T23:59:59Z (default: now)")
    static let noReplayGuard = Option.flag("--no-replay-guard", "for trying a payload repeatedly: do not check or record its id in the replay cache (the guard is on by default, as on a device)")
    static let failAttachmentStore = Option.flag("--fail-attachment-store", "emulate iOS failing to move the attachment into its own store when the content is handed back: the text is shown without it (reason media:storeFailed)")
    static let allowInsecureLoopback = Option.flag("--allow-insecure-loopback", "allow plain http media from 127.0.0.1, ::1 and localhost (tests)")
    static let verbose = Option.flag("--verbose", "print the diagnostic lines (stages, durations, sizes; never plaintext) on stderr")
    static let asApp = Option.flag("--as-app", "run the payload through the app's background handler instead of the extension (a retract: remove the delivered notifications it lists, show nothing; FORMAT.md §5.1)")
    static let delivered = Option.flag("--delivered", "print the emulated notification center (the notifications delivered so far, in the App Group container) instead of opening a payload")
    static let requestID = Option.text("--request-id", "ID", "the notification request's identifier, recorded in the notification center and naming the attachment store's directory (default: push-open- and the first 32 hex digits of the payload's SHA-256, so the same payload is the same request)")

    let options: [OptionSpec] = [
        OpenCommand.keychain.spec,
        OpenCommand.appID.spec,
        OpenCommand.entitlements.spec,
        OpenCommand.accessGroup.spec,
        OpenCommand.appGroup.spec,
        OpenCommand.locale.spec,
        OpenCommand.stringsOption.spec,
        OpenCommand.budget.spec,
        OpenCommand.now.spec,
        OpenCommand.noReplayGuard.spec,
        OpenCommand.failAttachmentStore.spec,
        OpenCommand.allowInsecureLoopback.spec,
        OpenCommand.verbose.spec,
        OpenCommand.asApp.spec,
        OpenCommand.delivered.spec,
        OpenCommand.requestID.spec,
    ]

    let help = HelpText(
        overview: """
            run a PushSeal APNs payload through an emulated Notification Service Extension and print \
            one JSON object on what the device displays: outcome (decrypted, decryptedWithoutMedia, \
            original, notInvoked), reason (a stable token, see docs/fallback.md), detail, title, \
            subtitle, body, attachments, userInfo and elapsedMs; the key is read by the payload's \
            key_id from the device keychain as the extension's identity; the app id comes from \
            --app-id, never from the payload
            """,
        usage: [
            "push-open --keychain DIR --app-id APP --entitlements FILE [--access-group G] [options] [PAYLOAD.json | -]",
            "push-open --keychain DIR --app-id APP --access-group G... [--app-group G...] [options] [PAYLOAD.json | -]",
            "push-open --keychain DIR --app-id APP (--entitlements FILE | --access-group G... --app-group G...) --as-app [PAYLOAD.json | -]",
            "push-open --keychain DIR --app-id APP (--entitlements FILE | --access-group G... --app-group G...) --delivered",
        ],
        examples: [
            "push-open --keychain device-kc --app-id com.example.app --entitlements ext.json payload.json",
            "push-seal ... | push-open --keychain device-kc --app-id com.example.app --access-group TEAMID.shared --app-group group.com.example -",
            "push-open --keychain device-kc --app-id com.example.app --entitlements ext.json --locale pt-BR --now 1796000000 payload.json",
        ],
        exitCodes: [
            "0   decrypted (with or without its media): the result object is on stdout",
            "1   original content shown (a fallback: see reason), with the result object on stdout; without one, an internal or keychain error (stderr says which)",
            "2   extension not invoked (no alert, or mutable-content is not the integer 1), with the result object on stdout",
            "64  usage error (unknown option, missing argument, no identity, an --app-id that is not a bundle identifier (A-Z a-z 0-9 . -), --budget out of range, a --now that is not an integer from 0 to 253402300799, an argument that is not UTF-8)",
            "65  the payload is not JSON or is over 1 MiB, or it is push-seal's {headers, payload} wrapper or a batch error line (pass the payload member); a damaged keychain or entitlements file; a --strings file that does not parse (invalidStrings, with its line)",
            "66  payload file, entitlements file or keychain missing; no Localizable.strings under --strings DIR for the locale",
            "74  I/O error (reading the input, the keychain, or writing standard output), or a symbolic link inside the keychain",
            "77  permission denied, or the keychain is group- or world-accessible (it must be 0700)",
        ],
        notes: """
            OUTPUT: {"outcome", "reason", "detail", "title", "subtitle", "body", "attachments": [{"identifier", "url", "type", "byteCount"}], "userInfo", "badge", "sound": {"name", "critical", "volume"}, "threadIdentifier", "categoryIdentifier", "interruptionLevel", "relevanceScore", "targetContentIdentifier", "filterCriteria", "elapsedMs"}; title, subtitle, body, userInfo and the presentation members are null when nothing is shown (a background push). The displayed texts are never error text: every failure shows the alert exactly as sent. After a successful open, thread, category, interruption level and sound are the sealed aps's; without one the clear category is dropped, the level is at most active and a critical sound plays as the default sound (docs/FORMAT.md §5).

            LOCALIZED FALLBACK: a fallback alert with title-loc-key, subtitle-loc-key or loc-key (and their -args) is shown as iOS shows it: the key's string from the app's Localizable.strings (--strings DIR, the table for --locale) with the args in its %@ and %1$@ (%% is %; a specifier without its argument stays as written, extra arguments are left out); a key the table lacks, or every key without --strings, shows as the key itself, never as a blank alert. The file: "key" = "value"; lines, /* */ and // comments, the usual backslash escapes and \\U escapes, UTF-8 or UTF-16 with its byte order mark.

            VERSION 2: a wire format v2 (HPKE) payload opens with the app's v2 device key under its key_id and the sender keys the app pinned, read from the keychain as the extension's identity (docs/keychain.md "Device key items": push-keys device generate / import / rotate / pin-sender write them); once any sender key is pinned a base-mode payload is refused (downgradeRefused). A v1 payload reads only v1 keys, a v2 payload only v2 device keys.

            ATTACHMENTS: as iOS does when the content is handed back, the attachment file is moved into the system's own store, DIR/\(OpenCommand.attachmentStoreName)/<notification>/ (one directory per notification, named by the payload's digest: opening the same payload again replaces it), and the result's url names it there; nothing stays in the App Group container. --fail-attachment-store makes that move fail as it may on a phone: the decrypted text is shown without the attachment, once (decryptedWithoutMedia, media:storeFailed).

            NOTIFICATION CENTER: every notification the extension delivers (decrypted or the original content) is recorded, as iOS lists it, with its request identifier (--request-id, else a random UUID) and its userInfo — after a successful open the delivered aps, the sealed data under "pushseal" and the decrypted id under "pushseal-id" — in DIR/app-groups/GROUP/\(DeliveredNotificationCenter.fileName) (the \(DeliveredNotificationCenter.defaultCapacity) most recent). --delivered prints {"delivered": [{"identifier", "deliveredAt", "id", "userInfo"}, …]} (oldest first).

            AS APP (--as-app): the app's background handler (application(_:didReceiveRemoteNotification:fetchCompletionHandler:)) for a sealed retract (push-seal retract): it opens the payload with the same key items and checks as the extension (key id, pinned sender keys, exp, the replay guard) and removes the delivered notifications whose id is listed; it never shows anything. Prints {"outcome": "retracted" | "refused", "reason", "detail", "removed": [{"identifier", "id"}], "notFound": [ids], "fetchResult": "newData" | "noData" | "failed", "shown": false}; exit 0 retracted (ids that match nothing are already gone), 1 refused (nothing removed: the reason says why, e.g. authenticationFailed, replayed, expired, unknownSenderKey, wrongKind:display).

            REPLAY GUARD: as on a device, a notification id is shown once: opening the same payload again gives outcome original, reason replayed. An id is kept until the notification's exp (else iat + 30 days); a notification past that is refused (reason replayTooOld), and so is every notification while the guard's store cannot be read or written (reason replayGuardUnavailable: fail closed), and every notification with an id when the identity has no application group (nowhere to keep the store, as on a device). The store (at most \(ReplayGuard.defaultCapacity) ids, 0600) is in the App Group container, DIR/app-groups/GROUP/\(ReplayGuard.fileName), GROUP being the identity's first application group; delete that file, or pass --no-replay-guard, to try a payload again.
            """,
        jsonHelp: "report errors of the command itself as one {\"error\": {\"code\", \"message\"}} object on stdout (the result is JSON already)"
    )

    struct Options: CommandOptions {
        let payloadFile: String?, keychainPath: String, appID: String, budget: Double, now: Int64?, identity: IdentityOptions
        let locale: String?, strings: String?, allowInsecureLoopback: Bool, replayGuard: Bool, verbose: Bool, failAttachmentStore: Bool
        let asApp: Bool, delivered: Bool, requestID: String?
        init(parsing a: Arguments) throws {
            delivered = a.has(OpenCommand.delivered)
            payloadFile = try Positionals(a, max: delivered ? 0 : 1).first
            asApp = a.has(OpenCommand.asApp)
            requestID = a[OpenCommand.requestID]
            keychainPath = try KeystoreOptions.keychainDirectory(parsing: a)
            appID = try a.required(OpenCommand.appID)
            budget = try OpenCommand.budgetSeconds(a)
            now = try a[OpenCommand.now]
            identity = IdentityOptions(parsing: a, namedGroupMeaning: "the group the key is read from")
            locale = a[OpenCommand.locale]
            strings = a[OpenCommand.stringsOption]
            allowInsecureLoopback = a.has(OpenCommand.allowInsecureLoopback)
            replayGuard = !a.has(OpenCommand.noReplayGuard)
            verbose = a.has(OpenCommand.verbose)
            failAttachmentStore = a.has(OpenCommand.failAttachmentStore)
        }
        func validate() throws {
            // The device keyset's naming rule, as push-seal and push-keys check it: a usage error,
            // not a fallback for every payload.
            do { try KeyID.validateAppID(appID) } catch let e as KeysError { throw CLIError.usage(e.reason) }
            if let now {
                do { try KeyTime.checkTime(now, named: "--now") } catch let e as KeysError { throw CLIError.usage(e.reason) }
            }
            if asApp, delivered { throw CLIError.usage("give --as-app or --delivered, not both") }
            if requestID?.isEmpty == true { throw CLIError.usage("--request-id needs a non-empty identifier") }
            try identity.validate()
            if identity.isEmpty {
                throw CLIError.usage("missing the extension's identity", hint: "give --entitlements FILE, or --access-group G (repeatable) and --app-group G")
            }
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let (keychainPath, appID, budget, now) = (o.keychainPath, o.appID, o.budget, o.now)
        let (entitlements, keyGroup) = try Self.entitlements(o.identity)

        if o.delivered { return try Self.printDelivered(keychainPath: keychainPath, entitlements: entitlements) }
        let input = try InputReader.readAll(o.payloadFile, limitByteCount: 1 << 20)
        let payload: JSONValue
        do {
            payload = try JSONReader.parse(input)
        } catch let e as JSONError {
            // Several JSON lines (a push-seal batch output file): say how to pass one payload.
            let hint = InputReader.jsonLineCount(input).map {
                "push-open opens one payload; the input holds \($0) JSON lines (push-seal batch output?): pass one line's payload member, e.g. sed -n 1p FILE | jq -c .payload | push-open … -"
            }
            throw CLIError(code: "notJSON", "the payload is not JSON: \(e.reason)", hint: hint, exitCode: .dataError)
        }
        try Self.refuseWrapper(payload)
        let strings = try Self.loadStrings(o.strings, locale: o.locale)

        let keychain: Keychain
        do {
            keychain = try Keychain(opening: URL(fileURLWithPath: keychainPath, isDirectory: true), as: entitlements)
        } catch let e as KeychainError {
            throw Self.cliError(e)
        }
        var container: URL?
        if let group = entitlements.applicationGroups.first {
            do { container = try keychain.appGroupContainer(for: group) } catch let e as KeychainError { throw Self.cliError(e) }
        }
        let clock: @Sendable () -> Int64
        if let now {
            clock = { now }
        } else {
            clock = { Int64(Date().timeIntervalSince1970) }
        }
        // Keys and pinned sender keys from the keychain (docs/keychain.md "Device key items").
        let provider = KeychainKeyProvider(keychain: keychain, accessGroup: keyGroup, appID: appID, now: clock)
        let configuration = DecryptingServiceConfiguration(
            appID: appID, keyProvider: provider, opener: WireFormatOpener(pinnedSenderKeys: provider), locale: o.locale, containerDirectory: container,
            allowInsecureLoopback: o.allowInsecureLoopback,
            replayCapacity: o.replayGuard ? ReplayGuard.defaultCapacity : 0, now: clock)
        let logger: any DiagnosticLogger = o.verbose ? VerboseLogger() : NullLogger()
        if o.asApp {
            let handled = RetractHandler(configuration: configuration, logger: logger).handle(payload)
            Output.printJSON(Self.json(handled))
            return handled.outcome == .retracted ? .success : .failure
        }
        // The system's attachment store beside the App Group containers: delivered attachments are
        // moved there, as iOS does, one directory per notification (the request identifier names it:
        // by default the payload's digest, so opening the same payload again replaces it).
        let store = SystemAttachmentStore(directory: URL(fileURLWithPath: keychainPath, isDirectory: true).appendingPathComponent(Self.attachmentStoreName),
                                          failsToStore: o.failAttachmentStore)
        let host = ExtensionHost(budgetSeconds: budget, logger: logger, attachmentStore: store,
                                 makeExtension: DecryptingServiceExtension.factory(configuration))
        let identifier = o.requestID ?? "push-open-" + Self.hex((try? SHA256Hasher.hash(input)) ?? []).prefix(32)
        let result = host.run(UNNotificationRequest(identifier: identifier, content: UNNotificationContent(apnsPayload: payload, strings: strings), payload: payload))
        if let container, let content = result.content, result.outcome != .notInvoked {
            // What iOS lists as delivered (the notification center of the emulated device).
            do {
                try DeliveredNotificationCenter(containerDirectory: container)
                    .record(.init(identifier: identifier, deliveredAt: clock(), userInfo: content.userInfo))
            } catch {
                context.warn("the notification was shown but not recorded in the notification center: \(error)")
            }
        }

        Output.printJSON(Self.json(result))
        switch result.outcome {
        case .decrypted, .decryptedWithoutMedia, .delivered: return .success
        case .original: return .failure
        case .notInvoked: return ExitCode(2)
        }
    }

    /// The system's attachment store inside the device directory: `DIR/notification-attachments/`.
    static let attachmentStoreName = "notification-attachments"

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] })
    }

    static func budgetSeconds(_ a: Arguments) throws -> Double {
        guard let text = a[OpenCommand.budget] else { return ExtensionHost.defaultBudgetSeconds }
        guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 3600 else {
            throw CLIError.usage("--budget needs a number of seconds between 0 and 3600, got \(quoted(text))")
        }
        return seconds
    }

    /// The extension's entitlements, and the access group it names when reading its key (`nil`:
    /// search every group of the identity).
    /// - Throws: `CLIError` 64 when no identity was given, 66/65 for a missing or malformed file.
    static func entitlements(_ identity: IdentityOptions) throws -> (Entitlements, String?) {
        let resolved = try identity.resolve(load: { try Entitlements.load(from: URL(fileURLWithPath: $0)) },
                                            make: { Entitlements(applicationIdentifier: $0, keychainAccessGroups: $1, applicationGroups: $2) })
        guard let resolved else {
            throw CLIError.usage("missing the extension's identity", hint: "give --entitlements FILE, or --access-group G (repeatable) and --app-group G")
        }
        return (resolved.entitlements, resolved.accessGroup)
    }

    /// `--delivered`: prints the emulated notification center of the identity's first App Group.
    /// - Throws: `CLIError` 64 without an App Group, the keychain's errors, 74 for a center that
    ///   cannot be read.
    static func printDelivered(keychainPath: String, entitlements: Entitlements) throws -> ExitCode {
        guard let group = entitlements.applicationGroups.first else {
            throw CLIError.usage("--delivered needs the app's App Group (the notification center is in its container)",
                                 hint: "give --app-group G, or --entitlements FILE with application-groups")
        }
        let container: URL
        do {
            let keychain = try Keychain(opening: URL(fileURLWithPath: keychainPath, isDirectory: true), as: entitlements)
            container = try keychain.appGroupContainer(for: group)
        } catch let e as KeychainError {
            throw Self.cliError(e)
        }
        let list: [DeliveredNotificationCenter.Delivered]
        do {
            list = try DeliveredNotificationCenter(containerDirectory: container).delivered()
        } catch let e as ExtensionError {
            throw CLIError(code: e.code.name, e.reason, exitCode: .ioError)
        }
        Output.printJSON(["delivered": .array(list.map { $0.jsonValue() })])
        return .success
    }

    /// The background handler's result as push-open's JSON object.
    static func json(_ r: RetractHandler.Result) -> JSONObject {
        var o = JSONObject()
        o["outcome"] = .string(r.outcome.rawValue)
        o["reason"] = .string(r.reason)
        o["detail"] = .string(r.detail)
        o["removed"] = .array(r.removed.map { .object(["identifier": .string($0.identifier), "id": $0.id.map(JSONValue.string) ?? .null]) })
        o["notFound"] = .array(r.notFound.map(JSONValue.string))
        o["fetchResult"] = .string(r.fetchResult)
        o["shown"] = .bool(false)
        return o
    }

    /// Keychain errors of the command itself (opening the keychain): sysexits codes.
    static func cliError(_ e: KeychainError) -> CLIError { CLIError(keychain: e) }

    /// The result as push-open's JSON object.
    static func json(_ r: ExtensionHost.Result) -> JSONObject {
        var o = JSONObject()
        o["outcome"] = .string(r.outcome.rawValue)
        o["reason"] = .string(r.reason)
        o["detail"] = .string(r.detail)
        if let c = r.content {
            o["title"] = .string(c.title)
            o["subtitle"] = .string(c.subtitle)
            o["body"] = .string(c.body)
            o["attachments"] = .array(c.attachments.map { att in
                .object(["identifier": .string(att.identifier), "url": .string(att.url.path), "type": .string(att.type),
                         "byteCount": .integer(Int64(att.byteCount))])
            })
            o["userInfo"] = .object(c.userInfo)
        } else {
            o["title"] = .null
            o["subtitle"] = .null
            o["body"] = .null
            o["attachments"] = .array([])
            o["userInfo"] = .null
        }
        presentationJSON(r.content, into: &o)
        o["elapsedMs"] = .number((r.elapsedMilliseconds * 1000).rounded() / 1000)
        return o
    }
}

/// `--verbose`: each diagnostic entry as one `push-open: …` line on stderr. Entries can quote the
/// payload (a key id, a media error's reason), which comes from the network: control characters
/// are escaped as in error lines (``Output/terminalSafe(_:)``), so every entry is one line and no
/// terminal escape sequence in a payload reaches the terminal.
struct VerboseLogger: DiagnosticLogger {
    func log(_ entry: DiagnosticEntry) {
        Output.stderr("push-open: " + Output.terminalSafe(entry.description) + "\n")
    }
}
