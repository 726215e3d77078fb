import Foundation
import PushSealTestSupport
import Testing

/// Issue 29: seal three notifications, deliver them, retract two. The device is the v2 phone of
/// `PushSealV2CLITests` (auth mode: it pinned the app's sender key) with an App Group, so the
/// replay guard and the emulated notification center are in its container.
@Suite(.serialized) struct RetractCLITests {
    static let app = PushSealV2CLITests.app
    static let phone = ["--keychain", "phone", "--access-group", "T.shared", "--app-group", "group.example", "--app-id", PushSealV2CLITests.app]

    static func run(_ tool: String, _ args: [String], in dir: URL, stdin: String? = nil) throws -> PushOpenCLITests.Result {
        try PushSealV2CLITests.run(tool, args, in: dir, stdin: stdin)
    }

    /// The server keychain `kc` (alice registered, a sender key) and the phone: the device key
    /// imported and the sender key pinned, as the app does.
    static func setUp() throws -> URL {
        let dir = try PushSealV2CLITests.setUp(sender: true)
        let keys = ["--keychain", "phone", "--access-group", "T.shared", "--app-id", app]
        #expect(try run("push-keys", ["keychain", "init", "--keychain", "phone"], in: dir).status == 0)
        let made = try run("push-keys", ["device", "import"] + keys + ["--key-file", "device.key", "--now", "1796000000"], in: dir)
        #expect(made.status == 0, "\(made.stderr)")
        let pin = try run("push-keys", ["device", "pin-sender"] + keys + ["sender.json"], in: dir)
        #expect(pin.status == 0, "\(pin.stderr)")
        return dir
    }

