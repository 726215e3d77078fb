import PushSealCLI

/// push-send's commands, run by `main.swift`; CLIDeclarationTests checks their option declarations.
let pushSendTool = Tool(
    name: "push-send",
    overview: "send notifications to APNs over HTTP/2 with a provider token: push-seal batch's JSON Lines (or one payload) in, one outcome line per notification out",
    commands: [SendCommand()]
)
