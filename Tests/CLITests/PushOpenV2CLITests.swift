import Foundation
import Testing

/// `push-open` on Tests/Vectors/v2 payloads (FORMAT.md §V.11 keys), the keys provisioned as an
/// app does: the device key by `push-keys device import`, the sender key by `device pin-sender`,
/// both read back from the keychain by the real extension.
@Suite(.serialized) struct PushOpenV2CLITests {
    static let vectors = KeysCLI.repo.appendingPathComponent("Tests/Vectors/v2")
    static let deviceKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    static let record = #"{"format":"pushseal-sender-key","version":2,"appId":"com.example.app","senderKeyId":"oCiYEAMutBcnTuvE","publicKey":"NYBy1jZYgNGu6jKa35EhODhR7SGijjt16WXQ0s0WYlQ="}"#
    static let identity = ["--access-group", "T.shared"]

    /// The payload part of a vector file (after the first blank line).
    static func payload(_ name: String) throws -> Data {
        let text = try String(contentsOf: vectors.appendingPathComponent(name), encoding: .utf8)
        let range = try #require(text.range(of: "\n\n"))
        return Data(text[range.upperBound...].utf8)
    }

    /// A device keychain `dev` holding the vectors' device key (imported from a 0600 file).
    static func setUp() throws -> URL {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-open-v2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        #expect(try PushOpenCLITests.run("push-keys", ["keychain", "init", "--keychain", "dev"], in: dir).status == 0)
        let key = dir.appendingPathComponent("device.key")
        try Data((deviceKeyHex + "\n").utf8).write(to: key)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key.path)
        let imported = try PushOpenCLITests.run("push-keys", ["device", "import", "--keychain", "dev"] + identity
            + ["--app-id", "com.example.app", "--key-file", "device.key", "--key-id", "7t2IPaCpRRWT3Ao4"], in: dir)
        #expect(imported.status == 0, "\(imported.stderr)")
        try Data(record.utf8).write(to: dir.appendingPathComponent("sender.json"))
        return dir
    }

    static func pin(in dir: URL) throws {
        let r = try PushOpenCLITests.run("push-keys", ["device", "pin-sender", "--keychain", "dev"] + identity + ["--app-id", "com.example.app", "sender.json"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
    }

    static func open(_ vector: String, in dir: URL, _ extra: [String] = []) throws -> PushOpenCLITests.Result {
        try PushOpenCLITests.run("push-open", ["--keychain", "dev", "--app-id", "com.example.app"] + identity
                                 + ["--no-replay-guard"] + extra + ["-"], in: dir, stdin: try payload(vector))
    }

    @Test func opensAuthAndBaseAndRefusesTheDowngrade() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let base = try Self.open("ok-base.vector", in: dir)
        #expect(base.status == 0, "\(base.stdout) \(base.stderr)")
        let unpinned = try Self.open("ok-auth.vector", in: dir)
        #expect(unpinned.json["reason"] as? String == "unknownSenderKey")
        try Self.pin(in: dir)
        let auth = try Self.open("ok-auth.vector", in: dir)
        #expect(auth.status == 0, "\(auth.stdout) \(auth.stderr)")
        #expect(auth.json["title"] as? String == "Lunch?")
        #expect(!auth.stdout.contains(Self.deviceKeyHex) && !auth.stderr.contains(Self.deviceKeyHex))
        let downgrade = try Self.open("ok-base.vector", in: dir)
        #expect(downgrade.status == 1)
        #expect(downgrade.json["reason"] as? String == "downgradeRefused")
        #expect(try Self.open("unknown-sender-key.vector", in: dir).json["reason"] as? String == "unknownSenderKey")
    }

    @Test func theInterimKeyOptionsAreGone() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        for option in [["--v2-device-key-file", "device.key"], ["--v2-key-id", "7t2IPaCpRRWT3Ao4"], ["--pinned-sender", "sender.json"]] {
            let r = try Self.open("ok-base.vector", in: dir, option)
            #expect(r.status == 64, "\(option): \(r.stderr)")
        }
    }

    /// Newcomer friction 16: the two commonest Xcode mistakes in auth mode are reported as what
    /// they are, before any sender check (0031154 said `unknownSenderKey`, "pin it", for both).
    @Test func aWrongAppIDAndAMissingKeychainGroupAreReportedBeforeTheSenderCheck() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Self.pin(in: dir)
        // PushSealAppID set to the extension's own bundle id.
        let wrongApp = try PushOpenCLITests.run("push-open", ["--keychain", "dev", "--app-id", "com.example.app.NotificationService"] + Self.identity
                                                + ["--no-replay-guard", "-"], in: dir, stdin: try Self.payload("ok-auth.vector"))
        #expect(wrongApp.json["reason"] as? String == "wrongAppID", "\(wrongApp.stdout)")
        let detail = wrongApp.json["detail"] as? String ?? ""
        #expect(detail.contains("com.example.app.NotificationService") && detail.contains("app com.example.app,"), "\(detail)")
        // No Keychain Sharing: the extension has only its own group; naming the app's group is
        // -34018, searching its own groups finds nothing of the app (-25300).
        let own = ["--access-group", "T.com.example.app.NotificationService"]
        let searched = try PushOpenCLITests.run("push-open", ["--keychain", "dev", "--app-id", "com.example.app"] + own
                                                + ["--no-replay-guard", "-"], in: dir, stdin: try Self.payload("ok-auth.vector"))
        #expect(searched.json["reason"] as? String == "keychain:errSecItemNotFound(-25300)", "\(searched.stdout)")
        #expect((searched.json["detail"] as? String ?? "").contains("Keychain Sharing"))
        try #"{"keychain-access-groups": ["T.com.example.app.NotificationService"]}"#.write(to: dir.appendingPathComponent("ext.json"), atomically: true, encoding: .utf8)
        let named = try PushOpenCLITests.run("push-open", ["--keychain", "dev", "--app-id", "com.example.app", "--entitlements", "ext.json",
                                                           "--access-group", "T.shared", "--no-replay-guard", "-"], in: dir, stdin: try Self.payload("ok-auth.vector"))
        #expect(named.json["reason"] as? String == "keychain:errSecMissingEntitlement(-34018)", "\(named.stdout)")
        // A key id the app simply does not have is still the sender check's or the key's own reason.
        #expect(try Self.open("unknown-sender-key.vector", in: dir).json["reason"] as? String == "unknownSenderKey")
    }
}

