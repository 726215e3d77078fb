import PushSealSystem
import PushSealTestSupport
import PushSealJSON
import Foundation
import Testing
@testable import PushSealWire
import PushSealCrypto

/// `$PUSHSEAL_SHARED/cases` (see shared/cases/README.md): payloads sealed by an independent
/// implementation with key 0x00…0x1f, key id k1, app id com.example.app.
@Suite("Wire format v1: shared cases")
struct SharedCasesTests {
    static let appID = "com.example.app"

    static func casesDirectory(_ sub: String) -> URL? {
        sharedData("cases/" + sub).url
    }

    static func notificationNames() -> [String] {
        guard let dir = casesDirectory("notifications"),
              let files = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else { return [] }
        return files.filter { $0.hasSuffix(".payload.json") }.map { String($0.dropLast(".payload.json".count)) }.sorted()
    }

    @Test func sharedCasesArePresent() {
        let cases = sharedData("cases/notifications")
        #expect(cases.url != nil, Comment(rawValue: cases.missing))
        #expect(Self.notificationNames().count >= 12, Comment(rawValue: cases.missing))
    }

    /// The string member `key` as UTF-8 bytes (for byte-for-byte comparison: Swift's `==` on
    /// strings ignores canonical-equivalence differences).
    static func utf8(_ s: String?) -> [UInt8]? { s.map { Array($0.utf8) } }

    @Test(arguments: notificationNames())
    func notificationOpensToItsPlaintext(_ name: String) throws {
        let dir = try #require(Self.casesDirectory("notifications"))
        let payload = try JSONReader.parse(try WireTestSupport.read(dir.appendingPathComponent("\(name).payload.json")))
        let expectedJSON = try JSONReader.parse(try WireTestSupport.read(dir.appendingPathComponent("\(name).plain.json")))
        let sealed = try SealedPayload(payload: payload)
        #expect(sealed.keyID == "k1")
        let opened = try sealed.open(with: WireTestSupport.casesKey, appID: Self.appID)
        let expected = try PushNotification(json: expectedJSON)
        #expect(Self.utf8(opened.title) == Self.utf8(expectedJSON["title"]?.stringValue), "\(name) title")
        #expect(Self.utf8(opened.subtitle) == Self.utf8(expectedJSON["subtitle"]?.stringValue), "\(name) subtitle")
        #expect(Self.utf8(opened.body) == Self.utf8(expectedJSON["body"]?.stringValue), "\(name) body")
        #expect(opened == expected, "\(name)")
        for (a, b) in zip(opened.localizations, expected.localizations) {
            #expect(a.locale == b.locale)
            #expect(Self.utf8(a.content.title) == Self.utf8(b.content.title) && Self.utf8(a.content.body) == Self.utf8(b.content.body))
        }
        // The opened JSON equals the plaintext file as a JSON value (member order included).
        let raw = try sealed.openBytes(with: WireTestSupport.casesKey, appID: Self.appID)
        #expect(try JSONReader.parse(raw) == expectedJSON, "\(name)")
    }

    /// The failure files about the sealed fields, with the format layer's outcome. (`field-unknown-kid`
    /// parses — k9 is a well-formed key id — and a receiver without key k9 falls back; opened
    /// with the k1 key it fails authentication because k9 is in the AAD. The mutable-content and
    /// no-alert files are about `aps`, judged by the extension layer, and their boxes are fine.)
    static let failureExpectations: [(String, String)] = [
        ("crlf-nonce", "open"),
        ("base64-urlsafe-unpadded", "open"),
        ("base64-wrapped-crlf", "open"),
        ("base64-garbage", "error invalidBase64"),
        ("layout-no-nonce", "error authenticationFailed"),
        ("layout-tag-first", "error authenticationFailed"),
        ("field-number", "error wrongFieldType"),
        ("field-missing-key-id", "error missingField"),
        ("field-unknown-alg", "error unknownAlgorithm"),
        ("field-unknown-kid", "error authenticationFailed"),
        ("field-empty", "error emptyField"),
        ("inner-not-object", "error invalidPlaintext"),
        ("inner-not-utf8", "error invalidPlaintext"),
        ("wrong-app-id", "error authenticationFailed"),
    ]

    @Test(arguments: failureExpectations)
    func failureFileGivesTheRightOutcome(_ name: String, _ expected: String) throws {
        let dir = try #require(Self.casesDirectory("failures"), Comment(rawValue: sharedData("cases/failures").missing))
        let payload = try JSONReader.parse(try WireTestSupport.read(dir.appendingPathComponent("\(name).payload.json")))
        var outcome: String
        do {
            let sealed = try SealedPayload(payload: payload)
            let opened = try sealed.open(with: WireTestSupport.casesKey, appID: Self.appID)
            outcome = "open"
            #expect(opened.title != nil || opened.body != nil)
        } catch let e as FormatError {
            outcome = "error \(e.code.name)"
        }
        #expect(outcome == expected, "\(name)")
    }

    @Test func spellingsOfOneBoxDecodeToTheSameBytes() throws {
        let dir = try #require(Self.casesDirectory("failures"), Comment(rawValue: sharedData("cases/failures").missing))
        let boxes = try ["crlf-nonce", "base64-urlsafe-unpadded", "base64-wrapped-crlf"].map { name in
            try SealedPayload(payload: try JSONReader.parse(try WireTestSupport.read(dir.appendingPathComponent("\(name).payload.json")))).box
        }
        #expect(boxes[0] == boxes[1] && boxes[1] == boxes[2])
        #expect(Array(boxes[0].prefix(12)) == Array(repeating: [0x0D, 0x0A], count: 6).flatMap { $0 })
    }
}
