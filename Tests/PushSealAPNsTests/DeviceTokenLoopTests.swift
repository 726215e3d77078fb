import PushSealTestSupport
import Foundation
import Testing

/// The whole device token loop (issue 15): tokens added with `push-keys token add`, `push-seal
/// batch --device-tokens | push-send` against the mock APNs (which answers 410 for two of them),
/// `push-keys token invalidate` on the outcomes: the dead token registered before the 410 is
/// removed; the one its app registered again after the 410 is kept. On a server keychain and on
/// the PostgreSQL registry (a throwaway server started by the test, Tests/PushSealRegistryTests/PostgresServer.swift).
@Suite("device tokens: push-seal batch --device-tokens | push-send | push-keys token invalidate", .serialized)
struct DeviceTokenLoopTests {
    /// The store arguments for `store` ("keychain": a new server keychain; "registry": a new,
    /// migrated database of the throwaway PostgreSQL and a new KEK file).
    static func storeArguments(_ store: String, in dir: URL, keys: (([String]) throws -> ToolResult)) throws -> [String] {
        guard store == "registry" else { return ["--keychain", dir.appendingPathComponent("kc").path] }
        let cs = try PostgresServer.sharedServer().createDatabase()
        let kek = dir.appendingPathComponent("kek").path
        #expect(try keys(["registry", "migrate", "--registry", cs]).status == 0)
        #expect(try keys(["registry", "new-kek", "--out", kek]).status == 0)
        return ["--registry", cs, "--kek-file", kek]
    }

    @Test(arguments: ["keychain", "registry"])
    func tokensLookedUpSentAndInvalidatedByTheirRegistrationTime(_ store: String) throws {
        let dir = try TemporaryDirectory("token-loop")
        defer { dir.remove() }
        let pushKeys = try #require(builtTool("push-keys"), "push-keys is not built")
        let pushSeal = try #require(builtTool("push-seal"), "push-seal is not built")
        let app = MockAPNs.topic
        let dead: Int64 = 1_800_000_003_000
        func keys(_ args: [String]) throws -> ToolResult { try runTool(pushKeys, args) }
        let s = try Self.storeArguments(store, in: dir.url, keys: keys)
        func add(_ r: String, _ t: String, at ms: Int64) throws {
            let added = try keys(["token", "add"] + s + ["--app-id", app, "--recipient", r, "--environment", "production", "--registered-at", String(ms), t])
            #expect(added.status == 0, "\(added.stderr)")
        }
        for r in ["alice", "bob", "carol", "dave"] {
            #expect(try keys(["generate"] + s + ["--app-id", app, "--recipient", r]).status == 0)
        }
        try add("alice", token(1), at: dead - 2_000)
        try add("bob", token(2), at: dead - 2_000)      // dead since `dead`: removed
        try add("carol", token(3), at: dead - 2_000)    // dead since `dead`, registered again below: kept
        // dave has no token; the last line gives its own.
        let input = ["alice", "bob", "carol", "dave"].map { #"{"recipient":"\#($0)","notification":{"title":"hi \#($0)"}}"# }
            + [#"{"recipient":"alice","deviceToken":"\#(token(9))","notification":{"title":"own token"}}"#]
        let sealed = try runTool(pushSeal, ["batch", "--app-id", app] + s + ["--device-tokens", "-"],
                                 stdin: Data((input.joined(separator: "\n") + "\n").utf8))
        #expect(sealed.status == 2, "dave's line fails: \(sealed.stderr)")
        let lines = try PushSend.outcomes(sealed.stdout)
        #expect(lines.map { $0["line"] as? Int } == [1, 2, 3, 4, 5], "one output line per input line, numbered as the input")
        #expect(lines.map { $0["deviceToken"] as? String } == [token(1), token(2), token(3), nil, token(9)])
        #expect((lines[3]["error"] as? [String: Any])?["code"] as? String == "noDeviceToken" && lines[3]["payload"] == nil)

        let mock = try MockAPNs(["unregistered": [token(2): dead, token(3): dead]])
        let sent = try PushSend.run(PushSend.base(mock) + ["-"], stdin: sealed.stdout)
        mock.stop()
        let outcomes = try PushSend.outcomes(sent.stdout)
        let byLine = Dictionary(uniqueKeysWithValues: outcomes.map { ($0["line"] as? Int ?? 0, $0) })
        #expect(outcomes.count == 5)
        #expect(byLine[1]?["outcome"] as? String == "accepted" && byLine[5]?["outcome"] as? String == "accepted", "\(sent.stdout)\(sent.stderr)")
        #expect(byLine[2]?["outcome"] as? String == "unregistered" && byLine[2]?["timestamp"] as? Int == Int(dead))
        #expect(byLine[3]?["outcome"] as? String == "unregistered" && byLine[4]?["outcome"] as? String == "failed")
        #expect(Set(try mock.answered().compactMap { $0["token"] as? String }) == [token(1), token(2), token(3), token(9)])

        // carol's app registers the same token again after APNs' 410, before the outcomes are applied.
        try add("carol", token(3), at: dead + 500)
        let file = dir.url.appendingPathComponent("outcomes.jsonl")
        try Data(sent.stdout.utf8).write(to: file)
        let applied = try keys(["token", "invalidate"] + s + ["--app-id", app, "--outcomes", file.path])
        #expect(applied.status == 0 && applied.stdout == "invalidated 1, kept (re-registered) 1, unknown 0, no timestamp 0\n", "\(applied.stderr)")
        let left = try keys(["token", "list"] + s + ["--app-id", app])
        #expect(left.stdout == "\(app) alice production \(token(1)) \(dead - 2_000)\n\(app) carol production \(token(3)) \(dead + 500)\n")
        // The next batch has no token for bob any more.
        let again = try runTool(pushSeal, ["batch", "--app-id", app] + s + ["--device-tokens", "-"], stdin: Data((input[1] + "\n").utf8))
        #expect(((try PushSend.outcomes(again.stdout).first?["error"]) as? [String: Any])?["code"] as? String == "noDeviceToken")
    }
}
