import PushSealCLI
import PushSealJSON
import PushSealKeyRecords
import PushSealServerKeys
import PushSealSystem

/// Staged sender key rotation (issue 24; Tink's order): `push-keys sender add` publishes a next
/// key (pending: served to apps, not sealing), `sender status` shows the keys and who is ready,
/// `sender promote` switches sealing to it, `sender retire` ends the former key. On a server
/// keychain or the registry (both ``V2KeyListStore``s).
enum SenderStagedCommands {
    static let all: [any Command] = [SenderAddCommand(), SenderStatusCommand(), SenderPromoteCommand(), SenderRetireCommand()]

    /// The store as a ``V2KeyListStore``.
    /// - Throws: `CLIError` 64 for a store without sender keys.
    static func open(_ options: KeyStoreOptions) throws -> any V2KeyListStore {
        guard let store = try V2ServerCommands.open(options) as? any V2KeyListStore else {
            throw CLIError.usage("this store cannot stage sender key rotations: give a server keychain (--keychain DIR) or a registry (--registry URI)")
        }
        return store
    }

    /// ``V2ServerCommands/mapErrors(_:)`` plus `invalidState` (65: no pending key, or one already).
    static func mapErrors<R>(_ body: () throws -> R) throws -> R {
        do {
            return try V2ServerCommands.mapErrors(body)
        } catch let e as CLIError where e.code == KeysError.Code.invalidState.name {
            throw CLIError(code: e.code, e.message, hint: "push-keys sender status --keychain DIR --app-id APP shows the keys", exitCode: .dataError)
        }
    }

    static func printKeys(_ keys: [SenderKeyInfo], now: Int64, _ c: CommandContext, extra: [(String, JSONValue)] = []) {
        if c.json {
            keyPrintJSON(.object(JSONObject(extra + [("senderKeys", .array(keys.map { V2ServerCommands.json($0, now: now) }))])))
        } else {
            Output.stdout(keys.map { k in
                "\(k.appID) \(k.keyID) \(k.status) created \(keyTime(k.createdAt)) retired \(keyTime(k.retiredAt)) notAfter \(keyTime(k.notAfter))\(k.isPublished(at: now) ? " published" : "")\n"
            }.joined())
        }
    }

    /// `pinned by M of N (P %); pins not reported by U`.
    static func describe(_ p: SenderPinReadiness) -> String {
        let percent = p.activeRegistrations == 0 ? 100 : p.pinnedNext * 100 / p.activeRegistrations
        return "pinned by \(p.pinnedNext) of \(p.activeRegistrations) (\(percent) %); pins not reported by \(p.pinsNotReported)"
    }

    static let flow = "STAGED ROTATION: sender add (the next key is published: phones pin it at their next refresh; send the \"keys changed\" push) → sender status → sender promote (sealing switches; the former key stays decryptOnly, published, for --grace) → sender retire (the former key ends now). After a suspected leak: sender promote --force, then sender retire --now (the former key is revoked: push-keys revocations export lists it, phones disable it), SECURITY.md. sender rotate does add and promote in one step: every phone that has not refreshed since shows the fallback (unknownSenderKey) until it does."
}

/// `push-keys sender add --app-id APP`.
struct SenderAddCommand: OptionsCommand {
    let path = ["sender", "add"]
    let options = KeyOptions.changing + [KeyOptions.appID.spec, KeyOptions.now.spec]
    let help = HelpText(
        overview: "publish the app's next v2 sender key (pending: served to apps by sender export --all, not used to seal) ahead of sender promote",
        usage: ["push-keys sender add --keychain DIR --app-id APP [--audit-log FILE] [--now UNIX] [--json]"],
        examples: ["push-keys sender add --keychain server-kc --app-id com.example.app",
                   "push-keys sender export --keychain server-kc --app-id com.example.app --all   # what apps pin now"],
        exitCodes: V2ServerCommands.exitCodes(usage: ["a bad --app-id or --now"],
                                              dataError: "a next key is pending already (invalidState): promote it first",
                                              noInput: "the app has no sender key yet (unknownKeyset): use push-keys sender generate"),
        notes: KeyOptions.notes([SenderOptions.output + " Text output: the new key's record (status pending).",
            "--json: {\"senderKey\": {keyId, status, published, createdAt, retiredAt, notAfter, record}}. Audited as senderAdd.",
            SenderStagedCommands.flow, V2ServerCommands.storeNote], audited: true))

