import PushSealCLI
import PushSealCrypto
import PushSealJSON
import PushSealKeychain
import PushSealKeyRecords
import PushSealDeviceKeys
import PushSealSystem
import PushSealWire

/// `push-keys device rotate` / `promote` / `prune` / `pin-sender` / `list`: the rest of the
/// device key's life in the one layout (docs/keychain.md "Device key items").
enum DeviceLifecycleCommands {
    static let all: [any Command] = [DeviceRotateCommand(), DevicePromoteCommand(), DevicePruneCommand(), DevicePinSenderCommand(),
                                     DeviceListCommand()]

    /// The options every device command has: the keychain, the app's identity, `--app-id`, `--now`.
    static let appID = KeysetOptions.appIDOption.withHelp("the app's bundle identifier (required): items pushseal.key:APP and pushseal.sender:APP")
    static let now = KeyOptions.now.withHelp("the device clock, seconds since 1970 UTC (default: now)")

    static let base: [OptionSpec] = [KeychainCommands.keychainOption] + KeychainCommands.identityOptions + [
        DeviceLifecycleCommands.appID.spec,
        DeviceLifecycleCommands.now.spec,
    ]

    /// Keychain, identity, app id and time, parsed and checked.
    struct Base: Sendable {
        let caller: KeychainCallerOptions, appID: String, now: Int64

        init(parsing a: Arguments) throws {
            caller = try KeychainCallerOptions(parsing: a)
            appID = try a.required(DeviceLifecycleCommands.appID)
            now = try keyNow(a)
        }

        /// - Throws: `CLIError` 64.
        func validate() throws {
            try caller.validate()
            try keyUsageErrors { try KeyID.validateAppID(appID) }
        }
    }

    /// `checked`: the command's options with rules, as the usage line names them ("an --app-id or --now").
    static func exitCodes(checked: String, dataError: String? = nil, noInput: String? = nil, cannotCreate: String? = nil) -> [String] {
        KeychainCommands.exitCodes(keychainError: "errSecMissingEntitlement -34018",
                                   usage: ["no identity", "\(checked) that breaks its rule"],
                                   dataError: dataError, noInput: noInput, cannotCreate: cannotCreate, readsSecrets: true)
    }

    /// Prints the command's result: one JSON object with --json, else the text lines.
    static func output(_ context: CommandContext, json: () -> JSONObject, text: () -> String) -> ExitCode {
        if context.json { keyPrintJSON(.object(json())) } else { Output.stdout(text()) }
        return .success
    }

    /// One item as `device list` shows it (no secret: a v2 key shows its public key).
    static func json(_ e: DeviceKeyItem.Entry) -> JSONValue {
        .object(JSONObject([("kind", .string(e.kind.name)), ("keyId", .string(e.keyID)),
                            ("status", e.damaged ? .string("damaged") : e.status.map { .string($0.rawValue) } ?? .null),
                            ("createdAt", KeyJSON.opt(e.createdAt)), ("retiredAt", KeyJSON.opt(e.retiredAt)), ("notAfter", KeyJSON.opt(e.notAfter)),
                            ("publicKey", e.publicKey.map { .string(WireBase64.encode($0.rawRepresentation)) } ?? .null),
                            ("accessGroup", .string(e.accessGroup)), ("keyset", e.keysetRecipient.map { .string($0) } ?? .null),
                            ("rolledBack", .bool(e.rolledBack))]))
    }
}

/// `push-keys device rotate`: a new v2 key pair, pending until `device promote` (security review G13).
struct DeviceRotateCommand: OptionsCommand {
    let path = ["device", "rotate"]
    static let keyID = Option.text("--key-id", "ID", "the new key's id (default: the first 16 characters of base64url(SHA-256(public key)), FORMAT.md §V.6)")

