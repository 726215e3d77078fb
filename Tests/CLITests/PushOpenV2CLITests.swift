import Foundation
import Testing

/// `push-open`'s interim version 2 key source (`--v2-device-key-file`, `--v2-key-id`,
/// `--pinned-sender`) on Tests/Vectors/v2 payloads (FORMAT.md §V.11 keys).
@Suite(.serialized) struct PushOpenV2CLITests {
    static let vectors = KeysCLI.repo.appendingPathComponent("Tests/Vectors/v2")
    static let deviceKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    static let record = #"{"format":"pushseal-sender-key","version":2,"appId":"com.example.app","senderKeyId":"oCiYEAMutBcnTuvE","publicKey":"NYBy1jZYgNGu6jKa35EhODhR7SGijjt16WXQ0s0WYlQ="}"#

    /// The payload part of a vector file (after the first blank line).
    static func payload(_ name: String) throws -> Data {
        let text = try String(contentsOf: vectors.appendingPathComponent(name), encoding: .utf8)
        let range = try #require(text.range(of: "\n\n"))
        return Data(text[range.upperBound...].utf8)
    }

    static func setUp(mode: Int = 0o600) throws -> URL {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-open-v2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        #expect(try PushOpenCLITests.run("push-keys", ["keychain", "init", "--keychain", "dev"], in: dir).status == 0)
        let key = dir.appendingPathComponent("device.key")
        try Data((deviceKeyHex + "\n").utf8).write(to: key)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: key.path)
        try Data(record.utf8).write(to: dir.appendingPathComponent("sender.json"))
        return dir
    }

    static func open(_ vector: String, in dir: URL, _ extra: [String]) throws -> PushOpenCLITests.Result {
        try PushOpenCLITests.run("push-open", ["--keychain", "dev", "--app-id", "com.example.app", "--access-group", "T.shared",
                                               "--no-replay-guard"] + extra + ["-"], in: dir, stdin: try payload(vector))
    }

    static let v2Key = ["--v2-device-key-file", "device.key", "--v2-key-id", "7t2IPaCpRRWT3Ao4"]

    @Test func opensAuthAndBaseAndRefusesTheDowngrade() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let auth = try Self.open("ok-auth.vector", in: dir, Self.v2Key + ["--pinned-sender", "sender.json"])
        #expect(auth.status == 0, "\(auth.stdout) \(auth.stderr)")
        #expect(auth.json["title"] as? String == "Lunch?")
        #expect(!auth.stdout.contains(Self.deviceKeyHex) && !auth.stderr.contains(Self.deviceKeyHex))
        let base = try Self.open("ok-base.vector", in: dir, Self.v2Key)
        #expect(base.status == 0, "\(base.stdout) \(base.stderr)")
        let downgrade = try Self.open("ok-base.vector", in: dir, Self.v2Key + ["--pinned-sender", Self.record])
        #expect(downgrade.status == 1)
        #expect(downgrade.json["reason"] as? String == "downgradeRefused")
        let unpinned = try Self.open("ok-auth.vector", in: dir, Self.v2Key)
        #expect(unpinned.json["reason"] as? String == "unknownSenderKey")
        // Without the interim options the keys come from the keychain, which holds none here.
        #expect(try Self.open("ok-auth.vector", in: dir, []).json["reason"] as? String == "unknownSenderKey")
        #expect(try Self.open("ok-base.vector", in: dir, []).json["reason"] as? String == "unknownKey")
    }

    @Test func refusesAnOpenKeyFileAndBadArguments() throws {
        let dir = try Self.setUp(mode: 0o644)
        defer { try? FileManager.default.removeItem(at: dir) }
        let open = try Self.open("ok-base.vector", in: dir, Self.v2Key)
        #expect(open.status == 77)
        #expect(open.stderr.hasPrefix("push-open: error: "))
        #expect(!open.stderr.contains(Self.deviceKeyHex))
        #expect(try Self.open("ok-base.vector", in: dir, ["--v2-device-key-file", "device.key"]).status == 64)
        #expect(try Self.open("ok-base.vector", in: dir, ["--pinned-sender", #"{"format":"x"}"#]).status == 65)
    }
}
