import Foundation
import Testing
import PushSealGateway
import PushSealHTTP
import PushSealRegistry
import PushSealServer
import PushSealSystem
import PushSealTestSupport

/// Issue 29 through the gateway: `POST /v1/notifications/{id}/retract` and
/// `POST /v1/notifications/retract` on a real PostgreSQL outbox, its worker and the native mock
/// APNs, with an emulated phone (push-keys device generate, push-open) as the device.
@Suite(.serialized, .enabled(if: MockAPNs.nativeAvailable, "the native mock APNs is not built (scripts/build-mock-apns.sh)"))
struct GatewayRetractTests {
    static let appID = MockAPNs.topic

    /// The phone's identity for push-keys and push-open (relative to the test directory).
    static let phone = ["--keychain", "phone", "--access-group", "T.shared", "--app-group", "group.example", "--app-id", appID]

    static func json(_ r: ToolResult) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: r.stdoutBytes) as? [String: Any]) ?? [:]
    }

    /// Polls `GET /v1/notifications/{id}` until its status is `want` (bounded: 30 s).
    static func waitFor(_ want: String, id: String, port: UInt16, auth: (String, String)) throws -> [String: Any] {
        let start = monotonicNanoseconds()
        while true {
            let s = try #require(try rawHTTP(port: port, "GET", "/v1/notifications/\(id)", headers: [auth]))
            let o = s.json ?? [:]
            if o["status"] as? String == want || Double(monotonicNanoseconds() - start) / 1e9 > 30 { return o }
            pauseThread(seconds: 0.02)
        }
    }

    /// The sealed payload the mock accepted for notification `id`: the mock keeps no bodies, so
    /// the bytes come from the outbox row whose apns-id it recorded (as make demo-gateway does).
    static func deliveredPayload(id: String, mock: MockAPNs, server: PostgresServer, cs: String) throws -> (payload: String, record: [String: Any]) {
        let apnsID = try server.psql(cs, "SELECT apns_id FROM pushseal_outbox WHERE id = '\(id)'").trimmingCharacters(in: .whitespacesAndNewlines)
        let record = try #require(try mock.answered().first { ($0["apnsId"] as? String)?.lowercased() == apnsID && $0["status"] as? Int == 200 },
                                  "the mock accepted no request with apns-id \(apnsID)")
        let payload = try server.psql(cs, "SELECT convert_from(payload, 'UTF8') FROM pushseal_outbox WHERE apns_id = '\(apnsID)'")
        return (payload.trimmingCharacters(in: .whitespacesAndNewlines), record)
    }

    @Test("""
    three notifications delivered to an emulated phone, two retracted through the gateway: the retract is a sealed background \
    push, push-open --as-app removes them, one stays; a queued notification is cancelled instead; 404, 409, 403, 400 store nothing
    """)
    func retractThroughTheGateway() throws {
        let pushKeys = try #require(builtTool("push-keys"), "push-keys is not built")
        let pushOpen = try #require(builtTool("push-open"), "push-open is not built")
        let dir = try TemporaryDirectory("gateway-retract")
        defer { dir.remove() }
        func tool(_ t: URL, _ args: [String], stdin: String = "") throws -> ToolResult {
            try runTool(t, args, cwd: dir.url, stdin: Data(stdin.utf8))
        }

        let (server, cs, registry, mock, outbox, worker) = try GatewayEndToEndTests.stack()
        defer { mock.stop() }
        var workerStarted = false
        defer { if workerStarted { worker.drain() } }
        let sender = APIKey.generate(name: "backend", scopes: ["send", "register"], now: unixTimeSeconds())
        try registry.insertGatewayAPIKey(sender.record, keySHA256: sender.sha256)
        let registerOnly = APIKey.generate(name: "app-upload", scopes: ["register"], now: unixTimeSeconds())
        try registry.insertGatewayAPIKey(registerOnly.record, keySHA256: registerOnly.sha256)
        var http = HTTPServer.Configuration()
        http.threadCount = 2
        let gateway = try Gateway(http: http, backend: try ServerBackend(outbox: outbox, worker: worker), keys: registry, log: GatewayLog(enabled: false))
        defer { gateway.stop() }
        let port = gateway.server.port
        let auth = ("Authorization", "Bearer \(sender.text)")
        let jsonType = ("Content-Type", "application/json")
        func post(_ path: String, _ body: String, key: (String, String) = auth, extra: [(String, String)] = []) throws -> RawHTTPResponse {
            // No body: `Content-Length: 0` (the gateway answers a POST without one 411).
            try #require(try rawHTTP(port: port, "POST", path, headers: [key, jsonType] + extra + (body.isEmpty ? [("Content-Length", "0")] : []),
                                     body: Array(body.utf8)))
        }
        func count(_ sql: String) throws -> Int { Int(try server.psql(cs, sql).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 }

        // The phone: its device key made as the app does, uploaded through POST /v1/devices.
        #expect(try tool(pushKeys, ["keychain", "init", "--keychain", "phone"]).status == 0)
        let generated = try tool(pushKeys, ["device", "generate"] + Self.phone)
        #expect(generated.status == 0, "\(generated.stderr)")
        let token = String(repeating: "7c", count: 32)
        let upload = #"{"registration":\#(generated.stdout.trimmingCharacters(in: .whitespacesAndNewlines)),"apnsDeviceToken":"\#(token)","apnsEnvironment":"development"}"#
        #expect(try post("/v1/devices?recipient=phone-1", upload).status == 201)

        // Four notifications; the worker is not running yet, so all four are queued. B carries the caller's own id.
        let sent = try post("/v1/notifications", #"""
            {"notifications":[{"recipient":"phone-1","notification":{"title":"Alpha-Quince","body":"one"}},
            {"recipient":"phone-1","notification":{"title":"Bravo-Quince","body":"two","id":"chat-7f3a"}},
            {"recipient":"phone-1","notification":{"title":"Charlie-Quince","body":"three"}},
            {"recipient":"phone-1","notification":{"title":"Delta-Quince","body":"four"}}]}
            """#)
        #expect(sent.status == 202, "\(sent.text)")
        let ids = try #require(sent.json?["notifications"] as? [[String: Any]]).compactMap { $0["id"] as? String }
        try #require(ids.count == 4)
        let (a, b, c, d) = (ids[0], ids[1], ids[2], ids[3])

        // D is retracted while still queued: cancelled, never sent, and no retract is made for it.
        let cancelled = try post("/v1/notifications/\(d)/retract", "")
        #expect(cancelled.status == 202, "\(cancelled.text)")
        #expect(cancelled.json?["status"] as? String == "cancelled" && cancelled.json?["notification"] as? String == d && cancelled.json?["id"] == nil)
        let dState = try #require(try rawHTTP(port: port, "GET", "/v1/notifications/\(d)", headers: [auth]))
        #expect(dState.json?["status"] as? String == "cancelled" && dState.json?["reason"] as? String == "retracted", "\(dState.text)")
        #expect(try count("SELECT count(*) FROM pushseal_outbox WHERE kind = 'retract'") == 0)

        try worker.start()
        workerStarted = true
        for id in [a, b, c] { #expect(try Self.waitFor("accepted", id: id, port: port, auth: auth)["status"] as? String == "accepted") }

        // Deliver the three into the phone's notification center (push-open: the emulated extension).
        for (n, id) in [a, b, c].enumerated() {
            let (payload, _) = try Self.deliveredPayload(id: id, mock: mock, server: server, cs: cs)
            let opened = try tool(pushOpen, Self.phone + ["--request-id", "req-\(n + 1)", "-"], stdin: payload)
            #expect(opened.status == 0 && Self.json(opened)["outcome"] as? String == "decrypted", "\(opened.stdout) \(opened.stderr)")
        }
        func delivered() throws -> [String] {
            let r = try tool(pushOpen, Self.phone + ["--delivered"])
            #expect(r.status == 0, "\(r.stderr)")
            return (Self.json(r)["delivered"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        }
        // The device-visible id is the gateway's id, or the caller's own (B).
        #expect(try delivered() == [a, "chat-7f3a", c])
        #expect(try count("SELECT count(*) FROM pushseal_outbox WHERE id = '\(d)' AND status = 'cancelled'") == 1)
        #expect(try mock.answered().count == 3, "the cancelled notification was never sent")

        // Refusals store nothing.
        let rowsBefore = try count("SELECT count(*) FROM pushseal_outbox")
        let unknown = "00000000-0000-4000-8000-000000000000"
        let notFound = try post("/v1/notifications/\(unknown)/retract", "")
        #expect(notFound.status == 404 && notFound.json?["error"] != nil, "\(notFound.text)")
        #expect(try post("/v1/notifications/not-a-uuid/retract", "").status == 404)
        let forbidden = try post("/v1/notifications/\(a)/retract", "", key: ("Authorization", "Bearer \(registerOnly.text)"))
        #expect(forbidden.status == 403 && (forbidden.json?["error"] as? [String: Any])?["code"] as? String == "forbidden")
        #expect(try post("/v1/notifications/retract", #"{"ids":["\#(a)"]}"#, key: ("Authorization", "Bearer \(registerOnly.text)")).status == 403)
        for bad in [#"{"ids":[]}"#, #"{"ids":"\#(a)"}"#, #"{"ids":[1]}"#, #"{"ids":["\#(a)"],"ttl":5}"#, #"[]"#, "{",
                    #"{"ids":[\#((0...100).map { _ in "\"\(a)\"" }.joined(separator: ","))]}"#] {
            let r = try post("/v1/notifications/retract", bad, extra: [("Idempotency-Key", "bad-body")])
            #expect(r.status == 400 && r.json?["error"] != nil, "\(bad): \(r.status) \(r.text)")
        }
        #expect(try count("SELECT count(*) FROM pushseal_outbox") == rowsBefore)
        #expect(try count("SELECT count(*) FROM pushseal_outbox WHERE status = 'cancelled'") == 1, "A is still accepted")
        #expect(try count("SELECT count(*) FROM pushseal_idempotency") == 0)

        // Retract A and B (one recipient: one retract message) and an unknown id (its own error).
        let body = #"{"ids":["\#(a)","\#(b)","\#(unknown)"]}"#
        let retracted = try post("/v1/notifications/retract", body, extra: [("Idempotency-Key", "retract-1")])
        #expect(retracted.status == 202, "\(retracted.text)")
        let items = try #require(retracted.json?["notifications"] as? [[String: Any]])
        try #require(items.count == 3)
        #expect(items[0]["status"] as? String == "queued" && items[1]["status"] as? String == "queued")
        let retractID = try #require(items[0]["id"] as? String)
        #expect(items[1]["id"] as? String == retractID, "one retract per recipient")
        #expect((items[2]["error"] as? [String: Any])?["code"] as? String == "notFound")
        let replay = try post("/v1/notifications/retract", body, extra: [("Idempotency-Key", "retract-1")])
        #expect(replay.status == 202 && replay.body == retracted.body && replay.header("idempotent-replayed") == "true")
        #expect(try post("/v1/notifications/retract", #"{"ids":["\#(a)"]}"#, extra: [("Idempotency-Key", "retract-1")]).status == 422)
        #expect(try count("SELECT count(*) FROM pushseal_outbox WHERE kind = 'retract'") == 1, "the replay enqueued nothing")
        let itself = try post("/v1/notifications/\(retractID)/retract", "")
        #expect(itself.status == 409 && (itself.json?["error"] as? [String: Any])?["code"] as? String == "notRetractable", "\(itself.text)")

        // The retract is a background push: priority 5, no collapse id, aps {"content-available":1}; its ids are sealed.
        #expect(try Self.waitFor("accepted", id: retractID, port: port, auth: auth)["status"] as? String == "accepted")
        let (retractPayload, record) = try Self.deliveredPayload(id: retractID, mock: mock, server: server, cs: cs)
        #expect(record["pushType"] as? String == "background" && record["priority"] as? String == "5", "\(record)")
        #expect(record["collapseId"] == nil || record["collapseId"] is NSNull, "\(record)")
        let payloadObject = try #require(try JSONSerialization.jsonObject(with: Data(retractPayload.utf8)) as? [String: Any])
        #expect((payloadObject["aps"] as? [String: Any])?.keys.sorted() == ["content-available"])
        #expect(!retractPayload.contains(a) && !retractPayload.contains("chat-7f3a"))

        // iOS hands it to the app, never the extension; the app removes A and B and shows nothing.
        let app = try tool(pushOpen, Self.phone + ["--as-app", "-"], stdin: retractPayload)
        #expect(app.status == 0, "\(app.stdout) \(app.stderr)")
        #expect(Self.json(app)["outcome"] as? String == "retracted" && Self.json(app)["shown"] as? Bool == false)
        #expect((Self.json(app)["removed"] as? [[String: Any]])?.compactMap { $0["identifier"] as? String } == ["req-1", "req-2"])
        #expect(try delivered() == [c])

        // The database never reads a notification: no title, and not the caller's own id (sealed under the KEK).
        let dump = try server.run("pg_dump", ["-d", cs, "--inserts"], asServerUser: false)
        for word in ["Quince", "chat-7f3a"] { #expect(!dump.contains(word), "\(word) is in the dump") }

        let metrics = try #require(try rawHTTP(port: port, "GET", "/metrics"))
        #expect(metrics.text.contains(#"pushseal_gateway_retracts_total{result="queued"} 2"#), "\(metrics.text)")
        #expect(metrics.text.contains(#"pushseal_gateway_retracts_total{result="cancelled"} 1"#))
        #expect(metrics.text.contains(#"pushseal_gateway_retracts_total{result="refused"} 1"#))
        #expect(metrics.text.contains(#"pushseal_gateway_notifications_total{outcome="cancelled",reason="retracted"} 1"#))
    }
}