    let options: [OptionSpec] = DeviceLifecycleCommands.base + [
        DeviceRotateCommand.keyID.spec,
    ]
    let help = HelpText(
        overview: "rotate the app's v2 (HPKE) device key on the device, step one: make a new key pair, pending while the app holds a pending or primary v2 key (primary when it holds none), and print its registration record for the app to upload; the older key stays primary until 'push-keys device promote' after the server accepted the record",
        usage: ["push-keys device rotate --keychain DIR IDENTITY --app-id APP [--key-id ID] [--now UNIX] [--json]"],
        examples: [
            "push-keys device rotate --keychain device-kc --entitlements app.json --app-id com.example.app > registration.json",
            "push-keys device rotate --keychain device-kc --entitlements app.json --app-id com.example.app --json",
        ],
        exitCodes: DeviceLifecycleCommands.exitCodes(checked: "an --app-id, --key-id or --now", dataError: "an older v2 device key item is damaged (corruptKey; nothing changed); the key id already held (duplicateKeyID); an access group other than the one holding the app's key items and key manifest (accessGroupMismatch; nothing changed: use that group, or move the items first with push-keys keychain migrate)",
                                                     noInput: "the entitlements file missing"),
        notes: KeychainCommands.identityNote + "\n\n" + """
            OUTPUT: the new registration record, one JSON line (as device generate); with --json: {"registration": record, "item": attributes, "status": "pending" or "primary"}. Rotation takes two steps, as in the iOS reference (makeDeviceKey as pending, promote once the server accepted the record: Examples/iOS/Sources/PushSealDevice/PushSealDeviceKeys.swift; security review G13): upload the record (push-keys register on the server, or the app's registration request, POST /v1/devices), then run 'push-keys device promote --key-id ID'. Until then nothing is retired: the older key opens everything sealed to the old registration, and the pending key opens what the server already seals to the new one. Running rotate again before a promote adds another pending key; promote retires every other one.
            """
    )

    struct Options: CommandOptions {
        let base: DeviceLifecycleCommands.Base, keyID: String?
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            base = try DeviceLifecycleCommands.Base(parsing: a)
            keyID = a[DeviceRotateCommand.keyID]
        }
        func validate() throws {
            try base.validate()
            if let keyID { try keyUsageErrors { try KeyID.validate(keyID) } }
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let (kc, group) = try o.base.caller.open()
        // The new key goes where the app's items and manifest are, or nowhere (nothing changed).
        try DeviceReinstall.checkWriteGroup(kc, accessGroup: group, appID: o.base.appID)
        let key = try X25519.PrivateKey()
        let keyID = try o.keyID ?? DeviceKeyItem.keyID(for: key.publicKey)
        let (item, status) = try keyMapErrors {
            try DeviceKeyItem.rotate(to: key, keyID: keyID, appID: o.base.appID, in: kc, accessGroup: group, now: o.base.now)
        }
        let record = DeviceKeyItem.registrationRecord(appID: o.base.appID, keyID: keyID, publicKey: key.publicKey, createdAt: o.base.now)
        return DeviceLifecycleCommands.output(context, json: {
            JSONObject([("registration", .object(record)), ("item", .object(KeychainCommands.json(item))), ("status", .string(status.rawValue))])
        }, text: { Output.json(.object(record)) + "\n" })
    }
}

/// `push-keys device promote --key-id ID`: rotation, step two, once the server accepted the
/// new registration: ID primary, the older v2 keys decryptOnly for the grace window (G13).
struct DevicePromoteCommand: OptionsCommand {
    let path = ["device", "promote"]
    static let keyID = Option.text("--key-id", "ID", "the pending v2 device key to make primary (required): the keyId of the registration record the server accepted")

