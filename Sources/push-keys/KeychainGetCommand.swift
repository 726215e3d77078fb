import PushSealJSON
import Foundation
import PushSealCLI
import PushSealWire
import PushSealCrypto
import PushSealKeychain

/// `push-keys keychain get`: SecItemCopyMatching with match limit one, returning data and attributes.
struct KeychainGetCommand: OptionsCommand {
    let path = ["keychain", "get"]
    static let service = KeychainCommands.service.withHelp("kSecAttrService (required)")
    static let account = KeychainCommands.account.withHelp("kSecAttrAccount (required)")
    static let reveal = Option.flag("--reveal", "also print the secret data (standard base64), never to a terminal (pipe it or redirect it to a 0600 file); without it the secret is read and checked, never printed")

    let options: [OptionSpec] = [KeychainCommands.keychainOption] + KeychainCommands.identityOptions + [
        KeychainGetCommand.service.spec,
        KeychainGetCommand.account.spec,
        KeychainCommands.itemClassOption.spec,
        KeychainGetCommand.reveal.spec,
    ]
    let help = HelpText(
        overview: "read one keychain item the way an app or extension does (SecItemCopyMatching, match limit one): the secret is decrypted, so a WhenUnlocked item on a locked device fails with errSecInteractionNotAllowed (-25308)",
        usage: ["push-keys keychain get --keychain DIR IDENTITY --service S --account A [--class C] [--reveal] [--json]"],
        examples: [
            "push-keys keychain get --keychain device-kc --entitlements ext.json --service push --account alice",
            "push-keys keychain get --keychain device-kc --access-group TEAMID.com.example.shared --service push --account alice --reveal --json",
        ],
        exitCodes: KeychainCommands.exitCodes(
            keychainError: "errSecItemNotFound -25300, errSecMissingEntitlement -34018",
            usage: ["--reveal while stdout is a terminal or a regular file that is not 0600"],
            dataError: "a malformed entitlements file", noInput: "the entitlements file missing", readsSecrets: true),
        notes: KeychainCommands.identityNote + "\n\nPrints the attributes as 'name: value' lines (with --reveal a last line 'data: BASE64'); with --json {\"item\": {…, \"data\": BASE64 with --reveal}}."
    )

    struct Options: CommandOptions {
        let caller: KeychainCallerOptions, item: KeychainItemOptions, reveal: Bool
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            caller = try KeychainCallerOptions(parsing: a)
            item = try KeychainItemOptions(parsing: a)
            reveal = a.has(KeychainGetCommand.reveal)
        }
        func validate() throws {
            try caller.validate()
            if reveal {
                try Output.refuseUnsafeStandardOutput(for: "secret data", hint: "pipe it (... --reveal | consumer) or redirect it to a 0600 file",
                                                      fileHint: "chmod 600 the file first")
            }
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let (kc, group) = try o.caller.open()
        let query = o.item.query(accessGroup: group)
        let items = try KeychainCommands.mapping { try kc.copyMatching(query, limit: .one, returning: [.attributes, .data]) }
        guard let item = items.first else { throw KeychainCommands.cliError(KeychainError(.itemNotFound, "no item matched")) }
        var secret: String?
        if o.reveal, let data = item.data {
            var bytes = data.copyBytes()
            defer { SecretBytes.wipe(&bytes) }
            secret = Data(bytes).base64EncodedString()
        }
        if context.json {
            var o = KeychainCommands.json(item.attributes)
            if let secret { o["data"] = .string(secret) }
            Output.printJSON(["item": .object(o)])
        } else {
            Output.stdout(KeychainCommands.text(item.attributes) + (secret.map { "data: \($0)\n" } ?? ""))
        }
        return .success
    }
}
