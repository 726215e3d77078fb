import PushSealJSON
import PushSealCLI
import PushSealKeychain
import PushSealKeyRecords
import PushSealServerKeys
/// `push-keys generate`: a new keyset with one primary key.
struct KeyGenerateCommand: OptionsCommand {
    let path = ["generate"]
    let options = [KeyOptions.keychainCreated] + KeyOptions.identity + [KeyOptions.auditLog, KeyOptions.appID, KeyOptions.recipient,
        KeyOptions.accessibility, KeyOptions.now]
    let help = HelpText(
        overview: "create a keyset for an app id and recipient with one primary key (32 random bytes) and print its key id; creates the keychain if DIR does not exist",
        usage: ["push-keys generate --keychain DIR [IDENTITY] --app-id APP --recipient R [--accessibility A] [--audit-log FILE] [--now UNIX] [--json]"],
        examples: [
            "push-keys generate --keychain server-kc --app-id com.example.app --recipient alice-iphone",
            "push-keys generate --keychain device-kc --entitlements app.json --app-id com.example.app --recipient alice-iphone   # device generates",
        ],
        exitCodes: KeyOptions.exitCodes(
            usage: ["a bad app id or recipient", "an unknown --accessibility", KeyOptions.badNow],
            createsKeychain: true,
            cannotCreate: "the keyset already exists (generate never replaces one: use rotate), or DIR could not be created as a new keychain"),
        notes: KeyOptions.notes(["Text output: the new key id. Next: export the key record to the other side (push-keys export)."], audited: true))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, keyset: KeysetOptions, accessibility: Accessibility, now: Int64
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            keyset = try KeysetOptions(parsing: a)
            accessibility = try keyAccessibility(a)
            now = try keyNow(a)
        }
        func validate() throws {
            try store.validate()
            try keyset.validateNames()
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (app, recipient, now) = (o.keyset.appID, o.keyset.recipient, o.now)
        keyWarnIfLockedOut(o.accessibility, c)
        let store = try o.store.open(create: true, accessibility: o.accessibility)  // every option was checked first
        let key = try keyMapErrors { try store.generate(appID: app, recipient: recipient, now: now) }
        if c.json {
            keyPrintJSON(.object(JSONObject([("appId", .string(app)), ("recipient", .string(recipient)), ("keyId", .string(key.keyID)), ("status", .string("primary"))])))
        } else {
            Output.stdout(key.keyID + "\n")
        }
        return .success
    }
}

/// Parses `--accessibility` (default afterFirstUnlockThisDeviceOnly).
/// - Throws: `CLIError` 64 for an unknown class.
func keyAccessibility(_ a: Arguments) throws -> Accessibility {
    guard let v = a.value("--accessibility") else { return .afterFirstUnlockThisDeviceOnly }
    guard let acc = Accessibility(rawValue: v) else {
        throw CLIError.usage("unknown accessibility \(quoted(v))", hint: "one of: " + Accessibility.allCases.map(\.rawValue).joined(separator: ", "))
    }
    return acc
}

/// Warns for accessibility classes an extension cannot read while the phone is locked.
func keyWarnIfLockedOut(_ acc: Accessibility, _ c: CommandContext) {
    if !acc.isAvailableWhileLocked {
        c.warn("\(acc) keys cannot be read while the phone is locked: the Notification Service Extension will fail with errSecInteractionNotAllowed (-25308) and show the fallback alert; use afterFirstUnlockThisDeviceOnly")
    }
}
