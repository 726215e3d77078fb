// push-open: what a device would display for an APNs payload (the decrypting Notification
// Service Extension run in its emulated host). Thin dispatcher; the command is OpenCommand.swift.
import PushSealCLI

let tool = Tool(
    name: "push-open",
    overview: "show what an iOS device would display for a PushSeal APNs payload",
    commands: [OpenCommand()]
)
tool.main()
