import PushSealCLI
import PushSealCrypto
import PushSealJSON
import PushSealKeyRecords
import PushSealServer
import PushSealServerKeys
import PushSealSystem
import PushSealWire

/// The server side of version 2 (FORMAT.md §V): `push-keys register` imports a device's
/// registration record, `push-keys registrations` lists them, `push-keys sender generate /
/// export / rotate` make, publish and rotate the app's sender key. They work on a server
/// keychain or the PostgreSQL registry (both are ``RegistrationStore``s).
enum V2ServerCommands {
    static let all: [any Command] = [RegisterCommand(), RegistrationsCommand(), SenderGenerateCommand(), SenderExportCommand(),
                                     SenderRotateCommand()]

    /// The store of the options, as a registration store.
    /// - Throws: `CLIError` 64 for a store without v2 registrations (none in this build).
    static func open(_ options: KeyStoreOptions) throws -> any RegistrationStore {
        guard let store = try options.open() as? any RegistrationStore else {
            throw CLIError.usage("this store holds no v2 registrations or sender keys: give a server keychain (--keychain DIR) or a registry (--registry URI)")
        }
        return store
    }

    /// ``keyMapErrors(_:)`` (which maps `lowOrderPublicKey`, `staleRegistration` and
    /// `futureRegistration` to 65) plus the hint for `unknownRegistration` (66).
    static func mapErrors<R>(_ body: () throws -> R) throws -> R {
        do {
            return try keyMapErrors(body)
        } catch let e as CLIError where e.code == KeysError.Code.unknownRegistration.name {
            throw CLIError(code: e.code, e.message, hint: "the app registers its key: push-keys register --keychain DIR --recipient R RECORD", exitCode: .noInput)
        }
    }

    static func json(_ r: RegistrationInfo) -> JSONValue {
        .object(JSONObject([("keyId", .string(r.keyID)), ("status", .string(r.status.rawValue)),
                            ("publicKey", .string(WireBase64.encode(r.publicKey.rawRepresentation))), ("createdAt", .integer(r.createdAt)),
                            ("registeredAt", .integer(r.registeredAt)), ("supersededAt", KeyJSON.opt(r.supersededAt)),
                            ("pinnedSenderKeyIds", r.pinnedSenderKeyIDs.map { .array($0.map { .string($0) }) } ?? .null),
                            ("pinsReportedAt", KeyJSON.opt(r.pinsReportedAt))]))
    }

    static func json(_ k: SenderKeyInfo, now: Int64) -> JSONValue {
        .object(JSONObject([("keyId", .string(k.keyID)), ("status", .string(k.status.rawValue)), ("published", .bool(k.isPublished(at: now))),
                            ("createdAt", .integer(k.createdAt)), ("retiredAt", KeyJSON.opt(k.retiredAt)), ("notAfter", KeyJSON.opt(k.notAfter)),
                            ("record", .object(k.record))]))
    }

    static let storeNote = "STORE: a server keychain (--keychain DIR; no IDENTITY: the server identity, access group pushseal.server): registrations are items of service pushseal.registrations:APP (account = recipient), sender keys one item of service pushseal.sender-keys:APP, the sender private keys secrets of the keychain (encrypted at rest with its device secret). Or a registry (--registry URI, schema version 3 or later): tables pushseal_registrations and pushseal_sender_keys, the sender private keys wrapped under the --kek-file key. Never printed."

    static func exitCodes(usage: [String] = [], dataError: String? = nil, noInput: String? = nil, cannotCreate: String? = nil,
                          ioError: String = "the keychain, its lock file or the audit log") -> [String] {
        KeyOptions.exitCodes(usage: usage, dataError: dataError, noInput: noInput,
                             cannotCreate: cannotCreate, ioError: ioError)
    }
}

/// `push-keys register --recipient R RECORD`: import a device's registration record.
struct RegisterCommand: OptionsCommand {
    let path = ["register"]
    static let appID = KeysetOptions.appIDOption.withHelp("refuse a record for another app id")

