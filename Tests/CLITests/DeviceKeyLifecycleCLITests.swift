import Foundation
import Testing
import PushSealCrypto
import PushSealSystem
import PushSealTestSupport
import PushSealWire

/// The device side of v2 through the built tools: `push-keys device generate / rotate / promote /
/// prune / pin-sender / list` write the items of docs/keychain.md "Device key items", and `push-open`
/// (the real host and extension) opens from them, with no key file and no interim option.
@Suite(.serialized) struct DeviceKeyLifecycleCLITests {
    static let app = "com.example.app"
    static let identity = ["--access-group", "T.shared"]
    static let t0: Int64 = 1_796_000_000

    struct Sender {
        let key: X25519.PrivateKey
        let id: String
        init(_ id: String) throws { (key, self.id) = (try X25519.PrivateKey(), id) }
        func record(appID: String = DeviceKeyLifecycleCLITests.app, publicKey: [UInt8]? = nil) -> String {
            let raw = publicKey ?? key.publicKey.rawRepresentation
            return #"{"format":"pushseal-sender-key","version":2,"appId":"\#(appID)","senderKeyId":"\#(id)","publicKey":"\#(WireBase64.encode(raw))"}"#
        }
    }

    static func keys(_ args: [String], in dir: TemporaryDirectory, stdin: Data? = nil) throws -> PushOpenCLITests.Result {
        try PushOpenCLITests.run("push-keys", args, in: dir.url, stdin: stdin)
    }

    static func device(_ command: String, _ extra: [String] = [], now: Int64, in dir: TemporaryDirectory, stdin: Data? = nil) throws -> PushOpenCLITests.Result {
        try keys(["device", command, "--keychain", "kc"] + identity + ["--app-id", app, "--now", String(now)] + extra, in: dir, stdin: stdin)
    }

    /// A payload sealed to the registration `record` (base mode, or auth mode by `sender`).
    static func seal(to record: [String: Any], by sender: Sender? = nil, iat: Int64) throws -> Data {
        let publicKey = try #require((record["publicKey"] as? String).flatMap { Data(base64Encoded: $0) })
        let keyID = try #require(record["keyId"] as? String)
        let algorithm: any EnvelopeAlgorithm = try sender.map { try HPKEAuthEnvelope(senderKey: $0.key, senderKeyID: $0.id) } ?? HPKEBaseEnvelope()
        let text = #"{"title":"Lunch?","body":"Noon","id":"\#(UUID().uuidString)","iat":\#(iat)}"#
        let fields = try WireFormat.seal(encodedPlaintext: Array(text.utf8), key: SecretBytes(copying: [UInt8](publicKey)), keyID: keyID,
                                         appID: app, algorithm: algorithm)
        var payload: [String: Any] = ["aps": ["alert": ["title": "New message", "body": "Open the app"], "mutable-content": 1],
                                      "encrypted_data": fields.encryptedData, "key_id": fields.keyID, "enc_alg": fields.algorithm]
        for field in fields.headerFields { payload[field.name] = field.value }
        return try JSONSerialization.data(withJSONObject: payload)
    }

    static func open(_ payload: Data, now: Int64, in dir: TemporaryDirectory) throws -> PushOpenCLITests.Result {
        try PushOpenCLITests.run("push-open", ["--keychain", "kc", "--app-id", app] + identity + ["--no-replay-guard", "--now", String(now), "-"],
                                 in: dir.url, stdin: payload)
    }

    static func setUp() throws -> TemporaryDirectory {
        let dir = try TemporaryDirectory("pushseal-device-life")
        #expect(try keys(["keychain", "init", "--keychain", "kc"], in: dir).status == 0)
        return dir
    }

