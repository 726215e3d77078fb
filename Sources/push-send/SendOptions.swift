import PushSealAPNs
import PushSealCLI
import PushSealSystem

/// push-send's options, parsed and checked before anything is opened or sent (no I/O here: the
/// files are opened by ``SendCommand/run(_:_:)``). Each option is declared once (help, kind,
/// range, default) in the extension below; ``SendCommand/options`` lists ``all``.
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
        p8Path = try a[Self.p8]
        keyID = try a[Self.keyID]
        teamID = try a[Self.teamID]
        (endpoint, caFile) = try Self.endpoint(a)
        connections = Int(try a[Self.connections])
        inFlight = Int(try a[Self.inFlight])
        timeoutSeconds = Int(try a[Self.timeout])
        attempts = Int(try a[Self.attempts])
        retryDelayMilliseconds = Int(try a[Self.retryDelay])
        rate = try a[Self.rate].map { Int($0) }
        if let p = a[Self.pushType], APNsPushType(rawValue: p) == nil {
            throw CLIError(code: "unknownPushType", "unknown push type \(quoted(p))", hint: "use one of: \(APNsPushType.allCases.map(\.rawValue).joined(separator: ", "))", exitCode: .usage)
        }
        defaults = SendInput.Defaults(deviceToken: a[Self.deviceToken], topic: a[Self.topic], pushType: a[Self.pushType],
                                      priority: try a[Self.priority].map { Int($0) }, expiration: try a[Self.expiration],
                                      collapseID: a[Self.collapseID])
        resumePath = a[Self.resume]
        outcomesPath = a[Self.outcomes]
        invalidationsPath = a[Self.invalidations]
        metricsPath = a[Self.metrics]
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
        if let host = a[Self.host] {
            if a.has(Self.environment) || a.has(Self.port) {
                throw CLIError.usage("--host replaces --environment and --port", hint: "give either --host HOST:PORT (with --ca-file) or --environment")
            }
            do {
                return (try APNsEndpoint(hostAndPort: host, caFile: a[Self.caFile]), a[Self.caFile])
            } catch let e as APNsError {
                throw CLIError.usage(e.reason, hint: "e.g. --host 127.0.0.1:8443 --ca-file mock-ca.pem")
            }
        }
        if a.has(Self.caFile) { throw CLIError.usage("--ca-file needs --host", hint: "Apple's endpoints are checked against the system's CAs") }
        let name = try a[Self.environment]
        guard let environment = APNsEndpoint.Environment(rawValue: name) else {
            throw CLIError.usage("--environment must be production or development, not \(quoted(name))")
        }
        let port = Int(try a[Self.port])
        do {
            return (try APNsEndpoint(environment, port: port), nil)
        } catch let e as APNsError {
            throw CLIError.usage(e.reason)
        }
    }
}

/// push-send's options, each declared once: ``SendCommand/options`` lists them, ``init(parsing:)`` reads them.
extension SendOptions {
    /// `--p8`.
    static let p8 = Option.required("--p8", "FILE", "the APNs provider key (.p8, PKCS#8 P-256) from Apple's developer site")
    /// `--key-id`.
    static let keyID = Option.required("--key-id", "ID", "the key's 10-character key id")
    /// `--team-id`.
    static let teamID = Option.required("--team-id", "ID", "your 10-character team id")
    /// `--environment`.
    static let environment = Option.textWithDefault("--environment", "ENV", "production (api.push.apple.com) or development (api.sandbox.push.apple.com)", default: "production")
    /// `--port`.
    static let port = Option.integerWithDefault("--port", "PORT", "443 or 2197", default: 443)
    /// `--host`.
    static let host = Option.text("--host", "HOST:PORT", "send to another server instead (a test server or the mock APNs); give its --ca-file")
    /// `--ca-file`.
    static let caFile = Option.text("--ca-file", "FILE", "PEM CA certificates to trust for --host instead of the system's")
    /// `--device-token`.
    static let deviceToken = Option.text("--device-token", "HEX", "the device token for lines without \"deviceToken\", or for a single PAYLOAD.json")
    /// `--topic`.
    static let topic = Option.text("--topic", "BUNDLE", "apns-topic for lines without one (the app's bundle id; the push type's suffix is added)")
    /// `--push-type`.
    static let pushType = Option.text("--push-type", "TYPE", "apns-push-type for lines without one (alert by default)")
    /// `--priority`.
    static let priority = Option.integer("--priority", "N", "apns-priority for lines without one: 10, 5 or 1 (background: 5)")
    /// `--expiration`.
    static let expiration = Option.integer("--expiration", "SECONDS", "apns-expiration for lines without one: seconds since 1970, 0 for now-or-never")
    /// `--collapse-id`.
    static let collapseID = Option.text("--collapse-id", "ID", "apns-collapse-id for lines without one (at most 64 bytes)")
    /// `--outcomes`.
    static let outcomes = Option.text("--outcomes", "FILE", "append the outcome lines to FILE instead of standard output (created 0600; with an intent line before each request goes out)")
    /// `--resume`.
    static let resume = Option.text("--resume", "FILE", "the outcome file of an interrupted run: lines with a final outcome there are not sent again, failures that never reached APNs are")
    /// `--invalidations`.
    static let invalidations = Option.text("--invalidations", "FILE", "append the device tokens to delete (410 with its timestamp, or BadDeviceToken) to FILE")
    /// `--metrics`.
    static let metrics = Option.text("--metrics", "FILE", "write the summary as Prometheus text to FILE at the end")
    /// `--connections`.
    static let connections = Option.integerWithDefault("--connections", "N", "connections at most; a retry on a new connection may add one", range: 1...16, default: 1)
    /// `--in-flight`.
    static let inFlight = Option.integerWithDefault("--in-flight", "N", "notifications in flight at most; memory is bounded by it", range: 1...100_000, default: 1000)
    /// `--timeout`.
    static let timeout = Option.integerWithDefault("--timeout", "SECONDS", "one attempt's time limit", range: 1...600, default: 10)
    /// `--attempts`.
    static let attempts = Option.integerWithDefault("--attempts", "N", "attempts per notification at most", range: 1...20, default: 5)
    /// `--retry-delay`.
    static let retryDelay = Option.integerWithDefault("--retry-delay", "MS", "first back-off delay in milliseconds, doubled each retry up to 60 s, with jitter", range: 0...60_000, default: 1000)
    /// `--rate`.
    static let rate = Option.integer("--rate", "N", "send at most N notifications a second (without it: as fast as APNs answers), paced on the monotonic clock with bursts of 1% of N", range: 1...1_000_000)

    /// Every option, in `--help` order.
    static let all: [OptionSpec] = OptionSpec.list(p8, keyID, teamID, environment, port, host, caFile, deviceToken, topic, pushType, priority, expiration, collapseID, outcomes, resume, invalidations, metrics, connections, inFlight, timeout, attempts, retryDelay, rate)
}
