import PushSealTestSupport
import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
import Testing
@testable import PushSealExtension

/// Random mutations of valid payloads through the whole receive path: payload bytes →
/// `JSONReader` → `Eligibility` → the host running `DecryptingServiceExtension` with the real
/// wire-format opener and an in-memory key (`k1`, app `com.example.app`).
///
/// Invariants: no crash; a payload that parses and is eligible gets exactly one delivery,
/// whose text is non-empty (decrypted text, or the original alert exactly as sent); a payload
/// that is not eligible is reported "not invoked". Mutations: bytes flipped, replaced,
/// inserted, deleted and duplicated; fields removed, retyped (numbers where strings go),
/// duplicated; huge strings; deep nesting; the plaintext mutated and then sealed validly (so
/// the mutation passes authentication and reaches the plaintext decoder); the box mutated.
///
/// Seeded: `PUSHSEAL_FUZZ_SEED` (decimal) picks the seed, default fixed; iteration `i` uses the
/// generator seeded with `seed + i`, so a failure message (seed, iteration) reproduces alone
/// with `PUSHSEAL_FUZZ_SEED=<seed> PUSHSEAL_FUZZ_ONLY=<i>`.
@Suite struct FuzzTests {
    static let appID = "com.example.app"
    static let iterationCount = 10_000

    static let key = SecretBytes(copying: Array(0..<32))

    static let plaintexts: [JSONObject] = [
        ["title": "Hello", "body": "Your code is 123456", "iat": .integer(1_796_000_000)],
        ["title": "Ana", "subtitle": "Chat", "body": "Dinner at 8? 🍝", "data": .object(["thread": "t-9", "n": .integer(3)]),
         "id": "m-1"],
        ["body": "שלום 👋🏽", "localizations": .object(["pt-BR": .object(["body": "Olá"]), "fr": .object(["title": "Bonjour"])])],
        ["title": "Photo", "body": "Look", "media": .object(["url": "https://example.com/p.jpg", "type": "image/jpeg",
                                                             "sha256": .string(String(repeating: "ab", count: 32))])],
        ["title": "Code", "body": "123456", "exp": .integer(4_000_000_000)],
    ]

    /// Seals raw plaintext bytes into a payload for key id `k1`.
    static func payload(sealing plaintext: [UInt8], keyID: String = "k1", alert: JSONValue? = nil) throws -> JSONObject {
        let box = try AES256GCM.seal(plaintext, with: key, authenticating: WireFormat.aad(algorithm: "A256GCM", keyID: keyID, appID: appID))
        return [
            "aps": .object(["alert": alert ?? .object(["title": "New message", "body": "Open the app to read it"]),
                            "mutable-content": .integer(1)]),
            "encrypted_data": .string(WireBase64.encode(box.combined)),
            "key_id": .string(keyID),
            "enc_alg": "A256GCM",
        ]
    }

    // MARK: Mutations

    static let interestingBytes: [UInt8] = Array("\"\\{}[]:,0-9e.ntf =+/_".utf8) + [0, 0x0A, 0x7F, 0x80, 0xC3, 0xFF]

    /// Byte-level mutations of JSON text.
    static func mutateBytes(_ bytes: inout [UInt8], _ g: inout SeededGenerator) {
        let count = 1 + g.below(4)
        for _ in 0..<count {
            switch g.below(9) {
            case 0 where !bytes.isEmpty:
                bytes[g.below(bytes.count)] ^= UInt8(1 << g.below(8))
            case 1 where !bytes.isEmpty:
                bytes[g.below(bytes.count)] = g.pick(interestingBytes)
            case 2:
                let insert = (0..<(1 + g.below(8))).map { _ in g.chance(50) ? g.pick(interestingBytes) : UInt8(truncatingIfNeeded: g.next()) }
                bytes.insert(contentsOf: insert, at: g.below(bytes.count + 1))
            case 3 where !bytes.isEmpty:
                let start = g.below(bytes.count)
                bytes.removeSubrange(start..<min(bytes.count, start + 1 + g.below(16)))
            case 4 where !bytes.isEmpty:
                let start = g.below(bytes.count)
                let piece = bytes[start..<min(bytes.count, start + 1 + g.below(64))]
                bytes.insert(contentsOf: piece, at: g.below(bytes.count + 1))
            case 5 where bytes.first == UInt8(ascii: "{"):
                // Duplicate a member: the reader must refuse duplicate names, never pick one silently.
                let member = g.pick(["\"key_id\":\"k1\",", "\"key_id\":\"k2\",", "\"enc_alg\":\"A256GCM\",", "\"encrypted_data\":\"AAAA\",",
                                     "\"aps\":{\"alert\":\"x\",\"mutable-content\":1},", "\"title\":\"dup\",", "\"body\":1,"])
                bytes.insert(contentsOf: Array(member.utf8), at: 1)
            case 6:
                let depth = 1 + g.below(200)
                bytes = [UInt8](repeating: UInt8(ascii: "["), count: depth) + bytes + [UInt8](repeating: UInt8(ascii: "]"), count: depth)
            case 7:
                let depth = 1 + g.below(120)
                let open = Array(String(repeating: "{\"a\":", count: depth).utf8)
                let close = [UInt8](repeating: UInt8(ascii: "}"), count: depth)
                let at = g.below(bytes.count + 1)
                bytes.insert(contentsOf: open + Array("1".utf8) + close, at: at)
            default:
                let huge = "\"" + String(repeating: g.pick(["a", "é", "\\u0000", "\\ud83d", "🍝", " "]), count: 1 + g.below(50_000)) + "\""
                bytes.insert(contentsOf: Array(huge.utf8), at: g.below(bytes.count + 1))
            }
        }
    }

