import PushSealTestSupport
import PushSealJSON
import Foundation
import Testing
@testable import PushSealWire
import PushSealCrypto
import PushSealSystem

@Suite("Wire format v1: constants, AAD, identifiers")
struct WireFormatConstantsTests {
    @Test func aadIsVersionAlgorithmKeyIDAppIDJoinedByBars() {
        let aad = WireFormat.aad(algorithm: "A256GCM", keyID: "k1", appID: "com.example.app")
        #expect(aad == Array("pushseal:v1|A256GCM|k1|com.example.app".utf8))
        #expect(WireTestSupport.hexString(aad) == "707573687365616c3a76317c4132353647434d7c6b317c636f6d2e6578616d706c652e617070")
    }

    @Test func stackAADMatchesTheArrayAADAndTheConstants() throws {
        #expect(A256GCMEnvelope.aadPrefix.description == WireFormat.version + "|" + WireFormat.algorithm + "|")
        for (keyID, appID) in [("k1", "com.example.app"), (String(repeating: "K", count: 64), "a"), ("x-_9", String(repeating: "b", count: 255))] {
            let stack = A256GCMEnvelope.withAAD(keyID: keyID, appID: appID) { TemporaryBytes.array($0) }
            #expect(stack == WireFormat.aad(algorithm: WireFormat.algorithm, keyID: keyID, appID: appID))
        }
    }

    @Test func keyIDRules() {
        #expect(WireFormat.isValidKeyID("k1"))
        #expect(WireFormat.isValidKeyID("Key_2026-01"))
        #expect(WireFormat.isValidKeyID(String(repeating: "a", count: 64)))
        #expect(!WireFormat.isValidKeyID(String(repeating: "a", count: 65)))
        #expect(!WireFormat.isValidKeyID(""))
        for bad in ["k.1", "k 1", "k|1", "ké", "k/1", "k+1", "k=1"] {
            #expect(!WireFormat.isValidKeyID(bad), "\(bad)")
        }
        #expect(WireTestSupport.errorCode { try WireFormat.validateKeyID("a b") } == "invalidKeyID")
        // Every byte as a one-byte key id, and inside a longer one.
        for b in UInt8(0)...UInt8(255) {
            let allowed = (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || (0x30...0x39).contains(b) || b == 0x5F || b == 0x2D
            let one = String(decoding: [b], as: UTF8.self)
            #expect(WireFormat.isValidKeyID(one) == (allowed && one.utf8.count == 1), "byte \(b)")
            #expect(WireFormat.isValidKeyID("k" + one + "1") == (allowed && one.utf8.count == 1), "byte \(b) inside")
        }
    }

    @Test func appIDRules() {
        #expect(WireFormat.isValidAppID("com.example.app"))
        #expect(WireFormat.isValidAppID("com.example.app.voip"))
        #expect(WireFormat.isValidAppID(String(repeating: "a", count: 255)))
        #expect(!WireFormat.isValidAppID(String(repeating: "a", count: 256)))
        for bad in ["", "com.example|app", "com example", "com.exämple", "com.example\n"] {
            #expect(!WireFormat.isValidAppID(bad), "\(bad)")
        }
        #expect(WireTestSupport.errorCode { try WireFormat.validateAppID("a|b") } == "invalidAppID")
    }
}

@Suite("Wire format v1: base64")
struct WireBase64Tests {
    static let bytes: [UInt8] = [0xFB, 0xFF, 0xBF, 0x00, 0x10, 0x83, 0xFE]  // has + and / in standard base64

    @Test func writesStandardPadded() {
        #expect(WireBase64.encode(Self.bytes) == "+/+/ABCD/g==")
        #expect(WireBase64.encode([]) == "")
        #expect(WireBase64.encode([0x66, 0x6F, 0x6F, 0x62, 0x61, 0x72]) == "Zm9vYmFy")
    }

    @Test(arguments: ["+/+/ABCD/g==", "+/+/ABCD/g", "-_-_ABCD_g==", "-_-_ABCD_g", "+/+/\r\nABCD\r\n/g==", " +/+/ \tABCD\n/g = = "])
    func readsEverySpelling(_ text: String) throws {
        #expect(try WireBase64.decode(text) == Self.bytes)
    }

