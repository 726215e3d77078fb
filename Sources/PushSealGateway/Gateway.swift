public import PushSealHTTP
import PushSealJSON
import PushSealCrypto
import PushSealRegistry
import PushSealRegistrationTokens
import PushSealServer
import PushSealSystem

/// push-gateway's HTTP API (version 1) on an ``HTTPServer``: authentication by API key with
/// scopes, per-key rate limits, a JSON log line per request, `/metrics`, `/healthz`, `/readyz`,
/// and the `/v1` routes on a ``GatewayBackend``. docs/gateway.md and docs/gateway.openapi.json
/// describe every route.
public final class Gateway: Sendable {
    /// What the gateway needs besides its backend.
    public struct Settings: Sendable {
        /// `true`: `/metrics` needs an API key with scope `admin` (`--metrics-key`).
        public var metricsNeedKey = false
        /// Requests per second per API key (token bucket refill).
        public var ratePerSecond: Double = 100
        /// Requests at once per API key (token bucket size).
        public var rateBurst: Double = 200
        /// Seconds `stop` waits for requests in flight.
        public var drainSeconds: Double = 20
        /// Registration tokens `POST /v1/devices` accepts besides API keys with scope `register`
        /// (`--registration-token-secret`); `nil`: API keys only, a token is 401.
        public var registrationTokens: RegistrationTokenPolicy?

        /// The defaults: open metrics, 100 requests/s with bursts of 200 per key, 20 s drain, no registration tokens.
        public init() {}
    }

    /// The HTTP server (its port, connections, drain).
    public let server: HTTPServer
    /// The gateway's counters.
    public let metrics = GatewayMetrics()
    /// The log.
    public let log: GatewayLog
    private let backend: any GatewayBackend
    private let authenticator: APIKeyAuthenticator
    private let limiter: RateLimiter
    private let settings: Settings

    /// Starts the gateway's HTTP server.
    /// - Parameters:
    ///   - http: address, threads, limits, TLS.
    ///   - settings: metrics access, rate limits.
    ///   - backend: the store, sealer and outbox.
    ///   - keys: where API keys are looked up.
    ///   - log: the JSON log.
    /// - Throws: ``HTTPServerError``.
    public init(http: HTTPServer.Configuration, settings: Settings = Settings(), backend: any GatewayBackend, keys: any APIKeyLookup,
                log: GatewayLog = GatewayLog()) throws {
        self.backend = backend
        self.settings = settings
        self.log = log
        authenticator = APIKeyAuthenticator(lookup: keys)
        limiter = RateLimiter(ratePerSecond: settings.ratePerSecond, burst: settings.rateBurst)
        let box = Locked<Gateway?>(nil)
        let metrics = self.metrics
        server = try HTTPServer(configuration: http, handler: { request in
            guard let gateway = box.withLock({ $0 }) else { return .error(.unavailable("starting")) }
            return gateway.router.respond(to: request) { error, request in
                gateway.log.write("internalError", [("requestId", .string(request.requestID)), ("route", .string(request.path)),
                                                    ("error", .string(String(describing: type(of: error))))])
            }
        }, observer: { exchange in
            let route = exchange.routeName ?? "refused"
            metrics.countRequest(route: route, status: exchange.status)
            var members: [(key: String, value: JSONValue)] = [
                ("requestId", .string(exchange.requestID)), ("method", .string(exchange.method)), ("route", .string(route)),
                ("status", .integer(Int64(exchange.status))), ("durationMs", .number(Double(exchange.durationNanoseconds) / 1e6)),
            ]
            if let code = exchange.errorCode { members.append(("error", .string(code))) }
            if !exchange.completed { members.append(("completed", .bool(false))) }
            log.write("request", members)
        })
        routerStorage = Self.makeRouter(backendOf: box)
        box.withLock { $0 = self }
    }

    private let routerStorage: HTTPRouter
    private var router: HTTPRouter { routerStorage }

    /// Stops: `/readyz` answers 503 at once, the listening socket closes, requests in flight
    /// finish (at most ``Settings/drainSeconds``), then every connection closes.
    public func stop() {
        server.stop(drainingUpToSeconds: settings.drainSeconds)
    }

    // MARK: - Authentication and limits

