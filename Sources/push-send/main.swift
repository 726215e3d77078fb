// push-send: send APNs requests (push-seal batch's output, or one payload) to APNs over HTTP/2.
import PushSealCLI

pushSendTool.main()
