import Foundation
import PushSealCLI
import PushSealJSON
import PushSealKeyRecords
import PushSealRegistry
import PushSealRegistryCLI
import PushSealSystem

/// `push-keys audit --recipient R [--app-id APP]`: the audit trail of one recipient, from the
/// file keychain's `keys-audit.log` (or `--audit-log FILE`) or the registry's `pushseal_audit`.
struct AuditCommand: OptionsCommand {
    let path = ["audit"]
    static let appID = KeyOptions.appID.withHelp("only this app's lines")
    let options = KeyOptions.reading + [KeyOptions.recipient.spec, Self.appID.spec, KeyOptions.auditLog.spec]
    let help = HelpText(
        overview: "print the audit trail of one recipient (every key, registration, sender key and device token change, oldest first): why did this user stop getting notifications",
        usage: ["push-keys audit --keychain DIR --recipient R [--app-id APP] [--audit-log FILE] [--json]",
                "push-keys audit --registry URI --recipient R [--app-id APP] [--json]"],
        examples: [
            "push-keys audit --keychain server-kc --recipient alice-iphone --app-id com.example.app",
            "push-keys audit --registry postgresql:///pushseal --recipient inst-u7",
        ],
        exitCodes: KeyOptions.exitCodes(usage: ["a bad --recipient or --app-id"], noInput: "no audit log at DIR/keys-audit.log (or --audit-log FILE)", ioError: "the audit log"),
        notes: KeyOptions.notes([
            "Text output: the audit lines as written (one JSON object a line: time, event, appId, recipient, and the event's members, e.g. removeDeviceToken with reason unregistered and unregisteredAt, revokeRegistration, register), oldest first. --json: {\"lines\": [objects]}. --recipient - reads the app's sender key events. The file keychain's log is read from DIR/keys-audit.log unless --audit-log FILE names another (a log sent to stderr with --audit-log - cannot be read back). The registry needs no key-encryption key for this.",
        ], audited: false))

    struct Options: CommandOptions {
        let store: KeyStoreOptions, recipient: String, appID: String?
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            recipient = try a.required(KeyOptions.recipient)
            appID = a[AuditCommand.appID]
        }
        func validate() throws {
            try store.validate()
            try keyUsageErrors {
                if recipient != "-" { try KeyID.validateRecipient(recipient) }
                if let appID { try KeyID.validateAppID(appID) }
            }
            if store.auditLog == "-" { throw CLIError.usage("--audit-log - is standard error: name the audit log FILE to read") }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let lines: [String]
        if let registry = o.store.keystore.registry {
            let store = try registry.open()
            lines = try keyMapErrors { try store.auditLines(recipient: o.recipient, appID: o.appID) }
        } else {
            guard let dir = o.store.keystore.keychainPath else { throw CLIError.usage("missing --keychain DIR") }
            let path = o.store.auditLog ?? URL(fileURLWithPath: dir).appendingPathComponent("keys-audit.log").path
            let bytes: [UInt8]?
            do {
                bytes = try PrivateFile.read(path, maxByteCount: 1 << 30)
            } catch let e as SystemError {
                throw CLIError(code: "io", "cannot read the audit log: \(e.reason)", exitCode: e.code == .wrongOwner || e.code == .insecureMode ? .noPermission : .ioError)
            }
            guard let bytes else { throw CLIError(code: "noAuditLog", "no audit log at \(path)", hint: "pass --audit-log FILE if the audit lines went elsewhere", exitCode: .noInput) }
            lines = bytes.split(separator: UInt8(ascii: "\n")).compactMap { raw -> String? in
                guard case .object(let line)? = try? JSONReader.parse(Array(raw)),
                      line["recipient"]?.stringValue == o.recipient,
                      o.appID == nil || line["appId"]?.stringValue == o.appID else { return nil }
                return String(decoding: raw, as: UTF8.self)
            }
        }
        if c.json {
            keyPrintJSON(.object(JSONObject([("lines", .array(lines.compactMap { try? JSONReader.parse($0) }))])))
        } else {
            Output.stdout(lines.map { $0 + "\n" }.joined())
        }
        return .success
    }
}
