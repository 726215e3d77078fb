import Foundation
import Testing
import PushSealTestSupport

/// `push-keys keychain migrate --from G1 --to G2 [--app-id A]` (issue 28): every PushSeal item
/// moves with its manifest, the extension opens from the new group, a rerun is a no-op, and a
/// target holding another item of the same name refuses with nothing changed.
@Suite(.serialized) struct KeychainMigrateCLITests {
    typealias Life = DeviceKeyLifecycleCLITests
    static let old = "T.com.example.app", new = "T.shared"

    static func keys(_ args: [String], in dir: TemporaryDirectory) throws -> PushOpenCLITests.Result {
        try Life.keys(args, in: dir)
    }

    /// Every file of the keychain's items/ directory with its bytes.
    static func items(_ dir: TemporaryDirectory) throws -> [String: Data] {
        let items = dir.url.appendingPathComponent("kc/items")
        var out: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: items.path) {
            out[name] = try Data(contentsOf: items.appendingPathComponent(name))
        }
        return out
    }

    @Test func keysMoveWithTheirManifestAndTheExtensionOpensFromTheNewGroup() throws {
        let dir = try Life.setUp()
        defer { dir.remove() }
        let generated = try Self.keys(["device", "generate", "--keychain", "kc", "--access-group", Self.old, "--access-group", Self.new,
                                       "--app-id", Life.app, "--now", String(Life.t0)], in: dir)
        #expect(generated.status == 0, "\(generated.stderr)")
        let sender = try Life.Sender("snd-1")
        let pinned = try Life.keys(["device", "pin-sender", "--keychain", "kc", "--access-group", Self.old, "--access-group", Self.new,
                                    "--app-id", Life.app, "--now", String(Life.t0), "-"], in: dir, stdin: Data(sender.record().utf8))
        #expect(pinned.status == 0, "\(pinned.stderr)")
        // An unrelated item of another service in the old group stays where it is.
        #expect(try Life.keys(["keychain", "add", "--keychain", "kc", "--access-group", Self.old, "--service", "other.service", "--account", "a",
                               "--data-file", "-"], in: dir, stdin: Data("hello".utf8)).status == 0)

        let moved = try Self.keys(["keychain", "migrate", "--keychain", "kc", "--from", Self.old, "--to", Self.new, "--app-id", Life.app, "--json"], in: dir)
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.json["copied"] as? Int == 3 && moved.json["deleted"] as? Int == 3, "\(moved.stdout)")  // device key, pin, manifest
        let payload = try Life.seal(to: generated.json, by: sender, iat: Life.t0)
        let opened = try PushOpenCLITests.run("push-open", ["--keychain", "kc", "--app-id", Life.app, "--access-group", Self.new,
                                                            "--no-replay-guard", "--now", String(Life.t0 + 10), "-"], in: dir.url, stdin: payload)
        #expect(opened.json["outcome"] as? String == "decrypted", "\(opened.stdout)")
        let oldGroup = try PushOpenCLITests.run("push-open", ["--keychain", "kc", "--app-id", Life.app, "--access-group", Self.old,
                                                              "--no-replay-guard", "--now", String(Life.t0 + 10), "-"], in: dir.url, stdin: payload)
        #expect(oldGroup.json["outcome"] as? String == "original")
        let other = try Self.keys(["keychain", "get", "--keychain", "kc", "--access-group", Self.old, "--service", "other.service", "--account", "a"], in: dir)
        #expect(other.status == 0, "\(other.stderr)")

        // Idempotent: nothing to migrate, and no file changes.
        let before = try Self.items(dir)
        let again = try Self.keys(["keychain", "migrate", "--keychain", "kc", "--from", Self.old, "--to", Self.new, "--app-id", Life.app], in: dir)
        #expect(again.status == 0 && again.stdout == "nothing to migrate\n", "\(again.stdout)\(again.stderr)")
        #expect(try Self.items(dir) == before)
    }

    @Test func aTargetHoldingAnotherItemOfTheSameNameRefusesAndNothingChanges() throws {
        let dir = try Life.setUp()
        defer { dir.remove() }
        let generated = try Self.keys(["device", "generate", "--keychain", "kc", "--access-group", Self.old, "--access-group", Self.new,
                                       "--app-id", Life.app, "--now", String(Life.t0)], in: dir)
        #expect(generated.status == 0, "\(generated.stderr)")
        let keyID = try #require(generated.json["keyId"] as? String)
        #expect(try Life.keys(["keychain", "add", "--keychain", "kc", "--access-group", Self.new, "--service", "pushseal.key:" + Life.app,
                               "--account", keyID, "--data-file", "-"], in: dir, stdin: Data("hello".utf8)).status == 0)
        let before = try Self.items(dir)
        let r = try Self.keys(["keychain", "migrate", "--keychain", "kc", "--from", Self.old, "--to", Self.new], in: dir)
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderr.contains("pushseal.key:\(Life.app)") && r.stderr.contains("nothing was migrated"), "\(r.stderr)")
        #expect(try Self.items(dir) == before)
    }

    /// A crash after the copies and before the deletes (both copies present): the rerun finishes.
    @Test func aRerunAfterACrashBetweenCopyAndDeleteFinishes() throws {
        let dir = try Life.setUp()
        defer { dir.remove() }
        let generated = try Self.keys(["device", "generate", "--keychain", "kc", "--access-group", Self.old, "--access-group", Self.new,
                                       "--app-id", Life.app, "--now", String(Life.t0)], in: dir)
        #expect(generated.status == 0)
        // The state a crash after step 3 leaves: a full migration run on a copy of the keychain,
        // its new-group files put beside the untouched old ones.
        let original = try Self.items(dir)
        #expect(try Self.keys(["keychain", "migrate", "--keychain", "kc", "--from", Self.old, "--to", Self.new], in: dir).status == 0)
        let migrated = try Self.items(dir)
        let items = dir.url.appendingPathComponent("kc/items")
        for (name, data) in original where migrated[name] == nil {
            #expect(FileManager.default.createFile(atPath: items.appendingPathComponent(name).path, contents: data, attributes: [.posixPermissions: 0o600]))
        }
        let rerun = try Self.keys(["keychain", "migrate", "--keychain", "kc", "--from", Self.old, "--to", Self.new, "--json"], in: dir)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(rerun.json["copied"] as? Int == 0 && rerun.json["alreadyCopied"] as? Int == 2 && rerun.json["deleted"] as? Int == 2, "\(rerun.stdout)")
        #expect(try Self.items(dir) == migrated)
    }
}
