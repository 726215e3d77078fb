import PushSealJSON
import PushSealCLI
import PushSealKeyRecords
import PushSealServerKeys
/// `push-keys list`: keysets, key ids, statuses, times, seal counts — never key bytes.
struct KeyListCommand: OptionsCommand {
    let path = ["list"]
    static let appID = KeyOptions.appID.withHelp("only this app id")
    static let recipient = KeyOptions.recipient.withHelp("only this recipient")
    let options = KeyOptions.reading + [Self.appID.spec, Self.recipient.spec]
    let help = HelpText(
        overview: "list keysets: key ids, statuses, times and seal counts (never key bytes)",
        usage: ["push-keys list --keychain DIR [IDENTITY] [--app-id APP] [--recipient R] [--json]"],
        examples: ["push-keys list --keychain server-kc", "push-keys list --keychain device-kc --entitlements ext.json --json"],
        exitCodes: KeyOptions.exitCodes(usage: ["a malformed --app-id"], ioError: "reading the keychain"),
        notes: KeyOptions.notes([
            "Text columns (tab-separated), one line per key: APP RECIPIENT KEY_ID STATUS CREATED PROMOTED RETIRED NOT_AFTER SEALS, under a header line of those names when stdout is a terminal (never in a pipe). Only the keysets in the identity's keyset access group are listed: without an identity that is the server's (pushseal.server), so a device keychain lists nothing and a warning on stderr says to pass --entitlements app.json.",
        ], audited: false))

    /// The text columns, printed as a header line only when stdout is a terminal (never into a pipe).
    static let columns = ["APP", "RECIPIENT", "KEY_ID", "STATUS", "CREATED", "PROMOTED", "RETIRED", "NOT_AFTER", "SEALS"]

    struct Options: CommandOptions {
        let store: KeyStoreOptions, appID: String?, recipient: String?
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            store = try KeyStoreOptions(parsing: a)
            appID = try keyAppID(a)
            recipient = a[KeyListCommand.recipient]
        }
        func validate() throws { try store.validate() }

        /// For the listings that look one recipient up (registrations, tokens): `--recipient` needs
        /// `--app-id` and a well-formed name.
        /// - Throws: `CLIError` 64.
        func checkRecipientLookup() throws {
            guard let recipient else { return }
            guard appID != nil else { throw CLIError.usage("--recipient needs --app-id") }
            try keyUsageErrors { try KeyID.validateRecipient(recipient) }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try o.store.open()
        var sets = try keyMapErrors { try store.keysets() }
        if sets.isEmpty, o.store.identity.isEmpty {
            // Without an identity the keychain is read as the server; a device keychain's keysets
            // live in the app's shared access group, so an empty listing here is no proof of a failed import.
            c.warn("no keysets visible to the default server identity (access group pushseal.server); pass --entitlements app.json to list a device keychain")
        }
        if let app = o.appID { sets = sets.filter { $0.appID == app } }
        if let r = o.recipient { sets = sets.filter { $0.recipient == r } }
        if c.json {
            keyPrintJSON(.object(JSONObject([("keysets", .array(sets.map(KeyJSON.keyset)))])))
            return .success
        }
        var out = ""
        if Output.isTerminal(1) {
            out += Self.columns.joined(separator: "\t") + "\n"
        }
        for ks in sets {
            for k in ks.keys {
                out += [ks.appID, ks.recipient, k.keyID, k.status.rawValue, keyTime(k.createdAt), keyTime(k.promotedAt),
                        keyTime(k.retiredAt), keyTime(k.notAfter), String(k.sealCount)].joined(separator: "\t") + "\n"
            }
        }
        Output.stdout(out)
        return .success
    }
}