    let options = KeyOptions.changing + [
        KeyOptions.recipient.spec,
        RegisterCommand.appID.spec,
        KeyOptions.now.spec,
    ]
    let help = HelpText(
        overview: "import a v2 device registration (the app's upload body, or a bare pushseal-device-key record; from a file or stdin) for a recipient: its public key becomes the one push-seal seals to, with the upload's APNs device token and pinned sender key ids",
        usage: ["push-keys register --keychain DIR --recipient R [--app-id APP] [--audit-log FILE] [--now UNIX] [RECORD | -] [--json]"],
        examples: [
            "push-keys register --keychain server-kc --recipient alice-iphone --app-id com.example.app registration.json",
            "curl -s https://api.example.com/internal/registrations/alice-iphone | push-keys register --keychain server-kc --recipient alice-iphone -",
        ],
        exitCodes: V2ServerCommands.exitCodes(
            usage: ["a bad --recipient, --app-id or --now", "more than one RECORD"],
            dataError: "a malformed upload (malformedUpload: a member of the wrong type, a bad apnsDeviceToken or apnsEnvironment, pinnedSenderKeyIds not an array of key ids) or record (not JSON, wrong format or version, a publicKey that is not base64 of 32 bytes, a bad keyId or createdAt), a record for another app id (--app-id), a low-order public key (lowOrderPublicKey), a key id the recipient already has with another key (duplicateKeyID), a record created before the recipient's current registration (staleRegistration), a record created more than 5 minutes after the server's clock (futureRegistration)",
            noInput: "RECORD missing",
            ioError: "reading RECORD, the keychain, its lock file or the audit log"),
        notes: KeyOptions.notes([
            "RECORD: the upload body the app POSTs (Examples/iOS), {\"registration\": {...}, \"apnsDeviceToken\": HEX, \"apnsEnvironment\": \"production\" | \"development\", \"pinnedSenderKeyIds\"?: [ids]}, or the bare record {\"format\":\"pushseal-device-key\",\"version\":2,\"appId\",\"keyId\",\"publicKey\",\"createdAt\"} (FORMAT.md §V.6) that 'push-keys device generate' prints. RECORD, - or none reads standard input. The server decides the recipient (one app installation): never take it from the record.",
            "UPLOAD BODY: the registration, then the device token (the recipient's former token of that environment replaced, as push-keys token add) in one command; pinnedSenderKeyIds, when present, are stored with the registration (audited reportPins when they changed): push-keys sender status counts who pinned the next sender key and sender promote --min-pinned relies on them. Without the member the stored pins are kept.",
            "HISTORY: the new registration becomes primary (sealed to); the former one becomes decryptOnly with supersededAt (the device may still open messages in flight with its old key). The same record again changes nothing (exit 0, 'already registered'). Audited as register.",
            "Text output: 'APP R: registered KEYID' or 'APP R: already registered KEYID', then '; token ENV stored' and '; pinned sender keys: IDS' for an upload body. --json: {\"added\", \"appId\", \"recipient\", \"registration\": {keyId, status, publicKey, createdAt, registeredAt, supersededAt, pinnedSenderKeyIds, pinsReportedAt}, \"deviceToken\"?: {token, environment, registeredAt (ms)}}.",
            V2ServerCommands.storeNote,
        ], audited: true))

