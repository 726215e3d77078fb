import PushSealCLI

/// push-seal's commands, run by `main.swift`; CLIDeclarationTests checks their option declarations.
let pushSealTool = Tool(
    name: "push-seal",
    overview: "seal notifications into APNs payloads that only the recipient's device can open",
    commands: [SealCommand(), SealCommand(alias: true), BatchCommand(), MediaCommand(), RetractCommand()]
)