    /// A random JSON value of another type, possibly huge or deep.
    static func randomValue(_ g: inout SeededGenerator) -> JSONValue {
        switch g.below(10) {
        case 0: return .null
        case 1: return .bool(g.chance(50))
        case 2: return .integer(g.pick([0, 1, -1, 2, Int64.max, Int64.min, 1_796_000_000]))
        case 3: return .number(g.pick([1.0, 1.5, -0.0, 1e300, 3.14]))
        case 4: return .string(g.pick(["", "1", "A256GCM", "k1", "a256gcm", " ", "\u{0}", "AAAA", "é"]))
        case 5: return .string(String(repeating: "Z", count: 1 + g.below(100_000)))
        case 6: return .array((0..<g.below(4)).map { _ in .integer(Int64(g.below(9))) })
        case 7:
            var v: JSONValue = .string("deep")
            for _ in 0..<(1 + g.below(100)) { v = g.chance(50) ? .array([v]) : .object(["d": v]) }
            return v
        case 8: return .object(["title": .integer(1), "body": .null])
        default: return .string(String(repeating: "🍝", count: 1 + g.below(2_000)))
        }
    }

    /// Field-level mutations of a payload object (top level, `aps`, `aps.alert`).
    static func mutateFields(_ payload: inout JSONObject, _ g: inout SeededGenerator) {
        let count = 1 + g.below(3)
        for _ in 0..<count {
            let field = g.pick(["encrypted_data", "key_id", "enc_alg", "aps", "aps.alert", "aps.mutable-content", "aps.alert.title",
                                "aps.alert.body", "extra"])
            let action = g.below(4)  // 0 remove, 1 retype, 2 huge string, 3 numbers/flags where strings go
            let replacement: JSONValue? = switch action {
            case 0: nil
            case 1: randomValue(&g)
            case 2: .string(String(repeating: g.pick(["A", "k", "+", " ", "é"]), count: 1 + g.below(200_000)))
            default: g.pick([.integer(1), .integer(0), .number(1.0), .bool(true), .string("1"), .integer(256)])
            }
            let path = field.split(separator: ".").map(String.init)
            payload = set(path, in: .object(payload), to: replacement).objectValue ?? payload
        }
    }

    /// Sets (or removes, with `nil`) the member at `path`; creates objects on the way.
    static func set(_ path: [String], in value: JSONValue, to replacement: JSONValue?) -> JSONValue {
        guard let first = path.first else { return replacement ?? .null }
        var object = value.objectValue ?? JSONObject()
        var members = object.members.filter { $0.key != first }
        if let child = path.count == 1 ? replacement : set(Array(path.dropFirst()), in: object[first] ?? .object(JSONObject()), to: replacement) {
            let index = object.members.firstIndex { $0.key == first } ?? members.count
            members.insert((key: first, value: child), at: min(index, members.count))
        }
        object = JSONObject(members)
        return .object(object)
    }

    /// One mutated payload, as the bytes APNs would deliver.
    static func mutatedPayload(_ g: inout SeededGenerator) throws -> [UInt8] {
        let plaintext = g.pick(plaintexts)
        switch g.below(6) {
        case 0:
            // Plaintext bytes mutated, then sealed validly: reaches the plaintext decoder.
            var inner = try JSONWriter.serialize(.object(plaintext))
            mutateBytes(&inner, &g)
            return try JSONWriter.serialize(.object(try payload(sealing: inner)))
        case 1:
            // Plaintext fields mutated (removed, retyped, huge, deep), then sealed validly.
            var inner = plaintext
            for _ in 0..<(1 + g.below(3)) {
                let field = g.pick(["title", "subtitle", "body", "media", "media.url", "media.key", "media.sha256", "localizations",
                                    "localizations.fr", "localizations.fr.title", "data", "iat", "exp", "id"])
                let path = field.split(separator: ".").map(String.init)
                inner = set(path, in: .object(inner), to: g.chance(25) ? nil : randomValue(&g)).objectValue ?? inner
            }
            return try JSONWriter.serialize(.object(try payload(sealing: try JSONWriter.serialize(.object(inner)))))
        case 2:
            // The box mutated (bits flipped, truncated, extended) or spelled differently.
            var p = try payload(sealing: try JSONWriter.serialize(.object(plaintext)))
            var box = try WireBase64.decode(p["encrypted_data"]?.stringValue ?? "")
            switch g.below(4) {
            case 0: box[g.below(box.count)] ^= UInt8(1 << g.below(8))
            case 1: box.removeLast(1 + g.below(box.count))
            case 2: box += (0..<(1 + g.below(40))).map { _ in UInt8(truncatingIfNeeded: g.next()) }
            default: break
            }
            var text = WireBase64.encode(box)
            if g.chance(50) {
                text = String(text.map { c in c == "+" ? "-" : c == "/" ? "_" : c }).replacingOccurrences(of: "=", with: "")
            }
            if g.chance(30) { text.insert(contentsOf: g.pick(["\r\n", " ", "\t", "=", "+", "_"]), at: text.index(text.startIndex, offsetBy: g.below(text.count + 1))) }
            p = set(["encrypted_data"], in: .object(p), to: .string(text)).objectValue ?? p
            return try JSONWriter.serialize(.object(p))
        case 3:
            var p = try payload(sealing: try JSONWriter.serialize(.object(plaintext)))
            mutateFields(&p, &g)
            return try JSONWriter.serialize(.object(p))
        default:
            var bytes = try JSONWriter.serialize(.object(try payload(sealing: try JSONWriter.serialize(.object(plaintext)))))
            mutateBytes(&bytes, &g)
            return bytes
        }
    }

