import PushSealCLI
import PushSealGateway
import PushSealHTTP
import PushSealJSON
import PushSealRegistry
import PushSealRegistrationTokens
import PushSealRegistryCLI
import PushSealServer
import PushSealSystem

/// `push-gateway serve`: the HTTP API until SIGTERM.
struct ServeCommand: OptionsCommand {
    let path = ["serve"]
    static let appID = Option.text("--app-id", "BUNDLE", "the app (bundle id, the APNs topic) this gateway registers devices and seals notifications for")
    static let listen = Option.text("--listen", "HOST:PORT", "where to listen (127.0.0.1:8080 by default; :8080 for every IPv4 address, [::1]:8080 for IPv6; port 0 for any free one, logged at start)")
    static let threads = Option.integerWithDefault("--threads", "N", "HTTP threads, each with its own epoll set; a request may hold one while it waits for the database", range: 1...64, default: 4)
    static let metricsKey = Option.flag("--metrics-key", "GET /metrics needs an API key with scope admin (else it is open: keep it off public networks)")
    static let tlsCert = Option.text("--tls-cert", "FILE", "serve HTTPS with this PEM certificate chain (with --tls-key); without both, plain HTTP behind a TLS-terminating proxy")
    static let tlsKey = Option.text("--tls-key", "FILE", "the PEM private key of --tls-cert (0600)")
    static let registrationTokenSecret = Option.text("--registration-token-secret", "FILE", "accept registration tokens at POST /v1/devices: HS256 JWTs {sub, aud, iat, exp, jti} your backend mints under this shared secret (push-keys registration-token; 0600, at least 32 printable ASCII characters; docs/registration.md)")
    static let maxBodyBytes = Option.integerWithDefault("--max-body-bytes", "N", "longest request body; longer is 413", range: 1024...(16 << 20), default: 1 << 20)
    static let maxConnections = Option.integerWithDefault("--max-connections", "N", "open HTTP connections at most; more are closed at accept", range: 1...65_536, default: 1024)
    static let maxConnectionsPerIP = Option.integerWithDefault("--max-connections-per-ip", "N", "open HTTP connections from one client address at most, so slow or idle clients of one address cannot hold them all (0: no limit, for an instance behind a proxy, where every connection comes from the proxy's address)", range: 0...65_536, default: 0)
    static let rate = Option.integerWithDefault("--rate", "N", "requests a second per API key, with bursts of --burst; over it: 429 with Retry-After", range: 1...1_000_000, default: 100)
    static let burst = Option.integerWithDefault("--burst", "N", "requests at once per API key", range: 1...1_000_000, default: 200)
    static let drainSeconds = Option.integerWithDefault("--drain-seconds", "S", "on SIGTERM, how long requests in flight may take to finish", range: 0...600, default: 20)
    static let p8 = Option.text("--p8", "FILE", "the APNs provider key (.p8, PKCS#8 P-256), as push-send takes it")
    static let keyID = Option.text("--key-id", "ID", "the key's 10-character key id")
    static let teamID = Option.text("--team-id", "ID", "your 10-character team id")
    static let environment = Option.textWithDefault("--environment", "ENV", "production or development: Apple's endpoint and the device tokens' environment", default: "production")
    static let host = Option.text("--host", "HOST:PORT", "send to another server instead of Apple's (a test server or the mock APNs); give its --ca-file")
    static let caFile = Option.text("--ca-file", "FILE", "PEM CA certificates to trust for --host")
    static let connections = Option.integerWithDefault("--connections", "N", "APNs connections at most", range: 1...16, default: 1)
    static let leaseSeconds = Option.integerWithDefault("--lease-seconds", "S", "how long a notification this instance's worker claimed stays its own without a renewal (renewed every third of it): after a crash, another instance returns its notifications this long after the last renewal", range: 2...600, default: 60)
    static let keepFinished = Option.durationWithDefault("--keep-finished", "how long a notification's row stays in the outbox after its final status (GET /v1/notifications/{id} and retracts answer for it until then); older rows are deleted, every minute, by each instance; 0 keeps them for good", default: OutboxRetention.Configuration().keepFinishedMs / 1000)
    static let noWorker = Option.flag("--no-worker", "accept and answer only: this instance sends nothing (another instance's worker sends the outbox)")

