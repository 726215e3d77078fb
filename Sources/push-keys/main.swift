// push-keys: manage push keys and the emulated device keychain.
// Thin dispatcher: each subcommand lives in its own file; add new command families to `commands`.
import PushSealCLI

let tool = Tool(
    name: "push-keys",
    overview: "manage PushSeal push keys and an emulated iOS device keychain",
    commands: KeychainCommands.all + keyLifecycleCommands + DeviceCommands.all + V2ServerCommands.all + SenderStagedCommands.all + TokenCommands.all + RegistryCommands.all + RegistrationTokenCommands.all + RevocationCommands.all + [AuditCommand()]
)
tool.main()
