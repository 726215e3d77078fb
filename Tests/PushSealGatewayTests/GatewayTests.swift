import Foundation
import Testing
import PushSealGateway
import PushSealHTTP
import PushSealJSON
import PushSealRegistry
import PushSealServer
import PushSealTestSupport

/// A backend that stores in memory and counts what reached it.
final class MemoryBackend: GatewayBackend, @unchecked Sendable {
    private let lock = NSLock()
    private var queued: [String: NotificationSubmission] = [:]
    private var idempotent: [String: ([UInt8], [UInt8])] = [:]
    private var registered: [String] = []
    var ready = true
    var enqueueCalls: Int { lock.withLock { calls } }
    private var calls = 0
    var stored: Int { lock.withLock { queued.count } }
    var registeredRecipients: [String] { lock.withLock { registered } }

    func enqueue(_ submissions: [NotificationSubmission], idempotency: (scope: String, key: String)?,
                 bodySHA256: [UInt8]) throws -> EnqueueAnswer {
        try lock.withLock {
            calls += 1
            let k = idempotency.map { "\($0.scope):\($0.key)" }
            if let k, let (hash, body) = idempotent[k] {
                guard hash == bodySHA256 else { throw HTTPError(422, "idempotencyKeyReused", "another body") }
                return EnqueueAnswer(results: [], body: body, replayed: true)
            }
            var results: [SubmissionResult] = []
            for s in submissions {
                if s.recipient.hasPrefix("unknown") {
                    results.append(.refused(code: "unknownRecipient", message: "no such recipient"))
                } else {
                    let id = UUID().uuidString.lowercased()
                    queued[id] = s
                    results.append(.queued(id: id))
                }
            }
            let body = try JSONWriter.serialize(NotificationRequest.answer(submissions, results))
            if let k { idempotent[k] = (bodySHA256, body) }
            return EnqueueAnswer(results: results, body: body, replayed: false)
        }
    }

    var retractCalls: Int { lock.withLock { retracts } }
    private var retracts = 0

    func retract(_ ids: [String], single: Bool, idempotency: (scope: String, key: String)?, requestSHA256: [UInt8]) throws -> RetractAnswer {
        try lock.withLock {
            retracts += 1
            let results: [Outbox.RetractResult] = ids.map { id in
                queued[id].map { Outbox.RetractResult.queued(target: id, recipient: $0.recipient, retractID: UUID().uuidString.lowercased()) }
                    ?? Outbox.RetractResult.failed(target: id, recipient: nil, code: "notFound", message: "no notification")
            }
            if single, case .failed(_, _, _, let message)? = results.first { throw HTTPError.notFound(message) }
            return RetractAnswer(results: results, body: Array("{}".utf8), replayed: false)
        }
    }

    func notificationState(id: String) throws -> NotificationState? {
        lock.withLock { queued[id].map { NotificationState(id: id, recipient: $0.recipient, status: "queued", createdAtMs: 1) } }
    }

    func registerDevice(_ body: [UInt8], recipient: String) throws -> (recipient: String, created: Bool, tokenReplaced: Bool) {
        lock.withLock {
            let created = !registered.contains(recipient)
            if created { registered.append(recipient) }
            return (recipient, created, false)
        }
    }

    func forgetDevice(appID: String?, recipient: String) throws -> Bool {
        lock.withLock {
            guard let i = registered.firstIndex(of: recipient) else { return false }
            registered.remove(at: i)
            return true
        }
    }

    func senderKeys(appID: String?) throws -> JSONValue? {
        guard ready else { throw RegistryError(.unavailable, "cannot connect to the registry: connection refused") }
        return (appID ?? "com.example.app") == "com.example.app" ? .array([.object(["format": .string("pushseal-sender-key")])]) : nil
    }

    func revocations(appID: String?) throws -> JSONValue? {
        (appID ?? "com.example.app") == "com.example.app" ? .array([]) : nil
    }

