import PushSealCLI
import PushSealCrypto
import PushSealKeys

/// `push-keys import`: add a key record to a keychain.
struct KeyImportCommand: Command {
    let path = ["import"]
    let options = KeyOptions.common + [
        .value("--accessibility", "A", "accessibility of a new keyset item (default afterFirstUnlockThisDeviceOnly)"),
        .value("--app-id", "APP", "refuse a record for another app id"), KeyOptions.now,
        .value("--grace", "DURATION", "grace of a local primary superseded by the record's (default 30d)")]
    let help = HelpText(
        overview: "import a JSON key record (from a file or stdin) into a server or device keychain; idempotent and all-or-nothing: any error changes nothing",
        usage: ["push-keys import --keychain DIR [identity options] [--accessibility A] [--app-id APP] [FILE | -] [--json]"],
        examples: [
            "push-keys import --keychain device-kc --entitlements app.json alice.key.json   # server generated, device imports",
            "push-keys import --keychain server-kc --app-id com.example.app device.key.json   # device generated, server imports",
        ],
        exitCodes: KeyOptions.exitCodes, notes: KeyOptions.identityNote)

    func run(_ c: CommandContext) throws -> ExitCode {
        let a = c.arguments
        try a.expectPositionals(max: 1)
        let acc = try keyAccessibility(a, c)
        let grace = try a.duration("--grace") ?? KeyStore.defaultGraceSeconds
        var bytes = try InputReader.readAll(a.positionals.first, limitByteCount: 1 << 20)
        let record: KeyRecord
        do {
            defer { SecretBytes.wipe(&bytes) }
            record = try keyMapErrors {
                do { return try KeyRecord(wiping: &bytes) } catch let e as KeysError where e.code == .invalidName {
                    throw KeysError(.malformedRecord, "key record: \(e.reason)")
                }
            }
        }
        let store = try keyOpenStore(a, create: true, accessibility: acc)
        let now = try keyNow(a)
        let result = try keyMapErrors { try store.importRecord(record, expectedAppID: a.value("--app-id"), graceSeconds: grace, now: now) }
        if c.json {
            keyPrintJSON(.object([("created", .bool(result.created)), ("changedKeyIds", .array(result.changedKeyIDs.map { .string($0) })),
                                  ("keyset", .keyset(result.keyset))]))
        } else {
            Output.stdout("\(record.appID) \(record.recipient): \(result.changedKeyIDs.isEmpty ? "already up to date" : "imported " + result.changedKeyIDs.joined(separator: " "))\n")
        }
        return .success
    }
}
