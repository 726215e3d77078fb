// push-gateway: the HTTP service a backend calls to register devices and send sealed notifications.
import PushSealCLI

let tool = Tool(
    name: "push-gateway",
    overview: "the HTTP gateway any backend calls: register devices, send sealed notifications through a durable PostgreSQL outbox, read their status (docs/gateway.md)",
    commands: [ServeCommand(), KeysCreateCommand(), KeysListCommand(), KeysRevokeCommand(), MigrateCommand()]
)
tool.main()
