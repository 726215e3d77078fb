import Foundation
import Testing
import PushSealCrypto
import PushSealGateway
import PushSealHTTP
import PushSealDeviceKeys
import PushSealRegistry
import PushSealRegistrationTokens
import PushSealServer
import PushSealSystem
import PushSealTestSupport

/// The gateway over HTTP on a real PostgreSQL registry, its outbox and worker, and the native
/// mock APNs: register as the app would (the upload body), send, the mock receives it.
@Suite(.serialized, .enabled(if: MockAPNs.nativeAvailable, "the native mock APNs is not built (scripts/build-mock-apns.sh)"))
struct GatewayEndToEndTests {
    static let appID = MockAPNs.topic

    /// The iOS reference's upload body for a new device key and `token`.
    static func upload(token: String) throws -> [UInt8] {
        let key = try X25519.PrivateKey()
        let record = DeviceKeyItem.registrationRecord(appID: appID, keyID: try DeviceKeyItem.keyID(for: key.publicKey),
                                                      publicKey: key.publicKey, createdAt: unixTimeSeconds())
        return try JSONWriter.serialize(.object(JSONObject([("registration", .object(record)), ("apnsDeviceToken", .string(token)),
                                                            ("apnsEnvironment", .string("development"))])))
    }

    /// A fresh database on the shared PostgreSQL (migrated), its registry under a new KEK, the
    /// native mock APNs (the caller stops it), the outbox and a worker sending to the mock (not started).
    static func stack() throws -> (PostgresServer, String, PostgresKeyStore, MockAPNs, Outbox, OutboxWorker) {
        let (server, cs, registry) = try freshRegistry()
        let mock = try MockAPNs([:], kind: .native)
        do {
            let outbox = try Outbox(store: ServerStore(store: registry),
                                    configuration: Outbox.Configuration(sealer: SealerConfiguration(appID: appID), environment: .development))
            var client = APNsClient.Configuration(endpoint: try mock.endpoint())
            client.reconnectBaseDelaySeconds = 0.01
            let worker = try OutboxWorker(outbox: outbox, apns: APNsProviderConfiguration(p8Path: mock.p8Path, keyID: MockAPNs.keyID,
                                                                                           teamID: MockAPNs.teamID, client: client))
            return (server, cs, registry, mock, outbox, worker)
        } catch {
            mock.stop()
            throw error
        }
    }

    /// The shared PostgreSQL, a new migrated database in it and the registry on it.
    static func freshRegistry() throws -> (PostgresServer, String, PostgresKeyStore) {
        let server = try PostgresServer.sharedServer()
        let cs = try server.createDatabase()
        _ = try PostgresKeyStore.migrate(connectionString: cs)
        return (server, cs, try PostgresKeyStore(connectionString: cs, kek: .generate(), reconnectWaitSeconds: 10))
    }

    @Test("POST /v1/devices refuses a registration named like the app's sender key (revoked, its id would disable every phone's pin); nothing stored")
    func aRegistrationMayNotTakeTheSenderKeysID() throws {
        let (_, _, registry) = try Self.freshRegistry()
        let sender = try registry.generateSenderKey(appID: Self.appID, now: unixTimeSeconds())
        let outbox = try Outbox(store: ServerStore(store: registry),
                                configuration: Outbox.Configuration(sealer: SealerConfiguration(appID: Self.appID), environment: .development))
        let key = APIKey.generate(name: "backend", scopes: ["register"], now: unixTimeSeconds())
        try registry.insertGatewayAPIKey(key.record, keySHA256: key.sha256)
        var http = HTTPServer.Configuration()
        http.threadCount = 1
        let gateway = try Gateway(http: http, backend: try ServerBackend(outbox: outbox, worker: nil), keys: registry, log: GatewayLog(enabled: false))
        defer { gateway.stop() }
        var upload = try #require(try JSONSerialization.jsonObject(with: Data(try Self.upload(token: String(repeating: "8d", count: 32)))) as? [String: Any])
        var record = try #require(upload["registration"] as? [String: Any])
        record["keyId"] = sender.keyID
        upload["registration"] = record
        let auth = [("Authorization", "Bearer \(key.text)"), ("Content-Type", "application/json")]
        let r = try #require(try rawHTTP(port: gateway.server.port, "POST", "/v1/devices?recipient=phone-s", headers: auth, body: Array(try JSONSerialization.data(withJSONObject: upload))))
        #expect(r.status == 409 && (r.json?["error"] as? [String: Any])?["code"] as? String == "registrationConflict", "\(r.text)")
        #expect(try registry.deviceTokens(appID: Self.appID, recipient: "phone-s").isEmpty)
    }

