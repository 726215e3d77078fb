import Foundation
import Testing
import PushSealCrypto
import PushSealJSON
import PushSealSystem
import PushSealWire
import PushSealSender
import PushSealExtension
import PushSealTestSupport

/// Wire format v2 against the independent Python reference (Tests/Interop/pushseal_ref.py over
/// hpke_ref.py, RFC 9180 from the text), both directions, base and auth mode: random
/// notifications (seeded: `PUSHSEAL_TEST_SEED`, printed in every failure) sealed by
/// `NotificationSealer` and opened by `serve` op `open2`; sealed by op `seal2` and opened by
/// the extension's opener.
@Suite struct V2InteropTests {
    static let iterations = 2000
    static let appID = V2EnvelopeTests.appID
    static func note(_ extra: String = "") -> Comment { seedNote(extra) }

    static let reference = repositoryRoot.appendingPathComponent("Tests/Interop/pushseal_ref.py")

    static let pool: [Character] = Array("abcXYZ019 _-\"\\/'<>&{}[]:,é中🍜\n\t")
    static func text(_ rng: inout SeededGenerator, max: Int) -> String {
        String((0..<Int.random(in: 1...max, using: &rng)).map { _ in pool[Int.random(in: 0..<pool.count, using: &rng)] })
    }

    /// A random plaintext object: title and body, sometimes a subtitle, an id, `data`.
    static func plaintext(_ rng: inout SeededGenerator, _ i: Int) -> JSONObject {
        var o = JSONObject()
        o["title"] = .string(text(&rng, max: 40))
        if Bool.random(using: &rng) { o["subtitle"] = .string(text(&rng, max: 30)) }
        o["body"] = .string(text(&rng, max: i % 50 == 0 ? 900 : 120))
        o["id"] = .string("n-\(i)")
        if i % 7 == 0 { o["data"] = .object(["thread": .integer(Int64(i)), "flag": .bool(i % 2 == 0), "s": .string(text(&rng, max: 10))]) }
        return o
    }

    /// Runs `pushseal_ref.py serve` over `requests` (one JSON object a line), returning one
    /// response per line; nil when python3 or the reference cannot run.
    static func serve(_ requests: [JSONValue]) throws -> [JSONValue]? {
        guard FileManager.default.fileExists(atPath: reference.path) else { return nil }
        var input: [UInt8] = []
        for r in requests { input += try JSONWriter.serialize(r); input.append(0x0A) }
        guard let result = runPython(file: reference, ["serve"], input: Data(input)), result.status == 0 else { return nil }
        return try Array(result.output.utf8).split(separator: 0x0A).map { try JSONReader.parse(Array($0)) }
    }

    static func hex(_ b: [UInt8]) -> String { Hex.encode(b) }

    struct Party {
        let device: X25519.PrivateKey
        let deviceKeyID = "dev-v2"
        let sender: X25519.PrivateKey
        let senderID = "snd-v2"
        init(_ rng: inout SeededGenerator) throws {
            func ikm(_ rng: inout SeededGenerator) -> SecretBytes { SecretBytes(copying: (0..<4).flatMap { _ in withUnsafeBytes(of: rng.next()) { Array($0) } }) }
            device = try HPKE.deriveKeyPair(inputKeyMaterial: ikm(&rng))
            sender = try HPKE.deriveKeyPair(inputKeyMaterial: ikm(&rng))
        }
        var pinned: [PinnedSenderKey] { get throws { [try PinnedSenderKey(keyID: senderID, publicKey: sender.publicKey)] } }
    }

