import Foundation
import Testing
import PushSealSystem
import PushSealTestSupport

/// `push-gateway serve` as a process with its worker, on a real PostgreSQL and the native mock
/// APNs: what it logs per final outcome and what `/metrics` shows of its APNs connections.
@Suite(.serialized, .enabled(if: MockAPNs.nativeAvailable, "the native mock APNs is not built (scripts/build-mock-apns.sh)"))
struct GatewayServeTests {
    @Test("one JSON outcome line per final status on stderr: ids, apnsId, recipient, status, reason, attempts; no text, no full device token")
    func outcomeLinesOnStandardError() throws {
        let good = String(repeating: "a1", count: 32), bad = String(repeating: "b2", count: 32), gone = String(repeating: "c3", count: 32)
        let fleet = try GatewayFleet(server: try PostgresServer.sharedServer(),
                                     mockConfig: ["badTokens": [bad], "unregistered": [gone: Double(unixTimeMilliseconds() + 60_000)]])
        let gw = try fleet.start()
        defer { gw.stop() }
        for (r, t) in [("phone-good", good), ("phone-bad", bad), ("phone-gone", gone)] {
            try fleet.register(port: gw.port, recipient: r, deviceToken: t)
        }
        let items = ["phone-good", "phone-good", "phone-bad", "phone-gone"].map {
            #"{"recipient":"\#($0)","notification":{"title":"Harpsichord-Lantern","body":"Meridian-Walrus"}}"#
        }
        let ids = try fleet.send(port: gw.port, #"{"notifications":[\#(items.joined(separator: ","))]}"#)
        #expect(ids.count == 4)
        #expect(waitUntil(seconds: 30) { Set(gw.outcomes.compactMap { $0["id"] as? String }).isSuperset(of: ids) }, "\(gw.log.contents.suffix(2000))")

        let lines = gw.outcomes
        for (n, id) in ids.enumerated() {
            let mine = lines.filter { $0["id"] as? String == id }
            #expect(mine.count == 1, "exactly one outcome line for \(id)")
            guard let line = mine.first else { continue }
            let state = try #require(try fleet.status(port: gw.port, id))
            #expect(line["status"] as? String == state["status"] as? String)
            #expect(line["apnsId"] as? String == state["apnsId"] as? String && (line["apnsId"] as? String)?.isEmpty == false)
            #expect(line["attempts"] as? Int == state["attempts"] as? Int)
            let expected = n < 2 ? ("phone-good", "accepted") : n == 2 ? ("phone-bad", "rejected") : ("phone-gone", "unregistered")
            #expect(line["recipient"] as? String == expected.0)
            #expect(line["status"] as? String == expected.1, "\(line)")
            if n == 2 { #expect(line["reason"] as? String == "BadDeviceToken" && line["httpStatus"] as? Int == 400) }
            if n == 3 { #expect(line["reason"] as? String == "Unregistered" && line["httpStatus"] as? Int == 410) }
        }
        #expect(gw.stop() == 0)
        let text = gw.log.contents
        for word in ["Harpsichord", "Lantern", "Meridian", "Walrus", good, bad, gone, fleet.apiKey] {
            #expect(!text.contains(word), "the log holds \(word.prefix(12))…")
        }
    }

    /// The `sender_key_id` of the payload the outbox holds for notification `id`.
    static func senderKeyID(_ fleet: GatewayFleet, _ server: PostgresServer, _ id: String) throws -> String? {
        let text = try server.psql(fleet.cs, "SELECT convert_from(payload, 'UTF8') FROM pushseal_outbox WHERE id = '\(id)'")
        let payload = try JSONSerialization.jsonObject(with: Data(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)) as? [String: Any]
        return payload?["sender_key_id"] as? String
    }

    @Test("a running gateway follows push-keys sender add + promote --force without a restart: accepted after the switch, sealed with the new key")
    func followsSenderKeyPromotion() throws {
        let server = try PostgresServer.sharedServer()
        let fleet = try GatewayFleet(server: server)
        let keys = try #require(builtTool("push-keys"), "push-keys is not built")
        let registry = ["--registry", fleet.cs, "--kek-file", fleet.kek, "--app-id", GatewayFleet.appID]
        let generated = try runTool(keys, ["sender", "generate"] + registry)
        #expect(generated.status == 0, "\(generated.stderr)")
        let oldID = try #require((try JSONSerialization.jsonObject(with: generated.stdoutBytes) as? [String: Any])?["senderKeyId"] as? String)
        let gw = try fleet.start()
        defer { gw.stop() }
        try fleet.register(port: gw.port, recipient: "phone-1", deviceToken: String(repeating: "e5", count: 32))
        func sendOne() throws -> String {
            try #require(try fleet.send(port: gw.port, #"{"recipient":"phone-1","notification":{"body":"x"}}"#).first)
        }
        #expect(try Self.senderKeyID(fleet, server, try sendOne()) == oldID)

        let added = try runTool(keys, ["sender", "add"] + registry + ["--json"])
        #expect(added.status == 0, "\(added.stderr)")
        let newID = try #require(((try JSONSerialization.jsonObject(with: added.stdoutBytes) as? [String: Any])?["senderKey"] as? [String: Any])?["keyId"] as? String)
        #expect(newID != oldID)
        // Published, not sealing: a second of checks later, still the old key.
        var beforePromotion: [String] = []
        let start = monotonicNanoseconds()
        while monotonicNanoseconds() - start < 1_500_000_000 { beforePromotion.append(try Self.senderKeyID(fleet, server, try sendOne()) ?? "none") }
        #expect(Set(beforePromotion) == [oldID], "sender add does not switch sealing")

        let promoted = try runTool(keys, ["sender", "promote"] + registry + ["--force"])
        #expect(promoted.status == 0, "\(promoted.stderr)")
        // Wait for the switch (the gateway checks once a second), then every one uses the new key.
        var switched = false
        waitUntil(seconds: 15, every: 0.1) {
            switched = (try? Self.senderKeyID(fleet, server, try sendOne())) == newID
            return switched
        }
        #expect(switched, "the gateway seals with the promoted key without a restart")
        for _ in 0..<5 { #expect(try Self.senderKeyID(fleet, server, try sendOne()) == newID) }
        #expect(gw.process.isRunning)
    }

    @Test("pushseal_gateway_apns_connections_open is a gauge: 0 before the first send, 1 while connected, 0 after the mock goes; the opened counter stays")
    func openConnectionsGauge() throws {
        let fleet = try GatewayFleet(server: try PostgresServer.sharedServer())
        let gw = try fleet.start()
        defer { gw.stop() }
        let before = try fleet.metrics(port: gw.port)
        #expect(before.contains("# TYPE pushseal_gateway_apns_connections_open gauge"))
        #expect(metricValue(before, "pushseal_gateway_apns_connections_open") == 0)
        try fleet.register(port: gw.port, recipient: "phone-1", deviceToken: String(repeating: "d4", count: 32))
        let id = try #require(try fleet.send(port: gw.port, #"{"recipient":"phone-1","notification":{"body":"x"}}"#).first)
        #expect(waitUntil(seconds: 30) { (try? fleet.status(port: gw.port, id))?["status"] as? String == "accepted" })
        #expect(waitUntil(seconds: 10) { metricValue((try? fleet.metrics(port: gw.port)) ?? "", "pushseal_gateway_apns_connections_open") == 1 })
        fleet.mock.stop()
        #expect(waitUntil(seconds: 20) { metricValue((try? fleet.metrics(port: gw.port)) ?? "", "pushseal_gateway_apns_connections_open") == 0 },
                "the gauge falls when the connection closes")
        #expect(metricValue(try fleet.metrics(port: gw.port), "pushseal_gateway_apns_connections_opened_total") == 1, "the counter keeps counting opened")
    }

    /// Runs `program` with `arguments`, returning its exit status and output.
    static func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, out: String) {
        let r = try runTool(URL(fileURLWithPath: "/usr/bin/env"), [program] + arguments)
        return (r.status, r.stdout + r.stderr)
    }

    @Test("--tls-cert/--tls-key serve HTTPS (curl with the test's CA), plain HTTP to the TLS port gets no answer, a key file readable by others is refused (77)")
    func servesHTTPS() throws {
        let fleet = try GatewayFleet(server: try PostgresServer.sharedServer())
        let cert = fleet.dir.appending("cert.pem").path, key = fleet.dir.appending("key.pem").path
        let made = try Self.run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                                            "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
        #expect(made.status == 0, "\(made.out)")
        let tls = ["--no-worker", "--tls-cert", cert, "--tls-key", key]
        let base = ["--registry", fleet.cs, "--kek-file", fleet.kek, "--app-id", GatewayFleet.appID, "--listen", "127.0.0.1:0", "--threads", "2", "--drain-seconds", "5"]

        #expect(chmod(key, 0o644) == 0)
        let refused = try runGatewayExpectingExit(["serve"] + base + tls)
        #expect(refused.status == 77, "\(refused.stderr)")
        #expect(refused.stderr.contains("push-gateway: error:") && refused.stderr.contains("chmod 600"))
        #expect(!refused.stderr.contains("PRIVATE KEY"))

        #expect(chmod(key, 0o600) == 0)
        let gw = try GatewayChild(base + tls)
        defer { gw.stop() }
        #expect(gw.log.events.first { $0["event"] as? String == "listening" }?["tls"] as? Bool == true)
        let url = "https://127.0.0.1:\(gw.port)"
        let health = try Self.run("curl", ["-sS", "--cacert", cert, "-o", "/dev/null", "-w", "%{http_code}", url + "/healthz"])
        #expect(health.status == 0 && health.out == "200", "\(health.out)")
        let sent = try Self.run("curl", ["-sS", "--cacert", cert, "-H", "Authorization: Bearer \(fleet.apiKey)", "-H", "Content-Type: application/json",
                                         "--data", #"{"recipient":"nobody","notification":{"body":"x"}}"#, url + "/v1/notifications"])
        #expect(sent.status == 0 && sent.out.contains("noDeviceToken"), "\(sent.out)")
        // Plain HTTP to the TLS port: no HTTP answer (the TLS handshake fails and the connection closes).
        let plain = try? rawHTTP(port: UInt16(gw.port), "GET", "/healthz")
        #expect(plain.flatMap { $0 }?.status != 200)
        let insecure = try Self.run("curl", ["-sS", "--max-time", "10", "http://127.0.0.1:\(gw.port)/healthz"])
        #expect(insecure.status != 0, "\(insecure.out)")
        // The server is unharmed.
        #expect(try Self.run("curl", ["-sS", "--cacert", cert, "-o", "/dev/null", "-w", "%{http_code}", url + "/healthz"]).out == "200")
        #expect(gw.stop() == 0)
    }

    @Test("--registration-token-secret: refused unless private (77) or present (66); a token minted by push-keys registers its sub over HTTP")
    func registrationTokenSecretFlag() throws {
        let fleet = try GatewayFleet(server: try PostgresServer.sharedServer())
        let keys = try #require(builtTool("push-keys"), "push-keys is not built")
        let secret = fleet.dir.appending("registration-secret").path
        #expect(try runTool(keys, ["registration-token", "new-secret", "--out", secret]).status == 0)
        let base = ["serve", "--registry", fleet.cs, "--kek-file", fleet.kek, "--app-id", GatewayFleet.appID, "--listen", "127.0.0.1:0", "--no-worker"]
        // Usage errors with a hint (trial of 2026-12-04: 65 with internal wording, and 71 "in use").
        var noKEK = base
        noKEK.removeSubrange(3...4)
        let withoutKEK = try runGatewayExpectingExit(noKEK)
        #expect(withoutKEK.status == 64 && withoutKEK.stderr.contains("--kek-file") && withoutKEK.stderr.contains("hint:"), "\(withoutKEK.stderr)")
        let named = try runGatewayExpectingExit(base.map { $0 == "127.0.0.1:0" ? "localhost:0" : $0 })
        #expect(named.status == 64 && named.stderr.contains("hint:"), "\(named.stderr)")
        let missing = try runGatewayExpectingExit(base + ["--registration-token-secret", secret + ".missing"])
        #expect(missing.status == 66, "\(missing.stderr)")
        #expect(chmod(secret, 0o640) == 0)
        let open = try runGatewayExpectingExit(base + ["--registration-token-secret", secret])
        #expect(open.status == 77 && open.stderr.contains("push-gateway: error:"), "\(open.stderr)")
        #expect(chmod(secret, 0o600) == 0)

        let gw = try GatewayChild(Array(base.dropFirst()) + ["--registration-token-secret", secret])
        defer { gw.stop() }
        let minted = try runTool(keys, ["registration-token", "--secret-file", secret, "--recipient", "phone-jwt", "--app-id", GatewayFleet.appID])
        #expect(minted.status == 0, "\(minted.stderr)")
        // --now is a time from 1970 to 9999, as in every other command: a usage error, no token.
        for bad in ["-1", "253402300800"] {
            let refused = try runTool(keys, ["registration-token", "--secret-file", secret, "--recipient", "phone-jwt", "--app-id", GatewayFleet.appID, "--now", bad])
            #expect(refused.status == 64 && refused.stdout.isEmpty && refused.stderr.contains("push-keys: error:") && refused.stderr.contains("--now"), "\(refused.stderr)")
        }
        let jwt = minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let body = try GatewayEndToEndTests.upload(token: String(repeating: "f6", count: 32))
        let r = try #require(try rawHTTP(port: UInt16(gw.port), "POST", "/v1/devices", headers: [("Authorization", "Bearer \(jwt)"), ("Content-Type", "application/json")], body: body))
        #expect(r.status == 201 && r.json?["recipient"] as? String == "phone-jwt", "\(r.text)")
        let wrong = try #require(try rawHTTP(port: UInt16(gw.port), "POST", "/v1/devices?recipient=other", headers: [("Authorization", "Bearer \(jwt)"), ("Content-Type", "application/json")], body: body))
        #expect(wrong.status == 403)
        #expect(try server(fleet).psql(fleet.cs, "SELECT count(*) FROM pushseal_device_tokens").trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        #expect(gw.stop() == 0)
        #expect(!gw.log.contents.contains(jwt), "the token never reaches the log")
        #expect(gw.log.events.contains { $0["event"] as? String == "register" && $0["recipient"] as? String == "phone-jwt" && $0["registrationTokenId"] is String })
    }

    @Test("--keep-finished: an instance deletes finished rows older than it at start and every minute (log line, metric, 404 after); 0 keeps them; a bad duration is 64")
    func keepFinishedDeletesOldRows() throws {
        let server = try PostgresServer.sharedServer()
        let fleet = try GatewayFleet(server: server)
        let token = String(repeating: "d4", count: 32)
        var gw = try fleet.start(["--threads", "2", "--keep-finished", "0"])
        try fleet.register(port: gw.port, recipient: "phone-old", deviceToken: token)
        let item = #"{"recipient":"phone-old","notification":{"title":"t","body":"b"}}"#
        let ids = try fleet.send(port: gw.port, #"{"notifications":[\#(item),\#(item),\#(item)]}"#)
        let fresh = try fleet.send(port: gw.port, item)
        #expect(ids.count == 3 && fresh.count == 1)
        #expect(waitUntil(seconds: 30) { gw.outcomes.count == 4 }, "\(gw.log.contents.suffix(2000))")
        #expect(gw.stop() == 0)
        #expect(!gw.log.events.contains { $0["event"] as? String == "retention" }, "0 keeps every row")
        // Three of them finished two days ago.
        let twoDaysAgo = unixTimeMilliseconds() - 2 * 86_400_000
        _ = try server.psql(fleet.cs, "UPDATE pushseal_outbox SET finished_at = \(twoDaysAgo) WHERE id IN (\(ids.map { "'\($0)'" }.joined(separator: ",")))")

        gw = try fleet.start(["--threads", "2", "--keep-finished", "1d"])
        #expect(waitUntil(seconds: 30) { gw.log.events.contains { $0["event"] as? String == "retention" } }, "\(gw.log.contents.suffix(2000))")
        let line = gw.log.events.first { $0["event"] as? String == "retention" }
        #expect(line?["deleted"] as? Int == 3)
        for id in ids { #expect(try fleet.status(port: gw.port, id)?["error"] != nil, "\(id) is gone") }
        #expect(waitUntil(seconds: 10) {
            gw.log.events.contains { $0["event"] as? String == "request" && $0["status"] as? Int == 404 && $0["error"] as? String == "notFound" }
        }, "a request line names the error code of its answer")
        #expect(try fleet.status(port: gw.port, fresh[0])?["status"] as? String == "accepted", "a row finished a moment ago stays")
        #expect(metricValue(try fleet.metrics(port: gw.port), "pushseal_gateway_outbox_deleted_total") == 3)
        #expect(gw.stop() == 0)

        let bad = try runGatewayExpectingExit(["serve"] + fleet.serveArguments(["--keep-finished", "5x"]))
        #expect(bad.status == 64 && bad.stderr.contains("--keep-finished"), "\(bad.stderr)")
    }

    @Test("--p8 refusals have push-send's exit codes: missing 66, readable by others 77, not a P-256 key 65")
    func providerKeyRefusals() throws {
        let fleet = try GatewayFleet(server: try PostgresServer.sharedServer())
        func serve(p8: String) throws -> (status: Int32, stderr: String) {
            var args = fleet.serveArguments()
            if let i = args.firstIndex(of: "--p8") { args[i + 1] = p8 }
            return try runGatewayExpectingExit(["serve"] + args)
        }
        let missing = try serve(p8: fleet.dir.appending("AuthKey_MISSING.p8").path)
        #expect(missing.status == 66 && missing.stderr.contains("hint:"), "\(missing.stderr)")
        let open = fleet.dir.appending("open.p8").path
        #expect(FileManager.default.createFile(atPath: open, contents: try Data(contentsOf: URL(fileURLWithPath: fleet.mock.p8Path)),
                                               attributes: [.posixPermissions: 0o644]))
        let readable = try serve(p8: open)
        #expect(readable.status == 77, "\(readable.stderr)")
        let garbage = fleet.dir.appending("garbage.p8").path
        #expect(FileManager.default.createFile(atPath: garbage, contents: Data("not a key\n".utf8), attributes: [.posixPermissions: 0o600]))
        let notAKey = try serve(p8: garbage)
        #expect(notAKey.status == 65, "\(notAKey.stderr)")
    }

    @Test("migrate by a role that may not create tables: exit 77 naming SQLSTATE 42501 with a hint (was an undocumented 1); --json carries sqlState")
    func migrateWithoutPrivilege() throws {
        let server = try PostgresServer.sharedServer()
        let cs = try server.createDatabase()
        let role = "limited_" + UUID().uuidString.prefix(8).lowercased()
        _ = try server.psql(cs, "CREATE ROLE \(role) LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        let limited = cs.replacingOccurrences(of: "user=pushseal", with: "user=\(role)")
        #expect(limited != cs)
        let tool = try #require(builtTool("push-gateway"))
        let text = try runTool(tool, ["migrate", "--registry", limited])
        #expect(text.status == 77 && text.stderr.contains("42501") && text.stderr.contains("hint:"), "\(text.status) \(text.stderr)")
        let json = try runTool(tool, ["migrate", "--registry", limited, "--json"])
        #expect(json.status == 77 && json.stdout.contains(#""sqlState":"42501""#), "\(json.stdout)")
        let help = try runTool(tool, ["migrate", "--help"])
        #expect(help.stdout.contains("42501") && help.stdout.contains("1   a statement failed"))
    }

    @Test("a rolling upgrade: the next version's migrate (a newer schema) keeps a running instance ready ({\"database\":\"schemaNewer\"}) and serving; a new serve on it is refused (78)")
    func aNewerSchemaKeepsRunningInstancesReady() throws {
        let server = try PostgresServer.sharedServer()
        let fleet = try GatewayFleet(server: server)
        let gw = try fleet.start()
        defer { gw.stop() }
        #expect(try rawHTTP(port: UInt16(gw.port), "GET", "/readyz")?.status == 200)
        _ = try server.psql(fleet.cs, "INSERT INTO pushseal_schema_version (version, description) VALUES (1000, 'the next version')")
        let ready = try #require(try rawHTTP(port: UInt16(gw.port), "GET", "/readyz"))
        #expect(ready.status == 200 && ready.text.contains("schemaNewer"), "\(ready.status) \(ready.text)")
        try fleet.register(port: gw.port, recipient: "phone-up", deviceToken: String(repeating: "e5", count: 32))
        #expect(try fleet.send(port: gw.port, #"{"recipient":"phone-up","notification":{"title":"t","body":"b"}}"#).count == 1)
        let refused = try runGatewayExpectingExit(["serve"] + fleet.serveArguments())
        #expect(refused.status == 78, "\(refused.stderr)")
    }

    @Test("the log marks a database outage: a database line unavailable when PostgreSQL stops, available when it is back; the instance keeps running")
    func databaseOutageIsLogged() throws {
        let server = try PostgresServer()  // its own: this test stops and starts it
        let fleet = try GatewayFleet(server: server)
        let gw = try fleet.start()
        defer { gw.stop() }
        func databaseLines() -> [String] {
            gw.log.events.filter { $0["event"] as? String == "database" }.compactMap { $0["status"] as? String }
        }
        try server.stopServer()
        #expect(waitUntil(seconds: 30) { databaseLines() == ["unavailable"] }, "\(gw.log.contents.suffix(1500))")
        #expect(gw.log.events.first { $0["event"] as? String == "database" }?["error"] as? String == "unavailable")
        try server.start()
        #expect(waitUntil(seconds: 30) { databaseLines() == ["unavailable", "available"] }, "\(gw.log.contents.suffix(1500))")
        #expect(gw.process.isRunning)
        #expect(gw.stop() == 0)
    }

    func server(_ fleet: GatewayFleet) throws -> PostgresServer { try PostgresServer.sharedServer() }
}
