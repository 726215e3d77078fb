import PushSealCLI

/// push-gateway's commands, run by `main.swift`; CLIDeclarationTests checks their option declarations.
let pushGatewayTool = Tool(
    name: "push-gateway",
    overview: "the HTTP gateway any backend calls: register devices, send sealed notifications through a durable PostgreSQL outbox, read their status (docs/gateway.md)",
    commands: [ServeCommand(), KeysCreateCommand(), KeysListCommand(), KeysRevokeCommand(), MigrateCommand()]
)
