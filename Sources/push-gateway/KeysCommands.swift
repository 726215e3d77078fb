import PushSealCLI
import PushSealGateway
import PushSealJSON
import PushSealRegistry
import PushSealRegistryCLI
import PushSealSystem

/// `push-gateway keys create`: a new API key, shown once.
struct KeysCreateCommand: OptionsCommand {
    let path = ["keys", "create"]
    static let name = Option.text("--name", "NAME", "who or what uses the key (1-128 characters), shown by keys list")
    static let scope = Option.text("--scope", "SCOPES", "comma-separated: send (POST/GET /v1/notifications, POST …/retract), register (POST/DELETE /v1/devices), admin (/metrics with --metrics-key)")

    let options = GatewayRegistry.options + [
        KeysCreateCommand.name.spec,
        KeysCreateCommand.scope.spec,
    ]
    let help = HelpText(
        overview: "create an API key: 32 random bytes printed once on standard output as psk_ID_SECRET; the registry keeps only its SHA-256, its name and scopes",
        usage: ["push-gateway keys create --registry URI --kek-file F --name NAME --scope send,register [--json]"],
        examples: ["push-gateway keys create --registry postgresql:///pushseal?host=/run/postgresql --kek-file /etc/pushseal/kek --name billing-backend --scope send"],
        exitCodes: GatewayRegistry.exitCodes([]),
        notes: "The key is printed once and never stored or logged: keep it in your backend's secret store. Send it as Authorization: Bearer psk_…. The key's row is authenticated under the KEK (--kek-file, or $PUSHSEAL_KEK_FILE), so a key added or widened in the database without it is refused. --json: {\"id\",\"name\",\"scopes\",\"createdAt\",\"key\"}.")

    struct Options: CommandOptions {
        let registry: RegistryLocation
        let name: String
        let scopes: [String]
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            registry = try GatewayRegistry.location(a)
            name = try a.required(KeysCreateCommand.name)
            scopes = try a.required(KeysCreateCommand.scope).split(separator: ",").map(String.init)
        }
        func validate() throws {
            guard (1...128).contains(name.count) else { throw CLIError.usage("--name must be 1 to 128 characters") }
            guard !scopes.isEmpty, scopes.allSatisfy(APIKey.scopes.contains), Set(scopes).count == scopes.count else {
                throw CLIError.usage("--scope must list distinct scopes among \(APIKey.scopes.joined(separator: ", "))", hint: "e.g. --scope send,register")
            }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try RegistryOptions.mapping { try PostgresKeyStore(connectionString: o.registry.connectionString, kek: RegistryOptions.kek(file: o.registry.kekFile)) }
        let made = APIKey.generate(name: o.name, scopes: o.scopes, now: unixTimeSeconds())
        try RegistryOptions.mapping { try store.insertGatewayAPIKey(made.record, keySHA256: made.sha256) }
        if c.json {
            Output.printJSON(JSONObject([("id", .string(made.record.id)), ("name", .string(o.name)),
                                         ("scopes", .array(o.scopes.map { .string($0) })), ("createdAt", .integer(made.record.createdAt)),
                                         ("key", .string(made.text))]))
        } else {
            Output.stdout(made.text + "\n")
            Output.stderr("push-gateway: key \(made.record.id) (\(o.scopes.joined(separator: ","))) created; it is shown this once\n")
        }
        return .success
    }
}

/// `push-gateway keys list`.
struct KeysListCommand: OptionsCommand {
    let path = ["keys", "list"]
    let options = GatewayRegistry.options
    let help = HelpText(
        overview: "list the API keys: id, name, scopes, created, revoked (never the keys)",
        usage: ["push-gateway keys list --registry URI --kek-file F [--json]"],
        exitCodes: GatewayRegistry.exitCodes([]),
        notes: "Text: one line per key, \"ID NAME SCOPES created=UNIX [revoked=UNIX] [UNAUTHENTICATED]\": a row that fails its authentication under the KEK (written without it, or a key of before schema 12 that the migrate applying it did not tag because it ran without --kek-file) is never accepted; revoke it, and make a new key if it was yours. --json: {\"keys\":[{\"id\",\"name\",\"scopes\",\"createdAt\",\"revokedAt\",\"authentic\"}]}.")