    @Test(arguments: [false, true])
    func swiftSealsPythonOpens(auth: Bool) throws {
        var rng = SeededGenerator(seed: testSeed &+ (auth ? 1 : 0))
        let party = try Party(&rng)
        let alg = auth ? HPKEAuthEnvelope.algorithmName : HPKEBaseEnvelope.algorithmName
        let key = SealingKey(keyID: party.deviceKeyID, key: SecretBytes(copying: party.device.publicKey.rawRepresentation), algorithm: alg)
        let registry = try EnvelopeRegistry.standard.addingV2(sealingWithSenderKey: auth ? party.sender : nil, senderKeyID: auth ? party.senderID : nil)
        let sealer = try NotificationSealer(appID: Self.appID, keys: InMemorySealingKeys([(Self.appID, "alice", key)]), registry: registry)
        let opener = WireFormatOpener(registry: .opening(pinnedSenders: auth ? try party.pinned : []))
        let deviceHex = Self.hex(party.device.rawRepresentation.copyBytes())
        var requests: [JSONValue] = [], expected: [(title: String?, raw: [UInt8])] = []
        for i in 0..<Self.iterations {
            let plain = Self.plaintext(&rng, i)
            let sealed = try sealer.seal(notificationJSON: try JSONWriter.serialize(.object(plain)), for: "alice")
            let payload = try JSONReader.parse(sealed.payload)
            #expect(payload["enc_alg"]?.stringValue == alg, Self.note())
            // Swift's own open gives the bytes Python must give.
            let envelope = try opener.envelope(in: payload)
            let raw = try envelope.openBytes(with: SecretBytes(copying: party.device.rawRepresentation.copyBytes()), appID: Self.appID)
            expected.append((plain["title"]?.stringValue, raw))
            var r: JSONObject = ["op": .string("open2"), "appId": .string(Self.appID), "payload": payload,
                                 "deviceKeys": .object(JSONObject([(key: party.deviceKeyID, value: JSONValue.string(deviceHex))]))]
            if auth { r["senderKeys"] = .object(JSONObject([(key: party.senderID, value: JSONValue.string(Self.hex(party.sender.publicKey.rawRepresentation)))])) }
            requests.append(.object(r))
        }
        guard let responses = try Self.serve(requests) else {
            Issue.record("python3 with cryptography, or Tests/Interop/pushseal_ref.py, is missing: run scripts/install-deps.sh")
            return
        }
        try #require(responses.count == Self.iterations, Self.note("\(responses.count) responses"))
        var mismatches = 0
        for (i, r) in responses.enumerated() {
            let ok = r["error"] == nil && r["plaintextHex"]?.stringValue == Self.hex(expected[i].raw)
                && r["plaintext"]?["title"]?.stringValue == expected[i].title
            if !ok {
                mismatches += 1
                if mismatches <= 3 { Issue.record(Self.note("line \(i + 1): \(r["error"]?.stringValue ?? "plaintext differs") \(r["reason"]?.stringValue ?? "")")) }
            }
        }
        #expect(mismatches == 0, Self.note())
    }

    @Test(arguments: [false, true])
    func pythonSealsSwiftOpens(auth: Bool) throws {
        var rng = SeededGenerator(seed: testSeed &+ (auth ? 3 : 2))
        let party = try Party(&rng)
        var requests: [JSONValue] = [], plains: [JSONObject] = []
        for i in 0..<Self.iterations {
            let plain = Self.plaintext(&rng, i)
            plains.append(plain)
            var r: JSONObject = ["op": .string("seal2"), "publicKey": .string(Self.hex(party.device.publicKey.rawRepresentation)),
                                 "keyId": .string(party.deviceKeyID), "appId": .string(Self.appID), "plaintext": .object(plain),
                                 "padding": .bool(i % 3 != 0)]
            if auth {
                r["senderKey"] = .string(Self.hex(party.sender.rawRepresentation.copyBytes()))
                r["senderKeyId"] = .string(party.senderID)
            }
            requests.append(.object(r))
        }
        guard let responses = try Self.serve(requests) else {
            Issue.record("python3 with cryptography, or Tests/Interop/pushseal_ref.py, is missing: run scripts/install-deps.sh")
            return
        }
        try #require(responses.count == Self.iterations, Self.note("\(responses.count) responses"))
        let opener = WireFormatOpener(registry: .opening(pinnedSenders: auth ? try party.pinned : []))
        let deviceKey = SecretBytes(copying: party.device.rawRepresentation.copyBytes())
        var mismatches = 0
        for (i, r) in responses.enumerated() {
            do {
                let fields = try #require(r["fields"], Self.note("line \(i + 1): \(r["error"]?.stringValue ?? "")"))
                let n = try opener.open(try opener.envelope(in: fields), with: deviceKey, appID: Self.appID)
                let p = plains[i]
                if n.title != p["title"]?.stringValue || n.body != p["body"]?.stringValue || n.subtitle != p["subtitle"]?.stringValue
                    || n.id != p["id"]?.stringValue || (p["data"] != nil) != (n.data != nil) {
                    mismatches += 1
                    if mismatches <= 3 { Issue.record(Self.note("line \(i + 1): members differ")) }
                }
            } catch {
                mismatches += 1
                if mismatches <= 3 { Issue.record(Self.note("line \(i + 1): \(error)")) }
            }
        }
        #expect(mismatches == 0, Self.note())
        // Python's auth payloads are refused by a device that pinned nothing, base ones by a pinned device.
        if let fields = responses.first?["fields"] {
            let other = WireFormatOpener(registry: .opening(pinnedSenders: auth ? [] : try party.pinned))
            #expect(throws: FormatError(auth ? .unknownSenderKey : .downgradeRefused, "")) { try other.envelope(in: fields) }
        }
    }

