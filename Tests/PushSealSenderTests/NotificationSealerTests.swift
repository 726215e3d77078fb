import PushSealJSON
import Foundation
import Testing
import PushSealCrypto
import PushSealWire
@testable import PushSealSender

@Suite struct NotificationSealerTests {
    @Test func payloadHasAlertMutableContentAndFieldsInClear() throws {
        var options = SealOptions()
        options.aps = APSFields(sound: "default", badge: 3, threadID: "t", category: "c", interruptionLevel: "time-sensitive", relevanceScore: 0.5)
        options.priority = 5
        options.collapseID = "c1"
        let sealed = try Fixture.sealer(options).seal(PushNotification(title: "Ana", body: "Dinner at 8?"), ttlSeconds: 60, for: "alice")
        let text = String(decoding: sealed.payload, as: UTF8.self)
        #expect(text.hasPrefix("{\"aps\":{\"alert\":{\"title\":\"New message\",\"body\":\"Open the app to read it\"},\"mutable-content\":1,\"sound\":\"default\",\"badge\":3,\"thread-id\":\"t\",\"category\":\"c\",\"interruption-level\":\"time-sensitive\",\"relevance-score\":0.5},\"encrypted_data\":\""))
        #expect(text.hasSuffix("\",\"key_id\":\"k1\",\"enc_alg\":\"A256GCM\"}"))
        #expect(!text.contains("Dinner"))
        #expect(sealed.headers.fields.map(\.name) == ["apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-collapse-id"])
        #expect(sealed.headers.fields.map(\.value) == ["alert", "com.example.app", "5", String(Fixture.now + 60), "c1"])
        let plain = try Fixture.plaintext(sealed.payload)
        #expect(plain["title"] as? String == "Ana")
        #expect(plain["body"] as? String == "Dinner at 8?")
        #expect((plain["iat"] as? NSNumber)?.int64Value == Fixture.now)
        #expect((plain["exp"] as? NSNumber)?.int64Value == Fixture.now + 60)
    }

    @Test func plaintextIsPaddedToPadmeLengthUnlessOff() throws {
        let n = PushNotification(title: "Ana", body: String(repeating: "x", count: 977))
        let padded = try Fixture.open(try Fixture.sealer().seal(n, for: "alice").payload)
        var off = SealOptions()
        off.padding = false
        let bare = try Fixture.open(try Fixture.sealer(off).seal(n, for: "alice").payload)
        #expect(bare.last == UInt8(ascii: "}"))
        #expect(padded.count == Padme.paddedLength(bare.count))
        #expect(padded.count > bare.count)
        #expect(padded[bare.count...].allSatisfy { $0 == 0x20 })
        #expect([100, 1000, 2049].map(Padme.paddedLength) == [104, 1024, 2176])
    }

    @Test func refusesEmptyAlertsAndBadOptions() throws {
        #expect(throws: SenderError(.emptyFallbackAlert, "")) { try Fixture.sealer(SealOptions(fallback: FallbackAlert(title: "", body: "b"))) }
        #expect(throws: SenderError(.emptyFallbackAlert, "")) { try Fixture.sealer(SealOptions(fallback: FallbackAlert(title: "t", body: ""))) }
        #expect(throws: SenderError(.invalidOption, "")) { try Fixture.sealer(SealOptions(priority: 1)) }
        #expect(throws: SenderError(.invalidOption, "")) { try Fixture.sealer(SealOptions(collapseID: String(repeating: "é", count: 33))) }
        _ = try Fixture.sealer(SealOptions(collapseID: String(repeating: "é", count: 32)))
        #expect(throws: SenderError(.invalidOption, "")) { try Fixture.sealer(SealOptions(aps: APSFields(interruptionLevel: "loud"))) }
        #expect(throws: SenderError(.invalidOption, "")) { try Fixture.sealer(SealOptions(aps: APSFields(relevanceScore: 1.5))) }
        #expect(throws: SenderError(.invalidOption, "")) { try Fixture.sealer(SealOptions(aps: APSFields(badge: -1))) }
        let s = try Fixture.sealer()
        #expect(throws: SenderError(.emptyNotification, "")) { try s.seal(PushNotification(title: "", body: ""), for: "alice") }
        #expect(throws: SenderError(.emptyNotification, "")) { try s.seal(PushNotification(), for: "alice") }
        #expect(throws: SenderError(.unknownRecipient, "")) { try s.seal(PushNotification(title: "t"), for: "carol") }
        #expect(throws: SenderError(.keyUnavailable, "")) { try s.seal(PushNotification(title: "t"), for: "bob") }
        #expect(throws: SenderError(.invalidNotification, "")) { try s.seal(PushNotification(title: "t", exp: 5), ttlSeconds: 5, for: "alice") }
    }

