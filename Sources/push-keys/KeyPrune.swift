import PushSealJSON
import PushSealCLI
import PushSealKeyRecords
import PushSealDeviceKeys
import PushSealServerKeys
/// `push-keys prune`: destroy keys past their grace window.
struct KeyPruneCommand: OptionsCommand {
    let path = ["prune"]
    let options = KeyOptions.changing + [KeyOptions.now.spec]
    let help = HelpText(
        overview: "destroy every decryptOnly key past its notAfter: key bytes are zeroed and removed, a tombstone remains so opening reports \"key destroyed\"; idempotent",
        usage: ["push-keys prune --keychain DIR [IDENTITY] [--audit-log FILE] [--now UNIX] [--json]"],
        examples: ["push-keys prune --keychain server-kc", "push-keys prune --keychain device-kc --entitlements app.json --now 1767225600"],
        exitCodes: KeyOptions.exitCodes(usage: [KeyOptions.badNow]),
        notes: KeyOptions.notes(["Text output: APP RECIPIENT KEY_ID per destroyed key (tab-separated).",
                                 "With IDENTITY (a device keychain), the device key items of every app with a key manifest in the identity's group are pruned too, as push-keys device prune does with its default grace (docs/keychain.md \"Device key items\"): one line APP - KEY_ID per deleted item (--json: \"deletedItems\": [{\"appId\", \"keyId\"}])."], audited: true))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, now: Int64
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            now = try keyNow(a)
        }
        func validate() throws { try store.validate() }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let now = o.now
        let store = try o.store.open()
        let pruned = try keyMapErrors { try store.prune(now: now) }
        var items: [(appID: String, keyID: String)] = []
        if !o.store.identity.isEmpty, o.store.keystore.registry == nil {
            let device = try o.store.openKeychain()
            items = try keyMapErrors {
                try DeviceKeyItem.appIDsWithManifest(in: device.keychain, accessGroup: device.accessGroup).flatMap { app in
                    try DeviceKeyItem.prune(appID: app, in: device.keychain, accessGroup: device.accessGroup, now: now).map { (app, $0) }
                }
            }
        }
        if c.json {
            var members: [(key: String, value: JSONValue)] = [("destroyed", .array(pruned.map { .object(JSONObject([("appId", .string($0.appID)), ("recipient", .string($0.recipient)), ("keyId", .string($0.keyID))])) }))]
            if !o.store.identity.isEmpty {
                members.append(("deletedItems", .array(items.map { .object(JSONObject([("appId", .string($0.appID)), ("keyId", .string($0.keyID))])) })))
            }
            keyPrintJSON(.object(JSONObject(members)))
        } else {
            Output.stdout(pruned.map { "\($0.appID)\t\($0.recipient)\t\($0.keyID)\n" }.joined() + items.map { "\($0.appID)\t-\t\($0.keyID)\n" }.joined())
        }
        return .success
    }
}

/// `push-keys due`: keysets that need a rotation.
struct KeyDueCommand: OptionsCommand {
    let path = ["due"]
    static let maxSeals = Option.integer("--max-seals", "N", "seal count that makes a keyset due, 0 or more (default 16777216 = 2^24)")
    static let registrationPeriod = Option.durationWithDefault("--registration-period", "v2: a current registration registered longer ago than this is due, the app's background rotation has not run", default: KeyStore.defaultRegistrationRotationSeconds)

    static let period = Option.durationWithDefault("--period", "rotation period: a primary older than this is due; at most 253402300799 seconds", default: KeyStore.defaultRotationPeriodSeconds)