    let options: [OptionSpec] = DeviceLifecycleCommands.base + [
        DevicePromoteCommand.keyID.spec,
        KeyOptions.grace("grace window of the older v2 keys: they open messages sealed before the promote until now + grace").spec,
    ]
    let help = HelpText(
        overview: "rotate the app's v2 (HPKE) device key on the device, step two, once the server accepted the new registration record: make the pending key ID primary and turn every other pending or primary v2 key decryptOnly (retiredAt now, notAfter now + grace); idempotent",
        usage: ["push-keys device promote --keychain DIR IDENTITY --app-id APP --key-id ID [--grace DURATION] [--now UNIX] [--json]"],
        examples: [
            "push-keys device promote --keychain device-kc --entitlements app.json --app-id com.example.app --key-id qPrTVOU9vBHbDH0W",
            "push-keys device promote --keychain device-kc --entitlements app.json --app-id com.example.app --key-id qPrTVOU9vBHbDH0W --grace 14d --json",
        ],
        exitCodes: DeviceLifecycleCommands.exitCodes(
            checked: "no --key-id; an --app-id, --key-id, --grace or --now",
            dataError: "ID is decryptOnly or disabled (invalidState: a retired or revoked key never becomes primary again; nothing changed); a v2 device key item is damaged (corruptKey; nothing changed); an access group other than the one holding the app's key items and key manifest (accessGroupMismatch; nothing changed: use that group, or move the items first with push-keys keychain migrate)",
            noInput: "the entitlements file missing; no v2 device key ID for APP (unknownKey)"),
        notes: KeychainCommands.identityNote + "\n\n" + """
            OUTPUT: the primary key id, one line; with --json: {"appId", "keyId", "promoted" (false: ID was already primary), "retired": [key ids]}. A message sealed to a retired key before the promote opens until its notAfter; one sealed after it falls back (keys:keyRetired). Run it only once the server accepted the registration of ID (push-keys register, or a 2xx answer to the app's registration request): from then on the server seals to ID. Promoting the primary again changes nothing (a note on stderr says so; it only retires a second primary an interrupted older rotation left) and leaves a newer pending key pending. Run 'push-keys device prune' after the grace window to delete the retired private keys.
            """
    )

    struct Options: CommandOptions {
        let base: DeviceLifecycleCommands.Base, keyID: String, grace: Int64
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            base = try DeviceLifecycleCommands.Base(parsing: a)
            keyID = try a.required(DevicePromoteCommand.keyID)
            grace = try keyGrace(a, now: base.now)
        }
        func validate() throws {
            try base.validate()
            try keyUsageErrors { try KeyID.validate(keyID) }
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let (kc, group) = try o.base.caller.open()
        // Its writes (the new primary, the retired keys, the manifest) stay in one group.
        try DeviceReinstall.checkWriteGroup(kc, accessGroup: group, appID: o.base.appID)
        let (promoted, retired): (Bool, [String])
        do {
            (promoted, retired) = try keyMapErrors {
                try DeviceKeyItem.promote(keyID: o.keyID, appID: o.base.appID, in: kc, accessGroup: group, now: o.base.now, graceSeconds: o.grace)
            }
        } catch let e as CLIError where e.code == "unknownKey" {
            throw CLIError(code: e.code, e.message, hint: "run 'push-keys device list' to see the app's keys; a new key comes from 'push-keys device rotate'",
                           exitCode: .noInput)
        } catch let e as CLIError where e.code == "invalidState" {
            throw CLIError(code: e.code, e.message, hint: "promote the pending key of the last 'push-keys device rotate' (see 'push-keys device list'), or rotate again",
                           exitCode: .dataError)
        }
        if !promoted && !context.json {
            let what = retired.isEmpty ? "nothing changed" : "retired the other primary " + retired.joined(separator: " ")
            Output.stderr("push-keys: \(o.keyID) is already the primary v2 device key of \(o.base.appID); \(what)\n")
        }
        return DeviceLifecycleCommands.output(context, json: {
            JSONObject([("appId", .string(o.base.appID)), ("keyId", .string(o.keyID)), ("promoted", .bool(promoted)),
                        ("retired", .array(retired.map { .string($0) }))])
        }, text: { o.keyID + "\n" })
    }
}