    /// A provider's key with a key id the wire format refuses (checked once when the key is
    /// made, `SealingKey.hasValidKeyID`) is `.keyUnavailable`, whichever way the notification
    /// comes in; a valid one next to it still seals.
    @Test func aProviderKeyWithABadKeyIDIsRefused() throws {
        let keys = InMemorySealingKeys([(Fixture.appID, "eve", SealingKey(keyID: "bad id", key: Fixture.key)),
                                        (Fixture.appID, "long", SealingKey(keyID: String(repeating: "k", count: 65), key: Fixture.key)),
                                        (Fixture.appID, "alice", SealingKey(keyID: "k1", key: Fixture.key))])
        let s = try NotificationSealer(appID: Fixture.appID, keys: keys, clock: { Fixture.now })
        for recipient in ["eve", "long"] {
            #expect(throws: SenderError(.keyUnavailable, "")) { try s.seal(PushNotification(title: "t"), for: recipient) }
            #expect(throws: SenderError(.keyUnavailable, "")) { try s.seal(notificationJSON: Array(#"{"title":"t"}"#.utf8), for: recipient) }
        }
        #expect(try s.seal(notificationJSON: Array(#"{"title":"t"}"#.utf8), for: "alice").keyID == "k1")
    }

    @Test func badJSONInputIsAClearError() throws {
        let s = try Fixture.sealer()
        let cases: [(String, SenderError.Code)] = [
            ("{\"title\": 1}", .invalidNotification),
            ("{\"title\": \"t\", \"data\": []}", .invalidNotification),
            ("{\"title\": \"t\", \"iat\": true}", .invalidNotification),
            ("{\"title\": \"t\", \"exp\": 1.5}", .invalidNotification),
            ("{\"title\": \"t\", \"media\": {\"type\": \"image/png\"}}", .invalidNotification),
            ("{\"title\": \"t\", \"localizations\": {\"fr\": {\"title\": 2}}}", .invalidNotification),
            ("{\"titel\": \"t\"}", .invalidNotification),
            ("[\"t\"]", .invalidNotification),
            ("{\"title\": \"t\"", .invalidJSON),
            ("{\"title\": \"t\", \"title\": \"u\"}", .invalidJSON),
            ("{\"title\": \"\", \"body\": \"\"}", .emptyNotification),
        ]
        for (text, code) in cases {
            #expect(throws: SenderError(code, "")) { try s.seal(notificationJSON: Array(text.utf8), for: "alice") }
        }
        let notUTF8: [UInt8] = Array("{\"title\": \"".utf8) + [0xC3, 0x28] + Array("\"}".utf8)
        #expect(throws: SenderError(.invalidJSON, "")) { try s.seal(notificationJSON: notUTF8, for: "alice") }
    }

