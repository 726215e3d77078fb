import Foundation
import PushSealWire
@testable import PushSealSender
import Testing

/// A batch line's own fields (`deviceToken`, `aps`, `collapseId`): defaults from the sealer's
/// options, per-line overrides, the options' rules for a bad field, order and count kept.
@Suite struct BatchLineFieldsTests {
    static let defaults = SealOptions(fallback: FallbackAlert(title: "Flag title", body: "Flag body"),
                                      aps: APSFields(sound: "flag.caf", badge: 7, threadID: "flag-thread"), collapseID: "flag-collapse")

    static func batch() throws -> BatchSealer { BatchSealer(sealer: try Fixture.sealer(defaults), concurrency: 2) }

    static func outputs(_ chunk: BatchSealer.Chunk) throws -> [[String: Any]] {
        try chunk.output.split(separator: 0x0A).map { try Fixture.json(Array($0)) }
    }

    static func line(_ n: Int, _ text: String) -> BatchSealer.Line { BatchSealer.Line(number: n, bytes: Array(text.utf8)) }

    @Test func aLineWithoutFieldsTakesTheFlagsAndALineSetsItsOwn() throws {
        let lines = [
            Self.line(1, #"{"recipient":"alice","notification":{"title":"t","body":"b"}}"#),
            Self.line(2, #"{"recipient":"alice","notification":{"title":"t"},"deviceToken":"00ff","collapseId":"c2","aps":{"badge":0,"sound":{"critical":1,"name":"alarm.caf","volume":0.5},"thread-id":"th","category":"MSG","interruption-level":"time-sensitive","relevance-score":0.25,"target-content-id":"win-1","filter-criteria":"work","alert":{"title-loc-key":"T_KEY","title-loc-args":["Ana"],"loc-key":"B_KEY","loc-args":["1","2"],"subtitle":"sub"}}}"#),
            // The tree path (a member order the scanner hands on) gives the same fields.
            Self.line(3, #"{"aps":{"badge":2},"notification":{"title":"t"},"recipient":"alice","deviceToken":"ABCD"}"#),
        ]
        let out = try Self.outputs(try Self.batch().seal(lines))
        #expect(out.count == 3)
        let aps = out.map { ($0["payload"] as? [String: Any])?["aps"] as? [String: Any] ?? [:] }
        let headers = out.map { $0["headers"] as? [String: String] ?? [:] }
        // Line 1: every default.
        #expect((aps[0]["alert"] as? [String: String]) == ["title": "Flag title", "body": "Flag body"])
        #expect(aps[0]["sound"] as? String == "flag.caf" && aps[0]["badge"] as? Int == 7 && aps[0]["thread-id"] as? String == "flag-thread")
        #expect(headers[0]["apns-collapse-id"] == "flag-collapse")
        #expect(out[0]["deviceToken"] == nil)
        // Line 2: its own everything.
        #expect(out[1]["deviceToken"] as? String == "00ff")
        #expect(headers[1]["apns-collapse-id"] == "c2")
        #expect(aps[1]["badge"] as? Int == 0)
        let sound = aps[1]["sound"] as? [String: Any]
        #expect(sound?["critical"] as? Int == 1 && sound?["name"] as? String == "alarm.caf" && sound?["volume"] as? Double == 0.5)
        #expect(aps[1]["thread-id"] as? String == "th" && aps[1]["category"] as? String == "MSG")
        #expect(aps[1]["interruption-level"] as? String == "time-sensitive" && aps[1]["relevance-score"] as? Double == 0.25)
        #expect(aps[1]["target-content-id"] as? String == "win-1" && aps[1]["filter-criteria"] as? String == "work")
        #expect(aps[1]["mutable-content"] as? Int == 1)
        let alert = aps[1]["alert"] as? [String: Any] ?? [:]
        #expect(alert["title"] == nil && alert["body"] == nil, "a line's alert replaces the flags' whole alert")
        #expect(alert["title-loc-key"] as? String == "T_KEY" && alert["loc-key"] as? String == "B_KEY" && alert["subtitle"] as? String == "sub")
        #expect(alert["title-loc-args"] as? [String] == ["Ana"] && alert["loc-args"] as? [String] == ["1", "2"])
        // Line 3: its badge, the other defaults.
        #expect(aps[2]["badge"] as? Int == 2 && aps[2]["sound"] as? String == "flag.caf")
        #expect(out[2]["deviceToken"] as? String == "ABCD" && headers[2]["apns-collapse-id"] == "flag-collapse")
        // The sealed part is the notification's own: the clear fields are not sealed.
        let sealed = try Fixture.plaintext(Array(try JSONSerialization.data(withJSONObject: out[1]["payload"] as Any)))
        #expect(sealed["aps"] == nil && sealed["title"] as? String == "t")
    }

    @Test(arguments: [
        (#""aps":{"badge":-1}"#, "invalidNotification"),
        (#""aps":{"badge":"3"}"#, "invalidNotification"),
        (#""aps":{"interruption-level":"loud"}"#, "invalidNotification"),
        (#""aps":{"relevance-score":1.5}"#, "invalidNotification"),
        (#""aps":{"sound":{"critical":1,"volume":2}}"#, "invalidNotification"),
        (#""aps":{"sound":{"critical":1,"loud":true}}"#, "invalidNotification"),
        (#""aps":{"sound":""}"#, "invalidNotification"),
        (#""aps":{"category":""}"#, "invalidNotification"),
        (#""aps":{"mutable-content":1}"#, "invalidNotification"),
        (#""aps":{"colour":"red"}"#, "invalidNotification"),
        (#""aps":[1]"#, "invalidNotification"),
        (#""aps":{"alert":{"title":"only a title"}}"#, "emptyFallbackAlert"),
        (#""aps":{"alert":{"title":"t","body":"b","loc-args":["x"]}}"#, "invalidNotification"),
        (#""aps":{"alert":{"title":"t","loc-key":"K","loc-args":[1]}}"#, "invalidNotification"),
        (#""aps":{"alert":"a string"}"#, "invalidNotification"),
        (#""collapseId":"\#(String(repeating: "c", count: 65))""#, "invalidNotification"),
        (#""collapseId":7"#, "invalidNotification"),
        (#""deviceToken":"xyz""#, "invalidNotification"),
        (#""deviceToken":"abc""#, "invalidNotification"),
        (#""deviceToken":12"#, "invalidNotification"),
        // Issue 25 G4: longer than push-send sends (256 hex digits), refused here first.
        (#""deviceToken":"\#(String(repeating: "ab", count: 129))""#, "invalidNotification"),
        (#""aps":{"alert":{"title":"t","body":"\#(String(repeating: "b", count: 5000))"}}"#, "clearPartTooLarge"),
    ])
    func aBadFieldFailsItsLineAloneInOrder(_ field: String, _ code: String) throws {
        let good = #"{"recipient":"alice","notification":{"title":"t"}}"#
        let bad = #"{"recipient":"alice","notification":{"title":"t"},\#(field)}"#
        let lines = [Self.line(1, good), Self.line(2, bad), Self.line(3, good)]
        let chunk = try Self.batch().seal(lines)
        let out = try Self.outputs(chunk)
        #expect(out.map { $0["line"] as? Int } == [1, 2, 3])
        #expect(chunk.failureCount == 1)
        #expect(out[0]["payload"] != nil && out[2]["payload"] != nil)
        #expect(out[1]["recipient"] as? String == "alice")
        #expect((out[1]["error"] as? [String: Any])?["code"] as? String == code, "\(field): \(out[1])")
    }

    @Test func anErrorLineCarriesItsValidDeviceToken() throws {
        let lines = [Self.line(4, #"{"recipient":"alice","deviceToken":"0a0b","notification":{"title":"t"},"aps":{"badge":-2}}"#)]
        let out = try Self.outputs(try Self.batch().seal(lines))
        #expect(out.count == 1 && out[0]["deviceToken"] as? String == "0a0b" && out[0]["error"] != nil)
    }

    @Test func nullMembersKeepTheDefaults() throws {
        let lines = [Self.line(1, #"{"recipient":"alice","notification":{"title":"t"},"deviceToken":null,"collapseId":null,"aps":{"badge":null,"alert":null}}"#)]
        let out = try Self.outputs(try Self.batch().seal(lines))
        let aps = (out[0]["payload"] as? [String: Any])?["aps"] as? [String: Any] ?? [:]
        #expect(aps["badge"] as? Int == 7 && (aps["alert"] as? [String: String])?["title"] == "Flag title")
        #expect((out[0]["headers"] as? [String: String])?["apns-collapse-id"] == "flag-collapse" && out[0]["deviceToken"] == nil)
    }

    @Test func manyLinesWithFieldsKeepOrderAndCount() throws {
        let lines = (1...500).map { i in
            Self.line(i, i % 3 == 0 ? #"{"recipient":"alice","notification":{"title":"t"},"aps":{"badge":-1}}"#
                      : #"{"recipient":"alice","notification":{"title":"t"},"deviceToken":"\#(String(format: "%04x", i))","aps":{"badge":\#(i)}}"#)
        }
        let chunk = try Self.batch().seal(lines)
        let out = try Self.outputs(chunk)
        #expect(out.map { $0["line"] as? Int } == Array(1...500))
        #expect(chunk.failureCount == 166)
        for (i, o) in zip(1...500, out) where i % 3 != 0 {
            #expect(o["deviceToken"] as? String == String(format: "%04x", i))
            #expect(((o["payload"] as? [String: Any])?["aps"] as? [String: Any])?["badge"] as? Int == i)
        }
    }

    @Test func theDefaultClearPartIsByteForByteAsBefore() throws {
        let sealer = try Fixture.sealer(SealOptions(aps: APSFields(sound: "default", badge: 1, relevanceScore: 0.5)))
        #expect(String(decoding: sealer.clear.prefix, as: UTF8.self)
            == #"{"aps":{"alert":{"title":"New message","body":"Open the app to read it"},"mutable-content":1,"sound":"default","badge":1,"relevance-score":0.5},"encrypted_data":""#)
    }
}
