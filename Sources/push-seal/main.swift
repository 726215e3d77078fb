// push-seal: turn a notification into an APNs payload only the device can read.
import PushSealCLI

let tool = Tool(
    name: "push-seal",
    overview: "seal notifications into APNs payloads that only the recipient's device can open",
    commands: [SealCommand(), SealCommand(alias: true), BatchCommand(), MediaCommand(), RetractCommand()]
)
tool.main()
