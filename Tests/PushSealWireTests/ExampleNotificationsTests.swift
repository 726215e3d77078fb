import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
import Testing

/// `Examples/notifications/*.json` are valid plaintexts (after the demo's placeholders are
/// filled in), survive a seal/open round trip unchanged, and cover what issue #7 asks for.
@Suite("Example notifications")
struct ExampleNotificationsTests {
    static let directory = IOSExampleDriftTests.repoRoot.appendingPathComponent("Examples/notifications")

    /// Every example file: (name, text with PORT, SEALED_SHA256 and SEALED_KEY filled in).
    static func examples() throws -> [(name: String, text: String)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
        return try names.map { name in
            let raw = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            let filled = raw.replacingOccurrences(of: "PORT", with: "8765")
                .replacingOccurrences(of: "SEALED_SHA256", with: String(repeating: "ab", count: 32))
                .replacingOccurrences(of: "SEALED_KEY", with: WireBase64.encode([UInt8](repeating: 7, count: 32)))
            return (name, filled)
        }
    }

    @Test("every example is a plaintext PushSealWire accepts, and seals and opens to itself")
    func roundTrip() throws {
        let key = SecretBytes(randomByteCount: 32)
        let names = try IOSExampleDriftTests.plaintextMemberNames()
        let examples = try Self.examples()
        #expect((8...12).contains(examples.count), "issue #7 asks for 8-12 notifications, found \(examples.count)")
        for example in examples {
            let json = try JSONReader.parse(example.text)
            let object = try #require(json.objectValue, "\(example.name) is not a JSON object")
            // push-seal's input: the plaintext members plus `ttl` (turned into `exp` when sealing).
            let unknown = Set(object.members.map(\.key)).subtracting(names.top).subtracting(["ttl"])
            #expect(unknown.isEmpty, "\(example.name) has members push-seal rejects: \(unknown.sorted())")
            let plaintext = try PushNotification(json: json)
            let fields = try WireFormat.seal(plaintext: plaintext, key: key, keyID: "k1", appID: "com.example.app")
            var payload = JSONObject()
            fields.write(into: &payload)
            let opened = try SealedPayload(payload: payload).open(with: key, appID: "com.example.app")
            #expect(opened == plaintext, "\(example.name) changed in a seal/open round trip")
        }
    }

    @Test("the set covers scripts, localizations, expiry and an encrypted image")
    func coverage() throws {
        let all = try Self.examples().map { try JSONReader.parse($0.text) }
        let text = all.map { v in ["title", "body"].compactMap { v[$0]?.stringValue }.joined() }.joined()
        let scalars = text.unicodeScalars.map(\.value)
        func has(_ range: ClosedRange<UInt32>) -> Bool { scalars.contains { range.contains($0) } }
        #expect(has(0x0600...0x06FF), "no Arabic")
        #expect(has(0x0900...0x097F), "no Devanagari")
        #expect(has(0x0370...0x03FF), "no Greek")
        #expect(has(0x3040...0x30FF), "no Japanese kana")
        #expect(text.contains("ß") && text.contains("ö"), "no German umlauts")
        #expect(has(0x1F1E6...0x1F1FF) && scalars.contains(0x200D), "no flags or ZWJ sequences")
        let locales = all.compactMap { $0["localizations"]?.objectValue }.flatMap { $0.members.map(\.key) }
        #expect(["fr", "pt-BR", "pt"].allSatisfy(locales.contains), "localizations lack fr, pt-BR or pt: \(locales)")
        #expect(all.contains { $0["exp"] != nil || $0["ttl"] != nil }, "nothing expires")
        #expect(all.contains { $0["media"]?["key"] != nil }, "no encrypted media")
    }

    @Test("the image is a small PNG and the plain media descriptor's SHA-256 is its hash")
    func media() throws {
        let png = [UInt8](try Data(contentsOf: Self.directory.appendingPathComponent("media/lighthouse.png")))
        #expect(png.count <= 20 * 1024)
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        let digest = try SHA256Hasher.hash(png).map { String(format: "%02x", $0) }.joined()
        let plain = try Self.examples().compactMap { try JSONReader.parse($0.text)["media"] }
            .filter { $0["key"] == nil && ($0["url"]?.stringValue ?? "").hasSuffix("/lighthouse.png") }
        #expect(!plain.isEmpty, "no plain media example for lighthouse.png")
        for m in plain { #expect(m["sha256"]?.stringValue == digest) }
    }
}