    @Test(arguments: ["+/-_ABCD", "Zm9v!mFy", "Zm9vYmF", "Zm9vYg=", "Zm9vYg===", "Zm9v=YmFy", "Zm9vYh==", "Zm9vYmFy=", "Zm9vYmF=", "Zm9vYmFyé", "Zm9v\u{0}YmFy"])
    func rejectsEverythingElse(_ text: String) {
        #expect(WireTestSupport.errorCode { try WireBase64.decode(text) } == "invalidBase64", "\(text.debugDescription)")
    }

    @Test func roundTripsRandomLengths() throws {
        for n in 0..<70 {
            let b = SecureRandom.bytes(n)
            let e = WireBase64.encode(b)
            #expect(e == b.withUnsafeBytes { WireBase64.encodeSecret($0) }, "fast encoder differs from libsodium at length \(n)")
            #expect(try WireBase64.decode(e) == b)
            let urlUnpadded = e.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(try WireBase64.decode(urlUnpadded) == b)
        }
    }
}

@Suite("Wire format v1: Padmé padding")
struct PadmeTests {
    @Test func paperExamples() {
        #expect(Padme.paddedLength(100) == 104)
        #expect(Padme.paddedLength(1000) == 1024)
        #expect(Padme.paddedLength(2049) == 2176)
        #expect(Padme.paddedLength(0) == 0)
        #expect(Padme.paddedLength(1) == 1)
        #expect(Padme.paddedLength(2) == 2)
        #expect(Padme.paddedLength(9) == 10)
        #expect(Padme.paddedLength(64) == 64)
    }

    /// Checks the definition directly: the result is the smallest m ≥ n whose low E − S bits
    /// are zero, and the overhead stays under 12% (the paper's bound) past 8 bytes.
    @Test func matchesDefinitionForAllSmallLengths() {
        for n in 3...5000 {
            let e = Int(log2(Double(n)).rounded(.down))
            let s = Int(log2(Double(e)).rounded(.down)) + 1
            let unit = 1 << (e - s)
            let expected = (n + unit - 1) / unit * unit
            let got = Padme.paddedLength(n)
            #expect(got == expected, "n=\(n)")
            if n > 8 { #expect(Double(got - n) / Double(n) < 0.12, "n=\(n)") }
        }
    }

    @Test func paddingKeepsValidJSONAndRoundTrips() throws {
        // Seeded (PUSHSEAL_TEST_SEED), not SystemRandomNumberGenerator: an empty struct passed inout to
        // generic test code gets an undefined address from IRGen, which ThreadSanitizer then instruments (SEGV).
        var rng = SeededGenerator(seed: testSeed)
        for _ in 0..<50 {
            let p = RandomNotification.make(using: &rng)
            let padded = try p.encoded(padding: true)
            let plain = try p.encoded(padding: false)
            #expect(padded.count == Padme.paddedLength(plain.count))
            #expect(Array(padded.prefix(plain.count)) == plain)
            #expect(padded.dropFirst(plain.count).allSatisfy { $0 == 0x20 })
            #expect(try JSONReader.parse(padded) == (try p.jsonValue()))
            #expect(try PushNotification(jsonBytes: padded) == p)
        }
    }
}

@Suite("Wire format v1: plaintext object")
struct NotificationTests {
    func decode(_ json: String) throws -> PushNotification {
        try PushNotification(jsonBytes: Array(json.utf8))
    }

    func reason(_ json: String) -> String? {
        do { _ = try decode(json); return nil } catch let e as FormatError {
            return e.code == .invalidPlaintext ? e.reason : "code \(e.code)"
        } catch { return "other" }
    }

