import Foundation
import Testing
import PushSealTestSupport

/// Issue 28, "Reinstall and restore": `push-keys keychain backup` / `restore --same-device |
/// --to-new-device` emulate an encrypted iOS backup. The same device gets every item back and
/// opens as before; a new device gets no `…ThisDeviceOnly` item (every PushSeal key item and
/// manifest), so `push-open` falls back with `unknownKey` and writes nothing, and the app's next
/// run makes a key under a new key id; a wrong passphrase or a damaged file changes nothing.
@Suite(.serialized) struct KeychainBackupCLITests {
    typealias Life = DeviceKeyLifecycleCLITests
    static let identity = ["--access-group", "T.shared", "--app-group", "group.x"]
    /// The clock, as push-seal stamps `iat` (v1 payloads sealed now).
    static var clock: Int64 { Int64(Date().timeIntervalSince1970) }

    static func keys(_ args: [String], in dir: TemporaryDirectory, stdin: Data? = nil) throws -> PushOpenCLITests.Result {
        try PushOpenCLITests.run("push-keys", args, in: dir.url, stdin: stdin)
    }

    /// `push-open` as the extension of the app, with its replay guard (the App Group container).
    static func open(_ payload: Data, keychain: String, now: Int64, in dir: TemporaryDirectory) throws -> PushOpenCLITests.Result {
        try PushOpenCLITests.run("push-open", ["--keychain", keychain, "--app-id", Life.app] + identity + ["--now", String(now), "-"], in: dir.url, stdin: payload)
    }

    /// Every file under `dir/name` (path → mode and bytes): what "nothing changed" compares.
    static func snapshot(_ name: String, in dir: TemporaryDirectory) throws -> [String: Data] {
        let root = dir.appending(name)
        var out: [String: Data] = [:]
        let paths = try #require(FileManager.default.enumerator(atPath: root.path))
        for case let path as String in paths {
            let url = root.appendingPathComponent(path)
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            let mode = Data(String(describing: attributes[.posixPermissions] ?? "").utf8)
            out[path] = attributes[.type] as? FileAttributeType == .typeDirectory ? mode : mode + (try Data(contentsOf: url))
        }
        return out
    }

