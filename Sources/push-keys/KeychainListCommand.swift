import PushSealJSON
import PushSealCLI
import PushSealWire
import PushSealKeychain

/// `push-keys keychain list`: attributes of items (never secrets).
struct KeychainListCommand: Command {
    let path = ["keychain", "list"]
    let options: [OptionSpec] = [KeychainCommands.keychainOption] + KeychainCommands.identityOptions + [
        .value("--service", "S", "only items with this kSecAttrService"),
        KeychainCommands.itemClassOption,
    ]
    let help = HelpText(
        overview: "list keychain items' attributes, never their secrets; works in any device state",
        usage: ["push-keys keychain list --keychain DIR [IDENTITY] [--service S] [--class C] [--json]"],
        examples: [
            "push-keys keychain list --keychain device-kc                          # every item on the device",
            "push-keys keychain list --keychain device-kc --entitlements ext.json  # what the extension can see",
        ],
        exitCodes: KeychainCommands.exitCodes(
            keychainError: "errSecMissingEntitlement -34018 for an --access-group the caller lacks",
            dataError: "a malformed entitlements file", noInput: "the entitlements file missing"),
        notes: KeychainCommands.identityNote + """


            Without an identity, lists the items of every access group (a device-wide view). Prints one item per line, tab-separated: ACCESS-GROUP CLASS SERVICE ACCOUNT ACCESSIBILITY LABEL; with --json {"items": [attributes…]}. No items is not an error.
            """
    )

    func run(_ context: CommandContext) throws -> ExitCode {
        let a = context.arguments
        try a.expectPositionals(max: 0)
        let identity = try KeychainCommands.identity(a, required: false)
        let cls = try KeychainCommands.itemClass(a)
        var items: [ItemAttributes] = []
        if let (entitlements, group) = identity {
            let kc = try KeychainCommands.open(a, as: entitlements)
            items = try list(kc, ItemQuery(itemClass: cls, service: a.value("--service"), accessGroup: group))
        } else {
            let probe = try KeychainCommands.open(a, as: Entitlements())
            let groups = try KeychainCommands.mapping { try probe.storedAccessGroups() }
            if !groups.isEmpty {
                let kc = try KeychainCommands.open(a, as: Entitlements(keychainAccessGroups: groups))
                items = try list(kc, ItemQuery(itemClass: cls, service: a.value("--service")))
            }
        }
        if context.json {
            Output.printJSON(["items": .array(items.map { .object(KeychainCommands.json($0)) })])
        } else {
            Output.stdout(items.map { i in
                [i.accessGroup, i.itemClass.rawValue, i.service, i.account, i.accessibility.rawValue, i.label ?? ""].joined(separator: "\t") + "\n"
            }.joined())
        }
        return .success
    }

    private func list(_ kc: Keychain, _ query: ItemQuery) throws -> [ItemAttributes] {
        do {
            return try kc.copyMatching(query, limit: .all, returning: .attributes).map(\.attributes)
        } catch let e as KeychainError where e.code == .itemNotFound {
            return []
        } catch let e as KeychainError {
            throw KeychainCommands.cliError(e)
        }
    }
}
