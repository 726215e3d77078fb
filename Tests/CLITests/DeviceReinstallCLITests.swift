import Foundation
import Testing
import PushSealTestSupport

/// The first run after a reinstall (issue 28): keychain items outlive an uninstall, the App Group
/// container does not; without the install marker, `push-keys device generate` removes PushSeal's
/// leftover items of the app (never another service's) so exactly one current key remains.
@Suite(.serialized) struct DeviceReinstallCLITests {
    typealias Life = DeviceKeyLifecycleCLITests
    static let identity = ["--access-group", "T.shared", "--app-group", "group.x"]

    static func generate(_ dir: TemporaryDirectory, now: Int64) throws -> PushOpenCLITests.Result {
        try Life.keys(["device", "generate", "--keychain", "kc"] + identity + ["--app-id", Life.app, "--now", String(now)], in: dir)
    }

    @Test func aReinstallRemovesOnlyPushSealsLeftoversAndLeavesOneKey() throws {
        let dir = try Life.setUp()
        defer { dir.remove() }
        let first = try Self.generate(dir, now: Life.t0)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("kc/app-groups/group.x/pushseal-install.marker").path))
        #expect(try Life.keys(["keychain", "add", "--keychain", "kc", "--access-group", "T.shared", "--service", "other.service", "--account", "a",
                               "--data-file", "-"], in: dir, stdin: Data("hello".utf8)).status == 0)
        // The same install: one v2 device key per app, as before.
        #expect(try Self.generate(dir, now: Life.t0 + 1).status == 73)
        // Uninstall (the container goes, the keychain items stay), then the first run of the new install.
        try FileManager.default.removeItem(at: dir.url.appendingPathComponent("kc/app-groups/group.x"))
        let second = try Self.generate(dir, now: Life.t0 + 2)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("removed 2 leftover PushSeal items"), "\(second.stderr)")
        let newID = try #require(second.json["keyId"] as? String)
        #expect(newID != first.json["keyId"] as? String)
        let keys = try Life.keys(["device", "list", "--keychain", "kc", "--access-group", "T.shared", "--app-id", Life.app, "--json"], in: dir)
        let rows = keys.json["keys"] as? [[String: Any]] ?? []
        #expect(rows.count == 1 && rows.first?["keyId"] as? String == newID && rows.first?["status"] as? String == "primary", "\(keys.stdout)")
        #expect(try Life.keys(["keychain", "get", "--keychain", "kc", "--access-group", "T.shared", "--service", "other.service", "--account", "a"], in: dir).status == 0)
        // The new key opens in the extension.
        let opened = try PushOpenCLITests.run("push-open", ["--keychain", "kc", "--app-id", Life.app] + Self.identity + ["--no-replay-guard", "--now", String(Life.t0 + 10), "-"],
                                              in: dir.url, stdin: try Life.seal(to: second.json, iat: Life.t0 + 3))
        #expect(opened.json["outcome"] as? String == "decrypted", "\(opened.stdout)")
    }

    /// An app updated from before the marker (its container already holds PushSeal's files):
    /// nothing is removed.
    @Test func anUpdateFromBeforeTheMarkerRemovesNothing() throws {
        let dir = try Life.setUp()
        defer { dir.remove() }
        #expect(try Self.generate(dir, now: Life.t0).status == 0)
        let container = dir.url.appendingPathComponent("kc/app-groups/group.x")
        try FileManager.default.removeItem(at: container.appendingPathComponent("pushseal-install.marker"))
        #expect(FileManager.default.createFile(atPath: container.appendingPathComponent("pushseal-replay-guard.json").path, contents: Data("{}".utf8),
                                               attributes: [.posixPermissions: 0o600]))
        let again = try Self.generate(dir, now: Life.t0 + 1)
        #expect(again.status == 73, "\(again.stderr)")  // the existing key stays; no leftovers removed
        #expect(!again.stderr.contains("leftover"))
    }
}
