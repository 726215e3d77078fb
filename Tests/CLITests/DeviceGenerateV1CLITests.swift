import Foundation
import Testing

/// Issue 28, "Reinstall and restore": `push-keys generate` on a device keychain writes the
/// per-key item layout the iOS reference reads (a kind 1 key item and the app's key manifest,
/// docs/keychain.md "Device key items"), never the legacy keyset layout; `push-keys export`
/// exports it for the server, and `push-open` opens what the server seals to it.
@Suite(.serialized) struct DeviceGenerateV1CLITests {
    typealias Open = PushOpenCLITests
    static let app = "com.example.app"
    static let identity = ["--access-group", "T.shared", "--app-group", "group.x"]

    /// The device keychain's items as `keychain list --json` shows them (every group).
    static func items(_ dir: URL) throws -> [[String: Any]] {
        let listed = try Open.run("push-keys", ["keychain", "list", "--keychain", "dev", "--json"], in: dir)
        #expect(listed.status == 0, "\(listed.stderr)")
        return listed.json["items"] as? [[String: Any]] ?? []
    }

    @Test func generateOnADeviceKeychainWritesKeyItemsThatOpen() throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-gen-v1-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try Open.run("push-keys", ["keychain", "init", "--keychain", "dev"], in: dir).status == 0)
        let generated = try Open.run("push-keys", ["generate", "--keychain", "dev"] + Self.identity
                                     + ["--app-id", Self.app, "--recipient", "device", "--json"], in: dir)
        #expect(generated.status == 0, "\(generated.stderr)")
        let keyID = try #require(generated.json["keyId"] as? String, "\(generated.stdout)")
        #expect(generated.json["layout"] as? String == "deviceItems")
        // One kind 1 key item and the manifest, in the shared group; no keyset item, no generation counter.
        let items = try Self.items(dir)
        let services = items.map { "\($0["service"] as? String ?? "")|\($0["account"] as? String ?? "")" }.sorted()
        #expect(services == ["pushseal.key:\(Self.app)|\(keyID)", "pushseal.manifest:\(Self.app)|manifest"], "\(items)")
        #expect(!items.contains { ($0["service"] as? String)?.hasPrefix("pushseal.keyset") == true })
        let key = try #require(items.first { $0["service"] as? String == "pushseal.key:\(Self.app)" })
        #expect(key["label"] as? String == "PushSeal v1 key" && key["accessibility"] as? String == "afterFirstUnlockThisDeviceOnly"
                && key["accessGroup"] as? String == "T.shared", "\(key)")
        // device list reads it as a kind 1 key item (not a keyset-held key).
        let listed = try Open.run("push-keys", ["device", "list", "--keychain", "dev"] + Self.identity + ["--app-id", Self.app, "--json"], in: dir)
        let rows = listed.json["keys"] as? [[String: Any]] ?? []
        #expect(rows.count == 1 && rows.first?["kind"] as? String == "v1" && rows.first?["keyId"] as? String == keyID
                && rows.first?["status"] as? String == "primary" && rows.first?["keyset"] is NSNull
                && rows.first?["rolledBack"] as? Bool == false, "\(listed.stdout)")
        // The install marker: generate is a run of the app.
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("dev/app-groups/group.x/pushseal-install.marker").path))
        // Device generates, server imports: export from the items, import on the server, seal, open.
        let exported = try Open.run("push-keys", ["export", "--keychain", "dev"] + Self.identity
                                    + ["--app-id", Self.app, "--recipient", "device", "--out", "rec.json"], in: dir)
        #expect(exported.status == 0, "\(exported.stderr)")
        let imported = try Open.run("push-keys", ["import", "--keychain", "srv", "--app-id", Self.app, "rec.json", "--json"], in: dir)
        #expect(imported.status == 0 && imported.json["changedKeyIds"] as? [String] == [keyID], "\(imported.stdout) \(imported.stderr)")
        let sealed = try Open.run("push-seal", ["--app-id", Self.app, "--recipient", "device", "--keychain", "srv", "--title", "Lunch?", "--body", "Noon"], in: dir)
        try #require(sealed.status == 0, "\(sealed.stderr)")
        #expect(sealed.json["key_id"] as? String == keyID, "\(sealed.stdout)")
        let opened = try Open.run("push-open", ["--keychain", "dev", "--app-id", Self.app] + Self.identity + ["-"], in: dir, stdin: Data(sealed.stdout.utf8))
        #expect(opened.status == 0 && opened.json["outcome"] as? String == "decrypted" && opened.json["title"] as? String == "Lunch?",
                "\(opened.stdout) \(opened.stderr)")
        // generate never replaces a key: a second one is refused, nothing changed.
        let before = try Self.items(dir).map { "\($0["service"] ?? "")|\($0["account"] ?? "")|\($0["modificationDate"] ?? "")" }
        let twice = try Open.run("push-keys", ["generate", "--keychain", "dev"] + Self.identity + ["--app-id", Self.app, "--recipient", "device"], in: dir)
        #expect(twice.status == 73 && twice.stderr.contains("already has a current v1 key")
                && twice.stderr.contains("hint: "), "\(twice.stderr)")
        #expect(try Self.items(dir).map { "\($0["service"] ?? "")|\($0["account"] ?? "")|\($0["modificationDate"] ?? "")" } == before)
        // Device key items are afterFirstUnlockThisDeviceOnly: another class is a usage error.
        let acc = try Open.run("push-keys", ["generate", "--keychain", "dev"] + Self.identity
                               + ["--app-id", "com.example.other", "--recipient", "device", "--accessibility", "whenUnlocked"], in: dir)
        #expect(acc.status == 64, "\(acc.stderr)")
    }
}
