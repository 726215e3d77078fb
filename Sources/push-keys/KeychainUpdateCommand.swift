import PushSealJSON
import PushSealCLI
import PushSealWire
import PushSealKeychain

/// `push-keys keychain update`: SecItemUpdate.
struct KeychainUpdateCommand: Command {
    let path = ["keychain", "update"]
    let options: [OptionSpec] = [KeychainCommands.keychainOption] + KeychainCommands.identityOptions + [
        .value("--service", "S", "kSecAttrService of the item (required)"),
        .value("--account", "A", "kSecAttrAccount of the item (required)"),
        KeychainCommands.itemClassOption,
        .value("--label", "L", "new kSecAttrLabel"),
        .value("--accessibility", "A", "new kSecAttrAccessible: \(KeychainCommands.accessibilityNames)"),
        .value("--new-service", "S", "new kSecAttrService"),
        .value("--new-account", "A", "new kSecAttrAccount"),
        .value("--new-access-group", "G", "move the item to access group G (the caller must be entitled to it)"),
        .value("--data-file", "F", "new secret data from file F (- for standard input)"),
        .value("--data-base64", "B", "new secret data as standard base64"),
    ]
    let help = HelpText(
        overview: "change a keychain item (SecItemUpdate); bumps its modification date; a change that collides with another item fails with errSecDuplicateItem (-25299) and changes nothing",
        usage: ["push-keys keychain update --keychain DIR IDENTITY --service S --account A [--class C] [--label L] [--accessibility A] [--new-service S] [--new-account A] [--new-access-group G] [--data-file F | --data-base64 B] [--json]"],
        examples: [
            "push-keys keychain update --keychain device-kc --entitlements app.json --service push --account alice --data-file new-key.bin",
            "push-keys keychain update --keychain device-kc --entitlements app.json --service push --account alice --accessibility afterFirstUnlockThisDeviceOnly",
        ],
        exitCodes: KeychainCommands.exitCodes(
            keychainError: "errSecItemNotFound -25300, errSecDuplicateItem -25299, errSecMissingEntitlement -34018",
            dataError: "bad --data-base64, data over \(Keychain.maxDataByteCount) bytes, a malformed entitlements file",
            noInput: "the entitlements or --data-file file missing", readsSecrets: true),
        notes: KeychainCommands.identityNote + "\n\nPrints nothing on success (with --json: {\"updated\": N})."
    )

    func run(_ context: CommandContext) throws -> ExitCode {
        let a = context.arguments
        try a.expectPositionals(max: 0)
        guard let (entitlements, query) = try KeychainCommands.identifiedQuery(a) else { return .usage }
        let changes = ItemChanges(service: a.value("--new-service"), account: a.value("--new-account"),
                                  label: a.value("--label").map { .some($0) }, accessGroup: a.value("--new-access-group"),
                                  accessibility: try KeychainCommands.accessibility(a), data: try KeychainCommands.data(a, required: false))
        if changes.service == nil, changes.account == nil, changes.label == nil, changes.accessGroup == nil, changes.accessibility == nil, changes.data == nil {
            throw CLIError.usage("nothing to update", hint: "give --label, --accessibility, --new-service, --new-account, --new-access-group, --data-file or --data-base64")
        }
        let kc = try KeychainCommands.open(a, as: entitlements)
        let n = try KeychainCommands.mapping { try kc.update(query, with: changes) }
        if context.json { Output.printJSON(["updated": .integer(Int64(n))]) }
        return .success
    }
}