    let options = GatewayRegistry.options + [
        ServeCommand.appID.spec,
        ServeCommand.listen.spec,
        ServeCommand.threads.spec,
        ServeCommand.metricsKey.spec,
        ServeCommand.tlsCert.spec,
        ServeCommand.tlsKey.spec,
        ServeCommand.registrationTokenSecret.spec,
        ServeCommand.maxBodyBytes.spec,
        ServeCommand.maxConnections.spec,
        ServeCommand.maxConnectionsPerIP.spec,
        ServeCommand.rate.spec,
        ServeCommand.burst.spec,
        ServeCommand.drainSeconds.spec,
        ServeCommand.p8.spec,
        ServeCommand.keyID.spec,
        ServeCommand.teamID.spec,
        ServeCommand.environment.spec,
        ServeCommand.host.spec,
        ServeCommand.caFile.spec,
        ServeCommand.connections.spec,
        ServeCommand.leaseSeconds.spec,
        ServeCommand.keepFinished.spec,
        ServeCommand.noWorker.spec,
    ]
    /// Seconds a request waits for a restarting database before it answers 503.
    static let databaseWaitSeconds: Double = 5

    let help = HelpText(
        overview: "serve the HTTP API (docs/gateway.md, docs/gateway.openapi.json) on the registry until SIGINT or SIGTERM: /v1/notifications, /v1/devices, /v1/sender-keys, /v1/revocations, /healthz, /readyz, /metrics",
        usage: ["push-gateway serve --registry URI --kek-file F --app-id BUNDLE [--listen HOST:PORT] [--tls-cert F --tls-key F] [--metrics-key] [options]"],
        examples: ["push-gateway serve --registry postgresql:///pushseal?host=/run/postgresql --kek-file /etc/pushseal/kek --app-id com.example.app --listen 127.0.0.1:8080"],
        exitCodes: GatewayRegistry.exitCodes([
            "65  the registration token secret is shorter than 32 characters or holds other than printable ASCII, or the --p8 file is not a P-256 key",
            "66  the TLS certificate or key file, the registration token secret file, or the --p8 file is missing (or the .p8 unreadable)",
            "77  the registration token secret file, the --tls-key file or the --p8 file is not private (mode 0600, yours, no symbolic link), or the secret or key file not readable",
            "71  the address cannot be listened on (in use, not this machine's) or the TLS key or certificate was refused",
        ]).map { $0.hasPrefix("69 ") ? "69  the database cannot be reached at start (refused, no socket, authentication failed); lost later, the gateway keeps running (below)" : $0 },
        notes: """
        Logs: one JSON object per line on standard error: {"event":"listening","address","port","tls"} at start, one "request" line per request (requestId, method, route, status, durationMs), "internalError" before a 500, "accept" / "retract" / "register" / "forget" lines, "apiKeyRefused" (an API key row failing its authentication under the KEK), one "outcome" line per notification's final status (id, apnsId, recipient, status, httpStatus, reason, attempts; never a notification's text, a full device token or a key), "retention" (deleted: rows older than --keep-finished), "database" (status unavailable with its error, then available: checked every 2 s), "stopping" and "stopped".
        The database lost while serving: a request waits up to \(Int(databaseWaitSeconds)) s for it, then answers 503 unavailable with Retry-After (later requests at once, until it answers again); /readyz says unavailable; the process keeps running and recovers by itself.
        SIGTERM or SIGINT: the listening socket stops listening (new connections are refused), requests on open connections (/readyz too) get 503 draining, HTTP requests in flight finish (--drain-seconds at most), then the outbox worker stops claiming, lets every notification it holds end (answered, or failed after the APNs retries: not bounded by --drain-seconds, minutes with APNs unreachable) and writes the outcomes, renewing its leases meanwhile so no other instance takes those notifications; then the process exits 0. Run several instances on one registry to scale out.
        """)

    struct Options: CommandOptions {
        let registry: RegistryLocation
        let appID: String
        var http = HTTPServer.Configuration()
        var settings = Gateway.Settings()
        let tlsCert: String?
        let tlsKey: String?
        let registrationTokenSecret: String?
        let apns: APNsProviderConfiguration?
        let leaseMs: Int64
        /// `--keep-finished` in ms; 0: keep for good.
        let keepFinishedMs: Int64
        let environment: DeviceTokenEnvironment

