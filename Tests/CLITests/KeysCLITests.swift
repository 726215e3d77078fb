import PushSealTestSupport
import Foundation
import PushSealCrypto
import PushSealKeychain
import PushSealKeyRecords
import PushSealDeviceKeys
import PushSealServerKeys
import Testing

/// Runs the built `push-keys` (and the Keys/ scripts) as a user would.
enum KeysCLI {
    static let appID = "com.example.app"
    static let appEntitlements = """
        {"application-identifier":"TEAM123456.com.example.app","keychain-access-groups":["TEAM123456.com.example.shared"],"application-groups":["group.com.example"]}
        """
    static let extEntitlements = """
        {"application-identifier":"TEAM123456.com.example.app.NotificationService","keychain-access-groups":["TEAM123456.com.example.shared"],"application-groups":["group.com.example"]}
        """
    static let ext = Entitlements(applicationIdentifier: "TEAM123456.com.example.app.NotificationService",
                                  keychainAccessGroups: ["TEAM123456.com.example.shared"], applicationGroups: ["group.com.example"])
    static let app = Entitlements(applicationIdentifier: "TEAM123456.com.example.app",
                                  keychainAccessGroups: ["TEAM123456.com.example.shared"], applicationGroups: ["group.com.example"])

    /// The directory holding the built executables.
    static var buildDirectory: URL {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("push-keys").path) { return url }
        }
        return URL(fileURLWithPath: exe).deletingLastPathComponent()
    }

    static var tool: String { buildDirectory.appendingPathComponent("push-keys").path }

    /// The repository root (for Keys/ scripts).
    static var repo: URL {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }

    struct Result {
        var status: Int32
        var signaled: Bool
        var stdout: String
        var stderr: String
    }

    static func run(_ exe: String, _ args: [String], env: [String: String] = [:], stdin: [UInt8]? = nil, cwd: URL? = nil) throws -> Result {
        let r = try runTool(URL(fileURLWithPath: exe), args, cwd: cwd, environment: env, stdin: Data(stdin ?? []))
        return Result(status: r.status, signaled: r.signaled, stdout: r.stdout, stderr: r.stderr)
    }

    static func keys(_ args: [String], env: [String: String] = [:], stdin: [UInt8]? = nil) throws -> Result {
        try run(tool, args, env: env, stdin: stdin)
    }

    /// A scratch dir with app.json and ext.json.
    static func scratch() throws -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-keyscli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Data(appEntitlements.utf8).write(to: url.appendingPathComponent("app.json"))
        try Data(extEntitlements.utf8).write(to: url.appendingPathComponent("ext.json"))
        return url
    }

    static func json(_ s: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(s.utf8))) as? [String: Any] ?? [:]
    }

    static func aad(_ keyID: String) -> [UInt8] { Array("pushseal:v1|A256GCM|\(keyID)|\(appID)".utf8) }

    /// Seals with the server primary (library) and opens as the extension; returns the key id.
    static func sealAndOpen(server: URL, device: URL, recipient: String, ext: Entitlements = KeysCLI.ext) throws -> String {
        let sender = try ServerKeyring(keychainAt: server, audit: .none)
        let (keyID, key) = try sender.primaryKeyForSealing(appID: appID, recipient: recipient)
        let box = try AES256GCM.seal(Array("hi".utf8), with: key, authenticating: aad(keyID))
        let devKey = try DeviceKeyring(keychainAt: device, as: ext).key(for: keyID, appID: appID)
        #expect(try AES256GCM.open(box, with: devKey, authenticating: aad(keyID)) == Array("hi".utf8))
        return keyID
    }

    /// The device's v1 key items (what `rotate --device-keychain` installs): the primary's key id and every key id, sorted.
    static func deviceKeys(_ device: URL) throws -> (primary: String?, ids: [String]) {
        let entries = try DeviceKeyItem.list(appID: appID, in: try Keychain(opening: device, as: app), accessGroup: nil).filter { $0.kind == .v1Key }
        #expect(entries.allSatisfy { $0.keysetRecipient == nil && !$0.damaged }, "\(entries)")
        return (entries.first { $0.status == .primary }?.keyID, entries.map(\.keyID).sorted())
    }

    /// Both keysets consistent: the server has one primary (or a journal), the device can open
    /// with every key the server could seal or open with, with the same bytes.
    static func checkConsistent(server: URL, device: URL, recipient: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let s = try KeyStore(keychain: try Keychain(opening: server, as: KeyStore.serverIdentity), audit: .none)
        let ks = try s.keyset(appID: appID, recipient: recipient)
        #expect(ks.keys.filter { $0.status == .primary }.count == 1, "server primaries: \(ks.keys)", sourceLocation: sourceLocation)
        let dev = try DeviceKeyring(keychainAt: device, as: ext)
        let record = try s.exportRecord(appID: appID, recipient: recipient)
        let serverRecord = try KeyRecord(decoding: record.encoded())
        for k in serverRecord.keyInfos where k.status == .primary || k.status == .decryptOnly {
            #expect((try? dev.key(for: k.keyID, appID: appID)) != nil, "device cannot open with server key \(k.keyID) (\(k.status))", sourceLocation: sourceLocation)
        }
        _ = try sealAndOpen(server: server, device: device, recipient: recipient)
    }
}

