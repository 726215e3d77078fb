import Foundation
import Testing
import PushSealGateway
import PushSealRegistry
import PushSealSystem
import PushSealTestSupport

/// The `push-gateway` binary on a real PostgreSQL: migrate, keys create/list/revoke, serve,
/// the OpenAPI document checked against it by schemathesis, SIGTERM exits 0.
@Suite(.serialized) struct GatewayProcessTests {
    static var schemathesis: String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let path = "\(dir)/st"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    @Test("migrate, keys create/list/revoke, serve; schemathesis finds no 5xx and no answer off the schema; SIGTERM exits 0")
    func binaryServesTheDocumentedAPI() throws {
        let tool = try #require(builtTool("push-gateway"), "push-gateway is not built")
        let server = try PostgresServer.sharedServer()
        let cs = try server.createDatabase()
        let dir = try TemporaryDirectory("gateway-process")
        defer { dir.remove() }
        let kek = dir.appending("kek")
        #expect(FileManager.default.createFile(atPath: kek.path, contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }), attributes: [.posixPermissions: 0o600]))

        let migrated = try runTool(tool, ["migrate", "--registry", cs, "--kek-file", kek.path, "--json"])
        #expect(migrated.status == 0, "\(migrated.stderr)")
        let withoutKEK = try runTool(tool, ["keys", "create", "--registry", cs, "--name", "ci", "--scope", "send"])
        #expect(withoutKEK.status == 64 && withoutKEK.stderr.contains("push-gateway: error:") && withoutKEK.stdout.isEmpty, "\(withoutKEK.stderr)")
        let created = try runTool(tool, ["keys", "create", "--registry", cs, "--kek-file", kek.path, "--name", "ci", "--scope", "send,register,admin", "--json"])
        #expect(created.status == 0, "\(created.stderr)")
        let made = try #require(try JSONSerialization.jsonObject(with: created.stdoutBytes) as? [String: Any])
        let key = try #require(made["key"] as? String)
        let id = try #require(made["id"] as? String)
        #expect(!created.stderr.contains(key))
        let bad = try runTool(tool, ["keys", "create", "--registry", cs, "--kek-file", kek.path, "--name", "x", "--scope", "root"])
        #expect(bad.status == 64 && bad.stderr.contains("push-gateway: error:"))

        let serve = try GatewayChild(["--registry", cs, "--kek-file", kek.path, "--app-id", "com.example.app", "--listen", "127.0.0.1:0",
                                      "--no-worker", "--rate", "100000", "--burst", "100000", "--drain-seconds", "5"])
        let port = serve.port
        #expect(try rawHTTP(port: UInt16(port), "GET", "/readyz")?.status == 200)
        let sent = try #require(try rawHTTP(port: UInt16(port), "POST", "/v1/notifications",
                                            headers: [("Authorization", "Bearer \(key)"), ("Content-Type", "application/json")],
                                            body: Array(#"{"recipient":"nobody","notification":{"body":"Zebra-Plinth"}}"#.utf8)))
        #expect(sent.status == 202)
        #expect(sent.text.contains("noDeviceToken"))

        // A key the database role adds for itself (its SHA-256 and every scope, without the
        // KEK): refused like an unknown key, and logged (review of 2026-12-04, S1).
        let forged = APIKey.generate(name: "evil", scopes: ["send", "register", "admin"], now: unixTimeSeconds())
        _ = try server.psql(cs, """
            INSERT INTO pushseal_gateway_api_keys (id, name, key_sha256, scopes, created_at)
            VALUES ('\(forged.record.id)', 'evil', decode('\(Hex.encode(forged.sha256))', 'hex'), 'send,register,admin', 1)
            """)
        let refused = try rawHTTP(port: UInt16(port), "POST", "/v1/notifications",
                                  headers: [("Authorization", "Bearer \(forged.text)"), ("Content-Type", "application/json")],
                                  body: Array(#"{"recipient":"nobody","notification":{"body":"x"}}"#.utf8))
        #expect(refused?.status == 401)
        _ = try server.psql(cs, "DELETE FROM pushseal_gateway_api_keys WHERE id = '\(forged.record.id)'")

        if let st = Self.schemathesis {
            let spec = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("docs/gateway.openapi.json")
            let run = try runTool(URL(fileURLWithPath: st), ["run", spec.path, "--url", "http://127.0.0.1:\(port)", "-H", "Authorization: Bearer \(key)",
                                                            "--checks", "not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance",
                                                            "--max-examples", "25", "--seed", "1", "--no-color"], cwd: dir.url)
            #expect(run.status == 0, "schemathesis: \(run.stdout.suffix(3000))")
        } else {
            Issue.record("schemathesis (st) is not installed: run scripts/install-deps.sh")
        }

        #expect(serve.stop() == 0)
        let log = serve.log.contents
        #expect(log.contains("\"event\":\"stopped\""))
        #expect(!log.contains(key) && !log.contains(String(key.suffix(64))), "the key never reaches the log")
        #expect(!log.contains("Zebra"), "a notification's text never reaches the log")
        #expect(log.contains("\"event\":\"apiKeyRefused\"") && log.contains(forged.record.id) && !log.contains(String(forged.text.suffix(64))))

        #expect(try runTool(tool, ["keys", "revoke", "--registry", cs, "--kek-file", kek.path, id]).status == 0)
        #expect(try runTool(tool, ["keys", "revoke", "--registry", cs, "--kek-file", kek.path, id]).status == 66)
        let listed = try runTool(tool, ["keys", "list", "--registry", cs, "--kek-file", kek.path, "--json"])
        let keys = try #require((try JSONSerialization.jsonObject(with: listed.stdoutBytes) as? [String: Any])?["keys"] as? [[String: Any]])
        #expect(keys.count == 1 && keys[0]["id"] as? String == id && keys[0]["revokedAt"] is Int)
        #expect(!listed.stdout.contains(String(key.suffix(64))))
    }
}
