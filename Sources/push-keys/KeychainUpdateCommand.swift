import PushSealJSON
import PushSealCLI
import PushSealWire
import PushSealKeychain

/// `push-keys keychain update`: SecItemUpdate.
struct KeychainUpdateCommand: OptionsCommand {
    let path = ["keychain", "update"]
    static let service = KeychainCommands.service.withHelp("kSecAttrService of the item (required)")
    static let account = KeychainCommands.account.withHelp("kSecAttrAccount of the item (required)")
    static let label = Option.text("--label", "L", "new kSecAttrLabel")
    static let accessibility = KeychainCommands.accessibilityOption.withHelp("new kSecAttrAccessible: \(KeychainCommands.accessibilityNames)")
    static let newService = Option.text("--new-service", "S", "new kSecAttrService")
    static let newAccount = Option.text("--new-account", "A", "new kSecAttrAccount")
    static let newAccessGroup = Option.text("--new-access-group", "G", "move the item to access group G (the caller must be entitled to it)")
    static let dataFile = Option.text("--data-file", "F", "new secret data from file F (- for standard input)")

    let options: [OptionSpec] = [KeychainCommands.keychainOption] + KeychainCommands.identityOptions + [
        KeychainUpdateCommand.service.spec,
        KeychainUpdateCommand.account.spec,
        KeychainCommands.itemClassOption.spec,
        KeychainUpdateCommand.label.spec,
        KeychainUpdateCommand.accessibility.spec,
        KeychainUpdateCommand.newService.spec,
        KeychainUpdateCommand.newAccount.spec,
        KeychainUpdateCommand.newAccessGroup.spec,
        KeychainUpdateCommand.dataFile.spec,
    ]
    let help = HelpText(
        overview: "change a keychain item (SecItemUpdate); bumps its modification date; a change that collides with another item fails with errSecDuplicateItem (-25299) and changes nothing",
        usage: ["push-keys keychain update --keychain DIR IDENTITY --service S --account A [--class C] [--label L] [--accessibility A] [--new-service S] [--new-account A] [--new-access-group G] [--data-file F] [--json]"],
        examples: [
            "push-keys keychain update --keychain device-kc --entitlements app.json --service push --account alice --data-file new-key.bin",
            "push-keys keychain update --keychain device-kc --entitlements app.json --service push --account alice --accessibility afterFirstUnlockThisDeviceOnly",
        ],
        exitCodes: KeychainCommands.exitCodes(
            keychainError: "errSecItemNotFound -25300, errSecDuplicateItem -25299, errSecMissingEntitlement -34018",
            dataError: "data over \(Keychain.maxDataByteCount) bytes, a malformed entitlements file",
            noInput: "the entitlements or --data-file file missing", readsSecrets: true),
        notes: KeychainCommands.identityNote + "\n\nPrints nothing on success (with --json: {\"updated\": N})."
    )

    struct Options: CommandOptions {
        let caller: KeychainCallerOptions, item: KeychainItemOptions
        let newService: String?, newAccount: String?, label: String?, newAccessGroup: String?, accessibility: Accessibility?, dataFile: String?
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            caller = try KeychainCallerOptions(parsing: a)
            item = try KeychainItemOptions(parsing: a)
            (newService, newAccount, label, newAccessGroup) = (a[KeychainUpdateCommand.newService], a[KeychainUpdateCommand.newAccount], a[KeychainUpdateCommand.label], a[KeychainUpdateCommand.newAccessGroup])
            accessibility = try KeychainCommands.accessibility(a)
            dataFile = a[KeychainUpdateCommand.dataFile]
        }
        func validate() throws {
            try caller.validate()
            if newService == nil, newAccount == nil, label == nil, newAccessGroup == nil, accessibility == nil, dataFile == nil {
                throw CLIError.usage("nothing to update", hint: "give --label, --accessibility, --new-service, --new-account, --new-access-group or --data-file")
            }
        }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let changes = ItemChanges(service: o.newService, account: o.newAccount, label: o.label.map { .some($0) }, accessGroup: o.newAccessGroup,
                                  accessibility: o.accessibility, data: try o.dataFile.map(KeychainCommands.data(file:)))
        let (kc, group) = try o.caller.open()
        let n = try KeychainCommands.mapping { try kc.update(o.item.query(accessGroup: group), with: changes) }
        if context.json { Output.printJSON(["updated": .integer(Int64(n))]) }
        return .success
    }
}