    /// The API key of `request` if it has `scope`, after the rate limit.
    /// - Throws: ``HTTPError`` 401 `unauthorized` (no key, malformed, unknown or revoked, or its
    ///   row fails its tag: an `apiKeyRefused` log line),
    ///   403 `forbidden` (the key lacks `scope`), 429 `rateLimited` with `Retry-After`,
    ///   503 `unavailable` (the registry cannot be asked).
    func authorize(_ request: HTTPRequest, scope: String) throws -> GatewayAPIKeyRecord {
        let challenge = [(name: "WWW-Authenticate", value: "Bearer realm=\"push-gateway\"")]
        guard let text = request.bearerToken else {
            throw HTTPError(401, "unauthorized", "send an API key as Authorization: Bearer psk_…", headers: challenge)
        }
        let record: GatewayAPIKeyRecord?
        do {
            record = try authenticator.record(for: text, allowStale: scope == "admin")
        } catch let e as RegistryError where e.code == .corrupt {
            // A key row written without the KEK (added, widened, un-revoked in the database):
            // refused like an unknown key, and told to the operator (the row's id, no secret).
            log.write("apiKeyRefused", [("requestId", .string(request.requestID)), ("error", .string("corrupt")), ("message", .string(e.reason))])
            throw HTTPError(401, "unauthorized", "the API key is unknown or revoked", headers: challenge)
        } catch {
            throw HTTPError.unavailable("the registry cannot be reached to check the API key")
        }
        guard let record else { throw HTTPError(401, "unauthorized", "the API key is unknown or revoked", headers: challenge) }
        guard record.scopes.contains(scope) else {
            throw HTTPError(403, "forbidden", "the API key \(record.id) has no scope \(scope)")
        }
        if let wait = limiter.take(record.id, nowNanoseconds: monotonicNanoseconds()) {
            metrics.countRateLimited()
            throw HTTPError(429, "rateLimited", "API key \(record.id) is over its rate limit; retry after \(wait) s",
                            headers: [("Retry-After", String(wait))])
        }
        return record
    }

    // MARK: - Routes

    private static func makeRouter(backendOf box: Locked<Gateway?>) -> HTTPRouter {
        var router = HTTPRouter()
        func with(_ body: @escaping @Sendable (Gateway, HTTPRequest) throws -> HTTPResponse) -> HTTPRouter.Handler {
            { request in
                guard let gateway = box.withLock({ $0 }) else { throw HTTPError.unavailable("starting") }
                do {
                    return try body(gateway, request)
                } catch let e as RegistryError where e.code == .unavailable || e.code == .outcomeUnknown {
                    // Any route: the database is down or the commit's outcome is unknown. A 503
                    // the client retries (with the same Idempotency-Key), never a 500.
                    throw HTTPError.unavailable(request.method == "POST" && request.path.hasPrefix("/v1/notifications")
                        ? "the database cannot be reached; retry (a send with the same Idempotency-Key is never queued twice)"
                        : "the database cannot be reached; retry")
                }
            }
        }
        router.add("GET", "/healthz", with { _, _ in .json(200, .object(["status": .string("ok")])) })
        router.add("GET", "/readyz", with { g, _ in g.readyz() })
        router.add("GET", "/metrics", with { g, r in try g.metricsPage(r) })
        router.add("POST", "/v1/notifications", with { g, r in try g.postNotifications(r) })
        router.add("GET", "/v1/notifications/{id}", with { g, r in try g.getNotification(r) })
        router.add("POST", "/v1/notifications/retract", with { g, r in try g.postRetract(r, single: false) })
        router.add("POST", "/v1/notifications/{id}/retract", with { g, r in try g.postRetract(r, single: true) })
        router.add("POST", "/v1/devices", with { g, r in try g.postDevice(r) })
        router.add("DELETE", "/v1/devices/{recipient}", with { g, r in try g.deleteDevice(r) })
        router.add("GET", "/v1/sender-keys", with { g, r in try g.publicRecords(r) { try $0.senderKeys(appID: $1) } })
        router.add("GET", "/v1/revocations", with { g, r in try g.publicRecords(r) { try $0.revocations(appID: $1) } })
        return router
    }

    private func readyz() -> HTTPResponse {
        if server.isDraining {
            return .json(503, .object(["status": .string("draining")]), headers: [("Retry-After", "1")])
        }
        let r = backend.readiness()
        let checks = JSONObject(r.checks.map { ($0.name, JSONValue.string($0.finding)) })
        return .json(r.ready ? 200 : 503, .object(JSONObject([("status", .string(r.ready ? "ready" : "notReady")), ("checks", .object(checks))])))
    }

