import PushSealTestSupport
import PushSealJSON
import Foundation
import PushSealWire
@testable import PushSealSender
import Testing

/// A retract (FORMAT.md §5.1, issue 29): sealed like any message, sent as a background push.
@Suite struct RetractSealTests {
    static func expectBackground(_ sealed: SealedNotification, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(sealed.headers.pushType == "background", sourceLocation: sourceLocation)
        #expect(sealed.headers.priority == 5, sourceLocation: sourceLocation)
        #expect(sealed.headers.collapseID == nil, sourceLocation: sourceLocation)
        let payload = try Fixture.json(sealed.payload)
        // Exactly content-available: no alert, no mutable-content, no sound or badge.
        let aps = try #require(payload["aps"] as? [String: Any], sourceLocation: sourceLocation)
        #expect(aps.count == 1 && (aps["content-available"] as? Int) == 1, "aps: \(aps)", sourceLocation: sourceLocation)
        #expect(payload["encrypted_data"] is String && payload["key_id"] as? String == "k1", sourceLocation: sourceLocation)
    }

    @Test func aRetractIsSealedAsABackgroundPushWhateverTheAlertOptions() throws {
        var options = SealOptions()
        options.aps = APSFields(sound: "ping", badge: 3)
        options.collapseID = "c-1"
        options.priority = 10
        let sealer = try Fixture.sealer(options)
        let sealed = try sealer.seal(SealRequest(.retract(ids: ["m-1", "m-2"])), for: "alice")
        try Self.expectBackground(sealed)
        let opened = try PushNotification(jsonBytes: try Fixture.open(sealed.payload))
        #expect(opened.kind == .retract && opened.ids == ["m-1", "m-2"])
        #expect(opened.id != nil && opened.iat == Fixture.now && opened.exp != nil, "a retract gets an id, iat and exp like any message")
        #expect(opened.title == nil && opened.body == nil)
        // The plaintext names kind and ids after the other members, as FORMAT.md §5 orders them.
        let text = String(decoding: try Fixture.open(sealed.payload), as: UTF8.self)
        #expect(text.contains(#""kind":"retract","ids":["m-1","m-2"]"#))
    }

    @Test func theJSONFormTakesTheScanAndTheTreePathAlike() throws {
        let sealer = try Fixture.sealer(SealOptions(generatesIDs: false))
        let json = Array(#"{"kind":"retract","ids":["a","b"],"id":"x-1","ttl":60}"#.utf8)
        let scanned = try sealer.seal(notificationJSON: json, for: "alice")
        let tree = try sealer.seal(SealRequest(jsonBytes: json), for: "alice")
        try Self.expectBackground(scanned)
        try Self.expectBackground(tree)
        #expect(try Fixture.open(scanned.payload) == Fixture.open(tree.payload))
        // The scanner reads a retract itself (no fallback to the tree).
        var n = PushNotification()
        var ttl: Int64?
        #expect(PushNotification.scan(json, into: &n, otherMember: { try SealRequest.scanTTL($0, &$1, into: &ttl) }))
        #expect(n.kind == .retract && n.ids == ["a", "b"] && ttl == 60)
    }

    @Test func aRetractCarriesNothingShownAndADisplayMessageNoIDs() throws {
        let sealer = try Fixture.sealer()
        func refused(_ json: String) -> String? {
            do {
                _ = try sealer.seal(notificationJSON: Array(json.utf8), for: "alice")
                return nil
            } catch let e as SenderError {
                return e.code == .invalidNotification ? e.reason : "code \(e.code.name)"
            } catch {
                return "\(error)"
            }
        }
        #expect(refused(#"{"kind":"retract","ids":["a"],"title":"Gone"}"#)?.hasPrefix("title: a retract shows nothing") == true)
        #expect(refused(#"{"kind":"retract","ids":["a"],"data":{"k":1}}"#)?.hasPrefix("data: a retract shows nothing") == true)
        #expect(refused(#"{"kind":"retract"}"#)?.contains("a retract needs 1-100 notification ids") == true)
        #expect(refused(#"{"kind":"retract","ids":[]}"#)?.contains("expected 1-100 notification ids, got 0") == true)
        #expect(refused(#"{"kind":"retract","ids":[7]}"#)?.contains("ids[1]") == true)
        #expect(refused(#"{"kind":"recall","ids":["a"]}"#)?.contains("kind must be one of display, retract") == true)
        #expect(refused(#"{"title":"t","ids":["a"]}"#)?.contains("only a retract names notification ids") == true)
        let many = (0...100).map { "\"m-\($0)\"" }.joined(separator: ",")
        #expect(refused(#"{"kind":"retract","ids":[\#(many)]}"#)?.contains("got 101") == true)
        // The same rules for a value built in code.
        var built = PushNotification.retract(ids: ["a"])
        built.body = "b"
        #expect(throws: SenderError.self) { try sealer.seal(SealRequest(built), for: "alice") }
        #expect(throws: SenderError.self) { try sealer.seal(SealRequest(PushNotification(title: "t", ids: ["a"])), for: "alice") }
    }

    @Test func aBatchLineRetracts() throws {
        let batch = BatchSealer(sealer: try Fixture.sealer(), concurrency: 1)
        let (bytes, failed) = batch.sealLine(BatchSealer.Line(number: 1, bytes: Array(#"{"recipient":"alice","retract":["m-1","m-2"]}"#.utf8)))
        #expect(!failed, "\(String(decoding: bytes, as: UTF8.self))")
        let line = try Fixture.json(bytes)
        let headers = try #require(line["headers"] as? [String: Any])
        #expect(headers["apns-push-type"] as? String == "background" && headers["apns-priority"] as? String == "5")
        let payload = try #require(line["payload"] as? [String: Any])
        #expect((payload["aps"] as? [String: Any])?.count == 1)
        let sealed = try JSONSerialization.data(withJSONObject: payload)
        let opened = try PushNotification(jsonBytes: try Fixture.open([UInt8](sealed)))
        #expect(opened.kind == .retract && opened.ids == ["m-1", "m-2"])
        for bad in [#"{"recipient":"alice","retract":["a"],"notification":{"title":"t"}}"#, #"{"recipient":"alice","retract":["a"],"aps":{"sound":"x"}}"#,
                    #"{"recipient":"alice","retract":[]}"#] {
            let (out, failed) = batch.sealLine(BatchSealer.Line(number: 2, bytes: Array(bad.utf8)))
            #expect(failed, "\(bad) → \(String(decoding: out, as: UTF8.self))")
        }
    }
}
