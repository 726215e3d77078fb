// push-send: send APNs requests (push-seal batch's output, or one payload) to APNs over HTTP/2.
import PushSealCLI

let tool = Tool(
    name: "push-send",
    overview: "send notifications to APNs over HTTP/2 with a provider token: push-seal batch's JSON Lines (or one payload) in, one outcome line per notification out",
    commands: [SendCommand()]
)
tool.main()
