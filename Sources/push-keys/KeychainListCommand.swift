import PushSealJSON
import PushSealCLI
import PushSealWire
import PushSealKeychain

/// `push-keys keychain list`: attributes of items (never secrets).
struct KeychainListCommand: OptionsCommand {
    let path = ["keychain", "list"]
    static let service = KeychainCommands.service.withHelp("only items with this kSecAttrService")

    let options: [OptionSpec] = [KeychainCommands.keychainOption] + KeychainCommands.identityOptions + [
        KeychainListCommand.service.spec,
        KeychainCommands.itemClassOption.spec,
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

    struct Options: CommandOptions {
        let caller: KeychainCallerOptions, itemClass: ItemClass, service: String?
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            caller = try KeychainCallerOptions(parsing: a)
            itemClass = try KeychainCommands.itemClass(a)
            service = a[KeychainListCommand.service]
        }
        func validate() throws { try caller.validate(required: false) }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let cls = o.itemClass
        var items: [ItemAttributes] = []
        if let (entitlements, group) = try o.caller.resolve() {
            let kc = try KeychainCommands.open(o.caller.keychain, as: entitlements)
            items = try list(kc, ItemQuery(itemClass: cls, service: o.service, accessGroup: group))
        } else {
            let probe = try KeychainCommands.open(o.caller.keychain, as: Entitlements())
            let groups = try KeychainCommands.mapping { try probe.storedAccessGroups() }
            if !groups.isEmpty {
                let kc = try KeychainCommands.open(o.caller.keychain, as: Entitlements(keychainAccessGroups: groups))
                items = try list(kc, ItemQuery(itemClass: cls, service: o.service))
            }
        }
        if context.json {
            Output.printJSON(["items": .array(items.map { .object(KeychainCommands.json($0)) })])
        } else {
            Output.stdout(items.map { i in
                // Anyone's text, shown escaped: one line per item whatever the names hold.
                [i.accessGroup, i.itemClass.rawValue, i.service, i.account, i.accessibility.rawValue, i.label ?? ""].map(Output.terminalSafe).joined(separator: "\t") + "\n"
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