    @Test func decodesEveryMember() throws {
        let key = WireBase64.encode((0..<32).map { UInt8($0) })
        let p = try decode("""
        {"title":"T","subtitle":"S","body":"B","media":{"url":"https://x.example/a.jpg","type":"image/jpeg","sha256":"\(String(repeating: "aB", count: 32))","key":"\(key)"},
         "localizations":{"fr":{"title":"Tf"},"pt-BR":{"body":"Bp"}},"data":{"n":1,"b":true},"iat":1796000000,"exp":1796000600,"id":"x-1","later":{"v":2}}
        """)
        #expect(p.title == "T" && p.subtitle == "S" && p.body == "B")
        #expect(p.media?.url == "https://x.example/a.jpg" && p.media?.type == "image/jpeg")
        #expect(p.media?.sha256 == Array(repeating: [0xAB], count: 32).flatMap { $0 })
        #expect(p.media?.key?.copyBytes() == (0..<32).map { UInt8($0) })
        #expect(p.localizations.map(\.locale) == ["fr", "pt-BR"])
        #expect(p.localizations[0].content == LocalizedContent(title: "Tf"))
        #expect(p.data == ["n": .integer(1), "b": .bool(true)])
        #expect(p.iat == 1_796_000_000 && p.exp == 1_796_000_600 && p.id == "x-1")
        // Re-encoding keeps member order and drops the unknown member.
        let again = try PushNotification(jsonBytes: try p.encoded(padding: false))
        #expect(again == p)
        #expect(String(decoding: try p.encoded(padding: false), as: UTF8.self).hasPrefix(#"{"title":"T","subtitle":"S","body":"B","media":{"url""#))
    }