    @Test("POST /v1/devices, POST /v1/notifications, the worker sends to the mock, GET shows accepted; the database holds no plaintext")
    func registerSendAndTrack() throws {
        let (server, cs, registry) = try Self.freshRegistry()
        let mock = try MockAPNs([:], kind: .native)
        defer { mock.stop() }

        let outbox = try Outbox(store: ServerStore(store: registry),
                                configuration: Outbox.Configuration(sealer: SealerConfiguration(appID: Self.appID), environment: .development))
        var client = APNsClient.Configuration(endpoint: try mock.endpoint())
        client.reconnectBaseDelaySeconds = 0.01
        let worker = try OutboxWorker(outbox: outbox, apns: APNsProviderConfiguration(p8Path: mock.p8Path, keyID: MockAPNs.keyID,
                                                                                       teamID: MockAPNs.teamID, client: client))
        try worker.start()
        var workerDrained = false
        defer { if !workerDrained { worker.drain() } }
        let send = APIKey.generate(name: "backend", scopes: ["send", "register"], now: unixTimeSeconds())
        try registry.insertGatewayAPIKey(send.record, keySHA256: send.sha256)
        var http = HTTPServer.Configuration()
        http.threadCount = 2
        let gateway = try Gateway(http: http, backend: try ServerBackend(outbox: outbox, worker: worker), keys: registry, log: GatewayLog(enabled: false))
        let auth = [("Authorization", "Bearer \(send.text)"), ("Content-Type", "application/json")]

        // The phone: a device keychain and its v2 key made as the app makes it (push-keys device generate).
        let phoneDir = try TemporaryDirectory("gateway-e2e-phone")
        let keys = try #require(builtTool("push-keys"), "push-keys is not built")
        let identity = ["--keychain", phoneDir.appending("keychain").path, "--access-group", "\(MockAPNs.teamID).\(Self.appID).shared",
                        "--app-group", "group.\(Self.appID)", "--app-id", Self.appID]
        #expect(try runTool(keys, ["keychain", "init", "--keychain", phoneDir.appending("keychain").path]).status == 0)
        let generated = try runTool(keys, ["device", "generate"] + identity)
        #expect(generated.status == 0, "\(generated.stderr)")
        let token = String(repeating: "5a", count: 32)
        let body = Array(#"{"registration":\#(generated.stdout.trimmingCharacters(in: .whitespacesAndNewlines)),"apnsDeviceToken":"\#(token)","apnsEnvironment":"development"}"#.utf8)
        let registered = try #require(try rawHTTP(port: gateway.server.port, "POST", "/v1/devices?recipient=phone-1", headers: auth, body: body))
        #expect(registered.status == 201, "\(registered.text)")
        let again = try #require(try rawHTTP(port: gateway.server.port, "POST", "/v1/devices?recipient=phone-1", headers: auth, body: body))
        #expect(again.status == 200 && again.json?["status"] as? String == "unchanged", "\(again.text)")
        #expect(try registry.deviceTokens(appID: Self.appID, recipient: "phone-1").map(\.token) == [token])
        // The same record with the app's new APNs token: the token is replaced, and the answer says so.
        let newToken = String(repeating: "6b", count: 32)
        let moved = Array(String(decoding: body, as: UTF8.self).replacingOccurrences(of: token, with: newToken).utf8)
        let updated = try #require(try rawHTTP(port: gateway.server.port, "POST", "/v1/devices?recipient=phone-1", headers: auth, body: moved))
        #expect(updated.status == 200 && updated.json?["status"] as? String == "tokenUpdated", "\(updated.text)")
        #expect(try registry.deviceTokens(appID: Self.appID, recipient: "phone-1").map(\.token) == [newToken])
        let back = try #require(try rawHTTP(port: gateway.server.port, "POST", "/v1/devices?recipient=phone-1", headers: auth, body: body))
        #expect(back.json?["status"] as? String == "tokenUpdated")
        #expect(try registry.deviceTokens(appID: Self.appID, recipient: "phone-1").map(\.token) == [token])
        // The token gone (a 410, push-keys token remove): the same upload stores it again, and says so.
        try registry.removeDeviceTokens(appID: Self.appID, recipient: "phone-1", token: nil, time: unixTimeSeconds())
        let restored = try #require(try rawHTTP(port: gateway.server.port, "POST", "/v1/devices?recipient=phone-1", headers: auth, body: body))
        #expect(restored.status == 200 && restored.json?["status"] as? String == "tokenUpdated", "\(restored.text)")
        #expect(try rawHTTP(port: gateway.server.port, "POST", "/v1/devices?recipient=phone-1", headers: auth, body: body)?.json?["status"] as? String == "unchanged")

        // A record dated an hour ahead of the server's clock (a phone's clock off): 422, not a
        // 500 the app would retry, and nothing stored (review of 2026-12-04, B1).
        var record = try #require(try JSONSerialization.jsonObject(with: Data(generated.stdout.utf8)) as? [String: Any])
        record["createdAt"] = (record["createdAt"] as? Int ?? 0) + 3600
        let future = try JSONSerialization.data(withJSONObject: ["registration": record, "apnsDeviceToken": String(repeating: "7c", count: 32), "apnsEnvironment": "development"])
        let refused = try #require(try rawHTTP(port: gateway.server.port, "POST", "/v1/devices?recipient=phone-future", headers: auth, body: Array(future)))
        #expect(refused.status == 422 && (refused.json?["error"] as? [String: Any])?["code"] as? String == "futureRegistration", "\(refused.text)")
        #expect(try registry.deviceTokens(appID: Self.appID, recipient: "phone-future").isEmpty)

        let notification = #"{"notifications":[{"recipient":"phone-1","notification":{"title":"Quetzal-Marmalade","body":"Obsidian-Tangerine"}},{"recipient":"nobody","notification":{"body":"x"}}]}"#
        let sent = try #require(try rawHTTP(port: gateway.server.port, "POST", "/v1/notifications", headers: auth + [("Idempotency-Key", "e2e-1")],
                                            body: Array(notification.utf8)))
        #expect(sent.status == 202, "\(sent.text)")
        let items = try #require(sent.json?["notifications"] as? [[String: Any]])
        let id = try #require(items.first?["id"] as? String)
        #expect(((items.last?["error"] as? [String: Any])?["code"] as? String) == "noDeviceToken")
        let replay = try #require(try rawHTTP(port: gateway.server.port, "POST", "/v1/notifications", headers: auth + [("Idempotency-Key", "e2e-1")],
                                              body: Array(notification.utf8)))
        #expect(replay.status == 202 && replay.body == sent.body)

        // The worker sends it; the status route shows the final state (bounded wait on the database's answer).
        var status = ""
        let start = monotonicNanoseconds()
        while status != "accepted", Double(monotonicNanoseconds() - start) / 1e9 < 30 {
            let s = try #require(try rawHTTP(port: gateway.server.port, "GET", "/v1/notifications/\(id)", headers: [auth[0]]))
            status = s.json?["status"] as? String ?? ""
            if status != "accepted" { pauseThread(seconds: 0.02) }
        }
        #expect(status == "accepted")
        let answered = try mock.answered()
        #expect(answered.count == 1, "sent once, the replay enqueued nothing")

        // What the phone shows: the payload the mock accepted (found by its apns-id in the outbox) opened by push-open.
        let apnsID = try #require(answered.first?["apnsId"] as? String)
        let payload = try server.psql(cs, "SELECT convert_from(payload, 'UTF8') FROM pushseal_outbox WHERE apns_id = '\(apnsID)'::uuid")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!payload.isEmpty, "the mock accepted \(apnsID), which is in no outbox row")
        let opened = try runTool(try #require(builtTool("push-open"), "push-open is not built"), identity + ["-"], stdin: Data(payload.utf8))
        #expect(opened.status == 0, "\(opened.stderr)")
        let shown = try #require(try JSONSerialization.jsonObject(with: opened.stdoutBytes) as? [String: Any], "\(opened.stdout)")
        #expect(shown["outcome"] as? String == "decrypted", "\(shown)")
        #expect(shown["title"] as? String == "Quetzal-Marmalade" && shown["body"] as? String == "Obsidian-Tangerine", "\(shown)")

        let dump = try server.run("pg_dump", ["-d", cs, "--inserts"], asServerUser: false)
        for word in ["Quetzal", "Marmalade", "Obsidian", "Tangerine"] { #expect(!dump.contains(word), "\(word) is in the dump") }
        #expect(!dump.contains(send.text) && !dump.contains(String(send.text.suffix(64))), "the API key is stored as its SHA-256 only")

        // Forget the installation: every token goes, also one stamped by a clock an hour ahead (a
        // simulated 410 "now" would keep it: an unregistration older than the registration).
        try registry.addDeviceToken(String(repeating: "cd", count: 32), appID: Self.appID, recipient: "phone-1",
                                    environment: .production, registeredAtMs: unixTimeMilliseconds() + 3_600_000)
        let forgot = try #require(try rawHTTP(port: gateway.server.port, "DELETE", "/v1/devices/phone-1", headers: [auth[0]]))
        #expect(forgot.status == 204)
        #expect(try registry.deviceTokens(appID: Self.appID, recipient: "phone-1").isEmpty)
        // The forgotten installation's key id is not published: a registration's id is the
        // device's choice (review of 2026-12-04, H1); the list holds revoked sender keys only.
        let keyID = try #require(record["keyId"] as? String)
        let revocations = try #require(try rawHTTP(port: gateway.server.port, "GET", "/v1/revocations"))
        #expect(revocations.status == 200 && !revocations.text.contains(keyID), "\(revocations.text)")

        let metrics = try #require(try rawHTTP(port: gateway.server.port, "GET", "/metrics"))
        #expect(metrics.text.contains(#"pushseal_gateway_notifications_total{outcome="accepted",reason=""} 1"#))
        #expect(metrics.text.contains("pushseal_gateway_queue_depth_notifications 0"))
        gateway.stop()
        worker.drain()
        workerDrained = true
    }

    @Test("a registration token registers its sub on the registry (record and token in one step); refused tokens store nothing")
    func registrationTokenOnTheRegistry() throws {
        let (_, _, registry) = try Self.freshRegistry()
        let store = ServerStore(store: registry)
        let outbox = try Outbox(store: store, configuration: Outbox.Configuration(sealer: SealerConfiguration(appID: Self.appID), environment: .development))
        let secret = try RegistrationTokenSecret(text: RegistrationTokenSecret.generateText())
        var settings = Gateway.Settings()
        settings.registrationTokens = RegistrationTokenPolicy(secret: secret, appID: Self.appID)
        var http = HTTPServer.Configuration()
        http.threadCount = 2
        let gateway = try Gateway(http: http, settings: settings, backend: try ServerBackend(outbox: outbox, worker: nil), keys: registry,
                                  log: GatewayLog(enabled: false))
        defer { gateway.stop() }
        let now = unixTimeSeconds()
        let token = String(repeating: "7c", count: 32)
        let body = try Self.upload(token: token)
        func post(_ path: String, _ jwt: String) throws -> RawHTTPResponse {
            try #require(try rawHTTP(port: gateway.server.port, "POST", path, headers: [("Authorization", "Bearer \(jwt)"), ("Content-Type", "application/json")], body: body))
        }
        let other = try RegistrationTokenSecret(text: RegistrationTokenSecret.generateText())
        for jwt in [try RegistrationToken.mint(recipient: "phone-t", appID: Self.appID, issuedAt: now - 90_000, secret: secret),
                    try RegistrationToken.mint(recipient: "phone-t", appID: "com.example.other", issuedAt: now, secret: secret),
                    try RegistrationToken.mint(recipient: "phone-t", appID: Self.appID, issuedAt: now, secret: other)] {
            let r = try post("/v1/devices", jwt)
            #expect(r.status == 401 && r.errorCode == "invalidRegistrationToken", "\(r.text)")
        }
        let good = try RegistrationToken.mint(recipient: "phone-t", appID: Self.appID, issuedAt: now, secret: secret)
        #expect(try post("/v1/devices?recipient=phone-x", good).status == 403)
        #expect(try registry.deviceTokens(appID: Self.appID, recipient: "phone-t").isEmpty)
        #expect(try registry.deviceTokens(appID: Self.appID, recipient: "phone-x").isEmpty)
        #expect((try? store.registrationStore().registrations(appID: Self.appID, recipient: "phone-t"))?.registrations.isEmpty ?? true)

        let registered = try post("/v1/devices", good)
        #expect(registered.status == 201, "\(registered.text)")
        #expect(try post("/v1/devices", good).status == 200, "the same record again with the same token changes nothing")
        #expect(try registry.deviceTokens(appID: Self.appID, recipient: "phone-t").map(\.token) == [token])
        #expect(try store.registrationStore().registrations(appID: Self.appID, recipient: "phone-t").registrations.count == 1)
    }
}