/// `push-keys device prune`: deletes device keys past their grace window.
struct DevicePruneCommand: OptionsCommand {
    let path = ["device", "prune"]
    let options: [OptionSpec] = DeviceLifecycleCommands.base + [
        KeyOptions.grace("for a disabled key without notAfter: deleted once retiredAt + grace has passed").spec,
    ]
    let help = HelpText(
        overview: "delete the app's v1 and v2 device key items whose grace window is over (decryptOnly or disabled with notAfter at or before now; disabled without notAfter retired at least a grace ago); pinned sender keys are kept",
        usage: ["push-keys device prune --keychain DIR IDENTITY --app-id APP [--grace DURATION] [--now UNIX] [--json]"],
        examples: [
            "push-keys device prune --keychain device-kc --entitlements app.json --app-id com.example.app",
            "push-keys device prune --keychain device-kc --entitlements app.json --app-id com.example.app --now 1800000000 --json",
        ],
        exitCodes: DeviceLifecycleCommands.exitCodes(checked: "an --app-id, --grace or --now", noInput: "the entitlements file missing"),
        notes: KeychainCommands.identityNote + "\n\n" + """
            OUTPUT: each deleted key id on its own line (nothing when none); with --json: {"appId", "pruned": [key ids]}. A message for a pruned key falls back with unknownKey.
            """
    )

    struct Options: CommandOptions {
        let base: DeviceLifecycleCommands.Base, grace: Int64
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            base = try DeviceLifecycleCommands.Base(parsing: a)
            grace = try keyGrace(a, now: base.now)
        }
        func validate() throws { try base.validate() }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let (kc, group) = try o.base.caller.open()
        let pruned = try keyMapErrors {
            try DeviceKeyItem.prune(appID: o.base.appID, in: kc, accessGroup: group, now: o.base.now, graceSeconds: o.grace)
        }
        return DeviceLifecycleCommands.output(context, json: { JSONObject([("appId", .string(o.base.appID)), ("pruned", .array(pruned.map { .string($0) }))]) },
                                              text: { pruned.map { $0 + "\n" }.joined() })
    }
}

/// `push-keys device pin-sender RECORD...`: pins sender public keys for the app, all or none.
struct DevicePinSenderCommand: OptionsCommand {
    let path = ["device", "pin-sender"]
    let options: [OptionSpec] = DeviceLifecycleCommands.base
    /// The most RECORD arguments, and the most records in all.
    static let maxRecordCount = 64
    let help = HelpText(
        overview: "pin sender public keys for the app from their pushseal-sender-key records (FORMAT.md §V.6), all or none: auth-mode payloads by them open, and once any sender key is pinned a base-mode payload is refused (downgradeRefused); pin the new key before a sender key rotation, several may be pinned",
        usage: ["push-keys device pin-sender --keychain DIR IDENTITY --app-id APP [--now UNIX] [--json] RECORD..."],
        examples: [
            "push-keys device pin-sender --keychain device-kc --entitlements app.json --app-id com.example.app sender.json",
            "push-keys device pin-sender --keychain device-kc --entitlements app.json --app-id com.example.app old-sender.json new-sender.json",
            "push-keys sender export ... --all | push-keys device pin-sender --keychain device-kc --entitlements app.json --app-id com.example.app -",
            "curl -s https://gateway.example/v1/sender-keys | push-keys device pin-sender --keychain device-kc --entitlements app.json --app-id com.example.app -",
        ],
        exitCodes: DeviceLifecycleCommands.exitCodes(
            checked: "an --app-id or --now, no RECORD, - given twice, more than \(maxRecordCount) records",
            dataError: "a RECORD (or one of its lines) is not a pushseal-sender-key record of version 2, is for another app id (wrongAppID), has a publicKey that is not base64 of 32 bytes or is a low-order point (lowOrderPoint), or names a senderKeyId pinned (or given twice) with other key bytes (duplicateKeyID); nothing is pinned then; an access group other than the one holding the app's key items and key manifest (accessGroupMismatch; nothing changed: use that group, or move the items first with push-keys keychain migrate)",
            noInput: "the entitlements file or a RECORD file missing"),
        notes: KeychainCommands.identityNote + "\n\n" + """
            RECORD: a file, or - for standard input (at most once), holding one {"format":"pushseal-sender-key","version":2,"appId","senderKeyId","publicKey"} (public data), several one per line (as push-keys sender export --all prints them; blank lines skipped), or a JSON array of them (as push-gateway's GET /v1/sender-keys answers). All or none: every record is checked before anything is written, and pins added by a run that then fails are removed again. Each pin is a keychain item (service pushseal.sender:APP, account = sender key id, label "\(DeviceKeyItem.senderLabel)", a 59-byte key record of kind 3, status primary; docs/keychain.md "Device key items"), written under the app's key manifest. Pinning the same record again changes nothing.

            OUTPUT: the sender key ids, one per line; with --json: {"appId", "pins": [{"senderKeyId", "added" (false: already pinned), "item": attributes}]} and, with one record, its "senderKeyId", "added" and "item" at the top level too.
            """
    )