    /// The order of checks (FORMAT.md §V.3, §V.7) on payloads with two problems at once: the
    /// Swift reader and the Python reference name the same first one.
    @Test func orderOfChecksMatchesTheReference() throws {
        var rng = SeededGenerator(seed: testSeed &+ 9)
        let party = try Party(&rng)
        let auth = "HPKE-AUTH-X25519-A256GCM", base = "HPKE-BASE-X25519-A256GCM"
        let box48 = WireBase64.encode([UInt8](repeating: 9, count: 48)), box31 = WireBase64.encode([UInt8](repeating: 9, count: 31))
        let box40 = WireBase64.encode([UInt8](repeating: 9, count: 40))
        let cases: [(JSONObject, Bool)] = [
            (["encrypted_data": .string(""), "key_id": .string("k"), "enc_alg": .string(auth)], true),
            (["encrypted_data": .string(""), "key_id": .string("k"), "enc_alg": .string(auth), "sender_key_id": .string("")], true),
            (["encrypted_data": .string(box48), "key_id": .string(""), "enc_alg": .string(auth), "sender_key_id": .integer(1)], true),
            (["encrypted_data": .string(box48), "key_id": .string("a|b"), "enc_alg": .string(auth), "sender_key_id": .string("c|d")], true),
            (["encrypted_data": .string(box48), "key_id": .string("k"), "enc_alg": .string(auth), "sender_key_id": .string("c|d")], true),
            (["encrypted_data": .string("!!"), "key_id": .string("k"), "enc_alg": .string(auth), "sender_key_id": .string("nope")], true),
            (["encrypted_data": .string(box31), "key_id": .string("k"), "enc_alg": .string(auth), "sender_key_id": .string("nope")], true),
            (["encrypted_data": .string(box40), "key_id": .string("k"), "enc_alg": .string(base)], true),
            (["encrypted_data": .string(box31), "key_id": .string("k"), "enc_alg": .string(base), "sender_key_id": .integer(3)], false),
            (["encrypted_data": .string(box48), "key_id": .string("k"), "enc_alg": .string(base)], true),
            (["encrypted_data": .string(box48), "key_id": .string("unknown"), "enc_alg": .string(auth), "sender_key_id": .string("nope")], true),
            (["encrypted_data": .string(box48), "key_id": .string("unknown"), "enc_alg": .string(auth), "sender_key_id": .string(party.senderID)], true),
            (["encrypted_data": .string(box48), "key_id": .string(party.deviceKeyID), "enc_alg": .string(auth), "sender_key_id": .string(party.senderID)], true),
            (["encrypted_data": .integer(1), "key_id": .string(""), "enc_alg": .string("A256GCM")], false),
            (["encrypted_data": .string(box48), "key_id": .string("k"), "enc_alg": .string("hpke-auth-x25519-a256gcm")], false),
        ]
        var requests: [JSONValue] = []
        for (payload, pinned) in cases {
            var r: JSONObject = ["op": .string("open2"), "appId": .string(Self.appID), "payload": .object(payload),
                                 "deviceKeys": .object(JSONObject([(key: party.deviceKeyID, value: JSONValue.string(Self.hex(party.device.rawRepresentation.copyBytes())))]))]
            if pinned { r["senderKeys"] = .object(JSONObject([(key: party.senderID, value: JSONValue.string(Self.hex(party.sender.publicKey.rawRepresentation)))])) }
            requests.append(.object(r))
        }
        guard let responses = try Self.serve(requests) else {
            Issue.record("python3 with cryptography, or Tests/Interop/pushseal_ref.py, is missing: run scripts/install-deps.sh")
            return
        }
        try #require(responses.count == cases.count)
        for (i, (payload, pinned)) in cases.enumerated() {
            let opener = WireFormatOpener(registry: .opening(pinnedSenders: pinned ? try party.pinned : []))
            var code = "open"
            do {
                let envelope = try opener.envelope(in: .object(payload))
                if envelope.keyID != party.deviceKeyID { throw FormatError(.invalidKeyID, "stands for unknownKeyID") }
                _ = try opener.open(envelope, with: SecretBytes(copying: party.device.rawRepresentation.copyBytes()), appID: Self.appID)
            } catch let e as FormatError {
                code = e.code == .invalidKeyID && e.reason == "stands for unknownKeyID" ? "unknownKeyID" : e.code.name
            }
            #expect(code == responses[i]["error"]?.stringValue, "case \(i): Swift \(code), Python \(responses[i]["error"]?.stringValue ?? "open")")
        }
    }
}