    func readiness() -> Readiness { Readiness(ready: ready, checks: [("database", ready ? "ok" : "unavailable")]) }

    func metricsSnapshot() -> BackendMetrics {
        var m = BackendMetrics()
        m.queueDepth = ready ? stored : nil
        m.sending = ready ? 7 : nil
        m.oldestQueuedAgeSeconds = ready ? 0 : nil
        m.databaseUp = ready
        m.outcomes[.init(outcome: "rejected", reason: "BadDeviceToken")] = 2
        m.outcomes[.init(outcome: "rejected", reason: "Evil\"}\nlabel")] = 1
        m.outcomes[.init(outcome: "expired", reason: "ttlPassed")] = 3
        m.outcomes[.init(outcome: "failed", reason: "mayHaveBeenDelivered")] = 4
        m.outcomes[.init(outcome: "cancelled", reason: "forgotten")] = 5
        return m
    }
}

/// API keys in memory.
final class MemoryKeys: APIKeyLookup, @unchecked Sendable {
    private var byHash: [[UInt8]: GatewayAPIKeyRecord] = [:]
    func add(_ scopes: [String]) -> String {
        let made = APIKey.generate(name: "test", scopes: scopes, now: 1)
        byHash[made.sha256] = made.record
        return made.text
    }
    /// Forgets every key (as if all were revoked).
    func revokeAll() { byHash = [:] }
    private(set) var lookups = 0
    /// While set, every lookup throws it (the registry away).
    var failure: RegistryError?
    func gatewayAPIKey(sha256 keySHA256: [UInt8]) throws -> GatewayAPIKeyRecord? {
        lookups += 1
        if let failure { throw failure }
        return byHash[keySHA256]
    }
}

struct Fixture {
    let backend = MemoryBackend()
    let keys = MemoryKeys()
    let gateway: Gateway
    let send: String
    let register: String
    let admin: String

    init(configure: (inout Gateway.Settings) -> Void = { _ in }) throws {
        send = keys.add(["send"])
        register = keys.add(["register"])
        admin = keys.add(["admin"])
        var settings = Gateway.Settings()
        settings.drainSeconds = 5
        configure(&settings)
        var http = HTTPServer.Configuration()
        http.threadCount = 2
        gateway = try Gateway(http: http, settings: settings, backend: backend, keys: keys, log: GatewayLog(enabled: false))
    }

    var port: UInt16 { gateway.server.port }

    func post(_ path: String, key: String?, json: String, headers: [(String, String)] = []) throws -> RawHTTPResponse {
        var h = headers + [("Content-Type", "application/json")]
        if let key { h.append(("Authorization", "Bearer \(key)")) }
        return try #require(try rawHTTP(port: port, "POST", path, headers: h, body: Array(json.utf8)))
    }

    func get(_ path: String, key: String?, headers: [(String, String)] = []) throws -> RawHTTPResponse {
        var h = headers
        if let key { h.append(("Authorization", "Bearer \(key)")) }
        return try #require(try rawHTTP(port: port, "GET", path, headers: h))
    }
}

let oneNotification = #"{"recipient":"alice","notification":{"title":"Hi","body":"Lunch?"},"ttl":3600,"priority":10}"#