    typealias Options = SenderGenerateCommand.Options

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try SenderStagedCommands.open(o.sender.store)
        let key = try SenderStagedCommands.mapErrors { try store.addSenderKey(appID: o.sender.appID, now: o.sender.now) }
        if c.json {
            keyPrintJSON(.object(JSONObject([("senderKey", V2ServerCommands.json(key, now: o.sender.now))])))
        } else {
            keyPrintJSON(.object(key.record))
        }
        return .success
    }
}

/// `push-keys sender status --app-id APP`.
struct SenderStatusCommand: OptionsCommand {
    let path = ["sender", "status"]
    let options = KeyOptions.reading + [KeyOptions.appID.spec, KeyOptions.now.spec]
    let help = HelpText(
        overview: "show the app's sender keys (pending, primary, decryptOnly, disabled, destroyed) and the registrations active in the last 30 days",
        usage: ["push-keys sender status --keychain DIR --app-id APP [--now UNIX] [--json]"],
        examples: ["push-keys sender status --keychain server-kc --app-id com.example.app"],
        exitCodes: V2ServerCommands.exitCodes(usage: ["a bad --app-id or --now"]),
        notes: KeyOptions.notes([
            "Text output: one line per key, 'APP KEYID STATUS created T retired T notAfter T [published]', then 'APP active registrations N (registered, re-registered or reporting new pins in the last 30 days)' and, with a next key, 'APP next KEYID pinned by M of N (P %); pins not reported by U'. --json: {\"senderKeys\": [...], \"activeRegistrations\": N, \"nextKeyId\": KEYID or null, \"pinnedNext\": M, \"pinsOutstanding\": N - M, \"pinsNotReported\": U}.",
            "PINS: each upload (push-keys register with the app's body, POST /v1/devices) reports the sender key ids the phone has pinned (pinnedSenderKeyIds); a registration that never reported them (a bare record, an app before issue 24) counts as not pinned. sender promote --min-pinned P compares M / N with P.",
            SenderStagedCommands.flow, V2ServerCommands.storeNote], audited: false))

    typealias Options = SenderOptions

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try SenderStagedCommands.open(o.store)
        let (keys, pins) = try SenderStagedCommands.mapErrors { (try store.senderKeys(appID: o.appID), try store.pinReadiness(appID: o.appID, now: o.now)) }
        if c.json {
            SenderStagedCommands.printKeys(keys, now: o.now, c, extra: [
                ("activeRegistrations", .integer(Int64(pins.activeRegistrations))), ("nextKeyId", pins.nextKeyID.map { .string($0) } ?? .null),
                ("pinnedNext", .integer(Int64(pins.pinnedNext))), ("pinsOutstanding", .integer(Int64(pins.outstanding))),
                ("pinsNotReported", .integer(Int64(pins.pinsNotReported)))])
        } else {
            SenderStagedCommands.printKeys(keys, now: o.now, c)
            Output.stdout("\(o.appID) active registrations \(pins.activeRegistrations) (registered, re-registered or reporting new pins in the last 30 days)\n")
            if let next = pins.nextKeyID { Output.stdout("\(o.appID) next \(next) \(SenderStagedCommands.describe(pins))\n") }
        }
        return .success
    }
}

/// `push-keys sender promote --app-id APP [--min-pinned P] [--force] [--grace D]`.
struct SenderPromoteCommand: OptionsCommand {
    let path = ["sender", "promote"]
    static let force = Option.flag("--force", "promote without the pin check (after a suspected leak)")
    static let minPinned = Option.integerWithDefault("--min-pinned", "P", "the percentage of registrations active in the last 30 days that must have pinned the next key", range: 0...100, default: 100)

    let options = KeyOptions.changing + [KeyOptions.appID.spec, KeyOptions.grace("how long the former sender key stays published and accepted").spec,
        SenderPromoteCommand.minPinned.spec,
        SenderPromoteCommand.force.spec, KeyOptions.now.spec]
    let help = HelpText(
        overview: "switch the app's sealing to its pending sender key; the former primary stays decryptOnly (published, accepted by phones for messages sealed before now) for --grace",
        usage: ["push-keys sender promote --keychain DIR --app-id APP [--min-pinned P | --force] [--grace 30d] [--audit-log FILE] [--now UNIX] [--json]"],
        examples: ["push-keys sender promote --keychain server-kc --app-id com.example.app",
                   "push-keys sender promote --keychain server-kc --app-id com.example.app --min-pinned 95",
                   "push-keys sender promote --registry postgresql:///pushseal --kek-file kek --app-id com.example.app --force --grace 7d"],
        exitCodes: ["1   notEnoughPinned: fewer than --min-pinned % of the registrations active in the last 30 days reported the next key pinned (sender status shows the count): nothing changed; --force overrides"]
            + V2ServerCommands.exitCodes(usage: ["a bad --app-id, --now, --grace or --min-pinned (0 to 100)"],
                                         dataError: "no pending sender key (invalidState): push-keys sender add",
                                         noInput: "the app has no sender key (unknownKeyset)"),
        notes: KeyOptions.notes([
            "Running sealers: a push-seal batch already running looks for a new primary sender key at most once a second and seals the chunks after it with the promoted key, without a restart (every line after the switch carries the new key); a new push-seal run uses it at once.",
            "Text output: every sender key after the change, one a line (as sender status). --json: {\"senderKeys\": [...]}. Audited as senderPromote (and senderPrune).",
            SenderStagedCommands.flow, V2ServerCommands.storeNote], audited: true))