    /// The sweep of issue #5: bodies of 1,000 to 1,800 two-byte characters either write at most
    /// 4096 bytes or fail with the size error naming a size over 4096; with fit, always fit.
    @Test func bodySweepNeverWritesMoreThan4096Bytes() throws {
        let strict = try Fixture.sealer()
        let fitting = try Fixture.sealer(SealOptions(fit: true))
        var sawError = false
        var sawSuccess = false
        for count in 1000...1800 {
            let n = PushNotification(title: "Résumé", body: String(repeating: "é", count: count))
            do {
                let p = try strict.seal(n, for: "alice").payload
                #expect(p.count <= 4096)
                sawSuccess = true
            } catch let e as SenderError {
                #expect(e.code == .payloadTooLarge)
                let actual = try #require(e.payloadByteCount, "a payloadTooLarge error carries the payload's size")
                #expect(actual > 4096)
                sawError = true
            }
            let f = try fitting.seal(n, for: "alice")
            #expect(f.payload.count <= 4096)
            let body = try #require(try Fixture.plaintext(f.payload)["body"] as? String)
            if f.changes.contains(where: { if case .shortenedBody = $0 { true } else { false } }) {
                #expect(body.hasSuffix("…"))
            } else {
                #expect(body.count == count)
            }
        }
        #expect(sawError && sawSuccess)
    }

    /// The fit ladder keeps every kept Character whole: ZWJ families, flags, combining marks.
    @Test(arguments: ["👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "e\u{301}\u{327}", "👩🏽‍💻a", "ﷺ", "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}"])
    func fitLadderKeepsCharactersWhole(unit: String) throws {
        let original = String(repeating: unit, count: 4000 / unit.utf8.count + 1)
        // No generated id or default exp: the maximality check below rebuilds the plaintext.
        let sealer = try Fixture.sealer(SealOptions(defaultTTLSeconds: nil, generatesIDs: false, fit: true))
        let sealed = try sealer.seal(PushNotification(title: "T", body: original), for: "alice")
        #expect(sealed.payload.count <= 4096)
        let body = try #require(try Fixture.plaintext(sealed.payload)["body"] as? String)
        #expect(body.hasSuffix("…"))
        let kept = Array(body.dropLast())
        let originalCharacters = Array(original)
        #expect(kept.count < originalCharacters.count)
        #expect(Array(originalCharacters[0..<kept.count]) == kept)
        #expect(Array(body.dropLast().unicodeScalars) == Array(original.unicodeScalars.prefix(body.dropLast().unicodeScalars.count)))
        guard case .shortenedBody(let from, let to)? = sealed.changes.last else {
            Issue.record("no shortenedBody change: \(sealed.changes)")
            return
        }
        #expect(from == originalCharacters.count)
        #expect(to == kept.count)
        // Maximal: one more Character would not have fitted.
        let longer = String(originalCharacters[0...kept.count]) + "…"
        var n = PushNotification(title: "T", body: longer)
        n.iat = Fixture.now
        let plain = try n.encoded(padding: false)
        let fixed = sealed.payload.count - WireBase64.encodedByteCount(try Fixture.open(sealed.payload).count + 28)
        #expect(fixed + WireBase64.encodedByteCount(A256GCMEnvelope().boxByteCount(plaintextByteCount: plain.count)) > 4096)
    }

    @Test func fitDropsPaddingThenMediaBeforeTheBody() throws {
        let media = MediaDescriptor(url: "https://cdn.example.com/" + String(repeating: "m", count: 400), type: "image/jpeg")
        let sealer = try Fixture.sealer(SealOptions(fit: true))
        // Fits once the media is gone, so the body stays whole.
        let body = String(repeating: "b", count: 2550)
        let sealed = try sealer.seal(PushNotification(title: "T", body: body, media: media), for: "alice")
        #expect(sealed.payload.count <= 4096)
        #expect(sealed.changes.first.map { if case .droppedPadding = $0 { true } else { false } } == true)
        #expect(sealed.changes.contains(.droppedMedia))
        let plain = try Fixture.plaintext(sealed.payload)
        #expect(plain["media"] == nil)
        #expect(plain["body"] as? String == body)
        // Without fit the same notification is a size error.
        #expect(throws: SenderError(.payloadTooLarge, "")) { try Fixture.sealer().seal(PushNotification(title: "T", body: body, media: media), for: "alice") }
        // A huge title cannot be fitted by shortening the body.
        #expect(throws: SenderError(.cannotFit, "")) { try sealer.seal(PushNotification(title: String(repeating: "t", count: 3500), body: "b"), for: "alice") }
    }

    @Test func tenThousandSealsHaveDistinctNonces() throws {
        let sealer = try Fixture.sealer()
        let n = PushNotification(title: "Same", body: "Same every time")
        var nonces = Set<[UInt8]>()
        for _ in 0..<10_000 {
            let o = try Fixture.json(try sealer.seal(n, for: "alice").payload)
            let b64 = try #require(o["encrypted_data"] as? String)
            let box = try #require(Data(base64Encoded: b64))
            nonces.insert(Array(box.prefix(12)))
        }
        #expect(nonces.count == 10_000)
    }

    @Test func mediaBlobOpensAndDescriptorIsRight() throws {
        let file: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<5000).map { UInt8($0 % 251) }
        let sealed = try MediaSealer.seal(file, url: "https://cdn/x")
        #expect(sealed.media.type == "image/png")
        #expect(sealed.blob.count == file.count + 28)
        let digest = try SHA256Hasher.hash(sealed.blob).map { String(format: "%02x", $0) }.joined()
        #expect(sealed.media.sha256Hex == digest)
        let key = try #require(sealed.media.key)
        #expect(key.byteCount == 32)
        // The descriptor as sealed: lower-case hex and standard base64 of the same key.
        let json = sealed.media.jsonValue()
        #expect(json["sha256"]?.stringValue == digest)
        let keyText = try #require(json["key"]?.stringValue)
        #expect(Data(base64Encoded: keyText).map { [UInt8]($0) } == key.copyBytes())
        let opened = try AES256GCM.open(try SealedBox(combined: sealed.blob), with: key)
        #expect(opened == file)
        #expect(MediaSealer.sniffType([0xFF, 0xD8, 0xFF, 0xE0]) == "image/jpeg")
        #expect(MediaSealer.sniffType(Array("GIF89a".utf8)) == "image/gif")
        #expect(MediaSealer.sniffType([1, 2, 3]) == "application/octet-stream")
        #expect(throws: SenderError(.invalidMedia, "")) { try MediaSealer.seal([], url: "") }
    }

