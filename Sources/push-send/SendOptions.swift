import PushSealAPNs
import PushSealCLI
import PushSealSystem

/// push-send's options, parsed and checked before anything is opened or sent (no I/O here: the
/// files are opened by ``SendCommand/run(_:_:)``). Each option's declaration (help, kind, range,
/// default) is in ``SendCommand/options``.
struct SendOptions: CommandOptions {
    /// `--p8 FILE`: the APNs provider key's path.
    let p8Path: String
    /// `--key-id ID` and `--team-id ID` (10 characters each; checked with the key).
    let keyID: String, teamID: String
    /// Where to send: Apple's `--environment` (production by default) and `--port`, or `--host HOST:PORT`.
    let endpoint: APNsEndpoint
    /// `--ca-file FILE` with `--host`: checked readable before the run.
    let caFile: String?
    /// `--connections` (1…16, default 1) and `--in-flight` (1…100,000, default 1,000).
    let connections: Int, inFlight: Int
    /// `--timeout` in seconds (1…600, default 10).
    let timeoutSeconds: Int
    /// `--attempts` (1…20, default 5) and `--retry-delay` in milliseconds (0…60,000, default 1,000).
    let attempts: Int, retryDelayMilliseconds: Int
    /// `--rate` in notifications a second (1…1,000,000), when given.
    let rate: Int?
    /// `--device-token`, `--topic`, `--push-type`, `--priority`, `--expiration`, `--collapse-id`:
    /// for lines without their own.
    let defaults: SendInput.Defaults
    /// `--resume`, `--outcomes`, `--invalidations`, `--metrics` file paths.
    let resumePath: String?, outcomesPath: String?, invalidationsPath: String?, metricsPath: String?
    /// The input: `LINES.jsonl`, `PAYLOAD.json` (with `--device-token`), or `nil`/`-` for standard input.
    let input: String?

    /// Reads and checks push-send's options.
    /// - Throws: `CLIError` 64 (usage): a missing `--p8`/`--key-id`/`--team-id`, a value out of
    ///   its range, an unknown push type or environment, `--host` with `--environment`/`--port`,
    ///   `--ca-file` without `--host`, more than one input.
    init(parsing a: Arguments) throws {
        try a.expectPositionals(max: 1)
        p8Path = try a.required("--p8")
        keyID = try a.required("--key-id")
        teamID = try a.required("--team-id")
        (endpoint, caFile) = try Self.endpoint(a)
        connections = Int(try a.integerWithDefault("--connections"))
        inFlight = Int(try a.integerWithDefault("--in-flight"))
        timeoutSeconds = Int(try a.integerWithDefault("--timeout"))
        attempts = Int(try a.integerWithDefault("--attempts"))
        retryDelayMilliseconds = Int(try a.integerWithDefault("--retry-delay"))
        rate = try a.integer("--rate").map { Int($0) }
        if let p = a.value("--push-type"), APNsPushType(rawValue: p) == nil {
            throw CLIError(code: "unknownPushType", "unknown push type \(quoted(p))", hint: "use one of: \(APNsPushType.allCases.map(\.rawValue).joined(separator: ", "))", exitCode: .usage)
        }
        defaults = SendInput.Defaults(deviceToken: a.value("--device-token"), topic: a.value("--topic"), pushType: a.value("--push-type"),
                                      priority: try a.integer("--priority").map { Int($0) }, expiration: try a.integer("--expiration"),
                                      collapseID: a.value("--collapse-id"))
        resumePath = a.value("--resume")
        outcomesPath = a.value("--outcomes")
        invalidationsPath = a.value("--invalidations")
        metricsPath = a.value("--metrics")
        input = a.positionals.first
    }

    /// The client configuration these options give (connections, window, timeout, retry policy).
    var clientConfiguration: APNsClient.Configuration {
        var configuration = APNsClient.Configuration(endpoint: endpoint)
        configuration.maxConnections = connections
        configuration.maxInFlight = inFlight
        configuration.maxConcurrentStreams = 1000
        configuration.stopOnBadDeviceTokenBurst = true
        configuration.requestTimeoutSeconds = Double(timeoutSeconds)
        configuration.retry = APNsRetryPolicy(maxAttempts: attempts, baseDelaySeconds: Double(retryDelayMilliseconds) / 1000, maxDelaySeconds: 60)
        configuration.reconnectBaseDelaySeconds = max(0.001, min(1, Double(retryDelayMilliseconds) / 1000))
        return configuration
    }

    /// The endpoint from `--environment`/`--port` or `--host`/`--ca-file`.
    private static func endpoint(_ a: Arguments) throws -> (APNsEndpoint, caFile: String?) {
        if let host = a.value("--host") {
            if a.has("--environment") || a.has("--port") {
                throw CLIError.usage("--host replaces --environment and --port", hint: "give either --host HOST:PORT (with --ca-file) or --environment")
            }
            do {
                return (try APNsEndpoint(hostAndPort: host, caFile: a.value("--ca-file")), a.value("--ca-file"))
            } catch let e as APNsError {
                throw CLIError.usage(e.reason, hint: "e.g. --host 127.0.0.1:8443 --ca-file mock-ca.pem")
            }
        }
        if a.has("--ca-file") { throw CLIError.usage("--ca-file needs --host", hint: "Apple's endpoints are checked against the system's CAs") }
        let name = try a.valueWithDefault("--environment")
        guard let environment = APNsEndpoint.Environment(rawValue: name) else {
            throw CLIError.usage("--environment must be production or development, not \(quoted(name))")
        }
        let port = Int(try a.integerWithDefault("--port"))
        do {
            return (try APNsEndpoint(environment, port: port), nil)
        } catch let e as APNsError {
            throw CLIError.usage(e.reason)
        }
    }
}