    @Test func generatedKeyOpensBaseAndAuthAndPinningRefusesTheDowngrade() throws {
        let dir = try Self.setUp()
        defer { dir.remove() }
        let generated = try Self.device("generate", now: Self.t0, in: dir)
        #expect(generated.status == 0, "\(generated.stderr)")
        let registration = generated.json
        let base = try Self.open(try Self.seal(to: registration, iat: Self.t0), now: Self.t0 + 1, in: dir)
        #expect(base.status == 0, "\(base.stdout) \(base.stderr)")
        #expect(base.json["title"] as? String == "Lunch?")
        let sender = try Sender("snd-1")
        #expect(try Self.open(try Self.seal(to: registration, by: sender, iat: Self.t0), now: Self.t0 + 1, in: dir).json["reason"] as? String == "unknownSenderKey")
        let pinned = try Self.device("pin-sender", ["--json", "-"], now: Self.t0, in: dir, stdin: Data(sender.record().utf8))
        #expect(pinned.status == 0, "\(pinned.stderr)")
        #expect(pinned.json["senderKeyId"] as? String == "snd-1")
        #expect(pinned.json["added"] as? Bool == true)
        #expect((pinned.json["item"] as? [String: Any])?["service"] as? String == "pushseal.sender:" + Self.app)
        // Pinning the same record again changes nothing.
        try Data(sender.record().utf8).write(to: dir.appending("sender.json"))
        let again = try Self.device("pin-sender", ["--json", "sender.json"], now: Self.t0, in: dir)
        #expect(again.status == 0 && again.json["added"] as? Bool == false, "\(again.stderr)")
        let auth = try Self.open(try Self.seal(to: registration, by: sender, iat: Self.t0), now: Self.t0 + 1, in: dir)
        #expect(auth.status == 0, "\(auth.stdout) \(auth.stderr)")
        #expect(auth.json["body"] as? String == "Noon")
        let downgrade = try Self.open(try Self.seal(to: registration, iat: Self.t0), now: Self.t0 + 1, in: dir)
        #expect(downgrade.status == 1)
        #expect(downgrade.json["reason"] as? String == "downgradeRefused")
        #expect(downgrade.json["title"] as? String == "New message")
    }

    @Test func rotationWithAMessageInFlightOpensInGraceAndFallsBackAfterPrune() throws {
        let dir = try Self.setUp()
        defer { dir.remove() }
        let first = try Self.device("generate", now: Self.t0, in: dir).json
        let oldID = try #require(first["keyId"] as? String)
        // Sealed to the first key before the rotation, delivered after it.
        let inFlight = try Self.seal(to: first, iat: Self.t0 + 10)
        let rotated = try Self.device("rotate", ["--json"], now: Self.t0 + 15, in: dir)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        #expect(rotated.json["status"] as? String == "pending")
        let second = try #require(rotated.json["registration"] as? [String: Any])
        let newID = try #require(second["keyId"] as? String)
        #expect(newID != oldID)
        // The server accepted the new registration: promote it (retiredAt = t0 + 20).
        let promoted = try Self.device("promote", ["--key-id", newID, "--grace", "1h", "--json"], now: Self.t0 + 20, in: dir)
        #expect(promoted.status == 0, "\(promoted.stderr)")
        #expect(promoted.json["retired"] as? [String] == [oldID] && promoted.json["promoted"] as? Bool == true, "\(promoted.stdout)")
        #expect(try Self.open(inFlight, now: Self.t0 + 30, in: dir).json["outcome"] as? String == "decrypted")
        #expect(try Self.open(try Self.seal(to: second, iat: Self.t0 + 25), now: Self.t0 + 30, in: dir).json["outcome"] as? String == "decrypted")
        // The old key vouches only for what was sealed before its retirement.
        #expect(try Self.open(try Self.seal(to: first, iat: Self.t0 + 25), now: Self.t0 + 30, in: dir).json["reason"] as? String == "keys:keyRetired")
        let listed = try Self.device("list", ["--json"], now: Self.t0 + 30, in: dir)
        let rows = try #require(listed.json["keys"] as? [[String: Any]])
        let old = try #require(rows.first { $0["keyId"] as? String == oldID })
        #expect(old["status"] as? String == "decryptOnly")
        #expect(old["retiredAt"] as? Int64 == Self.t0 + 20 || (old["retiredAt"] as? Int).map(Int64.init) == Self.t0 + 20)
        #expect((old["notAfter"] as? Int).map(Int64.init) == Self.t0 + 20 + 3600)
        #expect(old["publicKey"] as? String == first["publicKey"] as? String)
        #expect(rows.first { $0["keyId"] as? String == newID }?["status"] as? String == "primary")
        #expect(!listed.stdout.contains("\"key\""))
        // Within the grace window nothing is pruned; after it the old key is deleted.
        let early = try Self.device("prune", now: Self.t0 + 100, in: dir)
        #expect(early.status == 0 && early.stdout.isEmpty, "\(early.stdout) \(early.stderr)")
        #expect(try Self.open(inFlight, now: Self.t0 + 20 + 3600, in: dir).json["reason"] as? String == "keyExpired")
        let pruned = try Self.device("prune", ["--json"], now: Self.t0 + 20 + 3600, in: dir)
        #expect(pruned.json["pruned"] as? [String] == [oldID], "\(pruned.stdout) \(pruned.stderr)")
        #expect(try Self.open(inFlight, now: Self.t0 + 20 + 3600, in: dir).json["reason"] as? String == "unknownKey")
        #expect(try Self.open(try Self.seal(to: second, iat: Self.t0 + 3000), now: Self.t0 + 3700, in: dir).json["outcome"] as? String == "decrypted")
        // generate refuses a second key and points at rotate.
        let twice = try Self.device("generate", now: Self.t0, in: dir)
        #expect(twice.status == 73)
        #expect(twice.stderr.contains("push-keys device rotate"))
    }

