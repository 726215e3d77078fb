import Foundation
import PushSealRegistry
import Testing

/// `push-keys token add / list / invalidate` through the built tool, on a server keychain and on
/// the registry (the same commands, the same answers), with their exit codes.
@Suite struct TokenCLITests {
    static let app = "com.example.app"

    /// The store arguments of `store` ("keychain" or "registry"), made fresh in `dir`.
    static func storeArguments(_ store: String, in dir: URL) throws -> [String] {
        let keys = RegistryCLITests.tool("push-keys")
        if store == "keychain" {
            let kc = dir.appendingPathComponent("kc").path
            #expect(try RegistryCLITests.run([keys, "keychain", "init", "--keychain", kc]).status == 0)
            return ["--keychain", kc]
        }
        let cs = try PostgresServer.sharedServer().createDatabase()
        let kek = dir.appendingPathComponent("kek").path
        #expect(try RegistryCLITests.run([keys, "registry", "migrate", "--registry", cs]).status == 0)
        #expect(try RegistryCLITests.run([keys, "registry", "new-kek", "--out", kek]).status == 0)
        // Device token rows are authenticated under the KEK (G1): token commands need it.
        return ["--registry", cs, "--kek-file", kek]
    }

    static func scratch() throws -> URL {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-tokencli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return dir
    }