        init(parsing a: Arguments) throws {
            _ = try Positionals(a, max: 0)
            registry = try GatewayRegistry.location(a)
            appID = try a.required(ServeCommand.appID)
            http.port = 8080
            if let listen = a[ServeCommand.listen] {
                do { try http.setListenAddress(listen) } catch let e as HTTPServerError { throw CLIError.usage(e.reason) }
            }
            http.threadCount = Int(try a[ServeCommand.threads])
            http.limits.maxBodyByteCount = Int(try a[ServeCommand.maxBodyBytes])
            http.connectionLimit = Int(try a[ServeCommand.maxConnections])
            http.perIPConnectionLimit = Int(try a[ServeCommand.maxConnectionsPerIP])
            settings.metricsNeedKey = a.has(ServeCommand.metricsKey)
            settings.ratePerSecond = Double(try a[ServeCommand.rate])
            settings.rateBurst = Double(try a[ServeCommand.burst])
            settings.drainSeconds = Double(try a[ServeCommand.drainSeconds])
            tlsCert = a[ServeCommand.tlsCert]
            tlsKey = a[ServeCommand.tlsKey]
            registrationTokenSecret = a[ServeCommand.registrationTokenSecret]
            let envName = try a[ServeCommand.environment]
            guard let env = DeviceTokenEnvironment(rawValue: envName), let apnsEnv = APNsEndpoint.Environment(rawValue: envName) else {
                throw CLIError.usage("--environment must be production or development, not \(quoted(envName))")
            }
            environment = env
            leaseMs = try a[ServeCommand.leaseSeconds] * 1000
            let keep = try a[ServeCommand.keepFinished]
            guard keep <= 100 * 365 * 86400 else { throw CLIError.usage("--keep-finished is at most 100 years (5200w); 0 keeps rows for good") }
            keepFinishedMs = keep * 1000
            if a.has(ServeCommand.noWorker) {
                apns = nil
            } else {
                let endpoint: APNsEndpoint
                do {
                    if let host = a[ServeCommand.host] {
                        endpoint = try APNsEndpoint(hostAndPort: host, caFile: a[ServeCommand.caFile])
                    } else {
                        guard !a.has(ServeCommand.caFile) else { throw CLIError.usage("--ca-file needs --host") }
                        endpoint = try APNsEndpoint(apnsEnv)
                    }
                } catch let e as APNsError {
                    throw CLIError.usage(e.reason, hint: "e.g. --host 127.0.0.1:8443 --ca-file mock-ca.pem")
                }
                var client = APNsClient.Configuration(endpoint: endpoint)
                client.maxConnections = Int(try a[ServeCommand.connections])
                apns = APNsProviderConfiguration(p8Path: try a.required(ServeCommand.p8, hint: "or --no-worker for an instance that only accepts"),
                                                 keyID: try a.required(ServeCommand.keyID), teamID: try a.required(ServeCommand.teamID), client: client)
            }
        }

        func validate() throws {
            guard (tlsCert == nil) == (tlsKey == nil) else { throw CLIError.usage("give --tls-cert and --tls-key together") }
            // The gateway seals at accept and checks API keys under the KEK: without it nothing works.
            guard registry.kekFile != nil else {
                throw CLIError.usage("serve needs the key-encryption key", hint: "give --kek-file F (or set $PUSHSEAL_KEK_FILE): the file push-keys registry new-kek wrote")
            }
        }
    }

    func run(_ o: Options, _ c: CommandContext) throws -> ExitCode {
        var http = o.http
        if let cert = o.tlsCert, let key = o.tlsKey {
            http.tls = HTTPServer.TLS(certificatePEM: try Self.readPEM(cert), privateKeyPEM: try Self.readPrivatePEM(key))
        }
        var settings = o.settings
        if let path = o.registrationTokenSecret {
            settings.registrationTokens = RegistrationTokenPolicy(secret: try Self.loadSecret(path), appID: o.appID)
        }
        try StopSignals.install()
        // A request waits at most this long for a restarting database, then answers 503 (the
        // client retries); the tools' 30 s would hold an HTTP request for half a minute.
        let registry = try o.registry.open(reconnectWaitSeconds: Self.databaseWaitSeconds)
        let log = GatewayLog()
        let outbox: Outbox
        do {
            var configuration = Outbox.Configuration(sealer: SealerConfiguration(appID: o.appID), environment: o.environment)
            // Rows cancelled by DELETE /v1/devices or a retract get their outcome line too.
            configuration.onCancelled = { log.outcome($0) }
            outbox = try Outbox(store: ServerStore(store: registry), configuration: configuration)
        } catch let e as RegistryError {
            throw RegistryOptions.cliError(e)
        } catch let e as any CodedError {
            throw CLIError(code: "\(e.code)", "cannot make the sealer for \(o.appID): \(e.reason)", exitCode: .dataError)
        }
        var worker: OutboxWorker?
        if let apns = o.apns {
            do {
                var work = OutboxWorker.Configuration()
                work.leaseMs = o.leaseMs
                work.onFinal = { log.outcome($0) }
                worker = try OutboxWorker(outbox: outbox, apns: apns, configuration: work)
                try worker?.start()
            } catch let e as APNsError {
                throw Self.providerKeyError(e, path: apns.p8Path)
            }
        }
        var retention: OutboxRetention?
        if o.keepFinishedMs > 0 {
            var keep = OutboxRetention.Configuration()
            keep.keepFinishedMs = o.keepFinishedMs
            keep.onDeleted = { log.write("retention", [("deleted", .integer(Int64($0)))]) }
            retention = OutboxRetention(outbox: outbox, configuration: keep)
            try retention?.start()
        }
        let backend = try ServerBackend(outbox: outbox, worker: worker)
        let gateway: Gateway
        do {
            gateway = try Gateway(http: http, settings: settings, backend: backend, keys: registry, log: log)
        } catch let e as HTTPServerError where e.code == .tlsUnsupported {
            throw CLIError.usage(e.reason, hint: "leave out --tls-cert and --tls-key and terminate TLS in a proxy in front (docs/gateway.md)")
        } catch let e as HTTPServerError where e.code == .invalidAddress {
            throw CLIError.usage(e.reason, hint: "--listen takes an IP address and a port, e.g. 127.0.0.1:8080 or [::1]:8080")
        } catch let e as HTTPServerError {
            throw CLIError(code: e.code.name, e.reason, hint: "choose another --listen address or port", exitCode: ExitCode(71))
        }
        log.write("listening", [("address", .string(http.host)), ("port", .integer(Int64(gateway.server.port))), ("tls", .bool(http.tls != nil))])
        // The outage's start and end in the log (requests and /readyz answer 503 meanwhile).
        // A newer schema is a rolling upgrade, not an outage: this instance keeps working (and
        // /readyz ready), so the watch does not report it as one.
        let watch = DatabaseWatch(check: {
            do { try registry.checkReachable() } catch let e as RegistryError where e.code == .schemaTooNew {}
        }, onChange: { up, code in
            log.write("database", up ? [("status", .string("available"))] : [("status", .string("unavailable")), ("error", .string(code ?? "error"))])
        })
        watch.start()
        let idle = try WakeUpPipe()
        while try StopSignals.wait(for: FileDescriptor(borrowing: idle.readEnd, path: "stop"), wake: nil) != .stopped {}
        log.write("stopping", [("inFlight", .integer(Int64(gateway.server.inFlightCount)))])
        gateway.stop()
        // Every claimed row is sent and its outcome written, or its lease released, before exit.
        worker?.drain()
        retention?.stop()
        watch.stop()
        log.write("stopped", [])
        return .success
    }

