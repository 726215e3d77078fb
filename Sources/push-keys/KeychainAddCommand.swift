import PushSealJSON
import PushSealCLI
import PushSealWire
import PushSealKeychain

/// `push-keys keychain add`: SecItemAdd.
struct KeychainAddCommand: Command {
    let path = ["keychain", "add"]
    let options: [OptionSpec] = [KeychainCommands.keychainOption] + KeychainCommands.identityOptions + [
        .value("--service", "S", "kSecAttrService (required)"),
        .value("--account", "A", "kSecAttrAccount (required)"),
        .value("--label", "L", "kSecAttrLabel"),
        .value("--accessibility", "A", "kSecAttrAccessible: \(KeychainCommands.accessibilityNames) (default whenUnlocked, as on iOS)"),
        KeychainCommands.itemClassOption,
        .value("--data-file", "F", "the secret data from file F (- for standard input)"),
        .value("--data-base64", "B", "the secret data as standard base64"),
    ]
    let help = HelpText(
        overview: "add a keychain item (SecItemAdd); a second add of the same class, access group, service and account fails with errSecDuplicateItem (-25299)",
        usage: ["push-keys keychain add --keychain DIR IDENTITY --service S --account A [--label L] [--accessibility A] [--class C] (--data-file F | --data-base64 B) [--json]"],
        examples: [
            "push-keys keychain add --keychain device-kc --entitlements app.json --service push --account alice --accessibility afterFirstUnlockThisDeviceOnly --data-file key.bin",
            "push-keys keychain add --keychain device-kc --access-group TEAMID.com.example.shared --service push --account bob --data-base64 AAEC",
        ],
        exitCodes: KeychainCommands.exitCodes(
            keychainError: "errSecDuplicateItem -25299, errSecMissingEntitlement -34018",
            dataError: "bad --data-base64, data over \(Keychain.maxDataByteCount) bytes, a malformed entitlements file",
            noInput: "the entitlements or --data-file file missing", readsSecrets: true),
        notes: KeychainCommands.identityNote + "\n\nPrints nothing on success (with --json: {\"item\": attributes})."
    )

    func run(_ context: CommandContext) throws -> ExitCode {
        let a = context.arguments
        try a.expectPositionals(max: 0)
        guard let (entitlements, group) = try KeychainCommands.identity(a) else { return .usage }
        let service = try a.required("--service", "S"), account = try a.required("--account", "A")
        let acc = try KeychainCommands.accessibility(a) ?? .default
        let cls = try KeychainCommands.itemClass(a)
        guard let data = try KeychainCommands.data(a, required: true) else { return .usage }
        let kc = try KeychainCommands.open(a, as: entitlements)
        let stored = try KeychainCommands.mapping {
            try kc.add(cls, service: service, account: account, label: a.value("--label"), accessGroup: group, accessibility: acc, data: data)
        }
        if context.json { Output.printJSON(["item": .object(KeychainCommands.json(stored))]) }
        return .success
    }
}
