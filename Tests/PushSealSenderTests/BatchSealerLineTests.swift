import Foundation
@testable import PushSealSender
import Testing

/// What one batch line's output says when it fails, and which lines a reader skips.
@Suite struct BatchSealerLineTests {
    @Test func blankMeansEmptyOrJSONWhitespaceOnly() {
        for text in ["", " ", "\t", "\r", "  \t \r"] {
            #expect(BatchSealer.Line(number: 1, bytes: Array(text.utf8)).isBlank, "\(Array(text.utf8))")
        }
        for text in ["{}", " x ", "\u{A0}", "\u{0B}", "\u{0C}"] {
            #expect(!BatchSealer.Line(number: 1, bytes: Array(text.utf8)).isBlank, "\(Array(text.utf8))")
        }
        // An overlong line arrives with no bytes, but it is not blank: it gets its error line.
        #expect(!BatchSealer.Line(number: 1, bytes: [], overlongByteCount: 2 << 20).isBlank)
    }

    @Test func errorLinesNameAValidRecipientAndTheirOwnCode() throws {
        let batch = BatchSealer(sealer: try Fixture.sealer(), concurrency: 1)
        let cases: [(line: String?, recipient: String?, code: String)] = [
            (#"{"recipient":"alice","extra":1,"notification":{"title":"t"}}"#, "alice", "invalidNotification"),
            (#"{"extra":1,"recipient":"alice","notification":{"title":"t"}}"#, "alice", "invalidNotification"),
            (#"{"recipient":"alice"}"#, "alice", "invalidNotification"),
            (#"{"recipient":"alice","notification":{"title":5}}"#, "alice", "invalidNotification"),
            (#"{"recipient":"","extra":1,"notification":{"title":"t"}}"#, nil, "invalidNotification"),
            (#"{"recipient":7,"notification":{"title":"t"}}"#, nil, "invalidNotification"),
            (#"["alice"]"#, nil, "invalidNotification"),
            (#"{"recipient":"alice""#, nil, "invalidJSON"),
            (nil, nil, "lineTooLong"),
        ]
        for c in cases {
            let line = c.line.map { BatchSealer.Line(number: 3, bytes: Array($0.utf8)) } ?? BatchSealer.Line(number: 3, bytes: [], overlongByteCount: 1_048_577)
            let (bytes, failed) = batch.sealLine(line)
            #expect(failed, "\(c.line ?? "overlong")")
            let o = try Fixture.json(Array(bytes.dropLast()))
            if let recipient = c.recipient {
                #expect(o["recipient"] as? String == recipient, "\(c.line ?? "overlong")")
            } else {
                #expect(o["recipient"] is NSNull, "\(c.line ?? "overlong")")
            }
            #expect((o["line"] as? NSNumber)?.intValue == 3)
            #expect((o["error"] as? [String: Any])?["code"] as? String == c.code, "\(c.line ?? "overlong")")
        }
    }
}