    struct Options: CommandOptions {
        let base: DeviceLifecycleCommands.Base, records: [String]
        init(parsing a: Arguments) throws {
            let positionals = try Positionals(a, max: DevicePinSenderCommand.maxRecordCount)
            records = positionals.values
            guard !records.isEmpty else {
                throw CLIError.usage("missing the sender key record", hint: "give RECORD, a pushseal-sender-key file, or - for standard input")
            }
            base = try DeviceLifecycleCommands.Base(parsing: a)
        }
        func validate() throws {
            try base.validate()
            if records.filter({ $0 == "-" }).count > 1 { throw CLIError.usage("- (standard input) given more than once") }
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        var senders: [PinnedSenderKey] = []
        for source in o.records {
            let bytes = try InputReader.readAll(source == "-" ? nil : source, limitByteCount: 64 << 10)
            let name = source == "-" ? "standard input" : source
            let found = Self.records(in: bytes)
            if found.isEmpty {
                throw CLIError(code: KeysError.Code.malformedRecord.name, "\(name) holds no sender key record; nothing pinned", exitCode: .dataError)
            }
            for (place, record) in found {
                senders.append(try Self.sender(record, named: place.map { "\(name) \($0)" } ?? name, appID: o.base.appID))
                if senders.count > Self.maxRecordCount {
                    throw CLIError.usage("more than \(Self.maxRecordCount) sender key records")
                }
            }
        }
        let (kc, group) = try o.base.caller.open()
        // A write as the app: pins go where the app's items and manifest are (else refused before
        // anything changes), and the first run after a reinstall removes PushSeal's leftovers
        // first and writes the install marker, so a later `device generate` keeps these pins.
        try DeviceReinstall.prepareWrite(kc, accessGroup: group, appID: o.base.appID, context)
        let pins = try keyMapErrors { try DeviceKeyItem.pinSenders(senders, appID: o.base.appID, in: kc, accessGroup: group, now: o.base.now) }
        return DeviceLifecycleCommands.output(context, json: {
            let list = pins.map { p -> JSONValue in
                .object(JSONObject([("senderKeyId", .string(p.keyID)), ("added", .bool(p.added)), ("item", .object(KeychainCommands.json(p.item)))]))
            }
            var members: [(key: String, value: JSONValue)] = [("appId", .string(o.base.appID))]
            if pins.count == 1, let p = pins.first {
                members += [("senderKeyId", .string(p.keyID)), ("added", .bool(p.added)), ("item", .object(KeychainCommands.json(p.item)))]
            }
            return JSONObject(members + [("pins", .array(list))])
        }, text: { pins.map { $0.keyID + "\n" }.joined() })
    }

    /// The records of one input, each with where it was (`nil`: the whole input): each element
    /// of a JSON array (`element N`: what push-gateway's `GET /v1/sender-keys` answers), the
    /// whole input when it is one other JSON value, else one per non-blank line (`line N`, 1-based).
    static func records(in bytes: [UInt8]) -> [(place: String?, bytes: [UInt8])] {
        if let value = try? JSONReader.parse(bytes) {
            guard case .array(let elements) = value else { return [(nil, bytes)] }
            return elements.enumerated().map { (place: "element \($0.offset + 1)", bytes: (try? JSONWriter.serialize($0.element)) ?? []) }
        }
        if InputReader.jsonLineCount(bytes) == nil { return [(nil, bytes)] }
        let blank: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r")]
        return bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated()
            .filter { $0.element.contains { !blank.contains($0) } }
            .map { (place: "line \($0.offset + 1)", bytes: Array($0.element)) }
    }