    static func seal(_ id: String, _ title: String, in dir: URL) throws -> String {
        try Data(#"{"title":"\#(title)","body":"b","id":"\#(id)"}"#.utf8).write(to: dir.appendingPathComponent("note.json"))
        let r = try run("push-seal", ["seal", "--app-id", app, "--recipient", "alice", "--keychain", "kc", "note.json"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        return r.stdout
    }

    static func delivered(in dir: URL) throws -> [[String: Any]] {
        let r = try run("push-open", phone + ["--delivered"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        return r.json["delivered"] as? [[String: Any]] ?? []
    }

    static func ids(_ list: [[String: Any]]) -> [String] { list.compactMap { $0["id"] as? String } }

    @Test func threeDeliveredTwoRetractedTheRetractNeverShownReplayAndForgeryRemoveNothing() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (n, (id, title)) in [("n-1", "One"), ("n-2", "Two"), ("n-3", "Three")].enumerated() {
            let opened = try Self.run("push-open", Self.phone + ["--request-id", "req-\(n + 1)", "-"], in: dir, stdin: try Self.seal(id, title, in: dir))
            #expect(opened.status == 0 && opened.json["title"] as? String == title, "\(opened.stdout) \(opened.stderr)")
            #expect((opened.json["userInfo"] as? [String: Any])?["pushseal-id"] as? String == id)
        }
        let three = try Self.delivered(in: dir)
        #expect(Self.ids(three) == ["n-1", "n-2", "n-3"])
        #expect(three.compactMap { $0["identifier"] as? String } == ["req-1", "req-2", "req-3"])

        // The retract: a background push, sealed (v2 auth mode) like any message.
        let sealed = try Self.run("push-seal", ["retract", "--app-id", Self.app, "--recipient", "alice", "--keychain", "kc",
                                                "--id", "n-1", "--id", "n-2", "--with-headers"], in: dir)
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let headers = try #require(sealed.json["headers"] as? [String: Any])
        #expect(headers["apns-push-type"] as? String == "background" && headers["apns-priority"] as? String == "5")
        let payloadObject = try #require(sealed.json["payload"] as? [String: Any])
        #expect((payloadObject["aps"] as? [String: Any])?.keys.sorted() == ["content-available"])
        #expect(payloadObject["enc_alg"] as? String == "HPKE-AUTH-X25519-A256GCM")
        #expect(!sealed.stdout.contains("n-1"), "the ids are sealed")
        let payload = String(decoding: try JSONSerialization.data(withJSONObject: payloadObject), as: UTF8.self)

        // iOS never hands a background push to the extension: nothing shown, nothing recorded.
        let shown = try Self.run("push-open", Self.phone + ["-"], in: dir, stdin: payload)
        #expect(shown.status == 2 && shown.json["outcome"] as? String == "notInvoked", "\(shown.stdout)")
        #expect(Self.ids(try Self.delivered(in: dir)) == ["n-1", "n-2", "n-3"])

        // The app's background handler removes the two and shows nothing.
        let app = try Self.run("push-open", Self.phone + ["--as-app", "-"], in: dir, stdin: payload)
        #expect(app.status == 0, "\(app.stdout) \(app.stderr)")
        #expect(app.json["outcome"] as? String == "retracted" && app.json["shown"] as? Bool == false)
        #expect((app.json["removed"] as? [[String: Any]])?.compactMap { $0["identifier"] as? String } == ["req-1", "req-2"])
        #expect(app.json["fetchResult"] as? String == "newData")
        #expect(Self.ids(try Self.delivered(in: dir)) == ["n-3"])

        // Replayed: refused by the replay guard, nothing removed.
        let replay = try Self.run("push-open", Self.phone + ["--as-app", "-"], in: dir, stdin: payload)
        #expect(replay.status == 1 && replay.json["outcome"] as? String == "refused" && replay.json["reason"] as? String == "replayed", "\(replay.stdout)")
        #expect(Self.ids(try Self.delivered(in: dir)) == ["n-3"])

        // Forged: another server's sender key (not pinned on the phone) retracting n-3.
        let forger = ["--keychain", "kc2", "--app-id", Self.app]
        #expect(try Self.run("push-keys", ["keychain", "init", "--keychain", "kc2"], in: dir).status == 0)
        #expect(try Self.run("push-keys", ["register", "--keychain", "kc2", "--recipient", "alice", "--app-id", Self.app, "registration.json"], in: dir).status == 0)
        #expect(try Self.run("push-keys", ["sender", "generate"] + forger, in: dir).status == 0)
        let forged = try Self.run("push-seal", ["retract", "--app-id", Self.app, "--recipient", "alice", "--keychain", "kc2", "--id", "n-3"], in: dir)
        #expect(forged.status == 0, "\(forged.stderr)")
        let refused = try Self.run("push-open", Self.phone + ["--as-app", "-"], in: dir, stdin: forged.stdout)
        #expect(refused.status == 1 && refused.json["reason"] as? String == "unknownSenderKey", "\(refused.stdout)")
        #expect((refused.json["removed"] as? [Any])?.isEmpty == true)
        #expect(Self.ids(try Self.delivered(in: dir)) == ["n-3"])

        // A display message is not for the background handler; an unknown id is fine.
        let display = try Self.run("push-open", Self.phone + ["--as-app", "-"], in: dir, stdin: try Self.seal("n-4", "Four", in: dir))
        #expect(display.status == 1 && display.json["reason"] as? String == "wrongKind:display", "\(display.stdout)")
        let unknown = try Self.run("push-seal", ["retract", "--app-id", Self.app, "--recipient", "alice", "--keychain", "kc", "--id", "gone"], in: dir)
        let gone = try Self.run("push-open", Self.phone + ["--as-app", "-"], in: dir, stdin: unknown.stdout)
        #expect(gone.status == 0 && (gone.json["notFound"] as? [String]) == ["gone"] && gone.json["fetchResult"] as? String == "noData", "\(gone.stdout)")
        #expect(Self.ids(try Self.delivered(in: dir)) == ["n-3"])
    }

    @Test func retractUsageAndTheBatchLineForm() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let none = try Self.run("push-seal", ["retract", "--app-id", Self.app, "--recipient", "alice", "--keychain", "kc"], in: dir)
        #expect(none.status == 64 && none.stderr.hasPrefix("push-seal: error: a retract names 1 to 100 ids"), "\(none.stderr)")
        let lines = #"{"recipient":"alice","retract":["n-1"]}"# + "\n" + #"{"recipient":"alice","notification":{"title":"t"}}"# + "\n"
        let batch = try Self.run("push-seal", ["batch", "--app-id", Self.app, "--keychain", "kc", "-"], in: dir, stdin: lines)
        #expect(batch.status == 0, "\(batch.stdout) \(batch.stderr)")
        let out = batch.stdout.split(separator: "\n").map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
        #expect((out.first?["headers"] as? [String: Any])?["apns-push-type"] as? String == "background")
        #expect((out.last?["headers"] as? [String: Any])?["apns-push-type"] as? String == "alert")
        // The Python reference opens the retract push-seal sealed.
        let retract = try #require(out.first?["payload"])
        let payload = String(decoding: try JSONSerialization.data(withJSONObject: retract), as: UTF8.self)
        let script = """
            import base64, json, sys
            sys.path.insert(0, sys.argv[1])
            import pushseal_ref as ref
            r = json.load(open(sys.argv[3]))
            obj, _ = ref.open_payload_v2(json.loads(sys.stdin.read()), {"\(PushSealV2CLITests.deviceKeyID)": bytes.fromhex(sys.argv[2])}, "\(Self.app)",
                                         {r["senderKeyId"]: base64.b64decode(r["publicKey"])})
            print(obj["kind"] + "|" + ",".join(obj["ids"]))
            """
        let py = try #require(runPython(script, [KeysCLI.repo.appendingPathComponent("Tests/Interop").path, PushSealV2CLITests.deviceKeyHex,
                                                 dir.appendingPathComponent("sender.json").path], input: Data(payload.utf8)))
        #expect(py.status == 0 && py.output == "retract|n-1\n", "\(py.output) \(py.errors)")
    }
}
