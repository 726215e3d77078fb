// push-keys: keychain emulation and key lifecycle. A thin dispatcher: one file a subcommand.
import PushSealCLI

Tool(name: "push-keys", overview: "manage PushSeal keys: keysets, provisioning, rotation, and emulated keychains",
     commands: keyLifecycleCommands).main()
