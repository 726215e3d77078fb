import PushSealCLI

/// push-open's commands, run by `main.swift`; CLIDeclarationTests checks their option declarations.
let pushOpenTool = Tool(
    name: "push-open",
    overview: "show what an iOS device would display for a PushSeal APNs payload",
    commands: [OpenCommand()]
)
