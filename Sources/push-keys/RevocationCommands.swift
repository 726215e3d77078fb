import PushSealCLI
import PushSealJSON
import PushSealKeyRecords
import PushSealServerKeys
import PushSealSystem

/// `push-keys registration revoke` and `push-keys revocations export` (issue 24, "Forgetting an
/// installation"): revoke a recipient's v2 registrations on a server keychain or the registry,
/// and write the revocation list apps apply (FORMAT.md §V.12; what `GET /v1/revocations` serves).
enum RevocationCommands {
    static let all: [any Command] = [RegistrationRevokeCommand(), RevocationsExportCommand()]

    /// The revocation records of `appID` in `store`: every revoked (disabled) registration and
    /// sender key, one record per revocation time (oldest first), at most 1,000 key ids each.
    /// - Throws: the store's errors.
    static func records(appID: String, in store: any RegistrationStore) throws -> [RevocationRecord] {
        var revoked: [(keyID: String, revokedAt: Int64)] = []
        let senderKeys = try store.senderKeys(appID: appID)
        // A registration named like a sender key (allowed before 2026-12-04) is left out: a
        // phone disables every key of a listed id, its sender pin included.
        let senderIDs = Set(senderKeys.map(\.keyID))
        for set in try store.allRegistrations() where set.appID == appID {
            for r in set.registrations where r.status == .disabled && !senderIDs.contains(r.keyID) {
                revoked.append((r.keyID, r.supersededAt ?? r.registeredAt))
            }
        }
        for k in senderKeys where k.status == .disabled { revoked.append((k.keyID, k.retiredAt ?? k.createdAt)) }
        return RevocationRecord.list(appID: appID, revoked: revoked)
    }
}

/// `push-keys registration revoke --app-id APP --recipient R [--key-id K]`.
struct RegistrationRevokeCommand: OptionsCommand {
    let path = ["registration", "revoke"]
    static let keyID = Option.text("--key-id", "K", "only this registration (default: every registration of the recipient not yet revoked)")
    let options = KeyOptions.changing + [KeyOptions.appID.spec, KeyOptions.recipient.spec,
        RegistrationRevokeCommand.keyID.spec, KeyOptions.now.spec]
    let help = HelpText(
        overview: "revoke a recipient's v2 registrations (logout, account deletion, a stolen phone): nothing is sealed to them again, and the next revocations export lists their key ids so the phone disables them",
        usage: ["push-keys registration revoke --keychain DIR --app-id APP --recipient R [--key-id K] [--audit-log FILE] [--now UNIX] [--json]"],
        examples: [
            "push-keys registration revoke --keychain server-kc --app-id com.example.app --recipient alice-iphone",
            "push-keys registration revoke --registry postgresql:///pushseal --kek-file kek --app-id com.example.app --recipient alice-iphone --json",
        ],
        exitCodes: V2ServerCommands.exitCodes(usage: ["a bad --app-id, --recipient, --key-id or --now"],
                                              noInput: "the recipient has no registration (unknownRegistration), or none with --key-id (unknownKey)"),
        notes: KeyOptions.notes([
            "The recipient is left without a v2 key: push-seal reports it for that recipient until the app registers again (a new registration token). Version 1 keysets are revoked with push-keys revoke. The device tokens stay (push-keys token list); the revoked key ids reach phones through push-keys revocations export.",
            "Text output: one line per registration revoked, 'APP R KEYID revoked' ('already revoked' when it was). --json: {\"revoked\": [keyId...], \"alreadyRevoked\": [keyId...]}. Audited as revokeRegistration.",
            V2ServerCommands.storeNote,
        ], audited: true))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, appID: String, recipient: String, keyID: String?, now: Int64
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            appID = try a.required(KeyOptions.appID)
            recipient = try a.required(KeyOptions.recipient)
            keyID = a[RegistrationRevokeCommand.keyID]
            now = try keyNow(a)
        }
        func validate() throws {
            try store.validate()
            try keyUsageErrors {
                try KeyID.validateAppID(appID)
                try KeyID.validateRecipient(recipient)
                if let keyID { try KeyID.validate(keyID) }
            }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try V2ServerCommands.open(o.store)
        let (revoked, already) = try V2ServerCommands.mapErrors { () -> ([String], [String]) in
            let set = try store.registrations(appID: o.appID, recipient: o.recipient)
            let targets = set.registrations.filter { o.keyID == nil || $0.keyID == o.keyID }
            if let keyID = o.keyID, targets.isEmpty {
                throw KeysError(.unknownKey, "recipient \(o.recipient) of \(o.appID) has no registration \(keyID)")
            }
            var revoked: [String] = [], already: [String] = []
            for r in targets {
                if r.status == .disabled { already.append(r.keyID); continue }
                try store.revokeRegistration(appID: o.appID, recipient: o.recipient, keyID: r.keyID, now: o.now)
                revoked.append(r.keyID)
            }
            return (revoked, already)
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("revoked", .array(revoked.map { .string($0) })), ("alreadyRevoked", .array(already.map { .string($0) }))])))
        } else {
            Output.stdout(revoked.map { "\(o.appID) \(o.recipient) \($0) revoked\n" }.joined()
                          + already.map { "\(o.appID) \(o.recipient) \($0) already revoked\n" }.joined())
        }
        return .success
    }
}

/// `push-keys revocations export --app-id APP`.
struct RevocationsExportCommand: OptionsCommand {
    let path = ["revocations", "export"]
    let options = KeyOptions.reading + [KeyOptions.appID.spec]
    let help = HelpText(
        overview: "print the app's revocation list (FORMAT.md §V.12): a JSON array of pushseal-revocation records naming every revoked registration and sender key, what GET /v1/revocations serves and phones apply",
        usage: ["push-keys revocations export --keychain DIR --app-id APP"],
        examples: [
            "push-keys revocations export --keychain server-kc --app-id com.example.app > revocations.json",
            "push-keys revocations export --registry postgresql:///pushseal --kek-file kek --app-id com.example.app",
        ],
        exitCodes: V2ServerCommands.exitCodes(usage: ["a bad --app-id"]),
        notes: KeyOptions.notes([
            "OUTPUT: one JSON array on one line, one record per revocation time (oldest first, at most 1,000 key ids each); [] when nothing is revoked. Public data (key ids and times). A phone disables every listed key it holds (device keys, pinned sender keys) at its next refresh; the list only grows. Version 1 key ids are not listed (the server's v1 keysets are revoked with push-keys revoke; write a record for them by hand, FORMAT.md §V.12, when a v1 key may be stolen).",
            V2ServerCommands.storeNote,
        ], audited: false))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, appID: String
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            appID = try a.required(KeyOptions.appID)
        }
        func validate() throws {
            try store.validate()
            try keyUsageErrors { try KeyID.validateAppID(appID) }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try V2ServerCommands.open(o.store)
        let records = try V2ServerCommands.mapErrors { try RevocationCommands.records(appID: o.appID, in: store) }
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (i, r) in records.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += try r.encoded()
        }
        out += Array("]\n".utf8)
        Output.stdout(String(decoding: out, as: UTF8.self))
        return .success
    }
}
