import PushSealCLI

/// push-keys's commands, run by `main.swift`; CLIDeclarationTests checks their option declarations.
let pushKeysTool = Tool(
    name: "push-keys",
    overview: "manage PushSeal push keys and an emulated iOS device keychain",
    commands: KeychainCommands.all + keyLifecycleCommands + DeviceCommands.all + V2ServerCommands.all + SenderStagedCommands.all + TokenCommands.all + RegistryCommands.all + RegistrationTokenCommands.all + RevocationCommands.all + [AuditCommand()]
)
