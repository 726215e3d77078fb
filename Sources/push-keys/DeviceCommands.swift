#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCLI
import PushSealCrypto
import PushSealJSON
import PushSealKeychain
import PushSealKeyRecords
import PushSealDeviceKeys
/// `push-keys device generate` / `device import`: the app's v2 device key in a device keychain
/// (docs/keychain.md "Device key items"), printing the registration record the app uploads to
/// its server (FORMAT.md §V.6 `pushseal-device-key`).
enum DeviceCommands {
    static let all: [any Command] = [DeviceGenerateCommand(), DeviceImportCommand()] + DeviceLifecycleCommands.all

    static let appID = KeysetOptions.appIDOption.withHelp("the app's bundle identifier (required): the item's service is pushseal.key:APP")
    static let keyID = Option.text("--key-id", "ID", "the key id (1-64 of A-Z a-z 0-9 _ -; default: the first 16 characters of base64url(SHA-256(public key)), FORMAT.md §V.6)")
    static let now = KeyOptions.now.withHelp("the record's createdAt, seconds since 1970 UTC (default: now)")

    static let options: [OptionSpec] = [KeychainCommands.keychainOption] + KeychainCommands.identityOptions + [
        DeviceCommands.appID.spec,
        DeviceCommands.keyID.spec,
        DeviceCommands.now.spec,
    ]

    static let output = """
        REINSTALL: with an application group in the identity, the first run (no \(DeviceReinstall.markerName) in the App Group container: keychain items outlive an uninstall, the container does not) removes PushSeal's leftover items of APP (key items, pins, key manifest, legacy keysets; never another service's items) before making the key, and writes the marker; a container with PushSeal's files but no marker (an update from before it) removes nothing.

        OUTPUT: the registration record, one JSON line: {"format":"pushseal-device-key","version":2,"appId","keyId","publicKey","createdAt"} (public data: what the app uploads to its server with its APNs device token); with --json: {"registration": record, "item": attributes}. The private key never leaves the keychain item (service pushseal.key:APP, account = key id, label "\(DeviceKeyItem.v2Label)", accessibility \(DeviceKeyItem.accessibility.rawValue), a 59-byte key record of kind 2, status primary; docs/keychain.md "Device key items").
        """

    static func exitCodes(dataError: String? = nil, noInput: String? = nil) -> [String] {
        let reused = "a --key-id of a key the restore onto this device left behind (keyIDReused); an access group other than the one holding the app's key items and key manifest (accessGroupMismatch; nothing changed: use that group, or move the items first with push-keys keychain migrate)"
        return KeychainCommands.exitCodes(keychainError: "errSecDuplicateItem -25299, errSecMissingEntitlement -34018",
                                   usage: ["no identity", "an --app-id, --key-id or --now that breaks its rule"],
                                   dataError: dataError.map { $0 + "; " + reused } ?? reused, noInput: noInput,
                                   cannotCreate: "the app already has a v2 device key in that access group (keysetExists)", readsSecrets: true)
    }

    /// The options both commands share.
    struct Common: Sendable {
        let caller: KeychainCallerOptions, appID: String, keyID: String?, now: Int64?

        init(parsing a: Arguments) throws {
            caller = try KeychainCallerOptions(parsing: a)
            appID = try a.required(DeviceCommands.appID)
            keyID = a[DeviceCommands.keyID]
            now = try a[DeviceCommands.now]
        }

        /// Identity required; app id, key id and time by their rules.
        /// - Throws: `CLIError` 64.
        func validate() throws {
            try caller.validate()
            try keyUsageErrors {
                try KeyID.validateAppID(appID)
                if let keyID { try KeyID.validate(keyID) }
                if let now { try KeyTime.checkTime(now, named: "--now") }
            }
        }