@Suite struct GatewayTests {
    @Test func healthAndReadiness() throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        #expect(try f.get("/healthz", key: nil).status == 200)
        let ready = try f.get("/readyz", key: nil)
        #expect(ready.status == 200)
        #expect(ready.json?["status"] as? String == "ready")
        f.backend.ready = false
        let notReady = try f.get("/readyz", key: nil)
        #expect(notReady.status == 503)
        #expect((notReady.json?["checks"] as? [String: String])?["database"] == "unavailable")
    }

    @Test func sendQueuesAndStatusIsReadable() throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        let r = try f.post("/v1/notifications", key: f.send, json: oneNotification)
        #expect(r.status == 202)
        let items = try #require(r.json?["notifications"] as? [[String: Any]])
        #expect(items.count == 1 && items[0]["status"] as? String == "queued" && items[0]["recipient"] as? String == "alice")
        let id = try #require(items[0]["id"] as? String)
        let s = try f.get("/v1/notifications/\(id)", key: f.send)
        #expect(s.status == 200)
        #expect(s.json?["status"] as? String == "queued")
        #expect(try f.get("/v1/notifications/nope", key: f.send).status == 404)
    }

    @Test func aBatchHasPerItemErrors() throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        let body = #"{"notifications":[{"recipient":"a","notification":{"body":"x"}},{"recipient":"unknown-b","notification":{"body":"y"}}]}"#
        let r = try f.post("/v1/notifications", key: f.send, json: body)
        #expect(r.status == 202)
        let items = try #require(r.json?["notifications"] as? [[String: Any]])
        #expect(items[0]["status"] as? String == "queued")
        #expect((items[1]["error"] as? [String: Any])?["code"] as? String == "unknownRecipient")
        #expect(f.backend.stored == 1)
    }

    @Test func idempotencyKeyReplaysAndRefusesAnotherBody() throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        let first = try f.post("/v1/notifications", key: f.send, json: oneNotification, headers: [("Idempotency-Key", "order-17")])
        let again = try f.post("/v1/notifications", key: f.send, json: oneNotification, headers: [("Idempotency-Key", "order-17")])
        #expect(first.status == 202 && again.status == 202)
        #expect(first.body == again.body)
        #expect(again.header("idempotent-replayed") == "true")
        #expect(f.backend.stored == 1)
        let other = try f.post("/v1/notifications", key: f.send, json: #"{"recipient":"bob","notification":{"body":"x"}}"#, headers: [("Idempotency-Key", "order-17")])
        #expect(other.status == 422)
        #expect(other.errorCode == "idempotencyKeyReused")
        #expect(f.backend.stored == 1)
        let tooLong = try f.post("/v1/notifications", key: f.send, json: oneNotification, headers: [("Idempotency-Key", String(repeating: "k", count: 256))])
        #expect(tooLong.status == 400)
    }

    /// Bad input on the send route: the documented 4xx, and the backend never asked to store.
    @Test(arguments: [
        ("malformed", #"{"recipient":"#, 400, "malformedJSON"),
        ("not an object", #"[1,2]"#, 400, "invalidRequest"),
        ("wrong type", #"{"recipient":7,"notification":{"body":"x"}}"#, 400, "invalidRequest"),
        ("unknown field", #"{"recipient":"a","notification":{"body":"x"},"colour":"red"}"#, 400, "invalidRequest"),
        ("ttl negative", #"{"recipient":"a","notification":{"body":"x"},"ttl":-1}"#, 400, "invalidRequest"),
        ("priority 7", #"{"recipient":"a","notification":{"body":"x"},"priority":7}"#, 400, "invalidRequest"),
        ("collapse too long", #"{"recipient":"a","notification":{"body":"x"},"collapseId":"\#(String(repeating: "c", count: 65))"}"#, 400, "invalidRequest"),
        ("push type", #"{"recipient":"a","notification":{"body":"x"},"pushType":"fax"}"#, 400, "invalidRequest"),
        ("empty batch", #"{"notifications":[]}"#, 400, "invalidRequest"),
        ("batch extra member", #"{"notifications":[{"recipient":"a","notification":{}}],"x":1}"#, 400, "invalidRequest"),
        ("duplicate key", #"{"recipient":"a","recipient":"b","notification":{}}"#, 400, "malformedJSON"),
        // A newcomer's trial: these reached the database and failed the whole batch with a 500.
        ("empty id", #"{"recipient":"a","notification":{"body":"x","id":""}}"#, 400, "invalidRequest"),
        ("id over 256 bytes", #"{"recipient":"a","notification":{"body":"x","id":"\#(String(repeating: "i", count: 257))"}}"#, 400, "invalidRequest"),
        ("id not a string", #"{"recipient":"a","notification":{"body":"x","id":7}}"#, 400, "invalidRequest"),
        ("a retract on the send route", #"{"recipient":"a","notification":{"kind":"retract","ids":["m1"]}}"#, 400, "invalidRequest"),
        ("ids on the send route", #"{"recipient":"a","notification":{"body":"x","ids":["m1"]}}"#, 400, "invalidRequest"),
        ("recipient with a slash", #"{"recipient":"a/b","notification":{"body":"x"}}"#, 400, "invalidRequest"),
        ("recipient with a NUL", #"{"recipient":"a\u0000b","notification":{"body":"x"}}"#, 400, "invalidRequest"),
    ] as [(String, String, Int, String)])
    func badSendBodies(_ name: String, _ body: String, _ status: Int, _ code: String) throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        let r = try f.post("/v1/notifications", key: f.send, json: body)
        #expect(r.status == status, Comment(rawValue: name))
        #expect(r.errorCode == code, Comment(rawValue: name))
        #expect(f.backend.enqueueCalls == 0, Comment(rawValue: name))
    }

    @Test func aBatchOver1000IsRefused() throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        let item = #"{"recipient":"a","notification":{"body":"x"}}"#
        let r = try f.post("/v1/notifications", key: f.send, json: #"{"notifications":["# + Array(repeating: item, count: 1001).joined(separator: ",") + "]}")
        #expect(r.status == 400)
        #expect(f.backend.enqueueCalls == 0)
    }

    @Test func keysAndScopesAreChecked() throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        let none = try f.post("/v1/notifications", key: nil, json: oneNotification)
        #expect(none.status == 401 && none.errorCode == "unauthorized")
        #expect(none.header("www-authenticate")?.hasPrefix("Bearer") == true)
        let wrong = try f.post("/v1/notifications", key: "psk_0000000000000000_" + String(repeating: "0", count: 64), json: oneNotification)
        #expect(wrong.status == 401)
        let garbage = try f.post("/v1/notifications", key: "hunter2", json: oneNotification)
        #expect(garbage.status == 401)
        let scope = try f.post("/v1/notifications", key: f.register, json: oneNotification)
        #expect(scope.status == 403 && scope.errorCode == "forbidden")
        #expect(try f.get("/v1/notifications/x", key: f.register).status == 403)
        #expect(try f.post("/v1/devices?recipient=r1", key: f.send, json: #"{"registration":{},"apnsDeviceToken":"ab","apnsEnvironment":"development"}"#).status == 403)
        #expect(f.backend.enqueueCalls == 0)
        #expect(f.backend.registeredRecipients.isEmpty)
    }

    @Test("the retract routes: scope send, a strict batch body (400 before the backend), 404 for an unknown id, the route below /v1/notifications/{id}")
    func retractRoutesCheckScopeAndBody() throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        let sent = try f.post("/v1/notifications", key: f.send, json: oneNotification)
        let id = try #require((sent.json?["notifications"] as? [[String: Any]])?.first?["id"] as? String)
        #expect(try f.post("/v1/notifications/\(id)/retract", key: f.register, json: "", headers: [("Content-Length", "0")]).status == 403)
        #expect(try f.post("/v1/notifications/retract", key: f.register, json: #"{"ids":["\#(id)"]}"#).status == 403)
        #expect(try f.post("/v1/notifications/retract", key: nil, json: #"{"ids":["\#(id)"]}"#).status == 401)
        let tooMany = "{\"ids\":[" + Array(repeating: "\"\(id)\"", count: 101).joined(separator: ",") + "]}"
        for bad in [#"{"ids":[]}"#, #"{"ids":"x"}"#, #"{"ids":[7]}"#, #"{"ids":[""]}"#, #"{"ids":["a"],"recipient":"b"}"#, #"{}"#, "[1]", tooMany] {
            let r = try f.post("/v1/notifications/retract", key: f.send, json: bad)
            #expect(r.status == 400 && r.errorCode == "invalidRequest", "\(bad.prefix(40)): \(r.status) \(r.text)")
        }
        #expect(try f.post("/v1/notifications/\(id)/retract", key: f.send, json: #"{"ids":[]}"#).status == 400, "the one-id route takes no body")
        #expect(f.backend.retractCalls == 0, "nothing reached the backend")
        let one = try f.post("/v1/notifications/\(id)/retract", key: f.send, json: "", headers: [("Content-Length", "0")])
        #expect(one.status == 202, "\(one.text)")
        #expect(try f.post("/v1/notifications/nope/retract", key: f.send, json: "{}").status == 404)
        let batch = try f.post("/v1/notifications/retract", key: f.send, json: #"{"ids":["\#(id)","nope"]}"#)
        #expect(batch.status == 202)
        #expect(f.backend.retractCalls == 3)
        #expect(try f.get("/v1/notifications/retract", key: f.send).status == 404, "GET reads the notification named retract: none")
    }

    @Test func rateLimitAnswers429WithRetryAfter() throws {
        let f = try Fixture { $0.ratePerSecond = 1; $0.rateBurst = 2 }
        defer { f.gateway.stop() }
        #expect(try f.post("/v1/notifications", key: f.send, json: oneNotification).status == 202)
        #expect(try f.post("/v1/notifications", key: f.send, json: oneNotification).status == 202)
        let limited = try f.post("/v1/notifications", key: f.send, json: oneNotification)
        #expect(limited.status == 429)
        #expect(limited.errorCode == "rateLimited")
        #expect(Int(limited.header("retry-after") ?? "") ?? 0 >= 1)
        #expect(f.backend.stored == 2)
        // Another key has its own bucket.
        #expect(try f.get("/v1/notifications/x", key: f.keys.add(["send"])).status == 404)
    }

    @Test func devicesRegisterAndForget() throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        let upload = #"{"registration":{"format":"pushseal-device-key"},"apnsDeviceToken":"ab01","apnsEnvironment":"development"}"#
        #expect(try f.post("/v1/devices?recipient=phone-1", key: f.register, json: upload).status == 201)
        #expect(try f.post("/v1/devices?recipient=phone-1", key: f.register, json: upload).status == 200)
        #expect(try f.post("/v1/devices", key: f.register, json: upload).status == 400)
        let bad = try f.post("/v1/devices?recipient=p2", key: f.register, json: #"{"registration":{},"apnsDeviceToken":"xyz","apnsEnvironment":"development"}"#)
        #expect(bad.status == 400)
        let unknown = try f.post("/v1/devices?recipient=p2", key: f.register, json: #"{"registration":{},"apnsDeviceToken":"ab","extra":1}"#)
        #expect(unknown.status == 400)
        #expect(f.backend.registeredRecipients == ["phone-1"])
        let del = try #require(try rawHTTP(port: f.port, "DELETE", "/v1/devices/phone-1", headers: [("Authorization", "Bearer \(f.register)")]))
        #expect(del.status == 204)
        let again = try #require(try rawHTTP(port: f.port, "DELETE", "/v1/devices/phone-1", headers: [("Authorization", "Bearer \(f.register)")]))
        #expect(again.status == 404)
    }

    @Test func publicRecordsHaveETags() throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        let r = try f.get("/v1/sender-keys?appId=com.example.app", key: nil)
        #expect(r.status == 200)
        let etag = try #require(r.header("etag"))
        #expect(r.header("cache-control")?.contains("max-age") == true)
        #expect(try f.get("/v1/sender-keys?appId=com.example.app", key: nil, headers: [("If-None-Match", etag)]).status == 304)
        #expect(try f.get("/v1/sender-keys?appId=com.example.app", key: nil, headers: [("If-None-Match", "\"other\", W/\(etag)")]).status == 304,
                "weak comparison: a weakened tag in a list matches")
        #expect(try f.get("/v1/sender-keys?appId=com.example.app", key: nil, headers: [("If-None-Match", "W/\"other\"")]).status == 200)
        #expect(try f.get("/v1/sender-keys?appId=other", key: nil).status == 404)
        #expect(try f.get("/v1/revocations", key: nil).status == 200)
        #expect(try f.get("/v1/revocations?appId=", key: nil).status == 400)
        #expect(try f.get("/v1/sender-keys", key: nil).text.hasPrefix("[{"))
        #expect(try f.get("/v1/revocations?appId=com.example.app", key: nil).status == 200)
    }

    @Test func metricsAreTextWithEscapedKnownLabels() throws {
        let f = try Fixture { $0.metricsNeedKey = true }
        defer { f.gateway.stop() }
        _ = try f.get("/healthz", key: nil)
        #expect(try f.get("/metrics", key: nil).status == 401)
        #expect(try f.get("/metrics", key: f.send).status == 403)
        let m = try f.get("/metrics", key: f.admin)
        #expect(m.status == 200)
        #expect(m.header("content-type")?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(m.text.contains(#"pushseal_gateway_requests_total{route="GET /healthz",status="200"} 1"#))
        #expect(m.text.contains(#"pushseal_gateway_notifications_total{outcome="rejected",reason="BadDeviceToken"} 2"#))
        #expect(m.text.contains(#"pushseal_gateway_notifications_total{outcome="rejected",reason="other"} 1"#))
        #expect(m.text.contains(#"pushseal_gateway_notifications_total{outcome="expired",reason="ttlPassed"} 3"#), "the gateway's own reasons keep their name")
        #expect(m.text.contains(#"pushseal_gateway_notifications_total{outcome="failed",reason="mayHaveBeenDelivered"} 4"#), "the reaper's reason keeps its name")
        #expect(m.text.contains(#"pushseal_gateway_notifications_total{outcome="cancelled",reason="forgotten"} 5"#))
        #expect(!m.text.contains("Evil"))
        #expect(m.text.contains("pushseal_gateway_seal_duration_seconds_bucket{le=\"+Inf\"} 0"))
        #expect(GatewayMetrics.escape("a\"b\\c\nd") == #"a\"b\\c\nd"#)
    }

    /// An operator's trial: the queue gauges read 0 while the database was down (a backlog alert
    /// saw "all clear"); now they are left out and pushseal_gateway_database_up says 0.
    @Test func theQueueGaugesAreLeftOutWhileTheDatabaseIsDown() throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        let up = try f.get("/metrics", key: nil).text
        #expect(up.contains("pushseal_gateway_database_up 1\n") && up.contains("\npushseal_gateway_queue_depth_notifications "))
        #expect(up.contains("\npushseal_gateway_sending_notifications 7\n"), "rows being sent are shown apart from the queue (trial of 2026-12-04)")
        f.backend.ready = false
        let down = try f.get("/metrics", key: nil).text
        #expect(down.contains("pushseal_gateway_database_up 0\n"), "\(down)")
        let samples = down.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(!samples.contains { $0.hasPrefix("pushseal_gateway_queue_depth_notifications ") || $0.hasPrefix("pushseal_gateway_oldest_queued_age_seconds ")
                                    || $0.hasPrefix("pushseal_gateway_sending_notifications ") },
                "no queue sample while the database is down")
        #expect(down.contains("# TYPE pushseal_gateway_queue_depth_notifications gauge"))
    }

    /// A newcomer's trial: GET /v1/sender-keys answered 500 while the database was down.
    @Test func aRouteAnswers503WhenTheDatabaseIsDown() throws {
        let f = try Fixture()
        defer { f.gateway.stop() }
        f.backend.ready = false
        let r = try f.get("/v1/sender-keys?appId=com.example.app", key: nil)
        #expect(r.status == 503 && r.errorCode == "unavailable" && r.header("retry-after") != nil, "\(r.status) \(r.text)")
        #expect(!r.text.contains("connection refused"), "libpq's text stays in the log")
        f.backend.ready = true
        #expect(try f.get("/v1/sender-keys?appId=com.example.app", key: nil).status == 200)
    }

    @Test func readyzIs503WhileDraining() throws {
        let f = try Fixture()
        let c = try RawHTTPConnection(port: f.port)
        c.send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(c.readResponse()?.status == 200)
        f.gateway.server.stopAccepting()
        c.send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(c.readResponse()?.status == 503)
        f.gateway.stop()
    }

    /// A recipient name may hold characters that end a line for some tools (U+0085, U+2028,
    /// U+2029) or reorder what a terminal shows (bidirectional controls): the log writes them as
    /// `\uXXXX`, so a line stays one line on screen and reads back as the same JSON; other
    /// characters (é, €, emoji) stay as they are.
    @Test func logLinesShowLineAndBidiCharactersAsEscapes() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let log = GatewayLog(fd: fds[1])
        let sneaky = "a\u{2028}b\u{2029}c\u{85}d\u{202E}e\u{2066}f\u{7F}g\u{9F}h"
        let plain = "é€😀\u{2027}\u{202F}\u{2070}"
        log.write("request", [("recipient", .string(sneaky)), ("other", .string(plain))])
        close(fds[1])
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fds[0], &buffer, buffer.count)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        #expect(bytes.last == 10)
        #expect(bytes.filter { $0 == 10 }.count == 1)
        let text = String(decoding: bytes, as: UTF8.self)
        for escape in ["\\u2028", "\\u2029", "\\u0085", "\\u202e", "\\u2066", "\\u007f", "\\u009f"] { #expect(text.contains(escape), "\(escape)") }
        for raw: Unicode.Scalar in ["\u{2028}", "\u{2029}", "\u{85}", "\u{202E}", "\u{2066}", "\u{7F}", "\u{9F}"] { #expect(!text.unicodeScalars.contains(raw)) }
        #expect(text.contains(plain))
        let object = try JSONReader.parse(Array(bytes.dropLast())).objectValue
        #expect(object?["recipient"]?.stringValue == sneaky)
        #expect(object?["other"]?.stringValue == plain)
    }

    @Test func apiKeyTextRoundTrips() {
        let made = APIKey.generate(name: "n", scopes: ["send"], now: 5)
        #expect(made.text.hasPrefix("psk_\(made.record.id)_"))
        #expect(made.text.utf8.count == 4 + 16 + 1 + 64)
        #expect(APIKey.sha256(of: made.text) == made.sha256)
        #expect(APIKey.sha256(of: made.text + "0") == nil)
        #expect(APIKey.generate(name: "n", scopes: ["send"], now: 5).text != made.text)
    }

    @Test("a key must name its own id: psk_<another key's id>_<secret> is refused; made-up keys never evict the keys in use")
    func apiKeyIDAndCache() throws {
        let keys = MemoryKeys()
        let a = keys.add(["send"]), b = keys.add(["send"])
        let authenticator = APIKeyAuthenticator(lookup: keys, cacheSeconds: 3600)
        let aRecord = try #require(try authenticator.record(for: a))
        let bRecord = try #require(try authenticator.record(for: b))
        #expect(aRecord.id != bRecord.id)
        let bSecret = b.split(separator: "_")[2]
        #expect(try authenticator.record(for: "psk_\(aRecord.id)_\(bSecret)") == nil, "A's id with B's secret")
        #expect(try authenticator.record(for: b)?.id == bRecord.id, "B itself still works")
        // A flood of made-up keys (more than a cache holds) looks each up once and leaves A and B cached.
        let before = keys.lookups
        for _ in 0...APIKeyAuthenticator.maxCachedEntries {
            _ = try authenticator.record(for: APIKey.generate(name: "x", scopes: [], now: 1).text)
        }
        #expect(keys.lookups == before + APIKeyAuthenticator.maxCachedEntries + 1)
        let afterFlood = keys.lookups
        #expect(try authenticator.record(for: a)?.id == aRecord.id && authenticator.record(for: b)?.id == bRecord.id)
        #expect(keys.lookups == afterFlood, "the keys in use were answered from the cache")
    }

    @Test("the rate limiter drops full buckets once it holds many (a bucket per registration-token recipient grew for good), and answers as before")
    func rateLimiterPrunesFullBuckets() {
        let limiter = RateLimiter(ratePerSecond: 1, burst: 2)
        let t0: UInt64 = 1_000_000_000
        #expect(limiter.take("busy", nowNanoseconds: t0) == nil && limiter.take("busy", nowNanoseconds: t0) == nil)
        for i in 0..<RateLimiter.pruneThreshold { _ = limiter.take("token:r\(i)", nowNanoseconds: t0) }
        #expect(limiter.bucketCount == RateLimiter.pruneThreshold + 1)
        // 1.5 s later every one-token bucket is full again, "busy" (emptied) is not.
        let later = t0 + 1_500_000_000
        #expect(limiter.take("new", nowNanoseconds: later) == nil)
        #expect(limiter.bucketCount == 2, "only the busy bucket and the new one are kept")
        #expect(limiter.take("busy", nowNanoseconds: later) == nil && limiter.take("busy", nowNanoseconds: later) == 1, "the busy key kept its state")
        // A clock reading older than the bucket's (taken before another thread's) refills nothing.
        #expect(limiter.take("busy", nowNanoseconds: later - 1) == 1, "an older reading does not refill the bucket to full")
    }

    @Test("while the registry is away, an admin key found at its last lookup is still accepted; not for other scopes, nor once its last lookup found it revoked or failing its tag, nor a key never found")
    func apiKeysThroughAnOutage() throws {
        let keys = MemoryKeys()
        let known = keys.add(["admin"]), unseen = keys.add(["admin"])
        let authenticator = APIKeyAuthenticator(lookup: keys, cacheSeconds: 0)
        let record = try #require(try authenticator.record(for: known))
        keys.failure = RegistryError(.unavailable, "the database is away")
        #expect(try authenticator.record(for: known, allowStale: true)?.id == record.id, "found before: accepted through the outage")
        #expect(throws: RegistryError.self, "not without allowStale") { try authenticator.record(for: known) }
        #expect(throws: RegistryError.self, "never found: the outage is the answer") { try authenticator.record(for: unseen, allowStale: true) }
        let otherSecret = unseen.split(separator: "_")[2]
        #expect(throws: RegistryError.self, "its id with another secret") { try authenticator.record(for: "psk_\(record.id)_\(otherSecret)", allowStale: true) }
        // Revoked (the lookup finds nothing), then the registry goes away: never accepted again.
        keys.failure = nil
        keys.revokeAll()
        #expect(try authenticator.record(for: known, allowStale: true) == nil)
        keys.failure = RegistryError(.unavailable, "the database is away")
        #expect(throws: RegistryError.self, "revoked before the outage") { try authenticator.record(for: known, allowStale: true) }
        // A row that fails its tag at the last lookup: the same.
        keys.failure = nil
        let tampered = keys.add(["admin"])
        #expect(try authenticator.record(for: tampered) != nil)
        keys.failure = RegistryError(.corrupt, "the row fails its tag")
        #expect(throws: RegistryError.self) { try authenticator.record(for: tampered, allowStale: true) }
        keys.failure = RegistryError(.unavailable, "the database is away")
        #expect(throws: RegistryError.self, "failed its tag before the outage") { try authenticator.record(for: tampered, allowStale: true) }
    }
}