    /// One record, checked: another app id is refused as such before anything else is read from it.
    static func sender(_ bytes: [UInt8], named name: String, appID: String) throws -> PinnedSenderKey {
        if case .object(let object)? = try? JSONReader.parse(bytes), let app = object["appId"]?.stringValue, app != appID {
            throw CLIError(code: KeysError.Code.wrongAppID.name, "\(name) is a sender key record for another app id, not \(appID); nothing pinned",
                           exitCode: .dataError)
        }
        do {
            return try PinnedSenderKey(record: bytes, appID: appID)
        } catch let e as FormatError {
            throw CLIError(code: KeysError.Code.malformedRecord.name, "\(name): \(e.reason); nothing pinned", exitCode: .dataError)
        }
    }
}

/// `push-keys device list`: the app's device key items, without secrets.
struct DeviceListCommand: OptionsCommand {
    let path = ["device", "list"]
    let options: [OptionSpec] = DeviceLifecycleCommands.base
    let help = HelpText(
        overview: "list the app's device key items (v1 keys, v2 device keys, pinned sender keys) with status and dates, never a secret: v2 device keys and sender keys show their public key",
        usage: ["push-keys device list --keychain DIR IDENTITY --app-id APP [--json]"],
        examples: [
            "push-keys device list --keychain device-kc --entitlements app.json --app-id com.example.app",
            "push-keys device list --keychain device-kc --access-group TEAMID.com.example.shared --app-id com.example.app --json",
        ],
        exitCodes: DeviceLifecycleCommands.exitCodes(checked: "an --app-id or --now", noInput: "the entitlements file missing"),
        notes: KeychainCommands.identityNote + "\n\n" + """
            OUTPUT: one line per item: KIND KEY_ID STATUS createdAt retiredAt notAfter PUBLIC_KEY (KIND v1, v2 or sender; times ISO 8601 UTC, - when unset; status rolledBack for an item the app's key manifest does not vouch for, an older copy put back, which does not open (docs/keychain.md "The key manifest"), damaged for a record that breaks the layout); with --json: {"appId", "keys": [{"kind", "keyId", "status", "createdAt", "retiredAt", "notAfter", "publicKey", "accessGroup", "keyset", "rolledBack"}]} ("status" is the record's own).

            LEGACY KEYSETS: v1 keys still held in a keyset item of the app (pushseal.keyset:APP, written by push-keys import before 0.2.0, not yet converted) are listed too, as v1 lines ending in keyset:RECIPIENT ("keyset": the recipient; null for key items); a key id with a key item shows the item only (it decides). push-keys import of the keyset's next record converts it into key items (docs/keychain.md "Legacy keyset items").
            """
    )

    struct Options: CommandOptions {
        let base: DeviceLifecycleCommands.Base
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            base = try DeviceLifecycleCommands.Base(parsing: a)
        }
        func validate() throws { try base.validate() }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let (kc, group) = try o.base.caller.open()
        let entries = try keyMapErrors { try DeviceKeyItem.list(appID: o.base.appID, in: kc, accessGroup: group) }
        return DeviceLifecycleCommands.output(context, json: {
            JSONObject([("appId", .string(o.base.appID)), ("keys", .array(entries.map(DeviceLifecycleCommands.json)))])
        }, text: {
            entries.map { e in
                let status = e.rolledBack ? "rolledBack" : e.damaged ? "damaged" : e.status?.rawValue ?? "-"
                let key = e.publicKey.map { WireBase64.encode($0.rawRepresentation) } ?? "-"
                let keyset = e.keysetRecipient.map { ["keyset:" + $0] } ?? []
                return ([e.kind.name, e.keyID, status, keyTime(e.createdAt), keyTime(e.retiredAt), keyTime(e.notAfter), key] + keyset)
                    .joined(separator: " ") + "\n"
            }.joined()
        })
    }
}
