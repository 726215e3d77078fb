import Foundation
import Testing
import PushSealTestSupport

/// Issue 28, "Key items and the manifest across access groups", for the rotations: an app
/// entitled to two keychain groups keeps its key items and its key manifest in one, so
/// `push-keys rotate --device-keychain`, `device rotate`, `device promote` and `device
/// pin-sender` aimed at the other group (or at the identity's first group, when the items are
/// in the second) are refused (65 accessGroupMismatch) before any file of either keychain
/// changes; aimed at the manifest's group they go through, and every key `push-keys` prints as
/// current opens in `push-open`. Every combination of manifest group and target group is run.
@Suite(.serialized) struct DeviceRotateAccessGroupCLITests {
    typealias Open = PushOpenCLITests
    typealias Life = DeviceKeyLifecycleCLITests
    static let app = DeviceImportAccessGroupCLITests.app
    static let groups = ["T.shared", "T.second"]
    /// The write groups a command may aim at: each group, and none (the identity's first, T.shared).
    static let targets: [String?] = ["T.shared", "T.second", nil]

    /// Every regular file under `dir` (relative path → bytes).
    static func files(_ dir: URL) throws -> [String: Data] {
        var out: [String: Data] = [:]
        let root = dir.standardizedFileURL.path
        guard let walk = FileManager.default.enumerator(atPath: root) else { return out }
        for case let path as String in walk {
            let url = URL(fileURLWithPath: root).appendingPathComponent(path)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                out[path] = try Data(contentsOf: url)
            }
        }
        return out
    }

    static func makeDirectory(_ name: String) throws -> URL {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try DeviceImportAccessGroupCLITests.twoGroups.write(to: dir.appendingPathComponent("app.json"), atomically: true, encoding: .utf8)
        try DeviceImportAccessGroupCLITests.ext.write(to: dir.appendingPathComponent("ext.json"), atomically: true, encoding: .utf8)
        #expect(try Open.run("push-keys", ["keychain", "init", "--keychain", "dev"], in: dir).status == 0)
        return dir
    }

    /// `--access-group G` after `--entitlements app.json`, or nothing (the identity's first group).
    static func aim(_ group: String?, prefix: String = "") -> [String] {
        ["--\(prefix)entitlements", "app.json"] + (group.map { ["--\(prefix)access-group", $0] } ?? [])
    }

    /// A refused write: 65 accessGroupMismatch naming the manifest's group, with the migrate hint, and no file changed.
    static func expectRefused(_ args: [String], in dir: URL, held: String, stdin: Data? = nil,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let before = try files(dir)
        let r = try Open.run("push-keys", args + ["--json"], in: dir, stdin: stdin)
        let code = (r.json["error"] as? [String: Any])?["code"] as? String
        #expect(r.status == 65 && code == "accessGroupMismatch", "\(args): \(r.status) \(r.stdout) \(r.stderr)", sourceLocation: sourceLocation)
        let text = try Open.run("push-keys", args, in: dir, stdin: stdin)
        #expect(text.status == 65 && text.stderr.contains(held) && text.stderr.contains("hint: ") && text.stderr.contains("keychain migrate"),
                "\(text.stderr)", sourceLocation: sourceLocation)
        #expect(try files(dir) == before, "\(args) changed a file", sourceLocation: sourceLocation)
    }

    @Test(arguments: groups, targets)
    func serverRotationInstallsOnlyIntoTheManifestsGroupAndTheKeyItPrintsOpens(manifest: String, target: String?) throws {
        let dir = try Self.makeDirectory("rotate-groups")
        defer { try? FileManager.default.removeItem(at: dir) }
        let name = ["--app-id", Self.app, "--recipient", "r1"]
        #expect(try Open.run("push-keys", ["generate", "--keychain", "srv"] + name + ["--now", "1796000000"], in: dir).status == 0)
        #expect(try Open.run("push-keys", ["export", "--keychain", "srv"] + name + ["--out", "r1.json"], in: dir).status == 0)
        let imported = try Open.run("push-keys", ["import", "--keychain", "dev"] + Self.aim(manifest) + ["r1.json"], in: dir)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try DeviceImportAccessGroupCLITests.sealAndOpen("r1", in: dir).json["outcome"] as? String == "decrypted")
        let rotate = ["rotate", "--keychain", "srv"] + name + ["--device-keychain", "dev"] + Self.aim(target, prefix: "device-") + ["--now", "1796000100"]
        guard (target ?? Self.groups[0]) == manifest else {
            try Self.expectRefused(rotate, in: dir, held: "--device-access-group " + manifest)
            // Refused before the server keyset changed: the old key still seals and opens.
            #expect(try DeviceImportAccessGroupCLITests.sealAndOpen("r1", in: dir).json["outcome"] as? String == "decrypted")
            return
        }
        let rotated = try Open.run("push-keys", rotate, in: dir)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let keyID = rotated.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // The key push-keys printed is the device's current key, in the manifest's group, and it opens.
        let listed = try Open.run("push-keys", ["device", "list", "--keychain", "dev", "--entitlements", "ext.json", "--app-id", Self.app, "--json"], in: dir)
        let rows = try #require(listed.json["keys"] as? [[String: Any]], "\(listed.stdout) \(listed.stderr)")
        let row = try #require(rows.first { $0["keyId"] as? String == keyID }, "\(keyID) not in \(listed.stdout)")
        #expect(row["status"] as? String == "primary" && row["accessGroup"] as? String == manifest && row["rolledBack"] as? Bool == false, "\(row)")
        #expect(Set(rows.compactMap { $0["accessGroup"] as? String }) == [manifest])
        let opened = try DeviceImportAccessGroupCLITests.sealAndOpen("r1", in: dir)
        #expect(opened.json["outcome"] as? String == "decrypted", "\(opened.stdout)")
    }

    @Test(arguments: groups, targets)
    func deviceRotatePromoteAndPinsWriteOnlyIntoTheManifestsGroupAndTheCurrentKeyOpens(manifest: String, target: String?) throws {
        let dir = try Self.makeDirectory("device-rotate-groups")
        defer { try? FileManager.default.removeItem(at: dir) }
        let t0 = Life.t0
        func device(_ command: String, _ group: String?, _ extra: [String], now: Int64) -> [String] {
            ["device", command, "--keychain", "dev"] + Self.aim(group) + ["--app-id", Self.app, "--now", String(now)] + extra
        }
        func open(_ payload: Data) throws -> PushOpenCLITests.Result {
            try Open.run("push-open", ["--keychain", "dev", "--app-id", Self.app, "--entitlements", "ext.json", "--no-replay-guard", "--now", String(t0 + 50), "-"],
                         in: dir, stdin: payload)
        }
        let generated = try Open.run("push-keys", device("generate", manifest, [], now: t0), in: dir)
        #expect(generated.status == 0, "\(generated.stderr)")
        let first = generated.json
        let consistent = (target ?? Self.groups[0]) == manifest
        let sender = try Life.Sender("snd-1")
        if !consistent {
            try Self.expectRefused(device("rotate", target, [], now: t0 + 10), in: dir, held: manifest)
            try Self.expectRefused(device("pin-sender", target, ["-"], now: t0 + 10), in: dir, held: manifest, stdin: Data(sender.record().utf8))
        }
        // The rotation itself in the manifest's group; the promote is then aimed at `target`.
        let rotated = try Open.run("push-keys", device("rotate", manifest, ["--json"], now: t0 + 10), in: dir)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let second = try #require(rotated.json["registration"] as? [String: Any], "\(rotated.stdout)")
        let newID = try #require(second["keyId"] as? String)
        let promote = device("promote", target, ["--key-id", newID], now: t0 + 20)
        guard consistent else {
            try Self.expectRefused(promote, in: dir, held: manifest)
            // Nothing changed: the old key is still primary and opens; the pending one opens too.
            #expect(try open(try Life.seal(to: first, iat: t0 + 30)).json["outcome"] as? String == "decrypted")
            #expect(try open(try Life.seal(to: second, iat: t0 + 30)).json["outcome"] as? String == "decrypted")
            return
        }
        let promoted = try Open.run("push-keys", promote, in: dir)
        #expect(promoted.status == 0 && promoted.stdout == newID + "\n", "\(promoted.stdout) \(promoted.stderr)")
        let pinned = try Open.run("push-keys", device("pin-sender", target, ["-"], now: t0 + 20), in: dir, stdin: Data(sender.record().utf8))
        #expect(pinned.status == 0, "\(pinned.stderr)")
        // The key push-keys printed as primary opens (base and, by the pin, auth mode), from the manifest's group.
        let listed = try Open.run("push-keys", ["device", "list", "--keychain", "dev", "--entitlements", "ext.json", "--app-id", Self.app, "--json"], in: dir)
        let rows = try #require(listed.json["keys"] as? [[String: Any]])
        #expect(rows.first { $0["keyId"] as? String == newID }?["status"] as? String == "primary", "\(listed.stdout)")
        #expect(Set(rows.compactMap { $0["accessGroup"] as? String }) == [manifest], "\(listed.stdout)")
        #expect(rows.allSatisfy { $0["rolledBack"] as? Bool == false }, "\(listed.stdout)")
        let auth = try open(try Life.seal(to: second, by: sender, iat: t0 + 30))
        #expect(auth.json["outcome"] as? String == "decrypted", "\(auth.stdout)")
    }
}
