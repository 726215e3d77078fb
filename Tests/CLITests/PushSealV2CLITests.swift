import Foundation
import PushSealTestSupport
import Testing

/// The server side of version 2 end to end through the tools: the app's registration record
/// (`push-keys device import`) registered on the server (`push-keys register`), a sender key
/// (`push-keys sender generate / export / rotate`), `push-seal` sealing v2 (auth or base mode)
/// or v1 per recipient, opened by `push-open` (the device key and pins read from its keychain)
/// and by the independent Python reference (`Tests/Interop/pushseal_ref.py` `open_payload_v2`).
@Suite(.serialized) struct PushSealV2CLITests {
    static let app = "com.example.app"
    static let deviceKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    /// FORMAT.md §V.9: the key id of that device key.
    static let deviceKeyID = "7t2IPaCpRRWT3Ao4"

    static func run(_ tool: String, _ args: [String], in dir: URL, stdin: String? = nil) throws -> PushOpenCLITests.Result {
        try PushOpenCLITests.run(tool, args, in: dir, stdin: stdin.map { Data($0.utf8) })
    }

    /// A scratch directory: server keychain `kc` with a v1 keyset for bob, device keychain `dev`
    /// holding the §V.9 device key (imported as the app would have made it), its registration
    /// record registered for alice; with `sender`, a sender key (record in sender.json).
    static func setUp(sender: Bool) throws -> URL {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-seal-v2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        #expect(try run("push-keys", ["generate", "--keychain", "kc", "--app-id", app, "--recipient", "bob"], in: dir).status == 0)
        #expect(try run("push-keys", ["keychain", "init", "--keychain", "dev"], in: dir).status == 0)
        let key = dir.appendingPathComponent("device.key")
        try Data((deviceKeyHex + "\n").utf8).write(to: key)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key.path)
        let made = try run("push-keys", ["device", "import", "--keychain", "dev", "--access-group", "T.shared", "--app-id", app,
                                         "--key-file", "device.key", "--now", "1796000000"], in: dir)
        #expect(made.status == 0, "\(made.stderr)")
        try Data(made.stdout.utf8).write(to: dir.appendingPathComponent("registration.json"))
        let registered = try run("push-keys", ["register", "--keychain", "kc", "--recipient", "alice", "--app-id", app, "registration.json"], in: dir)
        #expect(registered.status == 0, "\(registered.stderr)")
        #expect(registered.stdout == "\(app) alice: registered \(deviceKeyID)\n")
        if sender {
            let s = try run("push-keys", ["sender", "generate", "--keychain", "kc", "--app-id", app], in: dir)
            #expect(s.status == 0, "\(s.stderr)")
            try Data(s.stdout.utf8).write(to: dir.appendingPathComponent("sender.json"))
        }
        try Data(#"{"title":"Dinner","body":"at 8?"}"#.utf8).write(to: dir.appendingPathComponent("note.json"))
        return dir
    }

    static func seal(_ recipient: String, in dir: URL, _ extra: [String] = []) throws -> PushOpenCLITests.Result {
        try run("push-seal", ["--app-id", app, "--recipient", recipient, "--keychain", "kc"] + extra + ["note.json"], in: dir)
    }

    /// Opens `payload` with push-open on a phone that holds the §V.9 device key and pinned
    /// exactly the sender key records `pinned` (files in `dir`): a fresh device keychain each
    /// time, provisioned as the app does (`device import`, `device pin-sender`).
    static func pushOpen(_ payload: String, in dir: URL, pinned: [String]) throws -> PushOpenCLITests.Result {
        let phone = "phone-\(UUID().uuidString.prefix(8))"
        let identity = ["--keychain", phone, "--access-group", "T.shared", "--app-id", app]
        #expect(try run("push-keys", ["keychain", "init", "--keychain", phone], in: dir).status == 0)
        let made = try run("push-keys", ["device", "import"] + identity + ["--key-file", "device.key", "--now", "1796000000"], in: dir)
        #expect(made.status == 0, "\(made.stderr)")
        for record in pinned {
            let pin = try run("push-keys", ["device", "pin-sender"] + identity + [record], in: dir)
            #expect(pin.status == 0, "\(pin.stderr)")
        }
        return try run("push-open", identity + ["--no-replay-guard", "-"], in: dir, stdin: payload)
    }