    /// Security review G13: `device rotate` keeps the old key primary until `device promote`,
    /// run once the server accepted the new registration. In between, the server (which still
    /// has only the old registration) seals to the old key and the phone shows the text, not the
    /// fallback (`keys:keyRetired` before the fix); a payload sealed to the new registration
    /// opens with the pending key; after the promote the old key is decryptOnly as before.
    @Test func rotationKeepsTheOldKeyPrimaryUntilTheServerAcceptedTheNewRegistration() throws {
        let dir = try Self.setUp()
        defer { dir.remove() }
        func register(_ record: String, now: Int64) throws -> PushOpenCLITests.Result {
            try Self.keys(["register", "--keychain", "srv", "--recipient", "alice", "--app-id", Self.app, "--now", String(now), record], in: dir)
        }
        /// push-seal to alice on the server (base mode), the notification's iat given.
        func sealOnServer(iat: Int64) throws -> Data {
            try Data(#"{"title":"Lunch?","body":"Noon \#(iat)","iat":\#(iat),"exp":\#(iat + 86_400)}"#.utf8).write(to: dir.appending("note.json"))
            let r = try PushOpenCLITests.run("push-seal", ["--app-id", Self.app, "--recipient", "alice", "--keychain", "srv", "--format", "v2", "note.json"],
                                             in: dir.url)
            #expect(r.status == 0, "\(r.stderr)")
            return Data(r.stdout.utf8)
        }
        #expect(try Self.keys(["keychain", "init", "--keychain", "srv"], in: dir).status == 0)
        let generated = try Self.device("generate", now: Self.t0, in: dir)
        let oldID = try #require(generated.json["keyId"] as? String)
        try Data(generated.stdout.utf8).write(to: dir.appending("old.json"))
        #expect(try register("old.json", now: Self.t0 + 1).status == 0)

        // Step one: a pending key; its record goes to the server, which has not seen it yet.
        let rotated = try Self.device("rotate", ["--json"], now: Self.t0 + 100, in: dir)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        #expect(rotated.json["status"] as? String == "pending", "\(rotated.stdout)")
        let newRecord = try #require(rotated.json["registration"] as? [String: Any])
        let newID = try #require(newRecord["keyId"] as? String)
        try JSONSerialization.data(withJSONObject: newRecord).write(to: dir.appending("new.json"))
        func statuses(now: Int64) throws -> [String: String] {
            let rows = try #require(try Self.device("list", ["--json"], now: now, in: dir).json["keys"] as? [[String: Any]])
            return Dictionary(uniqueKeysWithValues: rows.compactMap { row in (row["keyId"] as? String).map { ($0, row["status"] as? String ?? "-") } })
        }
        #expect(try statuses(now: Self.t0 + 100) == [oldID: "primary", newID: "pending"])

        // The server seals to the old registration after the rotation: the phone reads it.
        let toOld = try sealOnServer(iat: Self.t0 + 200)
        let opened = try Self.open(toOld, now: Self.t0 + 210, in: dir)
        #expect(opened.json["outcome"] as? String == "decrypted", "\(opened.stdout) \(opened.stderr)")
        #expect(opened.json["body"] as? String == "Noon \(Self.t0 + 200)")
        #expect((try JSONSerialization.jsonObject(with: toOld) as? [String: Any])?["key_id"] as? String == oldID)

        // The server accepts the new registration and seals to it at once: the pending key opens it.
        #expect(try register("new.json", now: Self.t0 + 300).stdout == "\(Self.app) alice: registered \(newID)\n")
        let pendingWindow = try Self.open(try sealOnServer(iat: Self.t0 + 310), now: Self.t0 + 320, in: dir)
        #expect(pendingWindow.json["outcome"] as? String == "decrypted", "\(pendingWindow.stdout) \(pendingWindow.stderr)")

        // Step two, after the server's answer: the new key primary, the old one decryptOnly for the grace window.
        let promoted = try Self.device("promote", ["--key-id", newID, "--grace", "1h", "--json"], now: Self.t0 + 400, in: dir)
        #expect(promoted.status == 0, "\(promoted.stderr)")
        #expect(promoted.json["promoted"] as? Bool == true && promoted.json["retired"] as? [String] == [oldID], "\(promoted.stdout)")
        #expect(try statuses(now: Self.t0 + 400) == [oldID: "decryptOnly", newID: "primary"])
        #expect(try Self.open(try sealOnServer(iat: Self.t0 + 500), now: Self.t0 + 510, in: dir).json["outcome"] as? String == "decrypted")
        // The old key: what was sealed before the promote opens within grace, what was sealed after it does not.
        #expect(try Self.open(toOld, now: Self.t0 + 510, in: dir).json["outcome"] as? String == "decrypted")
        let oldRecord = try #require(try JSONSerialization.jsonObject(with: Data(generated.stdout.utf8)) as? [String: Any])
        #expect(try Self.open(try Self.seal(to: oldRecord, iat: Self.t0 + 450), now: Self.t0 + 510, in: dir).json["reason"] as? String == "keys:keyRetired")
        #expect(try Self.open(toOld, now: Self.t0 + 400 + 3600, in: dir).json["reason"] as? String == "keyExpired")

        // Promote again: nothing changes, exit 0, and it says so.
        let again = try Self.device("promote", ["--key-id", newID], now: Self.t0 + 600, in: dir)
        #expect(again.status == 0 && again.stdout == newID + "\n", "\(again.stderr)")
        #expect(again.stderr.contains("already the primary") && again.stderr.contains("nothing changed"), "\(again.stderr)")
        // A retired key never becomes primary again (65, invalidState); an unknown key id is 66 (unknownKey).
        let retired = try Self.device("promote", ["--key-id", oldID], now: Self.t0 + 600, in: dir)
        #expect(retired.status == 65 && retired.stderr.contains("is decryptOnly, not pending") && retired.stderr.contains("\nhint: "), "\(retired.stderr)")
        let retiredJSON = try Self.device("promote", ["--key-id", oldID, "--json"], now: Self.t0 + 600, in: dir)
        #expect((retiredJSON.json["error"] as? [String: Any])?["code"] as? String == "invalidState", "\(retiredJSON.stdout)")
        let unknown = try Self.device("promote", ["--key-id", "no-such-key", "--json"], now: Self.t0 + 600, in: dir)
        #expect(unknown.status == 66 && (unknown.json["error"] as? [String: Any])?["code"] as? String == "unknownKey", "\(unknown.stdout)")
        #expect(((unknown.json["error"] as? [String: Any])?["hint"] as? String)?.contains("push-keys device list") == true)
        #expect(try Self.device("promote", [], now: Self.t0 + 600, in: dir).status == 64)
        #expect(try statuses(now: Self.t0 + 600) == [oldID: "decryptOnly", newID: "primary"])
    }

    @Test func senderKeyRotationWithBothKeysPinned() throws {
        let dir = try Self.setUp()
        defer { dir.remove() }
        let registration = try Self.device("generate", now: Self.t0, in: dir).json
        let (oldSender, newSender) = (try Sender("snd-2026"), try Sender("snd-2027"))
        for s in [oldSender, newSender] {
            #expect(try Self.device("pin-sender", ["-"], now: Self.t0, in: dir, stdin: Data(s.record().utf8)).stdout == s.id + "\n")
        }
        for s in [oldSender, newSender] {
            let r = try Self.open(try Self.seal(to: registration, by: s, iat: Self.t0), now: Self.t0 + 1, in: dir)
            #expect(r.json["outcome"] as? String == "decrypted", "\(s.id): \(r.stdout)")
        }
        #expect(try Self.open(try Self.seal(to: registration, by: try Sender("snd-x"), iat: Self.t0), now: Self.t0 + 1, in: dir).json["reason"] as? String == "unknownSenderKey")
        let listed = try Self.device("list", now: Self.t0, in: dir)
        #expect(listed.stdout.split(separator: "\n").filter { $0.hasPrefix("sender ") }.count == 2, "\(listed.stdout)")
        #expect(listed.stdout.contains("sender snd-2027 primary 2026-"), "\(listed.stdout)")
    }

    @Test func pinSenderRefusesAnotherAppALowOrderKeyAndMalformedRecords() throws {
        let dir = try Self.setUp()
        defer { dir.remove() }
        let sender = try Sender("snd-1")
        func pin(_ text: String) throws -> PushOpenCLITests.Result {
            try Self.device("pin-sender", ["-"], now: Self.t0, in: dir, stdin: Data(text.utf8))
        }
        let other = try pin(sender.record(appID: "com.example.other"))
        #expect(other.status == 65)
        #expect(other.stderr.hasPrefix("push-keys: error: "))
        #expect(other.stderr.contains("another app id"))
        // A low-order point (the all-zero u-coordinate): every shared secret with it is zero.
        let lowOrder = try pin(sender.record(publicKey: [UInt8](repeating: 0, count: 32)))
        #expect(lowOrder.status == 65, "\(lowOrder.stderr)")
        #expect(lowOrder.stderr.contains("low-order"))
        #expect(try pin(#"{"format":"pushseal-device-key","version":2}"#).status == 65)
        let notJSON = try pin("not json")
        #expect(notJSON.status == 65 && !notJSON.stderr.contains("hint:"))
        // Several records with one bad line: refused, naming the line, and nothing is pinned.
        let several = try pin(try Sender("snd-a").record() + "\n" + (try Sender("snd-b").record(publicKey: [1, 2])) + "\n")
        #expect(several.status == 65)
        #expect(several.stderr.hasPrefix("push-keys: error: standard input line 2: "), "\(several.stderr)")
        #expect(several.stderr.contains("nothing pinned"), "\(several.stderr)")
        #expect(try pin(sender.record(publicKey: [1, 2, 3])).status == 65)
        #expect(try pin(sender.record()).status == 0)
        // The same sender key id with other bytes.
        let changed = try pin(try Sender("snd-1").record())
        #expect(changed.status == 65)
        #expect(changed.stderr.contains("other key bytes"))
        #expect(try Self.device("pin-sender", [], now: Self.t0, in: dir).status == 64)
        #expect(try Self.device("list", ["--json"], now: Self.t0, in: dir).json["keys"] as? [[String: Any]] != nil)
    }

    @Test func pinSenderTakesSeveralRecordsAllOrNothing() throws {
        let dir = try Self.setUp()
        defer { dir.remove() }
        let a = try Sender("snd-a"), b = try Sender("snd-b"), c = try Sender("snd-c"), d = try Sender("snd-d")
        try Data((a.record() + "\n").utf8).write(to: dir.url.appendingPathComponent("a.json"))
        // A file of JSON lines, as `push-keys sender export --all` prints them (blank lines skipped).
        try Data((b.record() + "\n\n" + c.record() + "\n").utf8).write(to: dir.url.appendingPathComponent("bc.jsonl"))
        func pinned() throws -> [String] {
            let keys = try Self.device("list", ["--json"], now: Self.t0, in: dir).json["keys"] as? [[String: Any]] ?? []
            return keys.filter { $0["kind"] as? String == "sender" }.compactMap { $0["keyId"] as? String }.sorted()
        }
        // One bad record among good ones (another app, a low-order key, an id given twice with
        // other bytes, an id pinned with other bytes): exit 65 and nothing pinned.
        let bad: [(String, String)] = [(try Sender("snd-x").record(appID: "com.example.other"), "another app id"),
                                       (d.record(publicKey: [UInt8](repeating: 0, count: 32)), "low-order"),
                                       (try Sender("snd-a").record(), "given twice with other key bytes")]
        for (record, message) in bad {
            let r = try Self.device("pin-sender", ["a.json", "bc.jsonl", "-"], now: Self.t0, in: dir, stdin: Data(record.utf8))
            #expect(r.status == 65, "\(r.stderr)")
            #expect(r.stderr.contains(message), "\(r.stderr)")
            #expect(try pinned().isEmpty)
        }
        let dash = try Self.device("pin-sender", ["-", "-"], now: Self.t0, in: dir, stdin: Data())
        #expect(dash.status == 64, "\(dash.stderr)")
        // All good: every key pinned, in input order; the same run again adds nothing.
        let ok = try Self.device("pin-sender", ["a.json", "bc.jsonl", "-", "--json"], now: Self.t0, in: dir, stdin: Data(d.record().utf8))
        #expect(ok.status == 0, "\(ok.stderr)")
        let pins = ok.json["pins"] as? [[String: Any]] ?? []
        #expect(pins.compactMap { $0["senderKeyId"] as? String } == ["snd-a", "snd-b", "snd-c", "snd-d"])
        #expect(pins.allSatisfy { $0["added"] as? Bool == true })
        #expect(try pinned() == ["snd-a", "snd-b", "snd-c", "snd-d"])
        let again = try Self.device("pin-sender", ["bc.jsonl", "a.json"], now: Self.t0, in: dir)
        #expect(again.status == 0 && again.stdout == "snd-b\nsnd-c\nsnd-a\n", "\(again.stdout) \(again.stderr)")
        // A JSON array of records, as push-gateway's GET /v1/sender-keys answers: each element
        // pinned; an empty array pins nothing and says so; a bad element names its place.
        let f = try Sender("snd-f"), g = try Sender("snd-g")
        let array = try Self.device("pin-sender", ["-"], now: Self.t0, in: dir, stdin: Data("[\(f.record()),\n \(g.record())]".utf8))
        #expect(array.status == 0 && array.stdout == "snd-f\nsnd-g\n", "\(array.stdout) \(array.stderr)")
        let empty = try Self.device("pin-sender", ["-"], now: Self.t0, in: dir, stdin: Data("[]".utf8))
        #expect(empty.status == 65 && empty.stderr.contains("no sender key record"), "\(empty.stderr)")
        let badElement = try Self.device("pin-sender", ["-"], now: Self.t0, in: dir, stdin: Data("[\(f.record()), 7]".utf8))
        #expect(badElement.status == 65 && badElement.stderr.contains("element 2"), "\(badElement.stderr)")
        #expect(try pinned() == ["snd-a", "snd-b", "snd-c", "snd-d", "snd-f", "snd-g"])
        // An id pinned with other bytes, next to a new one: refused, the new one not pinned.
        let e = try Sender("snd-e")
        let clash = try Self.device("pin-sender", ["-"], now: Self.t0, in: dir, stdin: Data((e.record() + "\n" + (try Sender("snd-b").record())).utf8))
        #expect(clash.status == 65 && clash.stderr.contains("other key bytes"), "\(clash.stderr)")
        #expect(try pinned() == ["snd-a", "snd-b", "snd-c", "snd-d", "snd-f", "snd-g"])
        // Every pin works: auth mode by each opens.
        let registration = try Self.device("generate", now: Self.t0, in: dir).json
        for sender in [a, b, c, d] {
            let opened = try Self.open(try Self.seal(to: registration, by: sender, iat: Self.t0), now: Self.t0 + 1, in: dir)
            #expect(opened.json["outcome"] as? String == "decrypted", "\(sender.id): \(opened.stdout)")
        }
    }

    @Test func importDeviceItemsWritesKindOneItemsThatPushOpenReads() throws {
        let dir = try Self.setUp()
        defer { dir.remove() }
        let key = #"{"keyId":"k1","status":"primary","createdAt":1700000000,"promotedAt":1700000000,"sealCount":0,"key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}"#
        let disabled = #"{"keyId":"k1","status":"disabled","createdAt":1700000000,"retiredAt":1700000500,"sealCount":0}"#
        func record(_ entry: String) -> Data {
            Data(#"{"format":"pushseal-key-record","version":1,"appId":"com.example.app","recipient":"device","keys":[\#(entry)]}"#.utf8)
        }
        let imported = try Self.keys(["import", "--keychain", "kc"] + Self.identity + ["--device-items", "--json", "-"], in: dir, stdin: record(key))
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.json["changedKeyIds"] as? [String] == ["k1"])
        #expect(imported.json["layout"] as? String == "deviceItems")
        let listed = try Self.device("list", now: Self.t0, in: dir)
        #expect(listed.stdout.hasPrefix("v1 k1 primary 2023-"), "\(listed.stdout)")
        #expect(!listed.stdout.contains("AAECAwQF"))
        let keychainList = try Self.keys(["keychain", "list", "--keychain", "kc"], in: dir)
        #expect(keychainList.stdout.contains("pushseal.key:com.example.app\tk1\tafterFirstUnlockThisDeviceOnly\tPushSeal v1 key"), "\(keychainList.stdout)")
        #expect(!keychainList.stdout.contains("pushseal.keyset:"))
        let payload = try Data(contentsOf: URL(fileURLWithPath: PushOpenCLITests.casePath("notifications/n08.payload.json")))
        let opened = try Self.open(payload, now: Self.t0, in: dir)
        #expect(opened.json["outcome"] as? String == "decrypted", "\(opened.stdout) \(opened.stderr)")
        #expect(try Self.keys(["import", "--keychain", "kc"] + Self.identity + ["--device-items", "-"], in: dir, stdin: record(disabled)).status == 0)
        #expect(try Self.open(payload, now: Self.t0, in: dir).json["reason"] as? String == "keyDisabled")
        // Statuses only move forward: the primary record again changes nothing.
        #expect(try Self.keys(["import", "--keychain", "kc"] + Self.identity + ["--device-items", "-"], in: dir, stdin: record(key)).stdout.contains("already up to date"))
        #expect(try Self.keys(["import", "--keychain", "kc", "--device-items", "-"], in: dir, stdin: record(key)).status == 64)
    }

    @Test func aRevocationRecordDisablesDeviceKeysAndPinnedSenderKeys() throws {
        let dir = try Self.setUp()
        defer { dir.remove() }
        let registration = try Self.device("generate", now: Self.t0, in: dir).json
        let keyID = try #require(registration["keyId"] as? String)
        func revoke(_ ids: [String]) throws -> PushOpenCLITests.Result {
            let text = #"{"format":"pushseal-revocation","version":1,"appId":"\#(Self.app)","keyIds":[\#(ids.map { "\"\($0)\"" }.joined(separator: ","))],"revokedAt":\#(Self.t0 + 5)}"#
            return try Self.keys(["import", "--keychain", "kc"] + Self.identity + ["--json", "-"], in: dir, stdin: Data(text.utf8))
        }
        let r = try revoke([keyID])
        #expect(r.status == 0, "\(r.stderr)")
        #expect((r.json["disabledItems"] as? [[String: Any]])?.first?["keyId"] as? String == keyID, "\(r.stdout)")
        #expect(r.json["unknownKeyIds"] as? [String] == [])
        #expect(try Self.open(try Self.seal(to: registration, iat: Self.t0), now: Self.t0 + 10, in: dir).json["reason"] as? String == "keyDisabled")
        let listed = try Self.device("list", ["--json"], now: Self.t0, in: dir)
        let row = try #require((listed.json["keys"] as? [[String: Any]])?.first)
        #expect(row["status"] as? String == "disabled" && row["publicKey"] is NSNull, "\(listed.stdout)")
        // A revoked pinned sender key authenticates nothing.
        let rotated = try #require(try Self.device("rotate", ["--json"], now: Self.t0 + 20, in: dir).json["registration"] as? [String: Any])
        let sender = try Sender("snd-1")
        #expect(try Self.device("pin-sender", ["-"], now: Self.t0, in: dir, stdin: Data(sender.record().utf8)).status == 0)
        #expect(try Self.open(try Self.seal(to: rotated, by: sender, iat: Self.t0), now: Self.t0 + 30, in: dir).json["outcome"] as? String == "decrypted")
        #expect(try revoke(["snd-1"]).status == 0)
        #expect(try Self.open(try Self.seal(to: rotated, by: sender, iat: Self.t0), now: Self.t0 + 30, in: dir).json["reason"] as? String == "keyDisabled")
        #expect(try Self.open(try Self.seal(to: rotated, iat: Self.t0), now: Self.t0 + 30, in: dir).json["reason"] as? String == "downgradeRefused")
    }
}
