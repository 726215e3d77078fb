import PushSealJSON
import PushSealCLI
import PushSealKeyRecords
import PushSealServerKeys
/// `push-keys promote`: make a key the primary.
struct KeyPromoteCommand: OptionsCommand {
    let path = ["promote"]
    static let keyID = Option.text("--key-id", "K", "the key to promote (default: the pending key of an unfinished rotation)")

    let options = KeyOptions.changing + [KeyOptions.appID.spec, KeyOptions.recipient.spec,
        KeyPromoteCommand.keyID.spec,
        KeyOptions.grace("grace window of the old primary: it opens messages until now + grace").spec, KeyOptions.now.spec]
    let help = HelpText(
        overview: "make a pending (or decryptOnly) key the primary; the old primary becomes decryptOnly until now + grace; idempotent",
        usage: ["push-keys promote --keychain DIR [IDENTITY] --app-id APP --recipient R [--key-id K] [--grace DURATION] [--audit-log FILE] [--now UNIX] [--json]"],
        examples: ["push-keys promote --keychain server-kc --app-id com.example.app --recipient alice-iphone --key-id q3Zk_9Ab"],
        exitCodes: KeyOptions.exitCodes(
            failure: "key K is disabled or destroyed and cannot become primary",
            usage: ["a bad app id, recipient or key id", KeyOptions.badGrace, KeyOptions.badNow, "no --key-id and no pending key"],
            noInput: "no keyset for APP and R, or no key K in it"),
        notes: KeyOptions.notes([
            "Text output: the primary key id. Without --key-id, the pending key of an unfinished rotation (else the newest pending key) is promoted. Promote on the server only once every device holds the key (push-keys export and import).",
        ], audited: true))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, keyset: KeysetOptions, keyID: String?, now: Int64, grace: Int64
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            keyset = try KeysetOptions(parsing: a)
            keyID = a[KeyPromoteCommand.keyID]
            now = try keyNow(a)
            grace = try keyGrace(a, now: now)
        }
        func validate() throws {
            try store.validate()
            try keyset.validateNames()
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (app, recipient, now, grace) = (o.keyset.appID, o.keyset.recipient, o.now, o.grace)
        let store = try o.store.open()
        let ks = try keyMapErrors { () throws -> KeysetInfo in
            var keyID = o.keyID
            if keyID == nil {
                let current = try store.keyset(appID: app, recipient: recipient)
                keyID = current.rotationKeyID ?? current.keys.last { $0.status == .pending }?.keyID
            }
            guard let keyID else { throw CLIError.usage("no pending key to promote", hint: "give --key-id K (see push-keys list)") }
            return try store.promote(appID: app, recipient: recipient, keyID: keyID, graceSeconds: grace, now: now)
        }
        if c.json { keyPrintJSON(KeyJSON.keyset(ks)) } else { Output.stdout((ks.primary?.keyID ?? "-") + "\n") }
        return .success
    }
}

/// `push-keys revoke`: disable a key at once.
struct KeyRevokeCommand: OptionsCommand {
    let path = ["revoke"]
    static let keyID = KeyPromoteCommand.keyID.withHelp("the key to disable (required, or give it as KID)")
    let options = KeyOptions.changing + [KeyOptions.appID.spec, KeyOptions.recipient.spec, Self.keyID.spec, KeyOptions.now.spec]
    let help = HelpText(
        overview: "disable a key now: it neither seals nor opens; messages sealed with it and still in flight fall back to their APNs alert text; idempotent",
        usage: ["push-keys revoke --keychain DIR [IDENTITY] --app-id APP --recipient R --key-id K [--audit-log FILE] [--now UNIX] [--json]",
                "push-keys revoke ... KID"],
        examples: ["push-keys revoke --keychain server-kc --app-id com.example.app --recipient alice-iphone --key-id q3Zk_9Ab"],
        exitCodes: KeyOptions.exitCodes(
            usage: ["a bad app id, recipient or key id", "no --key-id or KID", KeyOptions.badNow],
            noInput: "no keyset for APP and R, or no key K in it"),
        notes: KeyOptions.notes([
            "Text output: the key id. Revoking a disabled or destroyed key changes nothing. Revoking the primary leaves the keyset without one: nothing seals until push-keys rotate (a warning on stderr says so).",
        ], audited: true))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, keyset: KeysetOptions, keyID: String, now: Int64
        init(parsing a: Arguments) throws {
            let kid = try Positionals(a, max: 1).first
            store = try KeyStoreOptions(parsing: a)
            keyset = try KeysetOptions(parsing: a)
            guard let k = a[KeyRevokeCommand.keyID] ?? kid else { throw CLIError.usage("missing --key-id K") }
            keyID = k
            now = try keyNow(a)
        }
        func validate() throws {
            try store.validate()
            try keyset.validateNames()
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (app, recipient, keyID, now) = (o.keyset.appID, o.keyset.recipient, o.keyID, o.now)
        let store = try o.store.open()
        let key = try keyMapErrors { try store.revoke(appID: app, recipient: recipient, keyID: keyID, now: now) }
        let after = try keyMapErrors { try store.keyset(appID: app, recipient: recipient) }
        c.warn("key \(keyID) is disabled: messages sealed with it that are still in flight will fall back to their alert text")
        if after.primary == nil {
            c.warn("keyset \(app)/\(recipient) has no primary key now: nothing can be sealed until 'push-keys rotate'")
        }
        if c.json { keyPrintJSON(.object(JSONObject([("appId", .string(app)), ("recipient", .string(recipient)), ("key", KeyJSON.key(key))]))) } else { Output.stdout(keyID + "\n") }
        return .success
    }
}
