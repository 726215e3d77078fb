import Foundation
import PushSealJSON
import PushSealSystem
import PushSealCLI
import PushSealCrypto
import PushSealKeyRecords
import PushSealServerKeys
import PushSealDeviceKeys
/// `push-keys export`: write a key record for the other side.
struct KeyExportCommand: OptionsCommand {
    let path = ["export"]
    static let out = Option.text("--out", "FILE", "write the record to FILE, created exclusively with mode 0600 (default: stdout, when it is not a terminal nor a regular file others can read)")
    static let keyID = Option.text("--key-id", "K", "export only this key (default: the whole keyset)")

    let options = KeyOptions.reading + [KeyOptions.appID.spec, KeyOptions.recipient.spec,
        KeyExportCommand.keyID.spec,
        KeyExportCommand.out.spec]
    let help = HelpText(
        overview: "export a keyset (or one key) as a JSON key record holding key bytes, written only to a new file (O_EXCL, mode 0600) or to stdout when stdout is neither a terminal nor a regular file with group or other permission bits (chmod 600 it first)",
        usage: ["push-keys export --keychain DIR [IDENTITY] --app-id APP --recipient R [--key-id K] [--out FILE] [--json]"],
        examples: [
            "push-keys export --keychain server-kc --app-id com.example.app --recipient alice-iphone --out alice.key.json",
            "push-keys export --keychain server-kc --app-id com.example.app --recipient alice-iphone | push-keys import --keychain device-kc --entitlements app.json -",
        ],
        exitCodes: KeyOptions.exitCodes(
            usage: ["a bad app id, recipient or key id", "no --out while stdout is a terminal or a regular file that is not 0600"],
            noInput: "no keyset for APP and R, or no key K in it",
            cannotCreate: "FILE already exists (a key file is never overwritten) or cannot be created",
            ioError: "reading the keychain or writing FILE",
            noPermission: "FILE's directory is not writable"),
        notes: KeyOptions.notes([
            "With --out and --json a summary object is printed; without --out the record itself is the one JSON object on stdout.",
            "Key bytes of disabled and destroyed keys are left out of the record. Export changes nothing, so nothing is audited.",
            "From a device keychain (IDENTITY given): the app's kind 1 device key items (what push-keys generate and import write there; docs/keychain.md \"Device key items\"), as a record for R (the items name no recipient); a device keychain with none exports its legacy keyset item of APP and R, as before 0.2.0.",
        ], audited: false))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, keyset: KeysetOptions, keyID: String?, out: String?
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            keyset = try KeysetOptions(parsing: a)
            keyID = a[KeyExportCommand.keyID]
            out = a[KeyExportCommand.out]
        }
        func validate() throws {
            try store.validate()
            try keyset.validateNames()
            if out == nil { try Output.refuseUnsafeStandardOutput(for: "key bytes", hint: "push-keys export ... --out FILE   (or pipe it: push-keys export ... | push-keys import ... -)") }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let (app, recipient, out) = (o.keyset.appID, o.keyset.recipient, o.out)
        let record: KeyRecord
        if !o.store.identity.isEmpty, o.store.keystore.registry == nil {
            record = try exportDevice(o)
        } else {
            let store = try o.store.open()
            record = try keyMapErrors { try store.exportRecord(appID: app, recipient: recipient, keyID: o.keyID) }
        }
        var bytes = record.encoded()
        defer { SecretBytes.wipe(&bytes) }
        guard let out else {
            Output.stdout(bytes: bytes)
            return .success
        }
        do {
            try PrivateFile.createExclusive(out, bytes)
        } catch let e as SystemError {
            switch (e.code, e.operation) {
            case (.alreadyExists, _):
                throw CLIError(code: "fileExists", "\(out) already exists; not overwriting a key file", hint: "choose a new --out FILE or remove the old one", exitCode: .cannotCreate)
            case (_, "create"):
                throw CLIError(code: "cannotCreate", "cannot create \(out): \(errnoText(e.errno))", exitCode: e.code == .permissionDenied ? .noPermission : .cannotCreate)
            default:
                throw CLIError(code: "ioError", "cannot write \(out)", exitCode: .ioError)  // the partial file is removed
            }
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("appId", .string(app)), ("recipient", .string(recipient)), ("file", .string(out)),
                                  ("keyIds", .array(record.keyInfos.map { .string($0.keyID) }))])))
        } else {
            Output.stdout(Output.terminalSafe(out) + "\n")
        }
        return .success
    }

    /// From a device keychain: its kind 1 key items, else (none) its legacy keyset item.
    private func exportDevice(_ o: Options) throws -> KeyRecord {
        let store = try o.store.openKeychain()
        let (app, recipient) = (o.keyset.appID, o.keyset.recipient)
        return try keyMapErrors {
            do {
                return try DeviceKeyItem.exportV1(appID: app, recipient: recipient, keyID: o.keyID, in: store.keychain, accessGroup: store.accessGroup)
            } catch let e as KeysError where e.code == .unknownKeyset {
                return try store.exportRecord(appID: app, recipient: recipient, keyID: o.keyID)
            }
        }
    }
}