    static func json(_ s: String) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(s.utf8))) as? [String: Any] ?? [:] }

    @Test(arguments: ["keychain", "registry"])
    func addListInvalidate(_ store: String) throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = RegistryCLITests.tool("push-keys")
        let s = try Self.storeArguments(store, in: dir)
        func add(_ r: String, _ env: String, _ token: String, at ms: Int64) throws -> (status: Int32, stdout: String, stderr: String) {
            try RegistryCLITests.run([keys, "token", "add"] + s + ["--app-id", Self.app, "--recipient", r, "--environment", env, "--registered-at", String(ms), token])
        }
        #expect(try add("alice", "production", "AA11", at: 1_000).stdout == "com.example.app alice production: added aa11\n")
        let replaced = try RegistryCLITests.run([keys, "token", "add"] + s + ["--app-id", Self.app, "--recipient", "alice", "--environment", "production",
                                                                               "--registered-at", "2000", "bb22", "--json"])
        #expect(replaced.status == 0)
        #expect((Self.json(replaced.stdout)["replaced"] as? [[String: Any]])?.map { $0["token"] as? String } == ["aa11"])
        #expect(try add("bob", "development", "cc33", at: 5_000).status == 0)
        #expect(try add("carol", "production", "dd44", at: 1_000).status == 0)
        let list = try RegistryCLITests.run([keys, "token", "list"] + s)
        #expect(list.stdout == "com.example.app alice production bb22 2000\ncom.example.app bob development cc33 5000\ncom.example.app carol production dd44 1000\n")
        let one = try RegistryCLITests.run([keys, "token", "list"] + s + ["--app-id", Self.app, "--recipient", "bob", "--json"])
        #expect((Self.json(one.stdout)["tokens"] as? [[String: Any]])?.first?["registeredAt"] as? Int == 5_000)

        // push-send's outcome lines: bb22 dead since 3000 (registered 2000: removed), cc33 dead
        // since 3000 but registered again at 5000 (kept), ee55 unknown, an accepted line and a
        // partial last line ignored.
        let outcomes = dir.appendingPathComponent("outcomes.jsonl")
        try Data("""
            {"line":1,"deviceToken":"bb22","outcome":"unregistered","status":410,"reason":"Unregistered","timestamp":3000,"attempts":1}
            {"line":2,"deviceToken":"cc33","outcome":"unregistered","status":410,"reason":"Unregistered","timestamp":3000,"attempts":1}
            {"line":3,"deviceToken":"dd44","outcome":"accepted","status":200,"attempts":1}

            {"line":4,"deviceToken":"ee55","outcome":"unregistered","status":410,"reason":"Unregistered","timestamp":3000,"attempts":1}
            {"line":5,"deviceToken":"dd44","outcome":"unre
            """.utf8).write(to: outcomes)
        let applied = try RegistryCLITests.run([keys, "token", "invalidate"] + s + ["--app-id", Self.app, "--outcomes", outcomes.path, "--json"])
        #expect(applied.status == 0, "\(applied.stderr)")
        let j = Self.json(applied.stdout)
        #expect(j["invalidated"] as? Int == 1 && j["keptReregistered"] as? Int == 1 && j["unknown"] as? Int == 1 && j["noTimestamp"] as? Int == 0)
        #expect((j["tokens"] as? [[String: Any]])?.map { $0["result"] as? String } == ["invalidated", "keptReregistered", "unknown"])
        #expect(try RegistryCLITests.run([keys, "token", "list"] + s).stdout
                == "com.example.app bob development cc33 5000\ncom.example.app carol production dd44 1000\n")
        // The same outcomes again: nothing more removed.
        #expect(try RegistryCLITests.run([keys, "token", "invalidate"] + s + ["--app-id", Self.app, "--outcomes", outcomes.path]).stdout
                == "invalidated 0, kept (re-registered) 1, unknown 2, no timestamp 0\n")

        // Exit codes: bad token / environment 64, malformed outcomes 65 (nothing changed), missing file 66.
        #expect(try add("alice", "production", "abc", at: 1).status == 64)
        #expect(try add("alice", "staging", "abcd", at: 1).status == 64)
        #expect(try add("bad/name", "production", "abcd", at: 1).status == 64)
        let bad = dir.appendingPathComponent("bad.jsonl")
        try Data("{\"line\":1,\"deviceToken\":\"dd44\",\"outcome\":\"unregistered\",\"timestamp\":9000}\nnot json\n".utf8).write(to: bad)
        let refused = try RegistryCLITests.run([keys, "token", "invalidate"] + s + ["--app-id", Self.app, "--outcomes", bad.path])
        #expect(refused.status == 65 && refused.stderr.hasPrefix("push-keys: error: outcome line 2 is not a JSON object"))
        try Data("{\"line\":1,\"deviceToken\":\"dd44\",\"outcome\":\"unregistered\",\"timestamp\":9000}\n{\"deviceToken\":\"xyz\",\"outcome\":\"unregistered\",\"timestamp\":1}\n".utf8).write(to: bad)
        #expect(try RegistryCLITests.run([keys, "token", "invalidate"] + s + ["--app-id", Self.app, "--outcomes", bad.path]).status == 65)
        #expect(try RegistryCLITests.run([keys, "token", "list"] + s).stdout.contains("dd44"), "a refused file changes nothing")
        #expect(try RegistryCLITests.run([keys, "token", "invalidate"] + s + ["--app-id", Self.app, "--outcomes", dir.appendingPathComponent("none").path]).status == 66)

        // Audited like key changes, in the store's own trail: each add, each removal with its reason.
        let audit = try Self.auditLines(s, in: dir).filter { ($0["event"] as? String)?.contains("DeviceToken") == true }
        let summary = audit.map { a in
            ["event", "recipient", "token", "reason", "unregisteredAt"].map { k in a[k].map { "\($0)" } ?? "-" }.joined(separator: " ")
        }
        #expect(summary == ["addDeviceToken alice aa11 - -", "removeDeviceToken alice aa11 replaced -", "addDeviceToken alice bb22 - -",
                            "addDeviceToken bob cc33 - -", "addDeviceToken carol dd44 - -", "removeDeviceToken alice bb22 unregistered 3000"])
        #expect(audit.allSatisfy { $0["appId"] as? String == Self.app && $0["environment"] != nil && $0["registeredAt"] is Int && $0["time"] is Int })
        #expect(audit.allSatisfy { $0[store] is String }, "the location member: keychain or registry")
    }

    /// `push-keys token remove` (issue 24, "Forgetting an installation"): one token or every
    /// token of a recipient, whatever its registration time; audited as removeDeviceToken with
    /// reason removed and readable by `push-keys audit --recipient`; an unknown recipient or
    /// token is exit 66 and changes nothing; a bad token 64.
    @Test(arguments: ["keychain", "registry"])
    func removeOneOrEveryToken(_ store: String) throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = RegistryCLITests.tool("push-keys")
        let s = try Self.storeArguments(store, in: dir)
        let app = ["--app-id", Self.app]
        func run(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) { try RegistryCLITests.run([keys] + args) }
        for (r, env, token) in [("alice", "production", "a1a1"), ("alice", "development", "d1d1"), ("bob", "production", "b2b2")] {
            #expect(try run(["token", "add"] + s + app + ["--recipient", r, "--environment", env, "--registered-at", "9000000000000", token]).status == 0)
        }
        // Unknown recipient, unknown token: 66, nothing changed.
        let noOne = try run(["token", "remove"] + s + app + ["--recipient", "carol"])
        #expect(noOne.status == 66 && noOne.stderr.hasPrefix("push-keys: error: com.example.app carol has no device token") && noOne.stderr.contains("hint: "),
                "\(noOne.stderr)")
        let noToken = try run(["token", "remove"] + s + app + ["--recipient", "alice", "--token", "b2b2"])
        #expect(noToken.status == 66 && noToken.stderr.contains("has no device token b2b2"), "\(noToken.stderr)")
        #expect(try run(["token", "remove"] + s + app + ["--recipient", "alice", "--token", "xyz"]).status == 64)
        #expect(try run(["token", "list"] + s).stdout.split(separator: "\n").count == 3)
        // One token (any case), though registered "in the future": removal is not a 410.
        let one = try run(["token", "remove"] + s + app + ["--recipient", "alice", "--token", "D1D1"])
        #expect(one.status == 0 && one.stdout == "com.example.app alice development: removed d1d1\n", "\(one.stdout) \(one.stderr)")
        // Every token of bob, then of alice.
        #expect(try run(["token", "remove"] + s + app + ["--recipient", "bob"]).stdout == "com.example.app bob production: removed b2b2\n")
        let all = try run(["token", "remove"] + s + app + ["--recipient", "alice", "--json"])
        #expect((Self.json(all.stdout)["removed"] as? [[String: Any]])?.map { $0["token"] as? String } == ["a1a1"], "\(all.stdout)")
        #expect(try run(["token", "list"] + s).stdout.isEmpty)
        #expect(try run(["token", "remove"] + s + app + ["--recipient", "alice"]).status == 66, "removing again: nothing left")
        // The audit trail says what happened, per recipient.
        let trail = try run(["audit"] + s + ["--recipient", "alice", "--app-id", Self.app])
        let removals = trail.stdout.split(separator: "\n").map { Self.json(String($0)) }.filter { $0["event"] as? String == "removeDeviceToken" }
        #expect(removals.map { "\($0["token"] ?? "-") \($0["reason"] ?? "-") \($0["environment"] ?? "-")" } == ["d1d1 removed development", "a1a1 removed production"],
                "\(trail.stdout) \(trail.stderr)")
    }

    /// The audit lines of the store of `storeArguments` (the keychain's keys-audit.log, the
    /// registry's pushseal_audit table), as JSON objects, oldest first.
    static func auditLines(_ storeArguments: [String], in dir: URL) throws -> [[String: Any]] {
        let text: String
        if storeArguments.first == "--keychain" {
            text = try String(contentsOfFile: storeArguments[1] + "/keys-audit.log", encoding: .utf8)
        } else {
            text = try PostgresServer.sharedServer().psql(storeArguments[1], "SELECT line FROM pushseal_audit ORDER BY id")
        }
        return text.split(separator: "\n").map { Self.json(String($0)) }
    }

    /// `push-seal batch --device-tokens` on the registry: each line gets its recipient's token of
    /// the environment asked for; a recipient without one gets a noDeviceToken line (exit 2, with the hint).
    @Test func batchLooksTokensUpInTheRegistry() throws {
        let dir = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = RegistryCLITests.tool("push-keys"), seal = RegistryCLITests.tool("push-seal")
        let cs = try PostgresServer.sharedServer().createDatabase()
        let kek = dir.appendingPathComponent("kek").path
        let env = ["PUSHSEAL_REGISTRY": cs, "PUSHSEAL_KEK_FILE": kek]
        #expect(try RegistryCLITests.run([keys, "registry", "migrate"], env: env).status == 0)
        #expect(try RegistryCLITests.run([keys, "registry", "new-kek", "--out", kek]).status == 0)
        for r in ["alice", "bob"] {
            #expect(try RegistryCLITests.run([keys, "generate", "--app-id", Self.app, "--recipient", r], env: env).status == 0)
        }
        for (env2, token) in [("production", "a1a1"), ("development", "d1d1")] {
            #expect(try RegistryCLITests.run([keys, "token", "add", "--app-id", Self.app, "--recipient", "alice", "--environment", env2, token], env: env).status == 0)
        }
        let input = dir.appendingPathComponent("in.jsonl").path
        _ = FileManager.default.createFile(atPath: input, contents: Data("""
            {"recipient":"alice","notification":{"title":"a"}}
            {"recipient":"bob","notification":{"title":"b"}}

            """.utf8))
        func lines(_ out: String) -> [[String: Any]] { out.split(separator: "\n").map { Self.json(String($0)) } }
        let prod = try RegistryCLITests.run([seal, "batch", "--app-id", Self.app, "--device-tokens"], env: env, input: input)
        #expect(prod.status == 2 && prod.stderr.contains("hint: store the app's token: push-keys token add"), "\(prod.stderr)")
        let out = lines(prod.stdout)
        #expect(out.map { $0["line"] as? Int } == [1, 2])
        #expect(out[0]["deviceToken"] as? String == "a1a1" && out[0]["payload"] != nil)
        #expect((out[1]["error"] as? [String: Any])?["code"] as? String == "noDeviceToken")
        let dev = try RegistryCLITests.run([seal, "batch", "--app-id", Self.app, "--device-tokens", "--environment", "development"], env: env, input: input)
        #expect(lines(dev.stdout).first?["deviceToken"] as? String == "d1d1")
        #expect(try RegistryCLITests.run([seal, "batch", "--app-id", Self.app, "--environment", "development"], env: env, input: input).status == 64,
                "--environment without --device-tokens")
        #expect(try RegistryCLITests.run([seal, "batch", "--app-id", Self.app, "--device-tokens", "--environment", "staging"], env: env, input: input).status == 64)
    }
}