@Suite struct KeysCLITests {
    let r = "alice-iphone"

    @Test func lifecycleByCLI() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let srv = dir.appendingPathComponent("srv").path, dev = dir.appendingPathComponent("dev").path
        let app = dir.appendingPathComponent("app.json").path
        let g = try KeysCLI.keys(["generate", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r, "--json", "--now", "1767225600"])
        #expect(g.status == 0, "\(g.stderr)")
        let first = KeysCLI.json(g.stdout)["keyId"] as? String ?? ""
        #expect(KeyID.isValid(first))
        // Export: exclusive 0600 file; a second export to the same file is refused (73).
        let out = dir.appendingPathComponent("alice.json").path
        #expect(try KeysCLI.keys(["export", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r, "--out", out]).status == 0)
        let mode = (try FileManager.default.attributesOfItem(atPath: out)[.posixPermissions] as? Int) ?? 0
        #expect(mode == 0o600)
        let original = try Data(contentsOf: URL(fileURLWithPath: out))
        let again = try KeysCLI.keys(["export", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r, "--out", out])
        #expect(again.status == 73 && again.stderr.hasPrefix("push-keys: error: ") && again.stderr.contains("hint:"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == original)
        // Device imports: kind 1 device key items (no warning by default).
        let imp = try KeysCLI.keys(["import", "--keychain", dev, "--entitlements", app, out, "--json"])
        #expect(imp.status == 0 && imp.stderr.isEmpty, "\(imp.stderr)")
        #expect(KeysCLI.json(imp.stdout)["layout"] as? String == "deviceItems")
        #expect(KeysCLI.json(imp.stdout)["changedKeyIds"] as? [String] == [first])
        // Rotate with the device; old key stays openable; new key opens at once.
        let rot = try KeysCLI.keys(["rotate", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r, "--grace", "1d",
                                    "--device-keychain", dev, "--device-entitlements", app, "--json", "--now", "1767225700"])
        #expect(rot.status == 0, "\(rot.stderr)")
        let rj = KeysCLI.json(rot.stdout)
        let newID = rj["keyId"] as? String ?? ""
        #expect(rj["previousKeyId"] as? String == first && (rj["notAfter"] as? Int) == 1_767_225_700 + 86_400)
        #expect(try KeysCLI.sealAndOpen(server: URL(fileURLWithPath: srv), device: URL(fileURLWithPath: dev), recipient: r) == newID)
        let ext = try DeviceKeyring(keychainAt: URL(fileURLWithPath: dev), as: KeysCLI.ext)
        #expect(try ext.key(for: first, appID: KeysCLI.appID, now: 1_767_225_800).byteCount == 32)
        // device list shows ids and statuses, never key bytes (the rotation wrote key items too).
        let list = try KeysCLI.keys(["device", "list", "--keychain", dev, "--entitlements", app, "--app-id", KeysCLI.appID])
        #expect(list.stdout.contains("v1 \(first) decryptOnly ") && list.stdout.contains("v1 \(newID) primary "), "\(list.stdout)")
        // Piped: no header line, no warning.
        #expect(list.stdout.hasPrefix("v1 ") && list.stderr.isEmpty, "\(list.stdout)\(list.stderr)")
        // A device keychain listed without an identity: nothing on stdout, exit 0, and a warning saying why.
        let bare = try KeysCLI.keys(["list", "--keychain", dev])
        #expect(bare.status == 0 && bare.stdout.isEmpty)
        #expect(bare.stderr == "push-keys: warning: no keysets visible to the default server identity (access group pushseal.server); pass --entitlements app.json to list a device keychain\n")
        // The server keychain lists as the server identity: no warning.
        let server = try KeysCLI.keys(["list", "--keychain", srv])
        #expect(server.status == 0 && server.stderr.isEmpty && server.stdout.contains("\t\(newID)\tprimary"), "\(server.stderr)")
        // On a terminal (util-linux script gives a pty) the first line names the columns.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/script") {
            let tty = try KeysCLI.run("/usr/bin/script", ["-qec", "\(KeysCLI.tool) list --keychain \(srv)", "/dev/null"])
            #expect(tty.stdout.hasPrefix("APP\tRECIPIENT\tKEY_ID\tSTATUS\tCREATED\tPROMOTED\tRETIRED\tNOT_AFTER\tSEALS\r\n"), "\(tty.stdout)")
        }
        let record = String(decoding: original, as: UTF8.self)
        let keyB64 = String(record[record.range(of: "\"key\":\"")!.upperBound...].prefix(44))
        #expect(!list.stdout.contains(keyB64) && !rot.stdout.contains(keyB64))
        // Prune both sides past the grace window.
        for (kc, extra) in [(srv, [String]()), (dev, ["--entitlements", app])] {
            let p = try KeysCLI.keys(["prune", "--keychain", kc, "--now", String(1_767_225_700 + 86_400)] + extra)
            #expect(p.status == 0 && p.stdout.contains(first), "\(p.stderr)")
        }
        // A pruned device key item is deleted: its key id is unknown.
        #expect(throws: KeysError(.unknownKey, "")) { try ext.key(for: first, appID: KeysCLI.appID) }
        #expect(throws: KeysError(.unknownKey, "")) { try ext.key(for: "neverSeen", appID: KeysCLI.appID) }
        // due: the new primary is due 30 days after promotion.
        let due = try KeysCLI.keys(["due", "--keychain", srv, "--now", String(1_767_225_700 + 31 * 86_400)])
        #expect(due.stdout.hasPrefix("\(KeysCLI.appID)\t\(r)\t\(newID)\t\(31 * 86_400)\t"))
        // revoke warns about in-flight messages.
        let rev = try KeysCLI.keys(["revoke", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r, "--key-id", newID])
        #expect(rev.status == 0 && rev.stderr.contains("in flight"))
        // The audit log has lines for every change and no key bytes.
        let audit = try String(contentsOfFile: srv + "/keys-audit.log", encoding: .utf8)
        #expect(audit.contains("\"event\":\"generate\"") && audit.contains("\"event\":\"promote\"") && audit.contains("\"event\":\"prune\""))
        #expect(!audit.contains(keyB64))
    }

    /// F5 of the December review: a keyset item from before a rotation, put back in place of the
    /// current one (a restored backup, a copied file), is refused (v1 silently served the old
    /// primary again, with its old seal count).
    @Test func aKeysetItemPutBackAfterARotationIsRefused() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let srv = dir.appendingPathComponent("srv").path
        #expect(try KeysCLI.keys(["generate", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice"]).status == 0)
        let items = URL(fileURLWithPath: srv).appendingPathComponent("items")
        func snapshot() throws -> [String: Data] {
            var out: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: items.path) { out[name] = try Data(contentsOf: items.appendingPathComponent(name)) }
            return out
        }
        let before = try snapshot()
        let rotate = try KeysCLI.keys(["rotate", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice"])
        #expect(rotate.status == 0, "\(rotate.stderr)")
        let after = try snapshot()
        // The keyset item is the largest file the rotation changed (a generation counter, if any, is smaller).
        let changed = before.filter { after[$0.key] != nil && after[$0.key] != $0.value }
        let keyset = try #require(changed.max { $0.value.count < $1.value.count })
        try keyset.value.write(to: items.appendingPathComponent(keyset.key))
        chmod(items.appendingPathComponent(keyset.key).path, 0o600)
        let list = try KeysCLI.keys(["list", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice", "--json"])
        #expect(list.status == 65, "the put-back keyset item was served: \(list.stdout) \(list.stderr)")
        #expect(list.stdout.contains("keysetRolledBack") || list.stderr.contains("keysetRolledBack") || list.stdout.contains("rolled back") || list.stderr.contains("rolled back"),
                "\(list.stdout) \(list.stderr)")
    }

    @Test func wrongInputsByCLI() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let srv = dir.appendingPathComponent("srv").path, dev = dir.appendingPathComponent("dev").path
        let app = dir.appendingPathComponent("app.json").path
        #expect(try KeysCLI.keys(["generate", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r]).status == 0)
        #expect(try KeysCLI.keys(["generate", "--keychain", dev, "--entitlements", app, "--app-id", KeysCLI.appID, "--recipient", "x"]).status == 0)
        let unknown = try KeysCLI.keys(["export", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "bob", "--json"])
        #expect(unknown.status == 66 && (KeysCLI.json(unknown.stdout)["error"] as? [String: Any])?["code"] as? String == "unknownKeyset")
        let rec = try KeysCLI.keys(["export", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r]).stdout
        let before = try FileManager.default.contentsOfDirectory(atPath: dev + "/items").sorted()
        let beforeBytes = try before.map { try Data(contentsOf: URL(fileURLWithPath: dev + "/items/" + $0)) }
        for bad in [String(rec.prefix(rec.count / 2)), "", "{}", rec.replacingOccurrences(of: "\"version\":1", with: "\"version\":2")] {
            let res = try KeysCLI.keys(["import", "--keychain", dev, "--entitlements", app, "-"], stdin: Array(bad.utf8))
            #expect(res.status == 65, "\(bad.prefix(30)): \(res.stderr)")
        }
        let other = try KeysCLI.keys(["import", "--keychain", dev, "--entitlements", app, "-"],
                                     stdin: Array(rec.replacingOccurrences(of: KeysCLI.appID, with: "com.example.other").utf8))
        #expect(other.status == 65 && other.stderr.contains("app id"))
        let accDance = try KeysCLI.keys(["import", "--keychain", dev, "--entitlements", app, "--accessibility", "whenUnlocked", "--legacy-keyset", "-"],
                                        stdin: Array(rec.replacingOccurrences(of: KeysCLI.appID, with: "com.example.other").utf8))
        #expect(accDance.stderr.contains("warning:") && accDance.stderr.contains("-25308"))
        let after = try FileManager.default.contentsOfDirectory(atPath: dev + "/items").sorted()
        #expect(after == before)
        #expect(try after.map { try Data(contentsOf: URL(fileURLWithPath: dev + "/items/" + $0)) } == beforeBytes)
        // Usage errors and help.
        #expect(try KeysCLI.keys(["rotate", "--keychain", srv]).status == 64)
        let help = try KeysCLI.keys(["rotate", "--help"])
        for section in ["OVERVIEW:", "USAGE:", "OPTIONS:", "EXAMPLES:", "EXIT CODES:"] { #expect(help.stdout.contains(section)) }
        #expect(try KeysCLI.keys(["list", "--keychain", dir.appendingPathComponent("nope").path]).status == 66)
    }

    /// SIGKILL `rotate` at each named step: both keysets stay usable and a rerun completes.
    @Test(arguments: RotationStep.allCases)
    func rotateKilledAtStep(_ step: RotationStep) throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let srv = dir.appendingPathComponent("srv"), dev = dir.appendingPathComponent("dev")
        let app = dir.appendingPathComponent("app.json").path
        #expect(try KeysCLI.keys(["generate", "--keychain", srv.path, "--app-id", KeysCLI.appID, "--recipient", r]).status == 0)
        let rec = try KeysCLI.keys(["export", "--keychain", srv.path, "--app-id", KeysCLI.appID, "--recipient", r]).stdout
        #expect(try KeysCLI.keys(["import", "--keychain", dev.path, "--entitlements", app, "-"], stdin: Array(rec.utf8)).status == 0)
        let rotate = ["rotate", "--keychain", srv.path, "--app-id", KeysCLI.appID, "--recipient", r, "--device-keychain", dev.path,
                      "--device-entitlements", app, "--json"]
        let killed = try KeysCLI.keys(rotate, env: ["PUSHSEAL_TEST_CRASH_AT": step.rawValue])
        #expect(killed.signaled && killed.status == SIGKILL, "step \(step): \(killed.stderr)")
        try KeysCLI.checkConsistent(server: srv, device: dev, recipient: r)
        let rerun = try KeysCLI.keys(rotate)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        // Before `finished` the rerun resumes the same rotation; after it, it is a new one.
        #expect((KeysCLI.json(rerun.stdout)["resumed"] as? Bool) == (step != .finished))
        try KeysCLI.checkConsistent(server: srv, device: dev, recipient: r)
        let s = try KeyStore(keychain: try Keychain(opening: srv, as: KeyStore.serverIdentity), audit: .none).keyset(appID: KeysCLI.appID, recipient: r)
        let d = try KeysCLI.deviceKeys(dev)
        #expect(s.rotationKeyID == nil && s.keys.count == (step == .finished ? 3 : 2))
        #expect(s.primary?.keyID == d.primary)
        #expect(s.keys.map(\.keyID).sorted() == d.ids)
    }

    /// SIGKILL `rotate` at 100 random times; after each kill both keysets are consistent.
    @Test func rotateKilledAtRandomTimes() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let srv = dir.appendingPathComponent("srv"), dev = dir.appendingPathComponent("dev")
        let app = dir.appendingPathComponent("app.json").path
        #expect(try KeysCLI.keys(["generate", "--keychain", srv.path, "--app-id", KeysCLI.appID, "--recipient", r]).status == 0)
        let rec = try KeysCLI.keys(["export", "--keychain", srv.path, "--app-id", KeysCLI.appID, "--recipient", r]).stdout
        #expect(try KeysCLI.keys(["import", "--keychain", dev.path, "--entitlements", app, "-"], stdin: Array(rec.utf8)).status == 0)
        let args = ["rotate", "--keychain", srv.path, "--app-id", KeysCLI.appID, "--recipient", r, "--device-keychain", dev.path,
                    "--device-entitlements", app, "--grace", "1d"]
        var kills = 0
        for _ in 0..<100 {
            let p = try TestChild([KeysCLI.tool] + args, stdout: .null, stderr: .null)
            usleep(UInt32.random(in: 0...90_000))
            p.signal(SIGKILL)
            if p.wait().signal != nil { kills += 1 }
            try KeysCLI.checkConsistent(server: srv, device: dev, recipient: r)
        }
        let done = try KeysCLI.keys(args)
        #expect(done.status == 0, "\(done.stderr)")
        try KeysCLI.checkConsistent(server: srv, device: dev, recipient: r)
        let s = try KeyStore(keychain: try Keychain(opening: srv, as: KeyStore.serverIdentity), audit: .none).keyset(appID: KeysCLI.appID, recipient: r)
        let d = try KeysCLI.deviceKeys(dev)
        #expect(s.rotationKeyID == nil && s.primary?.keyID == d.primary)
        #expect(Set(s.keys.map(\.keyID)).isSubset(of: Set(d.ids)))
        print("keys: rotate killed \(kills) of 100 times mid-run; \(s.keys.count) keys after the final rerun")
    }
}