    @Test func nullMeansAbsent() throws {
        let p = try decode(#"{"title":null,"body":"b","media":null,"exp":null}"#)
        #expect(p.title == nil && p.body == "b" && p.media == nil && p.exp == nil)
    }

    @Test(arguments: [
        (#"[1]"#, "not an object"),
        (#"{}"#, "title, subtitle or body"),
        (#"{"title":"","body":""}"#, "title, subtitle or body"),
        (#"{"title":1}"#, "title: expected a string, got integer"),
        (#"{"body":"b","subtitle":true}"#, "subtitle: expected a string, got boolean"),
        (#"{"body":"b","iat":"1"}"#, "iat: expected an integer, got string"),
        (#"{"body":"b","iat":1.5}"#, "iat: expected an integer, got number"),
        (#"{"body":"b","exp":-1}"#, "exp: seconds since 1970 must not be negative"),
        (#"{"body":"b","id":7}"#, "id: expected a string"),
        (#"{"body":"b","data":[1]}"#, "data: expected an object, got array"),
        (#"{"body":"b","media":"https://x"}"#, "media: expected an object"),
        (#"{"body":"b","media":{}}"#, "media.url: missing"),
        (#"{"body":"b","media":{"url":"ftp://x/y"}}"#, "media.url: expected an absolute"),
        (#"{"body":"b","media":{"url":"https://x/y","sha256":"abc"}}"#, "media.sha256: expected 64"),
        (#"{"body":"b","media":{"url":"https://x/y","key":"AAAA"}}"#, "media.key: expected base64 of 32 bytes, got 3"),
        (#"{"body":"b","media":{"url":"https://x/y","key":"A!"}}"#, "media.key: base64"),
        (#"{"body":"b","localizations":[]}"#, "localizations: expected an object"),
        (#"{"body":"b","localizations":{"fr":"x"}}"#, "localizations[1]: expected an object"),
        (#"{"body":"b","localizations":{"fr":{}}}"#, "localizations[1]: needs a non-empty"),
        (#"{"body":"b","localizations":{"fr":{"title":2}}}"#, "localizations[1].title: expected a string"),
        (#"{"body":"b","localizations":{"f r":{"title":"x"}}}"#, "is not a locale tag"),
        (#"{"body":"b""#, "not valid JSON"),
        (#"{"body":"b","body":"c"}"#, "not valid JSON"),
    ])
    func rejectsWithAReasonNamingTheMember(_ json: String, _ expected: String) {
        let r = reason(json)
        #expect(r?.contains(expected) == true, "\(json) -> \(r ?? "accepted")")
        // F15: a locale tag from a decrypted plaintext is named by its position, never quoted.
        if json.contains("localizations") {
            #expect(r?.contains(".fr") == false && r?.contains("\"fr\"") == false && r?.contains(" fr") == false, "\(r ?? "")")
        }
    }

    @Test func notUTF8IsInvalidPlaintext() {
        let e = WireTestSupport.errorCode { try PushNotification(jsonBytes: [0x7B, 0x22, 0x62, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]) }
        #expect(e == "invalidPlaintext")
    }
}

@Suite("Wire format v1: envelope")
struct SealedPayloadTests {
    static let key = WireTestSupport.casesKey
    static let app = "com.example.app"
    static let note = PushNotification(title: "Hi", body: "Noon? 🍜", iat: 1_796_000_000)

    static func sealedPayload(_ change: (inout JSONObject) -> Void = { _ in }) throws -> JSONValue {
        let fields = try WireFormat.seal(plaintext: note, key: key, keyID: "k1", appID: app)
        guard case .object(var o) = WireTestSupport.payload(fields) else { return .null }
        change(&o)
        return .object(o)
    }

    @Test func sealThenOpen() throws {
        let fields = try WireFormat.seal(plaintext: Self.note, key: Self.key, keyID: "k1", appID: Self.app)
        #expect(fields.keyID == "k1" && fields.algorithm == "A256GCM")
        let sealed = try SealedPayload(payload: WireTestSupport.payload(fields))
        #expect(sealed.keyID == "k1")
        #expect(sealed.box.count == 12 + Padme.paddedLength(try Self.note.encoded(padding: false).count) + 16)
        #expect(WireBase64.encode(sealed.box) == fields.encryptedData)
        #expect(try sealed.open(with: Self.key, appID: Self.app) == Self.note)
        let raw = try sealed.openBytes(with: Self.key, appID: Self.app)
        #expect(raw == (try Self.note.encoded(padding: true)))
    }

    @Test func paddingCanBeTurnedOff() throws {
        let fields = try WireFormat.seal(plaintext: Self.note, key: Self.key, keyID: "k1", appID: Self.app, padding: false)
        let sealed = try SealedPayload(payload: WireTestSupport.payload(fields))
        #expect(try sealed.openBytes(with: Self.key, appID: Self.app) == (try Self.note.encoded(padding: false)))
    }

    @Test func noncesAreFreshPerSeal() throws {
        let a = try WireFormat.seal(plaintext: Self.note, key: Self.key, keyID: "k1", appID: Self.app)
        let b = try WireFormat.seal(plaintext: Self.note, key: Self.key, keyID: "k1", appID: Self.app)
        #expect(a.encryptedData != b.encryptedData)
    }

    @Test func sealRejectsBadInputs() {
        #expect(WireTestSupport.errorCode { try WireFormat.seal(plaintext: Self.note, key: Self.key, keyID: "k 1", appID: Self.app) } == "invalidKeyID")
        #expect(WireTestSupport.errorCode { try WireFormat.seal(plaintext: Self.note, key: Self.key, keyID: "k1", appID: "a|b") } == "invalidAppID")
        #expect(WireTestSupport.errorCode { try WireFormat.seal(plaintext: Self.note, key: SecretBytes(randomByteCount: 16), keyID: "k1", appID: Self.app) } == "invalidKey")
    }

    @Test func distinctErrorsForEachFieldProblem() throws {
        func code(_ change: @escaping (inout JSONObject) -> Void) throws -> String? {
            let p = try Self.sealedPayload(change)
            return WireTestSupport.errorCode { try SealedPayload(payload: p) }
        }
        #expect(try code { $0["encrypted_data"] = nil } == "missingField")
        #expect(try code { $0["key_id"] = nil } == "missingField")
        #expect(try code { $0["enc_alg"] = nil } == "missingField")
        #expect(try code { $0["encrypted_data"] = .integer(1) } == "wrongFieldType")
        #expect(try code { $0["key_id"] = .array([]) } == "wrongFieldType")
        #expect(try code { $0["enc_alg"] = .null } == "wrongFieldType")
        #expect(try code { $0["encrypted_data"] = .string("") } == "emptyField")
        #expect(try code { $0["encrypted_data"] = .string(" \r\n") } == "emptyField")
        #expect(try code { $0["key_id"] = .string("") } == "emptyField")
        #expect(try code { $0["enc_alg"] = .string("A128GCM") } == "unknownAlgorithm")
        #expect(try code { $0["key_id"] = .string("k.1") } == "invalidKeyID")
        #expect(try code { $0["encrypted_data"] = .string("AAAA!") } == "invalidBase64")
        #expect(try code { $0["encrypted_data"] = .string(WireBase64.encode(Array(repeating: 1, count: 27))) } == "truncatedBox")
        #expect(WireTestSupport.errorCode { try SealedPayload(payload: .array([])) } == "missingField")
    }

    @Test func openFailsOneWayForKeyAppIDAndKeyID() throws {
        let p = try SealedPayload(payload: try Self.sealedPayload())
        #expect(WireTestSupport.errorCode { try p.open(with: SecretBytes(randomByteCount: 32), appID: Self.app) } == "authenticationFailed")
        #expect(WireTestSupport.errorCode { try p.open(with: Self.key, appID: "com.example.other") } == "authenticationFailed")
        let relabeled = try SealedPayload(payload: try Self.sealedPayload { $0["key_id"] = .string("k2") })
        #expect(WireTestSupport.errorCode { try relabeled.open(with: Self.key, appID: Self.app) } == "authenticationFailed")
        #expect(WireTestSupport.errorCode { try p.open(with: SecretBytes(randomByteCount: 31), appID: Self.app) } == "invalidKey")
        #expect(WireTestSupport.errorCode { try p.open(with: Self.key, appID: "") } == "invalidAppID")
    }

    @Test func everyBitFlipFailsToOpen() throws {
        let small = PushNotification(body: "x")
        let fields = try WireFormat.seal(plaintext: small, key: Self.key, keyID: "k1", appID: Self.app, padding: false)
        let box = try WireBase64.decode(fields.encryptedData)
        #expect(box.count == 12 + 12 + 16)
        for bit in 0..<(box.count * 8) {
            var flipped = box
            flipped[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
            let p = try SealedPayload(encryptedData: WireBase64.encode(flipped), keyID: "k1", algorithm: "A256GCM")
            #expect(WireTestSupport.errorCode { try p.open(with: Self.key, appID: Self.app) } == "authenticationFailed", "bit \(bit)")
        }
    }
}

/// Random notifications for padding and interop tests.
enum RandomNotification {
    static let pool: [String] = ["a", "Z", "0", " ", "é", "ß", "ł", "Ω", "ж", "ש", "م", "日", "本", "👩🏽‍💻", "🇳🇱", "\"", "\\", "/", "\n", "\t",
                                 "\u{1}", "\u{1F}", "\u{7F}", "\u{2028}", "\u{FEFF}", "e\u{301}", "<", "&"]

    static func text<G: RandomNumberGenerator>(_ maxCount: Int, using g: inout G) -> String {
        let n = Int.random(in: 1...maxCount, using: &g)
        return (0..<n).map { _ in pool.randomElement(using: &g) ?? "a" }.joined()
    }

    static func make<G: RandomNumberGenerator>(using g: inout G) -> PushNotification {
        var p = PushNotification()
        p.title = Bool.random(using: &g) ? text(40, using: &g) : nil
        p.subtitle = Bool.random(using: &g) ? text(20, using: &g) : nil
        p.body = p.title == nil || Bool.random(using: &g) ? text(200, using: &g) : nil
        if Int.random(in: 0..<3, using: &g) == 0 {
            p.media = MediaDescriptor(url: "https://media.example.com/\(Int.random(in: 0...999, using: &g)).jpg",
                                      type: Bool.random(using: &g) ? "image/jpeg" : nil,
                                      sha256: Bool.random(using: &g) ? SecureRandom.bytes(32) : nil,
                                      key: Bool.random(using: &g) ? SecretBytes(randomByteCount: 32) : nil)
        }
        if Bool.random(using: &g) {
            p.localizations = ["fr", "pt-BR", "zh-Hant", "de"].prefix(Int.random(in: 1...4, using: &g)).map {
                (locale: $0, content: LocalizedContent(title: text(10, using: &g), body: Bool.random(using: &g) ? text(30, using: &g) : nil))
            }
        }
        if Bool.random(using: &g) {
            p.data = ["n": .integer(Int64.random(in: -1000...1000, using: &g)), "s": .string(text(10, using: &g)),
                      "b": .bool(Bool.random(using: &g)), "z": .null, "a": .array([.integer(1), .string("x")]),
                      "o": .object(["deep": .string(text(5, using: &g))])]
        }
        p.iat = Bool.random(using: &g) ? Int64.random(in: 0...2_000_000_000, using: &g) : nil
        p.exp = Bool.random(using: &g) ? Int64.random(in: 0...2_000_000_000, using: &g) : nil
        p.id = Bool.random(using: &g) ? text(12, using: &g) : nil
        return p
    }
}
