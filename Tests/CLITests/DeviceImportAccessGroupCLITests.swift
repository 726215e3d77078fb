import Foundation
import Testing

/// Issue 28, "Key items and the manifest across access groups", for import (and generate): an
/// app entitled to two keychain groups keeps its key items and its key manifest in one; an
/// import aimed at the other group is refused before anything changes, with the reason and the
/// way out (import into the manifest's group, or migrate first); every key `push-keys` reports
/// as imported opens in `push-open`.
@Suite(.serialized) struct DeviceImportAccessGroupCLITests {
    typealias Open = PushOpenCLITests
    static let app = "com.example.app"
    static let twoGroups = #"{"application-identifier":"TEAM123456.com.example.app","keychain-access-groups":["T.shared","T.second"],"application-groups":["group.x"]}"#
    static let ext = #"{"keychain-access-groups":["T.shared","T.second"],"application-groups":["group.x"]}"#

    /// Seals a notification for `recipient` with the server keychain and opens it on the device.
    static func sealAndOpen(_ recipient: String, in dir: URL) throws -> PushOpenCLITests.Result {
        let sealed = try Open.run("push-seal", ["--app-id", app, "--recipient", recipient, "--keychain", "srv", "--title", "Hi " + recipient, "--body", "b"], in: dir)
        try #require(sealed.status == 0, "\(sealed.stderr)")
        return try Open.run("push-open", ["--keychain", "dev", "--app-id", app, "--entitlements", "ext.json", "--no-replay-guard", "-"], in: dir,
                            stdin: Data(sealed.stdout.utf8))
    }

    static func items(_ dir: URL) throws -> [String: Data] {
        let items = dir.appendingPathComponent("dev/items")
        return Dictionary(uniqueKeysWithValues: try FileManager.default.contentsOfDirectory(atPath: items.path).map {
            ($0, try Data(contentsOf: items.appendingPathComponent($0)))
        })
    }

    @Test func anImportAimedAtAnotherGroupThanTheManifestsIsRefusedAndEveryImportedKeyOpens() throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-import-groups-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Self.twoGroups.write(to: dir.appendingPathComponent("app.json"), atomically: true, encoding: .utf8)
        try Self.ext.write(to: dir.appendingPathComponent("ext.json"), atomically: true, encoding: .utf8)
        #expect(try Open.run("push-keys", ["keychain", "init", "--keychain", "dev"], in: dir).status == 0)
        for r in ["r1", "r2", "r3"] {
            #expect(try Open.run("push-keys", ["generate", "--keychain", "srv", "--app-id", Self.app, "--recipient", r], in: dir).status == 0)
            #expect(try Open.run("push-keys", ["export", "--keychain", "srv", "--app-id", Self.app, "--recipient", r, "--out", r + ".json"], in: dir).status == 0)
        }
        // r1 into the identity's first group: the manifest lives there.
        let first = try Open.run("push-keys", ["import", "--keychain", "dev", "--entitlements", "app.json", "r1.json"], in: dir)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try Self.sealAndOpen("r1", in: dir).json["outcome"] as? String == "decrypted")
        // r2 aimed at the other group: refused before anything changes, saying why and what to do.
        let before = try Self.items(dir)
        let split = try Open.run("push-keys", ["import", "--keychain", "dev", "--entitlements", "app.json", "--access-group", "T.second", "r2.json", "--json"], in: dir)
        #expect(split.status == 65 && (split.json["error"] as? [String: Any])?["code"] as? String == "accessGroupMismatch", "\(split.stdout) \(split.stderr)")
        let text = try Open.run("push-keys", ["import", "--keychain", "dev", "--entitlements", "app.json", "--access-group", "T.second", "r2.json"], in: dir)
        #expect(text.stderr.contains("T.shared") && text.stderr.contains("hint: ") && text.stderr.contains("keychain migrate"), "\(text.stderr)")
        // generate aimed there is refused the same way.
        let generated = try Open.run("push-keys", ["generate", "--keychain", "dev", "--entitlements", "app.json", "--access-group", "T.second",
                                                   "--app-id", Self.app, "--recipient", "r9"], in: dir)
        #expect(generated.status == 65, "\(generated.stderr)")
        #expect(try Self.items(dir) == before)
        // Into the manifest's group it goes, and it opens; so does r1 still.
        let same = try Open.run("push-keys", ["import", "--keychain", "dev", "--entitlements", "app.json", "--access-group", "T.shared", "r2.json"], in: dir)
        #expect(same.status == 0, "\(same.stderr)")
        #expect(try Self.sealAndOpen("r2", in: dir).json["outcome"] as? String == "decrypted")
        #expect(try Self.sealAndOpen("r1", in: dir).json["outcome"] as? String == "decrypted")
        // Moved together (keychain migrate), the other group takes imports, and every key opens.
        let moved = try Open.run("push-keys", ["keychain", "migrate", "--keychain", "dev", "--from", "T.shared", "--to", "T.second", "--app-id", Self.app], in: dir)
        #expect(moved.status == 0, "\(moved.stderr)")
        let after = try Open.run("push-keys", ["import", "--keychain", "dev", "--entitlements", "app.json", "--access-group", "T.second", "r3.json"], in: dir)
        #expect(after.status == 0, "\(after.stderr)")
        #expect(try Open.run("push-keys", ["import", "--keychain", "dev", "--entitlements", "app.json", "--access-group", "T.shared", "r1.json"], in: dir).status == 65)
        for r in ["r1", "r2", "r3"] {
            let opened = try Self.sealAndOpen(r, in: dir)
            #expect(opened.json["outcome"] as? String == "decrypted", "\(r): \(opened.stdout)")
        }
    }
}