    struct Options: CommandOptions {
        let file: String?, store: KeyStoreOptions, recipient: String, expectedAppID: String?, now: Int64
        init(parsing a: Arguments) throws {
            file = try Positionals(a, max: 1).first
            store = try KeyStoreOptions(parsing: a)
            recipient = try a.required(KeyOptions.recipient)
            expectedAppID = try keyAppID(a)
            now = try keyNow(a)
        }
        func validate() throws {
            try store.validate()
            try keyUsageErrors { try KeyID.validateRecipient(recipient) }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let bytes = try InputReader.readAll(o.file, limitByteCount: RegistrationUpload.maxByteCount)
        let upload: RegistrationUpload
        do {
            upload = try V2ServerCommands.mapErrors { try RegistrationUpload(body: bytes, expectedAppID: o.expectedAppID) }
        } catch let e as ServerError {
            throw CLIError(code: e.code.name, e.reason, hint: "the body is {\"registration\": RECORD, \"apnsDeviceToken\", \"apnsEnvironment\", \"pinnedSenderKeyIds\"?} or a bare RECORD",
                           exitCode: .dataError)
        } catch let e as CLIError where e.code == KeysError.Code.invalidDeviceToken.name {
            throw CLIError(code: e.code, "the upload's apnsDeviceToken: \(e.message)", hint: e.hint, exitCode: .dataError)
        } catch let e as CLIError where [KeysError.Code.invalidName.name, KeysError.Code.timeOutOfRange.name].contains(e.code) {
            // A bad keyId, appId or createdAt inside the record is bad input data (65, malformedRecord), not a usage error:
            // the command line was right, the uploaded record was not.
            throw CLIError(code: KeysError.Code.malformedRecord.name, "the registration record: \(e.message)", hint: e.hint, exitCode: .dataError)
        }
        let registration = upload.registration
        let store = try V2ServerCommands.open(o.store)
        let imported = try V2ServerCommands.mapErrors {
            try ServerStore(store: store).importRegistration(upload, recipient: o.recipient, nowMilliseconds: o.now * 1000)
        }
        let (info, added) = (imported.registration, imported.added)
        if c.json {
            var members: [(String, JSONValue)] = [("added", .bool(added)), ("appId", .string(registration.appID)), ("recipient", .string(o.recipient)),
                                                  ("registration", V2ServerCommands.json(info))]
            if let t = imported.deviceToken {
                members.append(("deviceToken", .object(JSONObject([("token", .string(t.token)), ("environment", .string(t.environment.rawValue)),
                                                                  ("registeredAt", .integer(t.registeredAtMs))]))))
            }
            keyPrintJSON(.object(JSONObject(members)))
        } else {
            var line = "\(registration.appID) \(o.recipient): \(added ? "registered" : "already registered") \(info.keyID)"
            if let t = imported.deviceToken { line += "; token \(t.environment.rawValue) stored" }
            if let pins = upload.pinnedSenderKeyIDs { line += "; pinned sender keys: \(pins.isEmpty ? "none" : pins.sorted().joined(separator: " "))" }
            Output.stdout(line + "\n")
        }
        return .success
    }
}

/// `push-keys registrations`: list the v2 registrations (public data).
struct RegistrationsCommand: OptionsCommand {
    let path = ["registrations"]
    static let appID = KeysetOptions.appIDOption.withHelp("only this app's registrations")
    static let recipient = KeysetOptions.recipientOption.withHelp("only this recipient's (with --app-id)")

    let options = KeyOptions.reading + [
        RegistrationsCommand.appID.spec,
        RegistrationsCommand.recipient.spec,
    ]
    let help = HelpText(
        overview: "list the v2 device registrations of a server keychain with their history (key ids, statuses, times; public keys with --json)",
        usage: ["push-keys registrations --keychain DIR [--app-id APP [--recipient R]] [--json]"],
        examples: [
            "push-keys registrations --keychain server-kc",
            "push-keys registrations --keychain server-kc --app-id com.example.app --recipient alice-iphone --json",
        ],
        exitCodes: V2ServerCommands.exitCodes(usage: ["a bad --app-id or --recipient", "--recipient without --app-id"],
                                              noInput: "--recipient given and it has no registration (unknownRegistration)"),
        notes: KeyOptions.notes([
            "Text output: one line per registration, 'APP R KEYID STATUS createdAt registeredAt supersededAt' (times as ISO 8601 UTC, - for none). --json: {\"registrations\": [{appId, recipient, current, registrations: [{keyId, status, publicKey, createdAt, registeredAt, supersededAt}]}]}.",
            V2ServerCommands.storeNote,
        ], audited: false))

    /// The options of `push-keys list` (`--app-id`, `--recipient`).
    typealias Options = KeyListCommand.Options

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        try o.checkRecipientLookup()
        let store = try V2ServerCommands.open(o.store)
        let sets = try V2ServerCommands.mapErrors { () -> [RegistrationSet] in
            if let app = o.appID, let r = o.recipient { return [try store.registrations(appID: app, recipient: r)] }
            return try store.allRegistrations().filter { o.appID == nil || $0.appID == o.appID }
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("registrations", .array(sets.map { s in
                .object(JSONObject([("appId", .string(s.appID)), ("recipient", .string(s.recipient)),
                                    ("current", s.current.map { .string($0.keyID) } ?? .null),
                                    ("registrations", .array(s.registrations.map(V2ServerCommands.json)))]))
            }))])))
        } else {
            var out = ""
            for s in sets {
                for r in s.registrations {
                    out += "\(s.appID) \(s.recipient) \(r.keyID) \(r.status) \(keyTime(r.createdAt)) \(keyTime(r.registeredAt)) \(keyTime(r.supersededAt))\n"
                }
            }
            Output.stdout(out)
        }
        return .success
    }
}

