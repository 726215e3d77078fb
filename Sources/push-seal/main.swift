// push-seal: turn a notification into an APNs payload only the device can read.
import PushSealCLI

pushSealTool.main()