    /// Opens each payload line with the Python reference; prints `title|body` per line.
    static let pythonOpen = """
        import base64, json, sys
        sys.path.insert(0, sys.argv[1])
        import pushseal_ref as ref
        pinned = {}
        for path in sys.argv[3:]:
            r = json.load(open(path))
            pinned[r["senderKeyId"]] = base64.b64decode(r["publicKey"])
        for line in sys.stdin:
            obj, _ = ref.open_payload_v2(json.loads(line), {"\(deviceKeyID)": bytes.fromhex(sys.argv[2])}, "\(app)", pinned)
            print(obj["title"] + "|" + obj["body"])
        """

    static func openWithPython(_ payloads: String, pinned: [String], in dir: URL) throws -> String {
        let interop = KeysCLI.repo.appendingPathComponent("Tests/Interop").path
        let r = try #require(runPython(pythonOpen, [interop, deviceKeyHex] + pinned.map { dir.appendingPathComponent($0).path },
                                       input: Data(payloads.utf8)))
        #expect(r.status == 0, "\(r.errors)")
        return r.output
    }

    @Test func sealsAuthModeThatPushOpenAndPythonOpen() throws {
        let dir = try Self.setUp(sender: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let sealed = try Self.seal("alice", in: dir)
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let payload = sealed.json
        let senderRecord = try String(contentsOf: dir.appendingPathComponent("sender.json"), encoding: .utf8)
        let senderKeyID = try #require((try JSONSerialization.jsonObject(with: Data(senderRecord.utf8)) as? [String: Any])?["senderKeyId"] as? String)
        #expect(payload["enc_alg"] as? String == "HPKE-AUTH-X25519-A256GCM")
        #expect(payload["key_id"] as? String == Self.deviceKeyID)
        #expect(payload["sender_key_id"] as? String == senderKeyID)
        #expect(sealed.stdout.utf8.count <= 4096)
        let opened = try Self.pushOpen(sealed.stdout, in: dir, pinned: ["sender.json"])
        #expect(opened.status == 0, "\(opened.stdout) \(opened.stderr)")
        #expect(opened.json["title"] as? String == "Dinner" && opened.json["body"] as? String == "at 8?")
        #expect(try Self.openWithPython(sealed.stdout, pinned: ["sender.json"], in: dir) == "Dinner|at 8?\n")
        // A device that pinned nothing refuses an auth-mode payload.
        #expect(try Self.pushOpen(sealed.stdout, in: dir, pinned: []).json["reason"] as? String == "unknownSenderKey")
        // bob has a v1 keyset only: v1 as before.
        let v1 = try Self.seal("bob", in: dir)
        #expect(v1.status == 0 && v1.json["enc_alg"] as? String == "A256GCM" && v1.json["sender_key_id"] == nil)
    }

    @Test func sealsBaseModeWithoutASenderKey() throws {
        let dir = try Self.setUp(sender: false)
        defer { try? FileManager.default.removeItem(at: dir) }
        let sealed = try Self.seal("alice", in: dir, ["--format", "v2"])
        #expect(sealed.status == 0, "\(sealed.stderr)")
        #expect(sealed.json["enc_alg"] as? String == "HPKE-BASE-X25519-A256GCM" && sealed.json["sender_key_id"] == nil)
        #expect(try Self.pushOpen(sealed.stdout, in: dir, pinned: []).json["title"] as? String == "Dinner")
        #expect(try Self.openWithPython(sealed.stdout, pinned: [], in: dir) == "Dinner|at 8?\n")
    }

    @Test func formatOptionRefusesTheWrongVersionClearly() throws {
        let dir = try Self.setUp(sender: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let v1ForAlice = try Self.seal("alice", in: dir, ["--format", "v1"])
        #expect(v1ForAlice.status == 67 && v1ForAlice.stdout.isEmpty)
        #expect(v1ForAlice.stderr.hasPrefix("push-seal: error: recipient alice of com.example.app has a v2 registration and no v1 keyset: --format v1 cannot seal for it"))
        let v2ForBob = try Self.seal("bob", in: dir, ["--format", "v2"])
        #expect(v2ForBob.status == 67 && v2ForBob.stderr.contains("has no v2 registration (it has a v1 keyset"))
        #expect(try Self.seal("bob", in: dir, ["--format", "v1"]).json["enc_alg"] as? String == "A256GCM")
        let bad = try Self.seal("alice", in: dir, ["--format", "v3"])
        #expect(bad.status == 64 && bad.stderr.hasPrefix("push-seal: error: --format needs v1 or v2"))
    }

    /// Before first unlock the app's sender key cannot be read: 77, and the error names the sender key (not "keyset APP/?").
    @Test func lockedKeychainNamesTheSenderKey() throws {
        let dir = try Self.setUp(sender: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try Self.run("push-keys", ["keychain", "device-state", "--keychain", "kc", "beforeFirstUnlock"], in: dir).status == 0)
        let locked = try Self.seal("alice", in: dir)
        #expect(locked.status == 77 && locked.stdout.isEmpty)
        #expect(locked.stderr.hasPrefix("push-seal: error: the sender key of app \(Self.app) cannot be read in the keychain's device state: "), "\(locked.stderr)")
        #expect(locked.stderr.contains("\nhint: unlock the keychain: "))
        #expect(try Self.run("push-keys", ["keychain", "device-state", "--keychain", "kc", "unlocked"], in: dir).status == 0)
        #expect(try Self.seal("alice", in: dir).json["sender_key_id"] as? String != nil)
    }

    @Test func batchMixesV1AndV2LineByLine() throws {
        let dir = try Self.setUp(sender: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var lines = ""
        let recipients = ["alice", "bob", "carol", "alice", "bob", "alice"]
        for (i, r) in recipients.enumerated() { lines += #"{"recipient":"\#(r)","notification":{"title":"n\#(i)","body":"for \#(r)"}}"# + "\n" }
        let out = try Self.run("push-seal", ["batch", "--app-id", Self.app, "--keychain", "kc", "--jobs", "2", "-"], in: dir, stdin: lines)
        #expect(out.status == 2, "\(out.stderr)")
        let rows = out.stdout.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(rows.count == recipients.count)
        var v2 = ""
        for (i, row) in rows.enumerated() {
            let payload = row?["payload"] as? [String: Any]
            switch recipients[i] {
            case "alice":
                #expect(payload?["enc_alg"] as? String == "HPKE-AUTH-X25519-A256GCM", "line \(i + 1)")
                v2 += String(data: try JSONSerialization.data(withJSONObject: payload ?? [:]), encoding: .utf8) ?? ""
                v2 += "\n"
            case "bob": #expect(payload?["enc_alg"] as? String == "A256GCM", "line \(i + 1)")
            default: #expect(payload == nil && (row?["error"] as? [String: Any])?["code"] as? String == "unknownRecipient", "line \(i + 1)")
            }
        }
        #expect(try Self.openWithPython(v2, pinned: ["sender.json"], in: dir) == "n0|for alice\nn3|for alice\nn5|for alice\n")
    }

    @Test func senderKeyRotationKeepsTheFormerPublished() throws {
        let dir = try Self.setUp(sender: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let before = try Self.seal("alice", in: dir)
        let rotated = try Self.run("push-keys", ["sender", "rotate", "--keychain", "kc", "--app-id", Self.app, "--grace", "1d", "--json"], in: dir)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let keys = rotated.json["senderKeys"] as? [[String: Any]] ?? []
        #expect(keys.map { $0["status"] as? String } == ["decryptOnly", "primary"])
        #expect(keys.allSatisfy { $0["published"] as? Bool == true })
        let all = try Self.run("push-keys", ["sender", "export", "--keychain", "kc", "--app-id", Self.app, "--all"], in: dir)
        let records = all.stdout.split(separator: "\n")
        #expect(all.status == 0 && records.count == 2)
        try Data((records.last.map(String.init) ?? "").utf8).write(to: dir.appendingPathComponent("new.json"))
        let after = try Self.seal("alice", in: dir)
        #expect(after.json["sender_key_id"] as? String != before.json["sender_key_id"] as? String)
        // A device that pinned both keys opens the message sealed before and the one after.
        for payload in [before.stdout, after.stdout] {
            #expect(try Self.pushOpen(payload, in: dir, pinned: ["sender.json", "new.json"]).json["title"] as? String == "Dinner")
        }
        #expect(try Self.pushOpen(after.stdout, in: dir, pinned: ["sender.json"]).json["reason"] as? String == "unknownSenderKey")
        #expect(try Self.run("push-keys", ["sender", "generate", "--keychain", "kc", "--app-id", Self.app], in: dir).status == 73)
    }

    @Test func registerRefusesBadRecords() throws {
        let dir = try Self.setUp(sender: false)
        defer { try? FileManager.default.removeItem(at: dir) }
        func register(_ record: String, _ extra: [String] = []) throws -> PushOpenCLITests.Result {
            try Self.run("push-keys", ["register", "--keychain", "kc", "--recipient", "alice"] + extra + ["-"], in: dir, stdin: record)
        }
        let good = try String(contentsOf: dir.appendingPathComponent("registration.json"), encoding: .utf8)
        #expect(try register(good).stdout == "\(Self.app) alice: already registered \(Self.deviceKeyID)\n")
        let wrongApp = try register(good, ["--app-id", "com.example.other"])
        #expect(wrongApp.status == 65 && wrongApp.stderr.hasPrefix("push-keys: error: "))
        let lowOrder = good.replacingOccurrences(of: #""publicKey":"j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8=""#,
                                                 with: #""publicKey":"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=""#)
            .replacingOccurrences(of: Self.deviceKeyID, with: "lowOrderKey")
        let low = try register(lowOrder, ["--json"])
        #expect(low.status == 65 && (low.json["error"] as? [String: Any])?["code"] as? String == "lowOrderPublicKey")
        let clash = good.replacingOccurrences(of: "j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8=", with: "NYBy1jZYgNGu6jKa35EhODhR7SGijjt16WXQ0s0WYlQ=")
        #expect(try register(clash).status == 65)
        #expect(try register("{}").status == 65)
        // A bad keyId, createdAt or appId inside the record is bad data (65 malformedRecord), not a usage error (64).
        for (field, value) in [("keyId", #""bad id!""#), ("createdAt", "-5"), ("createdAt", "99999999999999"), ("appId", #""bad app!""#)] {
            let edited = try #require(try JSONSerialization.jsonObject(with: Data(good.utf8)) as? [String: Any])
            var record = edited
            record[field] = try JSONSerialization.jsonObject(with: Data(value.utf8), options: .fragmentsAllowed)
            let text = try #require(String(data: try JSONSerialization.data(withJSONObject: record), encoding: .utf8))
            let refused = try register(text, ["--json"])
            #expect(refused.status == 65, "\(field) \(value): \(refused.stdout)")
            #expect((refused.json["error"] as? [String: Any])?["code"] as? String == "malformedRecord", "\(field) \(value)")
        }
        let list = try Self.run("push-keys", ["registrations", "--keychain", "kc", "--app-id", Self.app, "--recipient", "alice", "--json"], in: dir)
        let sets = list.json["registrations"] as? [[String: Any]]
        #expect(list.status == 0 && sets?.first?["current"] as? String == Self.deviceKeyID)
        #expect((sets?.first?["registrations"] as? [Any])?.count == 1)
        #expect(try Self.run("push-keys", ["registrations", "--keychain", "kc", "--app-id", Self.app, "--recipient", "nobody"], in: dir).status == 66)
    }

    /// Examples/server's library import (`seal-server-example --register RECORD`): the record
    /// is registered, the notification sealed v2 in auth mode, and push-open opens it.
    @Test func serverExampleRegistersAndSealsV2() throws {
        let dir = try Self.setUp(sender: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let example = KeysCLI.buildDirectory.appendingPathComponent("seal-server-example").path
        let r = try KeysCLI.run(example, ["--keychain", dir.appendingPathComponent("kc").path, "--app-id", Self.app, "--recipient", "carol",
                                          "--register", dir.appendingPathComponent("registration.json").path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("registered \(Self.deviceKeyID) for \(Self.app)/carol"))
        let payload = try #require(r.stdout.split(separator: "\n").last.map(String.init))
        #expect(payload.contains("\"enc_alg\":\"HPKE-AUTH-X25519-A256GCM\""))
        let opened = try Self.pushOpen(payload, in: dir, pinned: ["sender.json"])
        #expect(opened.status == 0 && opened.json["title"] as? String == "Ana", "\(opened.stdout) \(opened.stderr)")
        // A record for another app is refused (65), nothing registered.
        let other = dir.appendingPathComponent("other.json")
        try Data(try String(contentsOf: dir.appendingPathComponent("registration.json"), encoding: .utf8)
            .replacingOccurrences(of: Self.app, with: "com.example.other").utf8).write(to: other)
        let refused = try KeysCLI.run(example, ["--keychain", dir.appendingPathComponent("kc").path, "--app-id", Self.app, "--recipient", "dave",
                                                "--register", other.path])
        #expect(refused.status == 65 && refused.stderr.contains("registration refused (wrongAppID)"))
    }
}