    private func metricsPage(_ request: HTTPRequest) throws -> HTTPResponse {
        if settings.metricsNeedKey { _ = try authorize(request, scope: "admin") }
        let text = metrics.render(backend: backend.metricsSnapshot(), draining: server.isDraining)
        return .text(200, text, contentType: "text/plain; version=0.0.4; charset=utf-8")
    }

    /// The `Idempotency-Key` header of `request` under the API key's id, `nil` without one.
    /// - Throws: ``HTTPError`` 400 for an empty, overlong or non-visible-ASCII key.
    private static func idempotency(_ request: HTTPRequest, key: GatewayAPIKeyRecord) throws -> (scope: String, key: String)? {
        guard let k = request.header("Idempotency-Key") else { return nil }
        guard !k.isEmpty, k.utf8.count <= 255, k.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw HTTPError.invalid("Idempotency-Key must be 1 to 255 bytes of visible ASCII", field: "Idempotency-Key")
        }
        return (key.id, k)
    }

    private func postNotifications(_ request: HTTPRequest) throws -> HTTPResponse {
        let key = try authorize(request, scope: "send")
        let idempotency = try Self.idempotency(request, key: key)
        let submissions = try NotificationRequest.parse(try request.jsonBody())
        let hash = (try? SHA256Hasher.hash(request.body)) ?? []
        let answer = try backend.enqueue(submissions, idempotency: idempotency, bodySHA256: hash)
        if !answer.replayed {
            log.write(zip(submissions, answer.results).map { s, r in
                var members: [(key: String, value: JSONValue)] = [("requestId", .string(request.requestID)), ("apiKeyId", .string(key.id)),
                                                                  ("recipient", .string(s.recipient))]
                switch r {
                case .queued(let id): members += [("id", .string(id)), ("status", .string("queued"))]
                case .refused(let code, _): members += [("status", .string("refused")), ("error", .string(code))]
                }
                return ("accept", members)
            })
        }
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
        if answer.replayed { headers.append(("Idempotent-Replayed", "true")) }
        return HTTPResponse(status: 202, headers: headers, body: answer.body)
    }

    /// Ids a batch retract names at most (the retract message's own limit, FORMAT.md §5.1).
    static let maxRetractIDs = 100

    /// `POST /v1/notifications/{id}/retract` (body empty or `{}`) and `POST
    /// /v1/notifications/retract` (`{"ids": [1–100 ids]}`): 202 with the result(s) after the commit.
    private func postRetract(_ request: HTTPRequest, single: Bool) throws -> HTTPResponse {
        let key = try authorize(request, scope: "send")
        let idempotency = try Self.idempotency(request, key: key)
        let ids: [String]
        if single {
            ids = [request.pathParameters["id"] ?? ""]
            if !request.body.isEmpty {
                guard case .object(let o) = try request.jsonBody(), o.count == 0 else {
                    throw HTTPError.invalid("this route takes no body (or {})", field: "")
                }
            }
        } else {
            guard case .object(let o) = try request.jsonBody() else { throw HTTPError.invalid("the body must be a JSON object {\"ids\": [...]}", field: "") }
            if let unknown = o.members.first(where: { $0.key != "ids" }) {
                throw HTTPError.invalid("unknown member \(unknown.key.debugDescription)", field: unknown.key)
            }
            guard case .array(let list)? = o["ids"], (1...Self.maxRetractIDs).contains(list.count) else {
                throw HTTPError.invalid("ids must be an array of 1 to \(Self.maxRetractIDs) notification ids", field: "ids")
            }
            ids = try list.enumerated().map { n, v in
                guard case .string(let id) = v, (1...64).contains(id.utf8.count) else {
                    throw HTTPError.invalid("each id must be a notification id the gateway returned (a string of 1 to 64 bytes)", field: "ids[\(n)]")
                }
                return id
            }
        }
        let hash = (try? SHA256Hasher.hash(Array("\(request.method) \(request.path)\n".utf8) + request.body)) ?? []
        let answer = try backend.retract(ids, single: single, idempotency: idempotency, requestSHA256: hash)
        for r in answer.results {
            var members: [(key: String, value: JSONValue)] = [("requestId", .string(request.requestID)), ("apiKeyId", .string(key.id))]
            switch r {
            case .queued(target: let target, recipient: let recipient, retractID: let retractID):
                members += [("notification", .string(target)), ("recipient", .string(recipient)), ("id", .string(retractID)), ("status", .string("queued"))]
            case .cancelled(target: let target, recipient: let recipient):
                members += [("notification", .string(target)), ("recipient", .string(recipient)), ("status", .string("cancelled"))]
            case .failed(target: let target, recipient: let recipient, code: let code, message: _):
                members += [("notification", .string(target)), ("recipient", recipient.map { JSONValue.string($0) } ?? JSONValue.null), ("status", .string("refused")), ("error", .string(code))]
            }
            log.write("retract", members)
        }
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
        if answer.replayed { headers.append(("Idempotent-Replayed", "true")) }
        return HTTPResponse(status: 202, headers: headers, body: answer.body)
    }

    private func getNotification(_ request: HTTPRequest) throws -> HTTPResponse {
        _ = try authorize(request, scope: "send")
        let id = request.pathParameters["id"] ?? ""
        guard let s = try backend.notificationState(id: id) else { throw HTTPError.notFound("no notification \(id.debugDescription)") }
        var m: [(key: String, value: JSONValue)] = [("id", .string(s.id)), ("recipient", .string(s.recipient)), ("status", .string(s.status)),
                                                    ("attempts", .integer(Int64(s.attempts))), ("createdAt", .integer(s.createdAtMs))]
        if let v = s.apnsID { m.append(("apnsId", .string(v))) }
        if let v = s.apnsUniqueID { m.append(("apnsUniqueId", .string(v))) }
        if let v = s.httpStatus { m.append(("httpStatus", .integer(Int64(v)))) }
        if let v = s.reason { m.append(("reason", .string(v))) }
        if let v = s.finishedAtMs { m.append(("finishedAt", .integer(v))) }
        return .json(200, .object(JSONObject(m)))
    }

    /// The members `POST /v1/devices` takes (the iOS reference's upload body).
    static let deviceMembers: Set<String> = ["registration", "apnsDeviceToken", "apnsEnvironment", "pinnedSenderKeyIds"]

    /// Who is registering: an API key with scope `register` (names any recipient with
    /// `?recipient=`), or a registration token (registers its `sub` only).
    private enum Registrant {
        case apiKey(GatewayAPIKeyRecord)
        case token(RegistrationToken)
    }

    /// The credential of a `POST /v1/devices`: a registration token when the bearer has a JWT's
    /// form, else an API key with scope `register`.
    /// - Throws: ``HTTPError`` 401 `invalidRegistrationToken` (refused token, or tokens not
    ///   enabled), 429 per recipient; the API key errors of ``authorize(_:scope:)``.
    private func authorizeRegistration(_ request: HTTPRequest) throws -> Registrant {
        guard let text = request.bearerToken, RegistrationTokenPolicy.looksLikeToken(text) else {
            return .apiKey(try authorize(request, scope: "register"))
        }
        guard let policy = settings.registrationTokens else {
            throw HTTPError(401, "invalidRegistrationToken", "this gateway takes no registration tokens (started without --registration-token-secret)",
                            headers: [("WWW-Authenticate", "Bearer realm=\"push-gateway\", error=\"invalid_token\"")])
        }
        let claims = try policy.verify(text, now: unixTimeSeconds())
        if let wait = limiter.take("token:" + claims.recipient, nowNanoseconds: monotonicNanoseconds()) {
            metrics.countRateLimited()
            throw HTTPError(429, "rateLimited", "registrations of this recipient are over the rate limit; retry after \(wait) s",
                            headers: [("Retry-After", String(wait))])
        }
        return .token(claims)
    }

    private func postDevice(_ request: HTTPRequest) throws -> HTTPResponse {
        let registrant = try authorizeRegistration(request)
        guard case .object(let upload) = try request.jsonBody() else { throw HTTPError.invalid("the body must be a JSON object", field: "") }
        if let unknown = upload.members.first(where: { !Self.deviceMembers.contains($0.key) }) {
            throw HTTPError.invalid("unknown member \(unknown.key.debugDescription)", field: unknown.key)
        }
        guard case .object(let record)? = upload["registration"] else { throw HTTPError.invalid("registration must be an object (the app's record)", field: "registration") }
        guard case .string(let token)? = upload["apnsDeviceToken"], (2...256).contains(token.utf8.count), token.utf8.count % 2 == 0,
              token.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) }) else {
            throw HTTPError.invalid("apnsDeviceToken must be the device token in hex", field: "apnsDeviceToken")
        }
        if let env = upload["apnsEnvironment"] {
            guard case .string(let e) = env, e == "production" || e == "development" else {
                throw HTTPError.invalid("apnsEnvironment must be production or development", field: "apnsEnvironment")
            }
        }
        let recipient: String
        var who: [(key: String, value: JSONValue)] = [("requestId", .string(request.requestID))]
        switch registrant {
        case .apiKey(let key):
            guard let named = request.query["recipient"], !named.isEmpty, named.utf8.count <= 256 else {
                throw HTTPError.invalid("name the installation as ?recipient= (your backend's id for it)", field: "recipient")
            }
            recipient = named
            who.append(("apiKeyId", .string(key.id)))
        case .token(let claims):
            // The token decides the recipient and the app; the upload may only agree with them.
            if let named = request.query["recipient"], named != claims.recipient {
                throw HTTPError(403, "forbidden", "the registration token registers \(claims.recipient.debugDescription), not \(named.debugDescription)")
            }
            guard case .string(let app)? = record["appId"], app == claims.appID else {
                throw HTTPError(403, "forbidden", "the registration's appId is not the token's audience \(claims.appID.debugDescription)")
            }
            recipient = claims.recipient
            who.append(("registrationTokenId", .string(claims.tokenID)))
        }
        let (_, created, tokenReplaced) = try backend.registerDevice(request.body, recipient: recipient)
        log.write("register", who + [("recipient", .string(recipient)), ("deviceToken", .string(GatewayLog.deviceTokenHint(token))), ("created", .bool(created)),
                                     ("tokenReplaced", .bool(tokenReplaced))])
        // 201 registered: a new registration; 200 tokenUpdated: the known record with a device
        // token that replaced the stored one; 200 unchanged: nothing new.
        let status = created ? "registered" : tokenReplaced ? "tokenUpdated" : "unchanged"
        return .json(created ? 201 : 200, .object(JSONObject([("recipient", .string(recipient)), ("status", .string(status))])))
    }

    private func deleteDevice(_ request: HTTPRequest) throws -> HTTPResponse {
        let key = try authorize(request, scope: "register")
        let recipient = request.pathParameters["recipient"] ?? ""
        guard try backend.forgetDevice(appID: request.query["appId"], recipient: recipient) else {
            throw HTTPError.notFound("no installation \(recipient.debugDescription)")
        }
        log.write("forget", [("requestId", .string(request.requestID)), ("apiKeyId", .string(key.id)), ("recipient", .string(recipient))])
        return HTTPResponse(status: 204)
    }

    private func publicRecords(_ request: HTTPRequest, _ read: (any GatewayBackend, String?) throws -> JSONValue?) throws -> HTTPResponse {
        let appID = request.query["appId"]
        if appID?.isEmpty == true { throw HTTPError.invalid("appId must be the app's bundle id (or left out for the gateway's app)", field: "appId") }
        guard let value = try read(backend, appID) else { throw HTTPError.notFound("no records for app \((appID ?? "").debugDescription)") }
        let body = (try? JSONWriter.serialize(value)) ?? []
        let etag = "\"" + Hex.encode(((try? SHA256Hasher.hash(body)) ?? []).prefix(16)) + "\""
        let headers: [(name: String, value: String)] = [("ETag", etag), ("Cache-Control", "public, max-age=60")]
        // RFC 9110 §13.1.2: If-None-Match compares weakly, so W/"x" matches "x" (a proxy or CDN
        // may have weakened the tag it stored).
        if let match = request.header("If-None-Match"), match.split(separator: ",").contains(where: {
            let tag = $0.trimmingCharacters()
            return tag == "*" || tag == etag || tag == "W/" + etag
        }) {
            return HTTPResponse(status: 304, headers: headers)
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")] + headers, body: body)
    }
}

extension Substring {
    /// Without leading and trailing spaces.
    fileprivate func trimmingCharacters() -> String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