    struct Options: CommandOptions {
        let sender: SenderOptions, grace: Int64, minPinned: Int64, force: Bool
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            sender = try SenderOptions(parsing: a)
            grace = try keyGrace(a, now: sender.now)
            minPinned = try a[SenderPromoteCommand.minPinned]
            force = a[SenderPromoteCommand.force]
        }
        func validate() throws {
            try sender.validate()
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (app, now) = (o.sender.appID, o.sender.now)
        let store = try SenderStagedCommands.open(o.sender.store)
        if !o.force {
            let pins = try SenderStagedCommands.mapErrors { try store.pinReadiness(appID: app, now: now) }
            if pins.nextKeyID != nil, !pins.meets(percent: o.minPinned) {
                throw CLIError(code: "notEnoughPinned",
                               "\(app): the next sender key \(pins.nextKeyID ?? "") is \(SenderStagedCommands.describe(pins)), below --min-pinned \(o.minPinned) %; nothing changed",
                               hint: "wait for the apps to refresh (the \"keys changed\" push, or a day of launches) and check push-keys sender status; --force promotes anyway (those phones show the fallback)",
                               exitCode: .failure)
            }
        }
        let keys = try SenderStagedCommands.mapErrors { try store.promoteSenderKey(appID: app, graceSeconds: o.grace, now: now) }
        SenderStagedCommands.printKeys(keys, now: now, c)
        return .success
    }
}

/// `push-keys sender retire --app-id APP [--now]`.
struct SenderRetireCommand: OptionsCommand {
    let path = ["sender", "retire"]
    static let revoke = Option.flag("--revoke", "revoke the former keys (a suspected leak): disabled, private keys dropped, listed by push-keys revocations export")

    let options = KeyOptions.changing + [KeyOptions.appID.spec,
        SenderRetireCommand.revoke.spec,
        KeyOptions.now.spec]
    let help = HelpText(
        overview: "end the app's former (decryptOnly) sender keys now: their published notAfter becomes now, so phones stop accepting them at their next refresh; --revoke revokes them",
        usage: ["push-keys sender retire --keychain DIR --app-id APP [--revoke] [--audit-log FILE] [--now UNIX] [--json]"],
        examples: ["push-keys sender retire --keychain server-kc --app-id com.example.app",
                   "push-keys sender promote ... --force && push-keys sender retire ... --revoke && push-keys revocations export ... > revocations.json   # after a suspected leak"],
        exitCodes: V2ServerCommands.exitCodes(usage: ["a bad --app-id or --now"], noInput: "the app has no sender key (unknownKeyset)"),
        notes: KeyOptions.notes([
            "Issue 24 names this 'sender retire --now'; --now is this toolkit's clock option (UNIX seconds), so the revocation is --revoke.",
            "Text output: 'APP KEYID retired' (or 'revoked') per key ended. --json: {\"retired\" or \"revoked\": [keyId...]}. Audited as senderRetire / senderRevoke.",
            SenderStagedCommands.flow, V2ServerCommands.storeNote], audited: true))

    struct Options: CommandOptions {
        let sender: SenderOptions, revoke: Bool
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            sender = try SenderOptions(parsing: a)
            revoke = a.has(SenderRetireCommand.revoke)
        }
        func validate() throws { try sender.validate() }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try SenderStagedCommands.open(o.sender.store)
        let ended = try SenderStagedCommands.mapErrors { try store.retireSenderKeys(appID: o.sender.appID, revoke: o.revoke, now: o.sender.now) }
        let word = o.revoke ? "revoked" : "retired"
        if c.json {
            keyPrintJSON(.object(JSONObject([(word, .array(ended.map { .string($0) }))])))
        } else {
            Output.stdout(ended.map { "\(o.sender.appID) \($0) \(word)\n" }.joined())
        }
        return .success
    }
}