    static func writePassphrase(_ text: String, _ name: String, mode: Int = 0o600, in dir: TemporaryDirectory) throws {
        #expect(FileManager.default.createFile(atPath: dir.appending(name).path, contents: Data((text + "\n").utf8),
                                               attributes: [.posixPermissions: mode]))
    }

    /// A phone with the app's v2 key (kind 2, `afterFirstUnlockThisDeviceOnly`, under its
    /// manifest) and another app's `afterFirstUnlock` item (which a backup carries to a new
    /// phone), backed up to `phone.backup`; returns the registration record.
    static func setUp(_ dir: TemporaryDirectory) throws -> [String: Any] {
        #expect(try keys(["keychain", "init", "--keychain", "phone"], in: dir).status == 0)
        #expect(try keys(["keychain", "init", "--keychain", "phone2"], in: dir).status == 0)
        let generated = try keys(["device", "generate", "--keychain", "phone"] + identity + ["--app-id", Life.app, "--now", String(Life.t0)], in: dir)
        #expect(generated.status == 0, "\(generated.stderr)")
        let other = try keys(["keychain", "add", "--keychain", "phone", "--access-group", "T.shared", "--service", "other.service", "--account", "a",
                              "--accessibility", "afterFirstUnlock", "--data-file", "-"], in: dir, stdin: Data("other-app-secret".utf8))
        #expect(other.status == 0, "\(other.stderr)")
        try writePassphrase("correct horse battery staple", "pass", in: dir)
        let backup = try keys(["keychain", "backup", "--keychain", "phone", "--passphrase-file", "pass", "--out", "phone.backup", "--json"], in: dir)
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.json["items"] as? Int == 3 && backup.json["thisDeviceOnly"] as? Int == 2, "\(backup.stdout)")
        let file = try Data(contentsOf: dir.appending("phone.backup"))
        #expect(file.range(of: Data("other-app-secret".utf8)) == nil && file.range(of: Data("other.service".utf8)) == nil, "the backup is not encrypted")
        let mode = try FileManager.default.attributesOfItem(atPath: dir.appending("phone.backup").path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        return generated.json
    }

    @Test func sameDeviceRestoresEveryItemAndOpensAsBefore() throws {
        let dir = try TemporaryDirectory("pushseal-backup-same")
        defer { dir.remove() }
        let registration = try Self.setUp(dir)
        let keyID = try #require(registration["keyId"] as? String)
        // The phone loses its key item (erased); the restore brings it back.
        #expect(try Self.keys(["keychain", "delete", "--keychain", "phone", "--access-group", "T.shared", "--service", "pushseal.key:" + Life.app,
                               "--account", keyID], in: dir).status == 0)
        #expect(try Self.open(try Life.seal(to: registration, iat: Life.t0 + 1), keychain: "phone", now: Life.t0 + 2, in: dir).status == 1)
        let restored = try Self.keys(["keychain", "restore", "--keychain", "phone", "--from", "phone.backup", "--passphrase-file", "pass",
                                      "--same-device", "--json"], in: dir)
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(restored.json["restored"] as? Int == 3 && restored.json["skipped"] as? Int == 0 && restored.json["target"] as? String == "sameDevice",
                "\(restored.stdout)")
        let opened = try Self.open(try Life.seal(to: registration, iat: Life.t0 + 3), keychain: "phone", now: Life.t0 + 4, in: dir)
        #expect(opened.status == 0 && opened.json["outcome"] as? String == "decrypted", "\(opened.stdout) \(opened.stderr)")
        let listed = try Self.keys(["device", "list", "--keychain", "phone"] + Self.identity + ["--app-id", Life.app, "--json"], in: dir)
        let rows = listed.json["keys"] as? [[String: Any]] ?? []
        #expect(rows.count == 1 && rows.first?["keyId"] as? String == keyID && rows.first?["rolledBack"] as? Bool == false, "\(listed.stdout)")
        // Restoring again is the same restore (it starts from an erased keychain).
        #expect(try Self.keys(["keychain", "restore", "--keychain", "phone", "--from", "phone.backup", "--passphrase-file", "pass", "--same-device"], in: dir).status == 0)
        #expect(try Self.open(try Life.seal(to: registration, iat: Life.t0 + 5), keychain: "phone", now: Life.t0 + 6, in: dir).status == 0)
    }

    @Test func newDeviceLeavesThisDeviceOnlyItemsBehindAndTheNextRunMakesANewKey() throws {
        let dir = try TemporaryDirectory("pushseal-backup-new")
        defer { dir.remove() }
        let registration = try Self.setUp(dir)
        let oldID = try #require(registration["keyId"] as? String)
        let restored = try Self.keys(["keychain", "restore", "--keychain", "phone2", "--from", "phone.backup", "--passphrase-file", "pass",
                                      "--to-new-device", "--json"], in: dir)
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(restored.json["restored"] as? Int == 1 && restored.json["skipped"] as? Int == 2 && restored.json["target"] as? String == "newDevice",
                "\(restored.stdout)")
        let listed = try Self.keys(["keychain", "list", "--keychain", "phone2", "--json"], in: dir)
        let services = (listed.json["items"] as? [[String: Any]] ?? []).compactMap { $0["service"] as? String }
        #expect(services == ["other.service"], "\(listed.stdout)")
        let other = try Self.keys(["keychain", "get", "--keychain", "phone2", "--access-group", "T.shared", "--service", "other.service",
                                   "--account", "a", "--reveal", "--json"], in: dir)
        #expect(other.stdout.contains(Data("other-app-secret".utf8).base64EncodedString()), "\(other.stdout)")
        // The extension on the new phone: the original alert, unknownKey (never an authentication failure), and nothing written.
        let before = try Self.snapshot("phone2", in: dir)
        let fallback = try Self.open(try Life.seal(to: registration, iat: Life.t0 + 1), keychain: "phone2", now: Life.t0 + 2, in: dir)
        #expect(fallback.status == 1 && fallback.json["outcome"] as? String == "original" && fallback.json["reason"] as? String == "unknownKey",
                "\(fallback.stdout) \(fallback.stderr)")
        // Only the emulated notification center (the system's list of delivered notifications,
        // kept in the App Group container) records the alert shown; the extension wrote nothing.
        let after = try Self.snapshot("phone2", in: dir).filter { !$0.key.hasPrefix("app-groups/group.x/pushseal-delivered.") && $0.key != "app-groups/group.x" }
        #expect(after == before, "push-open wrote into the restored keychain: \(Set(after.keys).symmetricDifference(before.keys)) \(after.keys.filter { after[$0] != before[$0] })")
        // The app's next run: a new key under a new key id, which opens; the old id never names new bytes.
        let reused = try Self.keys(["device", "generate", "--keychain", "phone2"] + Self.identity + ["--app-id", Life.app, "--key-id", oldID, "--now", String(Life.t0 + 3)], in: dir)
        #expect(reused.status == 65 && reused.stderr.contains("left behind"), "\(reused.stderr)")
        let next = try Self.keys(["device", "generate", "--keychain", "phone2"] + Self.identity + ["--app-id", Life.app, "--now", String(Life.t0 + 3)], in: dir)
        #expect(next.status == 0, "\(next.stderr)")
        let newID = try #require(next.json["keyId"] as? String)
        #expect(newID != oldID && next.json["publicKey"] as? String != registration["publicKey"] as? String)
        let opened = try Self.open(try Life.seal(to: next.json, iat: Life.t0 + 4), keychain: "phone2", now: Life.t0 + 5, in: dir)
        #expect(opened.status == 0 && opened.json["outcome"] as? String == "decrypted", "\(opened.stdout) \(opened.stderr)")
        // The old key's payloads still fall back there.
        #expect(try Self.open(try Life.seal(to: registration, iat: Life.t0 + 6), keychain: "phone2", now: Life.t0 + 7, in: dir).json["reason"] as? String == "unknownKey")
    }

    /// A v1 key made on the phone (`push-keys generate`, a kind 1 item) stays behind too: the
    /// server's payloads fall back with `unknownKey` on the new phone, and open on the old one.
    @Test func aVersionOneKeyStaysBehindOnANewDevice() throws {
        let dir = try TemporaryDirectory("pushseal-backup-v1")
        defer { dir.remove() }
        #expect(try Self.keys(["keychain", "init", "--keychain", "phone"], in: dir).status == 0)
        #expect(try Self.keys(["keychain", "init", "--keychain", "phone2"], in: dir).status == 0)
        #expect(try Self.keys(["generate", "--keychain", "phone"] + Self.identity + ["--app-id", Life.app, "--recipient", "alice"], in: dir).status == 0)
        #expect(try Self.keys(["export", "--keychain", "phone"] + Self.identity + ["--app-id", Life.app, "--recipient", "alice", "--out", "k.json"], in: dir).status == 0)
        #expect(try Self.keys(["import", "--keychain", "srv", "--app-id", Life.app, "k.json"], in: dir).status == 0)
        try Self.writePassphrase("pw", "pass", in: dir)
        #expect(try Self.keys(["keychain", "backup", "--keychain", "phone", "--passphrase-file", "pass", "--out", "b"], in: dir).status == 0)
        let restored = try Self.keys(["keychain", "restore", "--keychain", "phone2", "--from", "b", "--passphrase-file", "pass", "--to-new-device", "--json"], in: dir)
        #expect(restored.status == 0 && restored.json["skipped"] as? Int == 2, "\(restored.stdout) \(restored.stderr)")
        let sealed = try PushOpenCLITests.run("push-seal", ["--app-id", Life.app, "--recipient", "alice", "--keychain", "srv", "--title", "t", "--body", "b"], in: dir.url)
        try #require(sealed.status == 0, "\(sealed.stderr)")
        let fallback = try Self.open(Data(sealed.stdout.utf8), keychain: "phone2", now: Self.clock, in: dir)
        #expect(fallback.status == 1 && fallback.json["reason"] as? String == "unknownKey", "\(fallback.stdout)")
        #expect(try Self.open(Data(sealed.stdout.utf8), keychain: "phone", now: Self.clock, in: dir).json["outcome"] as? String == "decrypted")
    }

    @Test func aWrongPassphraseADamagedFileOrAnotherDeviceChangeNothing() throws {
        let dir = try TemporaryDirectory("pushseal-backup-bad")
        defer { dir.remove() }
        _ = try Self.setUp(dir)
        try Self.writePassphrase("wrong horse", "wrong", in: dir)
        let file = try Data(contentsOf: dir.appending("phone.backup"))
        var flipped = file
        flipped[file.count / 2] ^= 0x01
        try flipped.write(to: dir.appending("flipped.backup"))
        try file.prefix(file.count - 10).write(to: dir.appending("short.backup"))
        try Data("not a backup".utf8).write(to: dir.appending("text.backup"))
        let before = try Self.snapshot("phone2", in: dir)
        for (from, pass) in [("phone.backup", "wrong"), ("flipped.backup", "pass"), ("short.backup", "pass"), ("text.backup", "pass")] {
            let r = try Self.keys(["keychain", "restore", "--keychain", "phone2", "--from", from, "--passphrase-file", pass, "--to-new-device", "--json"], in: dir)
            #expect(r.status == 65, "\(from): \(r.stdout) \(r.stderr)")
            #expect((r.json["error"] as? [String: Any])?["code"] as? String == "backupUnreadable", "\(from): \(r.stdout)")
            let text = try Self.keys(["keychain", "restore", "--keychain", "phone2", "--from", from, "--passphrase-file", pass, "--to-new-device"], in: dir)
            #expect(text.stderr.hasPrefix("push-keys: error: ") && text.stderr.contains("hint: "), "\(text.stderr)")
        }
        // --same-device onto another phone: its ThisDeviceOnly items are bound to the phone that made the backup.
        let other = try Self.keys(["keychain", "restore", "--keychain", "phone2", "--from", "phone.backup", "--passphrase-file", "pass", "--same-device", "--json"], in: dir)
        #expect(other.status == 65 && (other.json["error"] as? [String: Any])?["code"] as? String == "backupFromAnotherDevice", "\(other.stdout)")
        #expect(try Self.snapshot("phone2", in: dir) == before)
        // The passphrase never on argv; a passphrase file others can read is refused; one target exactly.
        try Self.writePassphrase("correct horse battery staple", "loose", mode: 0o644, in: dir)
        #expect(try Self.keys(["keychain", "restore", "--keychain", "phone2", "--from", "phone.backup", "--passphrase-file", "loose", "--to-new-device"], in: dir).status == 77)
        #expect(try Self.keys(["keychain", "restore", "--keychain", "phone2", "--from", "phone.backup", "--passphrase-file", "pass"], in: dir).status == 64)
        #expect(try Self.keys(["keychain", "restore", "--keychain", "phone2", "--from", "phone.backup", "--passphrase-file", "pass",
                               "--to-new-device", "--same-device"], in: dir).status == 64)
        #expect(try Self.keys(["keychain", "backup", "--keychain", "phone", "--passphrase-file", "pass", "--out", "phone.backup"], in: dir).status == 73)
        #expect(try Self.snapshot("phone2", in: dir) == before)
    }
}