    struct Options: CommandOptions {
        let registry: RegistryLocation
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            registry = try GatewayRegistry.location(a)
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try RegistryOptions.mapping { try PostgresKeyStore(connectionString: o.registry.connectionString, kek: RegistryOptions.kek(file: o.registry.kekFile)) }
        let keys = try RegistryOptions.mapping { try store.gatewayAPIKeys() }
        if c.json {
            Output.printJSON(JSONObject([("keys", .array(keys.map { k in
                .object(JSONObject([("id", .string(k.id)), ("name", .string(k.name)), ("scopes", .array(k.scopes.map { .string($0) })),
                                    ("createdAt", .integer(k.createdAt)), ("revokedAt", k.revokedAt.map { .integer($0) } ?? .null),
                                    ("authentic", .bool(k.authentic))]))
            }))]))
        } else {
            for k in keys {
                Output.stdout("\(k.id) \(Output.terminalSafe(k.name)) \(k.scopes.joined(separator: ",")) created=\(k.createdAt)\(k.revokedAt.map { " revoked=\($0)" } ?? "")\(k.authentic ? "" : " UNAUTHENTICATED")\n")
            }
        }
        return .success
    }
}

/// `push-gateway keys revoke ID`.
struct KeysRevokeCommand: OptionsCommand {
    let path = ["keys", "revoke"]
    let options = GatewayRegistry.options
    let help = HelpText(
        overview: "revoke an API key by its id: every instance refuses it within 5 seconds (their cache)",
        usage: ["push-gateway keys revoke --registry URI --kek-file F ID [--json]"],
        exitCodes: GatewayRegistry.exitCodes(["66  no key with that id, or it was revoked already"]))

    struct Options: CommandOptions {
        let registry: RegistryLocation
        let id: String
        init(parsing a: Arguments) throws {
            let p = try Positionals(a, max: 1)
            registry = try GatewayRegistry.location(a)
            guard let id = p.first else { throw CLIError.usage("missing the key's ID", hint: "push-gateway keys list shows them") }
            self.id = id
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let store = try RegistryOptions.mapping { try PostgresKeyStore(connectionString: o.registry.connectionString, kek: RegistryOptions.kek(file: o.registry.kekFile)) }
        guard try RegistryOptions.mapping({ try store.revokeGatewayAPIKey(id: o.id, at: unixTimeSeconds()) }) else {
            throw CLIError(code: "unknownKey", "no active API key \(quoted(o.id))", hint: "push-gateway keys list shows them", exitCode: .noInput)
        }
        if c.json { Output.printJSON(JSONObject([("id", .string(o.id)), ("revoked", .bool(true))])) } else { Output.stdout("revoked \(o.id)\n") }
        return .success
    }
}

/// `push-gateway migrate`.
struct MigrateCommand: OptionsCommand {
    let path = ["migrate"]
    let options = GatewayRegistry.options
    let help = HelpText(
        overview: "create or upgrade the registry's schema, the gateway's tables included (as push-keys registry migrate)",
        usage: ["push-gateway migrate --registry URI [--kek-file F] [--json]"],
        exitCodes: GatewayRegistry.exitCodes([]),
        notes: "Text: \"applied N\" per version applied, or \"schema is current (version N)\"; then, with --kek-file, \"authenticated N rows (…)\" when rows from before their table was authenticated (API keys: schema 12) were tagged now, or without it \"N rows … wait for: push-gateway migrate --kek-file F\" (the registry opens for nothing else until then). --json: {\"applied\":[…],\"version\":N,\"authenticatedRows\":N,\"pendingRows\":N}.")

    struct Options: CommandOptions {
        let registry: RegistryLocation
        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            registry = try GatewayRegistry.location(a)
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        let kek = try RegistryOptions.kek(file: o.registry.kekFile)
        let r = try RegistryOptions.mapping { try PostgresKeyStore.migrate(connectionString: o.registry.connectionString, kek: kek) }
        if c.json {
            Output.printJSON(JSONObject([("applied", .array(r.applied.map { .integer(Int64($0)) })), ("version", .integer(Int64(RegistrySchema.currentVersion))),
                                         ("authenticatedRows", .integer(Int64(r.authenticated?.total ?? 0))), ("pendingRows", .integer(Int64(r.pendingRows)))]))
        } else {
            Output.stdout(r.applied.isEmpty ? "schema is current (version \(RegistrySchema.currentVersion))\n" : r.applied.map { "applied \($0)\n" }.joined())
            if let a = r.authenticated {
                Output.stdout(RegistryOptions.authenticatedLine(a))
            } else if r.pendingRows > 0 {
                Output.stdout(RegistryOptions.pendingLine(r.pendingRows, command: "push-gateway migrate"))
            }
        }
        return .success
    }
}
