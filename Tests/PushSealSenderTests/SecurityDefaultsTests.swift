import PushSealSystem
import PushSealJSON
import Foundation
import Testing
import PushSealCrypto
import PushSealWire
@testable import PushSealSender

/// Issue 12, security review F2 and "ttl 0": what the sender seals by default.
@Suite struct SecurityDefaultsTests {
    @Test("F2: every notification gets a random id and exp = iat + 30 days unless it sets them")
    func defaultIDAndExpiry() throws {
        let s = try Fixture.sealer()
        var ids: Set<String> = []
        for _ in 0..<20 {
            let sealed = try s.seal(PushNotification(title: "Ana", body: "hi"), for: "alice")
            let plain = try Fixture.plaintext(sealed.payload)
            let id = try #require(plain["id"] as? String)
            #expect(id.utf8.count == 22 && id.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c | 0x20 >= 0x61 && c | 0x20 <= 0x7A) || c == 0x2D || c == 0x5F
            }, "\(id) is not 16 bytes of unpadded base64url")
            ids.insert(id)
            #expect((plain["exp"] as? NSNumber)?.int64Value == Fixture.now + SealOptions.standardTTLSeconds)
            #expect(sealed.headers.expiration == Fixture.now + 30 * 24 * 3600)
        }
        #expect(ids.count == 20, "ids repeat")
        // The notification's own id and exp win.
        let own = try Fixture.plaintext(try s.seal(PushNotification(title: "t", exp: Fixture.now + 5, id: "mine"), for: "alice").payload)
        #expect(own["id"] as? String == "mine" && (own["exp"] as? NSNumber)?.int64Value == Fixture.now + 5)
        // The JSON form and batch take the same defaults.
        let json = try Fixture.plaintext(try s.seal(notificationJSON: Array("{\"title\":\"t\"}".utf8), for: "alice").payload)
        #expect(json["id"] is String && (json["exp"] as? NSNumber)?.int64Value == Fixture.now + SealOptions.standardTTLSeconds)
        let chunk = BatchSealer(sealer: s, concurrency: 1).seal([BatchSealer.Line(number: 1, bytes: Array("{\"recipient\":\"alice\",\"notification\":{\"title\":\"t\"}}".utf8))])
        let line = try #require(try JSONSerialization.jsonObject(with: Data(chunk.output)) as? [String: Any])
        let payload = try JSONSerialization.data(withJSONObject: try #require(line["payload"]))
        let batchPlain = try Fixture.plaintext(Array(payload))
        #expect(batchPlain["id"] is String && batchPlain["exp"] != nil)
    }

    @Test("F2: --no-expiry (defaultTTLSeconds nil) and generatesIDs false turn the defaults off")
    func defaultsCanBeTurnedOff() throws {
        let s = try Fixture.sealer(SealOptions(defaultTTLSeconds: nil, generatesIDs: false))
        let sealed = try s.seal(PushNotification(title: "t"), for: "alice")
        let plain = try Fixture.plaintext(sealed.payload)
        #expect(plain["id"] == nil && plain["exp"] == nil && sealed.headers.expiration == nil)
        #expect(!sealed.headers.fields.contains { $0.name == "apns-expiration" })
    }

    @Test("ttl 0 is APNs' now-or-never: apns-expiration 0 and a sealed exp of iat + 60 s, never born expired")
    func zeroTTL() throws {
        for s in [try Fixture.sealer(), try Fixture.sealer(SealOptions(defaultTTLSeconds: 0))] {
            let viaRequest = try s.seal(PushNotification(title: "t"), ttlSeconds: s.options.defaultTTLSeconds == 0 ? nil : 0, for: "alice")
            let viaJSON = try s.seal(notificationJSON: Array((s.options.defaultTTLSeconds == 0 ? "{\"title\":\"t\"}" : "{\"title\":\"t\",\"ttl\":0}").utf8), for: "alice")
            for sealed in [viaRequest, viaJSON] {
                let plain = try Fixture.plaintext(sealed.payload)
                let iat = try #require((plain["iat"] as? NSNumber)?.int64Value)
                let exp = try #require((plain["exp"] as? NSNumber)?.int64Value)
                #expect(exp == iat + SealOptions.immediateTTLSeconds && exp > Fixture.now, "born expired: exp \(exp), now \(Fixture.now)")
                #expect(sealed.headers.expiration == 0)
                #expect(sealed.headers.fields.contains { $0 == ("apns-expiration", "0") })
            }
        }
    }
}

/// Issue 12, F3 and reserved names: what a sender may put inside the plaintext.
@Suite struct SealedPresentationSenderTests {
    @Test("reserved names at the top of data are refused at seal time with a clear error")
    func reservedDataNames() throws {
        let s = try Fixture.sealer()
        for name in PushNotification.reservedDataNames {
            let json = "{\"title\":\"t\",\"data\":{\"\(name)\":1}}"
            #expect(throws: SenderError(.invalidNotification, "")) { try s.seal(notificationJSON: Array(json.utf8), for: "alice") }
            do {
                _ = try s.seal(PushNotification(title: "t", data: [name: .integer(1)]), for: "alice")
                Issue.record("\(name) in data was sealed")
            } catch let e as SenderError {
                #expect(e.code == .invalidNotification && e.reason.contains("data.\(name) is a reserved name"), "\(e.reason)")
            }
        }
        // Deeper down the names are the app's own.
        _ = try s.seal(notificationJSON: Array("{\"title\":\"t\",\"data\":{\"x\":{\"aps\":1}}}".utf8), for: "alice")
    }

    @Test("F3: a sealed aps (thread-id, category, interruption-level, sound) is sealed inside encrypted_data")
    func sealedAPS() throws {
        let s = try Fixture.sealer()
        let json = #"{"title":"t","aps":{"thread-id":"chat","category":"REPLY","interruption-level":"critical","sound":{"critical":1,"name":"a.caf","volume":0.5}}}"#
        let sealed = try s.seal(notificationJSON: Array(json.utf8), for: "alice")
        let text = String(decoding: sealed.payload, as: UTF8.self)
        #expect(!text.contains("REPLY") && !text.contains("chat"))
        let plain = try Fixture.plaintext(sealed.payload)
        let aps = try #require(plain["aps"] as? [String: Any])
        #expect(aps["thread-id"] as? String == "chat" && aps["category"] as? String == "REPLY" && aps["interruption-level"] as? String == "critical")
        let sound = try #require(aps["sound"] as? [String: Any])
        #expect((sound["critical"] as? NSNumber)?.intValue == 1 && sound["name"] as? String == "a.caf" && (sound["volume"] as? NSNumber)?.doubleValue == 0.5)
        // The receiver reads back the same fields.
        let opened = try PushNotification(jsonBytes: try Fixture.open(sealed.payload))
        #expect(opened.aps == PresentationFields(threadID: "chat", category: "REPLY", interruptionLevel: "critical", sound: .critical(name: "a.caf", volume: 0.5)))
        for bad in [#"{"title":"t","aps":{"alert":"x"}}"#, #"{"title":"t","aps":{"interruption-level":"loud"}}"#, #"{"title":"t","aps":{"sound":{"critical":2}}}"#, #"{"title":"t","aps":[]}"#] {
            #expect(throws: SenderError(.invalidNotification, "")) { try s.seal(notificationJSON: Array(bad.utf8), for: "alice") }
        }
    }
}