    @Test func batchKeepsOrderAndOutputsEveryGoodLine() throws {
        let batch = BatchSealer(sealer: try Fixture.sealer(), concurrency: 2)
        var lines: [BatchSealer.Line] = []
        for i in 1...500 {
            let text: String
            switch i % 50 {
            case 7: text = "{\"recipient\":\"alice\",\"notification\":{\"title\":7}}"
            case 13: text = "not json"
            case 21: text = "{\"recipient\":\"carol\",\"notification\":{\"title\":\"x\"}}"
            default: text = "{\"recipient\":\"alice\",\"notification\":{\"title\":\"n\(i)\"}}"
            }
            lines.append(BatchSealer.Line(number: i, bytes: Array(text.utf8)))
        }
        lines.append(BatchSealer.Line(number: 501, bytes: [], overlongByteCount: 10 << 20))
        let chunk = batch.seal(lines)
        let out = chunk.output.split(separator: 0x0A)
        #expect(out.count == 501)
        #expect(chunk.failureCount == 31)
        for (i, line) in out.enumerated() {
            let o = try Fixture.json(Array(line))
            // Every output line, sealed or failed, names its 1-based input line.
            #expect((o["line"] as? NSNumber)?.intValue == i + 1, "\(String(decoding: line, as: UTF8.self).prefix(80))")
            if let error = o["error"] as? [String: Any] {
                #expect(error["code"] is String)
            } else {
                let payload = try JSONSerialization.data(withJSONObject: try #require(o["payload"]))
                #expect(try Fixture.plaintext([UInt8](payload))["title"] as? String == "n\(i + 1)")
            }
        }
    }
}