/// The options of the `sender` commands.
struct SenderOptions: CommandOptions {
    let store: KeyStoreOptions, appID: String, now: Int64
    init(parsing a: Arguments) throws {
        store = try KeyStoreOptions(parsing: a)
        appID = try a.required(KeyOptions.appID)
        now = try keyNow(a)
    }
    func validate() throws {
        try store.validate()
        try keyUsageErrors { try KeyID.validateAppID(appID) }
    }

    static let output = "OUTPUT: the sender key record, one JSON line: {\"format\":\"pushseal-sender-key\",\"version\":2,\"appId\",\"senderKeyId\",\"publicKey\"} (FORMAT.md §V.6; public data: what apps pin, e.g. with push-keys device pin-sender). push-seal seals in auth mode (HPKE-AUTH-X25519-A256GCM) for an app with a sender key; the private key stays in the keychain."
}

/// `push-keys sender generate`: the app's first sender key.
struct SenderGenerateCommand: OptionsCommand {
    let path = ["sender", "generate"]
    let options = KeyOptions.changing + [KeyOptions.appID.spec, KeyOptions.now.spec]
    let help = HelpText(
        overview: "make the app's v2 sender key (an X25519 key pair held by the server keychain) and print its public record, which apps pin",
        usage: ["push-keys sender generate --keychain DIR --app-id APP [--audit-log FILE] [--now UNIX] [--json]"],
        examples: [
            "push-keys sender generate --keychain server-kc --app-id com.example.app > sender-key.json",
            "push-keys sender generate --keychain server-kc --app-id com.example.app --json",
        ],
        exitCodes: V2ServerCommands.exitCodes(usage: ["a bad --app-id or --now"],
                                              cannotCreate: "the app already has a sender key (keysetExists): use push-keys sender rotate"),
        notes: KeyOptions.notes([SenderOptions.output,
            "--json: {\"senderKey\": {keyId, status, published, createdAt, retiredAt, notAfter, record}}. Audited as senderGenerate.",
            V2ServerCommands.storeNote], audited: true))

    struct Options: CommandOptions {
        let sender: SenderOptions
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            sender = try SenderOptions(parsing: a)
        }
        func validate() throws { try sender.validate() }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try V2ServerCommands.open(o.sender.store)
        let key = try V2ServerCommands.mapErrors { try store.generateSenderKey(appID: o.sender.appID, now: o.sender.now) }
        if c.json {
            keyPrintJSON(.object(JSONObject([("senderKey", V2ServerCommands.json(key, now: o.sender.now))])))
        } else {
            keyPrintJSON(.object(key.record))
        }
        return .success
    }
}

/// `push-keys sender rotate`: a new primary sender key, the former kept published for the grace window.
struct SenderRotateCommand: OptionsCommand {
    let path = ["sender", "rotate"]
    let options = KeyOptions.changing + [KeyOptions.appID.spec, KeyOptions.grace("how long the former sender key stays published").spec, KeyOptions.now.spec]
    let help = HelpText(
        overview: "give the app a new v2 sender key at once (for emergencies: the staged sender add / promote avoids fallbacks): push-seal seals with it from its next run, a running push-seal batch within a second; the former one stays published (sender export --all) until now + grace, then is destroyed by the next rotation",
        usage: ["push-keys sender rotate --keychain DIR --app-id APP [--grace DURATION] [--audit-log FILE] [--now UNIX] [--json]"],
        examples: [
            "push-keys sender rotate --keychain server-kc --app-id com.example.app --grace 30d",
            "push-keys sender export --keychain server-kc --app-id com.example.app --all   # publish both",
        ],
        exitCodes: V2ServerCommands.exitCodes(usage: ["a bad --app-id", KeyOptions.badNow, KeyOptions.badGrace],
                                              noInput: "the app has no sender key yet (unknownKeyset): use push-keys sender generate"),
        notes: KeyOptions.notes([SenderOptions.output + " Text output: the new key's record.",
            "COST: every app that has not pinned the new key yet refuses its payloads (unknownSenderKey: the original content, the fallback text, is shown) until it refreshes its sender keys (at launch at most once a day, or on the \"keys changed\" push): publish the new record at once (sender export --all) and send that push. The staged rotation (sender add, apps refresh, sender promote) has no such cost.",
            "--json: {\"senderKey\": the new key, \"senderKeys\": every key}. Audited as senderRotate (and senderPrune for keys past their grace window).",
            V2ServerCommands.storeNote], audited: true))

