import PushSealJSON
import PushSealCLI
import PushSealWire
import PushSealKeychain

/// `push-keys keychain add`: SecItemAdd.
struct KeychainAddCommand: OptionsCommand {
    let path = ["keychain", "add"]
    static let service = KeychainCommands.service.withHelp("kSecAttrService (required)")
    static let account = KeychainCommands.account.withHelp("kSecAttrAccount (required)")
    static let label = Option.text("--label", "L", "kSecAttrLabel")
    static let accessibility = KeychainCommands.accessibilityOption.withHelp("kSecAttrAccessible: \(KeychainCommands.accessibilityNames) (default whenUnlocked, as on iOS)")
    static let dataFile = Option.text("--data-file", "F", "the secret data from file F, - for standard input (required; never on the command line, which other users can read)")

    let options: [OptionSpec] = [KeychainCommands.keychainOption] + KeychainCommands.identityOptions + [
        KeychainAddCommand.service.spec,
        KeychainAddCommand.account.spec,
        KeychainAddCommand.label.spec,
        KeychainAddCommand.accessibility.spec,
        KeychainCommands.itemClassOption.spec,
        KeychainAddCommand.dataFile.spec,
    ]
    let help = HelpText(
        overview: "add a keychain item (SecItemAdd); a second add of the same class, access group, service and account fails with errSecDuplicateItem (-25299)",
        usage: ["push-keys keychain add --keychain DIR IDENTITY --service S --account A [--label L] [--accessibility A] [--class C] --data-file F [--json]"],
        examples: [
            "push-keys keychain add --keychain device-kc --entitlements app.json --service push --account alice --accessibility afterFirstUnlockThisDeviceOnly --data-file key.bin",
            "base64 -d <<< AAEC | push-keys keychain add --keychain device-kc --access-group TEAMID.com.example.shared --service push --account bob --data-file -",
        ],
        exitCodes: KeychainCommands.exitCodes(
            keychainError: "errSecDuplicateItem -25299, errSecMissingEntitlement -34018",
            dataError: "data over \(Keychain.maxDataByteCount) bytes, a malformed entitlements file",
            noInput: "the entitlements or --data-file file missing", readsSecrets: true),
        notes: KeychainCommands.identityNote + "\n\nPrints nothing on success (with --json: {\"item\": attributes})."
    )

    struct Options: CommandOptions {
        let caller: KeychainCallerOptions, item: KeychainItemOptions, label: String?, accessibility: Accessibility, dataFile: String
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            caller = try KeychainCallerOptions(parsing: a)
            item = try KeychainItemOptions(parsing: a)
            label = a[KeychainAddCommand.label]
            accessibility = try KeychainCommands.accessibility(a) ?? .default
            dataFile = try a.required(KeychainAddCommand.dataFile, hint: "give --data-file FILE, or --data-file - for standard input")
        }
        func validate() throws { try caller.validate() }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let data = try KeychainCommands.data(file: o.dataFile)
        let (kc, group) = try o.caller.open()
        let stored = try KeychainCommands.mapping {
            try kc.add(o.item.itemClass, service: o.item.service, account: o.item.account, label: o.label, accessGroup: group,
                       accessibility: o.accessibility, data: data)
        }
        if context.json { Output.printJSON(["item": .object(KeychainCommands.json(stored))]) }
        return .success
    }
}
