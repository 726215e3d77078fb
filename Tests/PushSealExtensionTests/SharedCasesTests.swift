import PushSealTestSupport
import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
import Testing
@testable import PushSealExtension

func sharedPayload(_ relativePath: String) throws -> JSONValue {
    let (url, missing) = sharedData("cases/" + relativePath)
    let bytes = try Data(contentsOf: try #require(url, Comment(rawValue: missing)))
    return try JSONReader.parse(Array(bytes))
}

/// Shared data policy (PushSealTestSupport): absent cases fail the run, never skip it.
@Test func sharedCasesArePresent() throws {
    for folder in ["failures", "notifications"] { _ = try requireSharedData("cases/" + folder) }
}

/// File names (without `.payload.json`) in `cases/<folder>`, sorted.
func sharedCaseNames(_ folder: String) -> [String] {
    guard let dir = sharedData("cases/" + folder).url,
          let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else { return [] }
    return names.filter { $0.hasSuffix(".payload.json") }.map { String($0.dropLast(".payload.json".count)) }.sorted()
}

/// What `cases/README.md` documents for each `failures/` file: outcome and reason token.
let documentedFailures: [String: (NotificationOutcome, String)] = [
    "crlf-nonce": (.decrypted, "decrypted"),
    "base64-urlsafe-unpadded": (.decrypted, "decrypted"),
    "base64-wrapped-crlf": (.decrypted, "decrypted"),
    "mutable-content-true": (.notInvoked, "mutableContent:true"),
    "mutable-content-string": (.notInvoked, "mutableContent:\"1\""),
    "mutable-content-zero": (.notInvoked, "mutableContent:0"),
    "no-alert": (.notInvoked, "noAlert"),
    "base64-garbage": (.original, "invalidBase64"),
    "layout-no-nonce": (.original, "authenticationFailed"),
    "layout-tag-first": (.original, "authenticationFailed"),
    "field-number": (.original, "wrongFieldType:encrypted_data"),
    "field-missing-key-id": (.original, "missingField:key_id"),
    "field-unknown-alg": (.original, "unknownAlgorithm"),
    "field-unknown-kid": (.original, "unknownKey"),
    "field-empty": (.original, "emptyField:encrypted_data"),
    "inner-not-object": (.original, "invalidPlaintext"),
    "inner-not-utf8": (.original, "invalidPlaintext"),
    "wrong-app-id": (.original, "authenticationFailed"),
]

let fallbackTitle = "New message"
let fallbackBody = "Open the app to read it"

/// Original content: the alert exactly as delivered, no attachment, no error text.
func expectOriginalContent(_ r: ExtensionHost.Result, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(r.content?.title == fallbackTitle, sourceLocation: sourceLocation)
    #expect(r.content?.subtitle == "", sourceLocation: sourceLocation)
    #expect(r.content?.body == fallbackBody, sourceLocation: sourceLocation)
    #expect(r.content?.attachments.isEmpty == true, sourceLocation: sourceLocation)
}

/// Every shared case through the real host, the real decrypting service and the real
/// keychain-backed key provider (the cases' key imported under `k1` in a device keychain the
/// extension reads as its own identity).
@Suite
struct SharedCasesTests {
    @Test func everyFailureFileIsDocumentedHere() {
        #expect(Set(sharedCaseNames("failures")) == Set(documentedFailures.keys))
    }

    @Test(arguments: sharedCaseNames("failures"))
    func failureCaseGivesItsDocumentedResult(_ name: String) throws {
        let (outcome, reason) = try #require(documentedFailures[name], "cases/failures/\(name) has no documented result in this test")
        let device = try DeviceFixture()
        defer { device.cleanUp() }
        let r = try device.run(try sharedPayload("failures/\(name).payload.json"))
        #expect(r.outcome == outcome, "\(name): \(r.reason) — \(r.detail)")
        #expect(r.reason == reason, "\(name): \(r.detail)")
        switch outcome {
        case .original:
            expectOriginalContent(r)
            #expect(!r.detail.isEmpty)
            expectExactlyOneDelivery(device.logger, watch: device.watch)
        case .notInvoked where name == "no-alert":
            #expect(r.content == nil, "a background push shows nothing")
            #expect(device.logger.count("stage=keyLookup") == 0)
        case .notInvoked:
            expectOriginalContent(r)
            #expect(device.logger.count("stage=keyLookup") == 0, "the extension must not run")
        default:
            // The three spellings carry the same box as crlf-nonce: the same text.
            let reference = try device.run(try sharedPayload("failures/crlf-nonce.payload.json"))
            #expect(reference.outcome == .decrypted)
            #expect(r.content?.title == reference.content?.title)
            #expect(r.content?.body == reference.content?.body)
            #expect(r.content?.title.isEmpty == false)
            #expect(r.content?.title != fallbackTitle)
        }
    }

    @Test func fallbackReasonsTellTheFailureKindsApart() {
        let kinds = ["base64-garbage", "layout-no-nonce", "field-number", "field-missing-key-id", "field-unknown-alg",
                     "field-unknown-kid", "field-empty", "inner-not-object"]
        let reasons = kinds.compactMap { documentedFailures[$0]?.1 }
        #expect(Set(reasons).count == kinds.count)
        // By design AES-GCM cannot tell a wrong app id (AAD) from a box laid out differently.
        #expect(documentedFailures["wrong-app-id"]?.1 == documentedFailures["layout-tag-first"]?.1)
    }

    @Test(arguments: sharedCaseNames("notifications"))
    func notificationOpensToItsPlaintextByteForByte(_ name: String) throws {
        let plain = try sharedPayload("notifications/\(name).plain.json")
        let device = try DeviceFixture()
        defer { device.cleanUp() }
        let r = try device.run(try sharedPayload("notifications/\(name).payload.json"))
        let expectedOutcome: NotificationOutcome = plain["media"] == nil ? .decrypted : .decryptedWithoutMedia
        #expect(r.outcome == expectedOutcome, "\(name): \(r.reason) — \(r.detail)")
        for field in ["title", "subtitle", "body"] {
            let expected = Array((plain[field]?.stringValue ?? "").utf8)
            let shown: String? = switch field {
            case "title": r.content?.title
            case "subtitle": r.content?.subtitle
            default: r.content?.body
            }
            #expect(shown.map { Array($0.utf8) } == expected, "\(name).\(field)")
        }
        #expect(r.content?.attachments.isEmpty == true)
        expectExactlyOneDelivery(device.logger, watch: device.watch)
        // Never plaintext in the diagnostics.
        if let body = plain["body"]?.stringValue {
            #expect(!device.logger.lines.joined(separator: "\n").contains(body))
        }
    }

    @Test(arguments: [("pt-BR", "pt-BR"), ("pt", nil), ("fr-CA", "fr"), ("fr", "fr"), ("de", nil)])
    func localizedNotificationPicksTheDeviceLocale(_ locale: String, _ variant: String?) throws {
        let plain = try sharedPayload("notifications/n11.plain.json")
        let device = try DeviceFixture()
        defer { device.cleanUp() }
        let r = try device.run(try sharedPayload("notifications/n11.payload.json"), host: device.host(locale: locale))
        let texts = variant.flatMap { plain["localizations"]?[$0] } ?? plain
        #expect(r.outcome == .decrypted)
        #expect(r.content?.title == texts["title"]?.stringValue)
        #expect(r.content?.body == texts["body"]?.stringValue)
    }

    @Test func expiringNotificationFallsBackAfterItsExp() throws {
        let plain = try sharedPayload("notifications/n10.plain.json")
        let exp = try #require(plain["exp"]?.integerValue)
        let device = try DeviceFixture()
        defer { device.cleanUp() }
        let payload = try sharedPayload("notifications/n10.payload.json")
        let late = try device.run(payload, host: device.host(now: exp))
        #expect(late.outcome == .original)
        #expect(late.reason == "expired")
        expectOriginalContent(late)
        // Before exp it opens; shown once, the same id again is a replay.
        let early = try device.run(payload, host: device.host(now: exp - 1))
        #expect(early.outcome == .decrypted)
        #expect(early.content?.title == plain["title"]?.stringValue)
        let again = try device.run(payload, host: device.host(now: exp - 1))
        #expect(again.outcome == .original)
        #expect(again.reason == "replayed")
        expectOriginalContent(again)
    }
}

/// The media notification (n12) against the tests' local HTTP server: its plaintext names
/// `http://127.0.0.1:PORT/cat.jpg`, so it is resealed here with the server's port and the
/// cases' key (the shared payload itself has no usable port).
@Suite(.serialized)
struct SharedMediaCaseTests {
    @Test func mediaNotificationAttachesTheImage() throws {
        let server = try #require(MediaServer.shared, "python3 is needed to run the local media server")
        let plainBytes = try Data(contentsOf: try #require(sharedData("cases/notifications/n12.plain.json").url))
        let text = String(decoding: plainBytes, as: UTF8.self).replacingOccurrences(of: "PORT", with: String(server.port))
        let plain = try PushNotification(json: try JSONReader.parse(Array(text.utf8)))
        let sealed = try WireFormat.seal(plaintext: plain, key: casesKey, keyID: "k1", appID: casesAppID)
        var payload = try sharedPayload("notifications/n12.payload.json")
        guard case .object(var root) = payload else { Issue.record("n12 is not an object"); return }
        root["encrypted_data"] = .string(sealed.encryptedData)
        payload = .object(root)

        let device = try DeviceFixture()
        defer { device.cleanUp() }
        let r = try device.run(payload)
        #expect(r.outcome == .decrypted, "\(r.reason) — \(r.detail)")
        #expect(r.reason == "mediaAttached")
        #expect(r.content?.title == plain.title)
        #expect(r.content?.body == plain.body)
        let attachment = try #require(r.content?.attachments.first)
        #expect(attachment.type == "public.jpeg")
        #expect(attachment.url.pathExtension == "jpg" || attachment.url.pathExtension == "jpeg")
        expectExactlyOneDelivery(device.logger, watch: device.watch)

        // Without --allow-insecure-loopback the text still arrives, without the image.
        let refused = try device.run(payload, host: device.host(mediaServer: false))
        #expect(refused.outcome == .decryptedWithoutMedia)
        #expect(refused.reason == "media:mediaURLRefused")
        #expect(refused.content?.title == plain.title)
    }
}
