import PushSealJSON
import PushSealCLI
import PushSealWire
import PushSealKeychain

/// `push-keys keychain delete`: SecItemDelete.
struct KeychainDeleteCommand: OptionsCommand {
    let path = ["keychain", "delete"]
    let options: [OptionSpec] = [KeychainCommands.keychainOption] + KeychainCommands.identityOptions + [
        KeychainCommands.service.spec,
        KeychainCommands.account.spec,
        KeychainCommands.itemClassOption.spec,
    ]
    let help = HelpText(
        overview: "delete keychain items (SecItemDelete): every match in the caller's access groups (or in --access-group with --entitlements); works while locked",
        usage: ["push-keys keychain delete --keychain DIR IDENTITY --service S --account A [--class C] [--json]"],
        examples: ["push-keys keychain delete --keychain device-kc --entitlements app.json --service push --account alice"],
        exitCodes: KeychainCommands.exitCodes(
            keychainError: "errSecItemNotFound -25300 when nothing matched, errSecMissingEntitlement -34018",
            dataError: "a malformed entitlements file", noInput: "the entitlements file missing"),
        notes: KeychainCommands.identityNote + "\n\nPrints nothing on success (with --json: {\"deleted\": N})."
    )

    struct Options: CommandOptions {
        let caller: KeychainCallerOptions, item: KeychainItemOptions
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            caller = try KeychainCallerOptions(parsing: a)
            item = try KeychainItemOptions(parsing: a)
        }
        func validate() throws { try caller.validate() }
    }

    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode {
        let (kc, group) = try o.caller.open()
        let n = try KeychainCommands.mapping { try kc.delete(o.item.query(accessGroup: group)) }
        if context.json { Output.printJSON(["deleted": .integer(Int64(n))]) }
        return .success
    }
}
