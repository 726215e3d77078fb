import PushSealJSON
import PushSealCLI
import PushSealKeychain
import PushSealKeyRecords
import PushSealServerKeys
import PushSealDeviceKeys
/// `push-keys generate`: a new keyset with one primary key; into a device keychain (an identity
/// given), one kind 1 device key item under the app's key manifest instead (docs/keychain.md
/// "Device key items"), never a legacy keyset item.
struct KeyGenerateCommand: OptionsCommand {
    let path = ["generate"]
    let options = [KeyOptions.keychainCreated.spec] + KeyOptions.identity + [KeyOptions.auditLog.spec, KeyOptions.appID.spec, KeyOptions.recipient.spec,
        KeyOptions.accessibility.spec, KeyOptions.now.spec]
    let help = HelpText(
        overview: "create a keyset for an app id and recipient with one primary key (32 random bytes) and print its key id; into a device keychain (IDENTITY given) the key is one kind 1 device key item, as the iOS reference reads it; creates the keychain if DIR does not exist",
        usage: ["push-keys generate --keychain DIR [IDENTITY] --app-id APP --recipient R [--accessibility A] [--audit-log FILE] [--now UNIX] [--json]"],
        examples: [
            "push-keys generate --keychain server-kc --app-id com.example.app --recipient alice-iphone",
            "push-keys generate --keychain device-kc --entitlements app.json --app-id com.example.app --recipient alice-iphone   # device generates",
        ],
        exitCodes: KeyOptions.exitCodes(
            usage: ["a bad app id or recipient", "an unknown --accessibility (or any but afterFirstUnlockThisDeviceOnly into a device keychain)", KeyOptions.badNow],
            dataError: "into a device keychain, an --access-group other than the one holding the app's key items and key manifest (accessGroupMismatch; nothing changed)",
            createsKeychain: true,
            cannotCreate: "the keyset already exists (generate never replaces one: use rotate); into a device keychain, the app already has a pending or primary v1 key item there, or a legacy keyset of R; or DIR could not be created as a new keychain"),
        notes: KeyOptions.notes([
            "Text output: the new key id. Next: export the key record to the other side (push-keys export).",
            "Into a device keychain (IDENTITY given): the key is written as the iOS reference reads it, one kind 1 key item (service pushseal.key:APP, account = key id, label \"PushSeal v1 key\", accessibility afterFirstUnlockThisDeviceOnly) under the app's key manifest (pushseal.manifest:APP), never a legacy keyset item (docs/keychain.md \"Device key items\"); it is a run of the app, so the first run after a reinstall removes PushSeal's leftover items of APP first (\(DeviceReinstall.markerName)). push-keys export --keychain DIR IDENTITY --app-id APP --recipient R exports it. --json: {\"appId\", \"recipient\", \"keyId\", \"status\", \"layout\": \"deviceItems\"}. The app's own v2 key pair is push-keys device generate.",
        ], audited: true))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, keyset: KeysetOptions, accessibility: Accessibility, now: Int64
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            keyset = try KeysetOptions(parsing: a)
            accessibility = try keyAccessibility(a)
            now = try keyNow(a)
        }
        /// A device keychain: an identity given, no `--registry`.
        var device: Bool { !store.identity.isEmpty && store.keystore.registry == nil }
        func validate() throws {
            try store.validate()
            try keyset.validateNames()
            if device, accessibility != DeviceKeyItem.accessibility {
                throw CLIError.usage("device key items are all \(DeviceKeyItem.accessibility.rawValue) (docs/keychain.md \"Device key items\"); drop --accessibility")
            }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (app, recipient, now) = (o.keyset.appID, o.keyset.recipient, o.now)
        keyWarnIfLockedOut(o.accessibility, c)
        if o.device { return try generateItem(o, c) }
        let store = try o.store.open(create: true, accessibility: o.accessibility)  // every option was checked first
        let key = try keyMapErrors { try store.generate(appID: app, recipient: recipient, now: now) }
        if c.json {
            keyPrintJSON(.object(JSONObject([("appId", .string(app)), ("recipient", .string(recipient)), ("keyId", .string(key.keyID)), ("status", .string("primary"))])))
        } else {
            Output.stdout(key.keyID + "\n")
        }
        return .success
    }

    /// Into a device keychain: one kind 1 key item (``KeyStore/generateDeviceKeyItem(appID:recipient:now:)``),
    /// after the first-run check of a write as the app.
    private func generateItem(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (app, recipient) = (o.keyset.appID, o.keyset.recipient)
        let store = try o.store.openKeychain(create: true, accessibility: DeviceKeyItem.accessibility)
        try DeviceReinstall.prepareWrite(store.keychain, accessGroup: store.accessGroup, appID: app, c)
        let key = try keyMapErrors {
            do {
                return try store.generateDeviceKeyItem(appID: app, recipient: recipient, now: o.now)
            } catch let e as KeysError where e.code == .keysetExists {
                throw CLIError(code: e.code.name, e.reason, hint: "generate never replaces a key: a new key is a rotation (push-keys rotate --device-keychain); push-keys device list shows the keys",
                               exitCode: .cannotCreate)
            }
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("appId", .string(app)), ("recipient", .string(recipient)), ("keyId", .string(key.keyID)),
                                             ("status", .string("primary")), ("layout", .string("deviceItems"))])))
        } else {
            Output.stdout(key.keyID + "\n")
        }
        return .success
    }
}

/// Parses `--accessibility` (default afterFirstUnlockThisDeviceOnly).
/// - Throws: `CLIError` 64 for an unknown class.
func keyAccessibility(_ a: Arguments) throws -> Accessibility {
    guard let v = a[KeyOptions.accessibility] else { return .afterFirstUnlockThisDeviceOnly }
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