    /// The CLI error for a provider key the worker cannot use, with push-send's exit codes for the
    /// same file: 66 missing or unreadable, 77 breaking the private-file rules (mode, owner,
    /// link), 65 not a P-256 key.
    static func providerKeyError(_ e: APNsError, path: String) -> CLIError {
        switch ProviderKey.fileFault(of: e, path: path) {
        case .unreadable:
            return CLIError(code: e.code.name, e.reason, hint: "give the path of the AuthKey_KEYID.p8 file Apple issued (developer.apple.com, Keys), or --no-worker for an instance that only accepts",
                            exitCode: .noInput)
        case .notPrivate:
            return CLIError(code: "insecureKeyFile", e.reason, hint: "keep the .p8 a regular file of yours, mode 0600 (chmod 600 \(quoted(path)))", exitCode: .noPermission)
        case .notAKey:
            return CLIError(code: e.code.name, e.reason, hint: "give the AuthKey_KEYID.p8 file Apple issued, with its key id and your team id", exitCode: .dataError)
        }
    }

    /// The registration token secret at `path`: 66 missing, 77 not private or unreadable, 65 bad text.
    static func loadSecret(_ path: String) throws -> RegistrationTokenSecret {
        do {
            return try RegistrationTokenSecret.load(path: path)
        } catch let e as RegistrationTokenError {
            let exit: ExitCode = e.reason.hasPrefix("no registration token secret") ? .noInput : e.reason.hasPrefix("cannot read") ? .noPermission : .dataError
            throw CLIError(code: e.code.name, e.reason, hint: e.suggestion ?? "push-keys registration-token new-secret --out FILE", exitCode: exit)
        }
    }

    /// The text of the TLS private key's PEM file, held to the private-file rules (0600, yours,
    /// no symbolic link): 66 missing, 77 not private.
    static func readPrivatePEM(_ path: String) throws -> String {
        do {
            guard let bytes = try PrivateFile.read(path, maxByteCount: 1 << 20) else {
                throw CLIError(code: "noInput", "no TLS key at \(quoted(path))", exitCode: .noInput)
            }
            return String(decoding: bytes, as: UTF8.self)
        } catch let e as SystemError {
            throw CLIError(code: e.code.name, "the TLS key \(quoted(path)) is refused: \(e.reason)", hint: "chmod 600 \(path) (owned by the user running push-gateway, not a symbolic link)",
                           exitCode: .noPermission)
        }
    }

    /// The text of a PEM file (read once at start; libmicrohttpd keeps its own copy).
    static func readPEM(_ path: String) throws -> String {
        do {
            let fd = try FileDescriptor.open(path, .readOnly)
            return String(decoding: try fd.readAll(limit: 1 << 20), as: UTF8.self)
        } catch let e as SystemError {
            throw CLIError(code: "noInput", "cannot read \(quoted(path)): \(Output.errorText(e.errno))", exitCode: .noInput)
        }
    }
}