    // MARK: The run

    struct Tally {
        var parseRejected = 0, notInvoked = 0, original = 0, decrypted = 0
    }

    static func alertUsesLocKeys(_ payload: JSONValue) -> Bool {
        guard case .object(let alert)? = payload["aps"]?["alert"] else { return false }
        return ["loc-key", "title-loc-key", "subtitle-loc-key"].contains { !(alert[$0]?.stringValue ?? "").isEmpty }
    }

    /// Runs one iteration; returns a failure description or `nil`.
    static func runOne(seed: UInt64, iteration: Int, host: ExtensionHost, tally: inout Tally) -> String? {
        var g = SeededGenerator(seed: seed &+ UInt64(iteration))
        let bytes: [UInt8]
        do {
            bytes = try mutatedPayload(&g)
        } catch {
            return "the mutator failed: \(error)"
        }
        guard let payload = try? JSONReader.parse(bytes) else {
            tally.parseRejected += 1
            return nil
        }
        let eligible = Eligibility(payload: payload) == .eligible
        let request = UNNotificationRequest(identifier: "fuzz-\(iteration)", apnsPayload: payload)
        let result = host.run(request)
        guard eligible else {
            tally.notInvoked += 1
            return result.outcome == .notInvoked ? nil : "not eligible, but the outcome is \(result.outcome.rawValue)"
        }
        guard result.outcome != .notInvoked, let content = result.content else {
            return "eligible, but nothing was delivered (outcome \(result.outcome.rawValue), reason \(result.reason))"
        }
        let deliveries = result.log.filter { $0.contains("stage=host event=delivered") }.count
        guard deliveries == 1 else { return "\(deliveries) deliveries instead of exactly one" }
        guard !content.isBlank || alertUsesLocKeys(payload) else {
            return "blank notification delivered (outcome \(result.outcome.rawValue), reason \(result.reason))"
        }
        switch result.outcome {
        case .original:
            tally.original += 1
            let sent = request.content
            guard (content.title, content.subtitle, content.body) == (sent.title, sent.subtitle, sent.body), content.attachments.isEmpty else {
                return "original outcome, but the content differs from the alert as sent"
            }
        default:
            tally.decrypted += 1
        }
        return nil
    }

    @Test func tenThousandMutationsNeverCrashAndAlwaysDeliverOnce() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["PUSHSEAL_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x5EA1_F022
        let only = environment["PUSHSEAL_FUZZ_ONLY"].flatMap { Int($0) }
        let provider = MemoryKeyProvider(keys: ["k1": Self.key])
        let configuration = DecryptingServiceConfiguration(appID: Self.appID, keyProvider: provider, locale: "pt-BR",
                                                           now: { 1_800_000_000 })
        let host = ExtensionHost(budgetSeconds: 5, makeExtension: DecryptingServiceExtension.factory(configuration))
        var tally = Tally()
        var failures = 0
        for iteration in only.map({ [$0] }) ?? Array(0..<Self.iterationCount) {
            if let failure = Self.runOne(seed: seed, iteration: iteration, host: host, tally: &tally) {
                failures += 1
                Issue.record("fuzz seed \(seed) iteration \(iteration): \(failure) (rerun: PUSHSEAL_FUZZ_SEED=\(seed) PUSHSEAL_FUZZ_ONLY=\(iteration))")
                if failures >= 10 { break }
            }
        }
        guard only == nil else { return }
        print("fuzz: seed \(seed), \(Self.iterationCount) payloads: \(tally)")
        // The mutations must exercise every branch of the receive path, not just the parser.
        let total = Double(Self.iterationCount)
        #expect(Double(tally.decrypted) > total * 0.05, "seed \(seed): \(tally)")
        #expect(Double(tally.original) > total * 0.05, "seed \(seed): \(tally)")
        #expect(tally.notInvoked > 0, "seed \(seed): \(tally)")
        #expect(tally.parseRejected > 0, "seed \(seed): \(tally)")
    }
}

extension SeededGenerator {
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}