        /// Stores `key` and prints the registration record (text: one JSON line; --json: with the item).
        func store(_ key: X25519.PrivateKey, _ context: CommandContext) throws -> ExitCode {
            let (kc, group) = try caller.open()
            // The app's items and manifest stay in one group (refused before anything changes);
            // the first run after a reinstall removes PushSeal's leftover items of the app first.
            try DeviceReinstall.prepareWrite(kc, accessGroup: group, appID: appID, context)
            let createdAt = now ?? KeyTime.now()
            let keyID = try self.keyID ?? DeviceKeyItem.keyID(for: key.publicKey)
            // After a restore onto a new device the old key ids are known (the restore record):
            // new bytes never take one, or the server would pair the old id with another key.
            let left = try KeychainCommands.mapping { try kc.restoreLeftBehind() }
            if left.contains(where: { $0.service == DeviceKeyItem.service(appID: appID) && $0.account == keyID }) {
                throw CLIError(code: "keyIDReused", "key id \(keyID) named a key of \(appID) that the restore onto this device left behind; a new key never takes an old key id",
                               hint: "drop --key-id (the default id is derived from the new public key)", exitCode: .dataError)
            }
            let item: ItemAttributes
            do {
                item = try keyMapErrors {
                    try DeviceKeyItem.store(key, keyID: keyID, appID: appID, in: kc, accessGroup: group, now: createdAt)
                }
            } catch let e as CLIError where e.code == "keysetExists" {
                throw CLIError(code: e.code, e.message, hint: "one v2 device key per app and access group: a new key is a rotation ('push-keys device rotate', then 'push-keys device promote' once the server accepted it); 'push-keys device list' shows the keys", exitCode: .cannotCreate)
            }
            let record = DeviceKeyItem.registrationRecord(appID: appID, keyID: keyID, publicKey: key.publicKey, createdAt: createdAt)
            if context.json {
                keyPrintJSON(.object(JSONObject([("registration", .object(record)), ("item", .object(KeychainCommands.json(item)))])))
            } else {
                keyPrintJSON(.object(record))
            }
            return .success
        }
    }
}

/// `push-keys device generate`: a fresh X25519 key pair made in the device keychain.
struct DeviceGenerateCommand: OptionsCommand {
    let path = ["device", "generate"]
    let options: [OptionSpec] = DeviceCommands.options
    let help = HelpText(
        overview: "make the app's v2 (HPKE) device key pair in the device keychain, as the app does on first launch, and print its registration record",
        usage: ["push-keys device generate --keychain DIR IDENTITY --app-id APP [--key-id ID] [--now UNIX] [--json]"],
        examples: [
            "push-keys device generate --keychain device-kc --entitlements app.json --app-id com.example.app > registration.json",
            "push-keys device generate --keychain device-kc --access-group TEAMID.com.example.shared --app-id com.example.app --json",
        ],
        exitCodes: DeviceCommands.exitCodes(noInput: "the entitlements file missing"),
        notes: KeychainCommands.identityNote + "\n\n" + DeviceCommands.output
    )

    struct Options: CommandOptions {
        let common: DeviceCommands.Common
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            common = try DeviceCommands.Common(parsing: a)
        }
        func validate() throws { try common.validate() }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        try o.common.store(try X25519.PrivateKey(), context)
    }
}

/// `push-keys device import`: an existing X25519 private key (restore, tests) into the device keychain.
struct DeviceImportCommand: OptionsCommand {
    let path = ["device", "import"]
    static let keyFile = Option.text("--key-file", "F", "the 32-byte X25519 private key as 64 hex digits or base64, in a private file (0600, yours, not a link; required; never on the command line)")

    let options: [OptionSpec] = DeviceCommands.options + [
        DeviceImportCommand.keyFile.spec,
    ]
    let help = HelpText(
        overview: "store an existing v2 (HPKE) device private key in the device keychain (a restore, or a test key) and print its registration record",
        usage: ["push-keys device import --keychain DIR IDENTITY --app-id APP --key-file F [--key-id ID] [--now UNIX] [--json]"],
        examples: [
            "push-keys device import --keychain device-kc --entitlements app.json --app-id com.example.app --key-file device.key",
            "push-keys device import --keychain device-kc --access-group TEAMID.com.example.shared --app-id com.example.app --key-file device.key --key-id 7t2IPaCpRRWT3Ao4 --now 1796000000",
        ],
        exitCodes: DeviceCommands.exitCodes(dataError: "a --key-file that does not hold 32 bytes as 64 hex digits or base64",
                                            noInput: "the entitlements or --key-file file missing")
            .map { $0.hasPrefix("77") ? $0 + "; or a --key-file readable by group or others, or not yours (chmod 600 it)" : $0 },
        notes: KeychainCommands.identityNote + "\n\n" + DeviceCommands.output
    )

    struct Options: CommandOptions {
        let common: DeviceCommands.Common, keyFile: String
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            common = try DeviceCommands.Common(parsing: a)
            keyFile = try a.required(DeviceImportCommand.keyFile, hint: "give --key-file FILE, a 0600 file with the key as 64 hex digits or base64")
        }
        func validate() throws { try common.validate() }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        var text = try InputReader.readPrivateFile(o.keyFile, limitByteCount: 1024, what: "device key file")
        defer { SecretBytes.wipe(&text) }
        guard let raw = DeviceKeyItem.privateKey(fromText: text) else {
            throw CLIError(code: "invalidKey", "\(o.keyFile) does not hold a 32-byte key as 64 hex digits or base64", exitCode: .dataError)
        }
        return try o.common.store(try X25519.PrivateKey(rawRepresentation: raw), context)
    }
}
