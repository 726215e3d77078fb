import Foundation
import Testing
import PushSealCrypto
import PushSealGateway
import PushSealHTTP
import PushSealDeviceKeys
import PushSealRegistry
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
        let server = try PostgresServer.sharedServer()
        let cs = try server.createDatabase()
        _ = try PostgresKeyStore.migrate(connectionString: cs)
        let registry = try PostgresKeyStore(connectionString: cs, kek: .generate(), reconnectWaitSeconds: 10)
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

    @Test("POST /v1/devices, POST /v1/notifications, the worker sends to the mock, GET shows accepted; the database holds no plaintext")
    func registerSendAndTrack() throws {
        let (server, cs, registry, mock, outbox, worker) = try Self.stack()
        defer { mock.stop() }
        try worker.start()
        var workerDrained = false
        defer { if !workerDrained { worker.drain() } }
        let send = APIKey.generate(name: "backend", scopes: ["send", "register"], now: unixTimeSeconds())
        try registry.insertGatewayAPIKey(send.record, keySHA256: send.sha256)
        var http = HTTPServer.Configuration()
        http.threadCount = 2
        let gateway = try Gateway(http: http, backend: try ServerBackend(outbox: outbox, worker: worker), keys: registry, log: GatewayLog(enabled: false))
        let auth = [("Authorization", "Bearer \(send.text)"), ("Content-Type", "application/json")]

        let token = String(repeating: "5a", count: 32)
        let body = try Self.upload(token: token)
        let registered = try #require(try rawHTTP(port: gateway.server.port, "POST", "/v1/devices?recipient=phone-1", headers: auth, body: body))
        #expect(registered.status == 201, "\(registered.text)")
        let again = try #require(try rawHTTP(port: gateway.server.port, "POST", "/v1/devices?recipient=phone-1", headers: auth, body: body))
        #expect(again.status == 200)
        #expect(try registry.deviceTokens(appID: Self.appID, recipient: "phone-1").map(\.token) == [token])

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

        let dump = try server.run("pg_dump", ["-d", cs, "--inserts"], asServerUser: false)
        for word in ["Quetzal", "Marmalade", "Obsidian", "Tangerine"] { #expect(!dump.contains(word), "\(word) is in the dump") }
        #expect(!dump.contains(send.text) && !dump.contains(String(send.text.suffix(64))), "the API key is stored as its SHA-256 only")

        // Forget the installation: the token goes.
        let forgot = try #require(try rawHTTP(port: gateway.server.port, "DELETE", "/v1/devices/phone-1", headers: [auth[0]]))
        #expect(forgot.status == 204)
        #expect(try registry.deviceTokens(appID: Self.appID, recipient: "phone-1").isEmpty)

        let metrics = try #require(try rawHTTP(port: gateway.server.port, "GET", "/metrics"))
        #expect(metrics.text.contains(#"pushseal_gateway_notifications_total{outcome="accepted",reason=""} 1"#))
        #expect(metrics.text.contains("pushseal_gateway_queue_depth_notifications 0"))
        gateway.stop()
        worker.drain()
        workerDrained = true
    }
}
