import PushSealJSON
import Foundation
import PushSealCLI
import PushSealKeychain
import PushSealServerKeys
/// `push-keys rotate`: add, install on the device, promote.
struct KeyRotateCommand: OptionsCommand {
    let path = ["rotate"]
    static let deviceKeychain = Option.text("--device-keychain", "DIR", "also install the new key in this device keychain before promoting, as kind 1 device key items (docs/keychain.md \"Device key items\"; a legacy keyset of the recipient there is converted first)")
    static let deviceEntitlements = IdentityOptions.declarations(prefix: "device-").entitlements.withHelp("device identity: the app's entitlements JSON or plist")
    static let deviceAccessGroup = IdentityOptions.declarations(prefix: "device-").accessGroup.withHelp("without --device-entitlements: a keychain-access-groups entry of the device identity; with it: the device keysets' access group (at most one)")
    static let deviceAppGroup = IdentityOptions.declarations(prefix: "device-").appGroup.withHelp("without --device-entitlements: an application group of the device identity")
    static let noPromote = Option.flag("--no-promote", "stop after adding (and installing); run 'push-keys promote' once devices hold the key")

    let options = [KeyOptions.serverKeychain.spec] + KeyOptions.identity + [KeyOptions.auditLog.spec, KeyOptions.appID.spec, KeyOptions.recipient.spec,
        KeyOptions.grace("grace window of the old primary: it opens messages until now + grace").spec,
        KeyRotateCommand.deviceKeychain.spec,
        KeyRotateCommand.deviceEntitlements.spec,
        KeyRotateCommand.deviceAccessGroup.spec,
        KeyRotateCommand.deviceAppGroup.spec,
        KeyRotateCommand.noPromote.spec,
        KeyOptions.now.spec]
    let help = HelpText(
        overview: "rotate a keyset in Tink's order: add a new non-primary key to the server keyset, install it in the device keychain (when given), then promote it on the server; the old primary opens messages until now + grace; every step is idempotent: rerun an interrupted rotation to complete it",
        usage: [
            "push-keys rotate --keychain DIR [IDENTITY] --app-id APP --recipient R [--grace DURATION] [--no-promote] [--audit-log FILE] [--now UNIX] [--json]",
            "push-keys rotate ... --device-keychain DIR DEVICE_IDENTITY",
        ],
        examples: [
            "push-keys rotate --keychain server-kc --app-id com.example.app --recipient alice-iphone --device-keychain device-kc --device-entitlements app.json",
            "push-keys rotate --keychain server-kc --app-id com.example.app --recipient alice-iphone --grace 14d --no-promote   # stage, export, promote later",
        ],
        exitCodes: KeyOptions.exitCodes(
            failure: "the device keychain is the server keychain; an interrupted rotation whose recorded grace takes notAfter past 9999-12-31T23:59:59Z (finish it with push-keys promote --grace)",
            usage: ["a bad app id or recipient", KeyOptions.badGrace, KeyOptions.badNow, "--device-keychain without a device identity or a device identity without it"],
            dataError: "the new key id already in the device keyset with other key bytes; a device access group other than the one holding the app's key items and key manifest (accessGroupMismatch; nothing changed: use that group, or move the items first with push-keys keychain migrate)",
            noInput: "no keyset for APP and R; no keychain at the device DIR",
            ioError: "the server or device keychain, their lock files or the audit log"),
        notes: KeyOptions.notes([
            "Text output: the new key id. Without --device-keychain, deliver the new key record (push-keys export) to the device before messages sealed with it arrive, or use --no-promote and promote after delivery.",
            "DEVICE_IDENTITY: the device keychain's caller (the app), given like IDENTITY with the --device- options: --device-entitlements FILE [--device-access-group G], or --device-access-group G... [--device-app-group G...]. The device keyset is created when the device has none. Audit lines of device changes go to the device DIR's keys-audit.log, or to --audit-log.",
        ], audited: true))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, keyset: KeysetOptions, now: Int64, grace: Int64
        /// `--device-keychain DIR` and the device's identity (the `--device-` identity options).
        let deviceKeychain: String?, deviceIdentity: IdentityOptions
        let promote: Bool
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            keyset = try KeysetOptions(parsing: a)
            now = try keyNow(a)
            grace = try keyGrace(a, now: now)
            deviceKeychain = a[KeyRotateCommand.deviceKeychain]
            deviceIdentity = IdentityOptions(parsing: a, prefix: "device-")
            promote = !a.has(KeyRotateCommand.noPromote)
        }
        func validate() throws {
            try store.validate()
            try keyset.validateNames()
            try deviceIdentity.validate()
            if deviceKeychain != nil, deviceIdentity.isEmpty {
                throw CLIError.usage("--device-keychain needs the device identity", hint: "add --device-entitlements FILE (the app's entitlements)")
            }
            if deviceKeychain == nil, !deviceIdentity.isEmpty {
                throw CLIError.usage("device identity given without --device-keychain DIR")
            }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (app, recipient, now, grace) = (o.keyset.appID, o.keyset.recipient, o.now, o.grace)
        // Every identity is resolved (its file read) before any keychain is opened or written.
        let deviceIdentity = try keyEntitlements(o.deviceIdentity)
        let store = try o.store.open()
        var device: KeyStore?
        if let dir = o.deviceKeychain, let (entitlements, group) = deviceIdentity {
            device = try keyMapErrors {
                try KeyStore(keychain: try Keychain(opening: URL(fileURLWithPath: dir), as: entitlements), accessGroup: group,
                             audit: o.store.audit, deviceKeyItems: true)
            }
            // The new key item goes where the app's items and manifest are: else refused here,
            // before the server keyset or the device changes.
            if let device {
                try DeviceReinstall.checkWriteGroup(device.keychain, accessGroup: device.accessGroup, appID: app, option: "--device-access-group")
            }
        }
        // Test hook, read only by debug builds (a release binary never looks at the variable):
        // die at a named step, as a crash or a power cut would.
        #if DEBUG
        let crashAt = ProcessInfo.processInfo.environment["PUSHSEAL_TEST_CRASH_AT"]
        #else
        let crashAt: String? = nil
        #endif
        let result = try keyMapErrors {
            try store.rotate(appID: app, recipient: recipient, graceSeconds: grace, device: device, promote: o.promote, now: now) { step in
                if step.rawValue == crashAt { kill(getpid(), SIGKILL) }
            }
        }
        if c.json {
            let previous: JSONValue = result.previousKeyID.map { .string($0) } ?? .null
            let members: [(key: String, value: JSONValue)] = [
                ("appId", .string(app)), ("recipient", .string(recipient)), ("keyId", .string(result.keyID)),
                ("previousKeyId", previous), ("notAfter", KeyJSON.opt(result.notAfter)),
                ("promoted", .bool(result.promoted)), ("deviceUpdated", .bool(result.deviceUpdated)), ("resumed", .bool(result.resumed)),
            ]
            keyPrintJSON(.object(JSONObject(members)))
        } else {
            Output.stdout(result.keyID + "\n")
        }
        return .success
    }
}
