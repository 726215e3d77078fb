// push-gateway: the HTTP service a backend calls to register devices and send sealed notifications.
import PushSealCLI

pushGatewayTool.main()