    let options = KeyOptions.reading + [KeyDueCommand.period.spec,
        KeyDueCommand.maxSeals.spec,
        KeyDueCommand.registrationPeriod.spec,
        KeyOptions.now.spec]
    let help = HelpText(
        overview: "list keysets whose primary is older than the rotation period or past 2^24 seals (or that have no primary, or an unfinished rotation); and in version 2, sender keys older than the period, next sender keys not promoted (with the pins outstanding) and registrations not rotated within 45 days",
        usage: ["push-keys due --keychain DIR [IDENTITY] [--period DURATION] [--max-seals N] [--registration-period DURATION] [--now UNIX] [--json]"],
        examples: ["push-keys due --keychain server-kc", "push-keys due --keychain server-kc --period 7d --json",
                   "push-keys due --registry postgresql:///pushseal --kek-file kek"],
        exitCodes: KeyOptions.exitCodes(usage: ["a --period that is not a duration of at most 253402300799 seconds", "a --max-seals that is not an integer of 0 or more", KeyOptions.badNow],
                                        ioError: "reading the keychain"),
        notes: KeyOptions.notes([
            "Text output, one line per due keyset (tab-separated): APP RECIPIENT KEY_ID AGE_SECONDS SEALS REASONS (REASONS: age, seals, noPrimary, unfinishedRotation joined by commas).",
            "VERSION 2 (a server keychain or registry with sender keys or registrations), lines of the same shape after the keysets: 'APP - KEY_ID AGE_SECONDS - senderKeyAge' (the primary sender key is older than --period: push-keys sender add, then promote); 'APP - KEY_ID AGE_SECONDS - nextKeyNotPromoted[,pinsOutstanding=N]' (a next sender key waits for sender promote; N active registrations have not reported it pinned: sender status); 'APP R KEY_ID AGE_SECONDS - registrationNotRotated' (the current registration is older than --registration-period: the app's 30-day background rotation does not run on that phone). AGE_SECONDS counts from the key's creation, or the registration's import.",
            "--json: {\"due\": [{appId, recipient, keyId, ageSeconds, sealCount, reasons}]}; version 2 entries have recipient null for sender keys, sealCount null, reasons [\"senderKeyAge\"], [\"nextKeyNotPromoted\"] (plus activeRegistrations, pinnedNext, pinsOutstanding, pinsNotReported) or [\"registrationNotRotated\"].",
        ], audited: false))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, period: Int64, maxSeals: Int64?, registrationPeriod: Int64, now: Int64
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            period = try a[KeyDueCommand.period]
            maxSeals = try a[KeyDueCommand.maxSeals]
            registrationPeriod = try a[KeyDueCommand.registrationPeriod]
            now = try keyNow(a)
        }
        func validate() throws {
            try store.validate()
            try keyUsageErrors {
                try KeyTime.checkDuration(period, named: "--period")
                try KeyTime.checkDuration(registrationPeriod, named: "--registration-period")
            }
            if let n = maxSeals, n < 0 { throw CLIError.usage("--max-seals needs a seal count of 0 or more, got \(n)") }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (period, now) = (o.period, o.now)
        let maxSeals = o.maxSeals.map { UInt64($0) } ?? KeyStore.dueSealThreshold
        let store = try o.store.open()
        let due = try keyMapErrors { try store.due(now: now, rotationPeriodSeconds: period, sealThreshold: maxSeals) }
        let v2 = try keyMapErrors { () -> [V2DueItem] in
            guard let registrations = store as? any RegistrationStore else { return [] }
            return try registrations.dueV2(now: now, senderPeriodSeconds: period, registrationPeriodSeconds: o.registrationPeriod)
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("due", .array(due.map {
                .object(JSONObject([("appId", .string($0.appID)), ("recipient", .string($0.recipient)), ("keyId", $0.keyID.map { .string($0) } ?? .null),
                         ("ageSeconds", KeyJSON.opt($0.ageSeconds)), ("sealCount", .integer(Int64(clamping: $0.sealCount))), ("reasons", .array($0.reasons.map { .string($0) }))]))
            } + v2.map(Self.json)))])))
        } else {
            Output.stdout(due.map { [$0.appID, $0.recipient, $0.keyID ?? "-", $0.ageSeconds.map(String.init) ?? "-", String($0.sealCount),
                                     $0.reasons.joined(separator: ",")].joined(separator: "\t") + "\n" }.joined()
                + v2.map { [$0.appID, $0.recipient ?? "-", $0.keyID, String($0.ageSeconds), "-", Self.reasons($0)].joined(separator: "\t") + "\n" }.joined())
        }
        return .success
    }

    /// `nextKeyNotPromoted,pinsOutstanding=N` (N > 0), or the reason alone.
    static func reasons(_ d: V2DueItem) -> String {
        guard let pins = d.pins, pins.outstanding > 0 else { return d.reason.rawValue }
        return d.reason.rawValue + ",pinsOutstanding=\(pins.outstanding)"
    }

    static func json(_ d: V2DueItem) -> JSONValue {
        var members: [(String, JSONValue)] = [("appId", .string(d.appID)), ("recipient", d.recipient.map { .string($0) } ?? .null), ("keyId", .string(d.keyID)),
                                              ("ageSeconds", .integer(d.ageSeconds)), ("sealCount", .null), ("reasons", .array([.string(d.reason.rawValue)]))]
        if let p = d.pins {
            members += [("activeRegistrations", .integer(Int64(p.activeRegistrations))), ("pinnedNext", .integer(Int64(p.pinnedNext))),
                        ("pinsOutstanding", .integer(Int64(p.outstanding))), ("pinsNotReported", .integer(Int64(p.pinsNotReported)))]
        }
        return .object(JSONObject(members))
    }
}

/// The key-lifecycle commands, for `main.swift`.
let keyLifecycleCommands: [any Command] = [
    KeyGenerateCommand(), KeyExportCommand(), KeyImportCommand(), KeyListCommand(), KeyRotateCommand(),
    KeyPromoteCommand(), KeyPruneCommand(), KeyRevokeCommand(), KeyDueCommand(),
]