    struct Options: CommandOptions {
        let sender: SenderOptions, grace: Int64
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            sender = try SenderOptions(parsing: a)
            grace = try keyGrace(a, now: sender.now)
        }
        func validate() throws { try sender.validate() }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (app, now) = (o.sender.appID, o.sender.now)
        let store = try V2ServerCommands.open(o.sender.store)
        let key = try V2ServerCommands.mapErrors { try store.rotateSenderKey(appID: app, graceSeconds: o.grace, now: now) }
        if c.json {
            let all = try V2ServerCommands.mapErrors { try store.senderKeys(appID: app) }
            keyPrintJSON(.object(JSONObject([("senderKey", V2ServerCommands.json(key, now: now)),
                                             ("senderKeys", .array(all.map { V2ServerCommands.json($0, now: now) }))])))
        } else {
            keyPrintJSON(.object(key.record))
        }
        return .success
    }
}

/// `push-keys sender export`: the sender key record(s) apps pin.
struct SenderExportCommand: OptionsCommand {
    let path = ["sender", "export"]
    static let all = Option.flag("--all", "every published key (the primary and former keys still in their grace window), one record a line")

    let options = KeyOptions.reading + [KeyOptions.appID.spec,
        SenderExportCommand.all.spec,
        KeyOptions.now.spec]
    let help = HelpText(
        overview: "print the app's v2 sender key record (public data) for apps to pin; --all prints every published one",
        usage: ["push-keys sender export --keychain DIR --app-id APP [--all] [--now UNIX] [--json]"],
        examples: [
            "push-keys sender export --keychain server-kc --app-id com.example.app > sender-key.json",
            "push-keys sender export --keychain server-kc --app-id com.example.app --all --json",
        ],
        exitCodes: V2ServerCommands.exitCodes(usage: ["a bad --app-id", KeyOptions.badNow],
                                              noInput: "the app has no sender key (unknownKeyset): use push-keys sender generate"),
        notes: KeyOptions.notes([SenderOptions.output + " With --all, one record a line, the primary last; --now decides which former keys are still in their grace window.",
            "--json: {\"senderKeys\": [{keyId, status, published, createdAt, retiredAt, notAfter, record}]} (every key with --all, else the primary).",
            V2ServerCommands.storeNote], audited: false))

    struct Options: CommandOptions {
        let sender: SenderOptions, all: Bool
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            sender = try SenderOptions(parsing: a)
            all = a.has(SenderExportCommand.all)
        }
        func validate() throws { try sender.validate() }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (app, now) = (o.sender.appID, o.sender.now)
        let store = try V2ServerCommands.open(o.sender.store)
        let keys = try V2ServerCommands.mapErrors { try store.senderKeys(appID: app) }
        let shown = keys.filter { o.all ? $0.isPublished(at: now) : $0.status == .primary }
        guard !shown.isEmpty else {
            throw CLIError(code: KeysError.Code.unknownKeyset.name, "\(app) has no \(keys.isEmpty ? "" : "published ")sender key",
                           hint: "push-keys sender generate --keychain DIR --app-id \(app)", exitCode: .noInput)
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("senderKeys", .array((o.all ? keys : shown).map { V2ServerCommands.json($0, now: now) }))])))
        } else {
            for k in shown { keyPrintJSON(.object(k.record)) }
        }
        return .success
    }
}
