import Foundation
import PushSealWire
import PushSealSystem
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

    /// A provider that records, in order, every `beginBatch()` and every key lookup, and fails
    /// lookups for `locked` with its own error type.
    final class RecordingKeys: SealingKeyProvider, @unchecked Sendable {
        // @unchecked Sendable: `events` is only touched under `lock`.
        private let lock = PosixLock()
        private var events: [String] = []

        var recorded: [String] {
            lock.lock()
            defer { lock.unlock() }
            return events
        }

        func beginBatch() {
            lock.lock()
            events.append("begin")
            lock.unlock()
        }

        func primaryKey(appID: String, recipient: String) throws -> SealingKey {
            lock.lock()
            events.append("seal")
            lock.unlock()
            if recipient == "locked" { throw SealingKeyError(.keyStoreLocked, "keyset \(appID)/\(recipient) is locked") }
            if recipient == "bad/name" { throw SealingKeyError(.invalidName, "recipient must not contain /") }
            return SealingKey(keyID: "k1", key: Fixture.key)
        }
    }

    @Test func theBatchCallsBeginBatchBeforeEachRunOfLines() throws {
        let keys = RecordingKeys()
        let batch = BatchSealer(sealer: try NotificationSealer(appID: Fixture.appID, keys: keys, clock: { Fixture.now }), concurrency: 1)
        let line = Array(#"{"recipient":"alice","notification":{"title":"t"}}"#.utf8)
        let count = BatchSealer.revalidationLineCount + 3
        let out = batch.seal((1...count).map { BatchSealer.Line(number: $0, bytes: line) })
        #expect(out.failureCount == 0)
        let events = keys.recorded
        // One begin before the first run of 2,048 seals, one before the remaining 3.
        #expect(events.filter { $0 == "begin" }.count == 2)
        #expect(events.first == "begin")
        #expect(events[BatchSealer.revalidationLineCount + 1] == "begin")
        #expect(events.filter { $0 == "seal" }.count == count)
    }

    @Test func aProvidersOwnErrorsAreReportedUnderTheSenderCodes() throws {
        let batch = BatchSealer(sealer: try NotificationSealer(appID: Fixture.appID, keys: RecordingKeys(), clock: { Fixture.now }), concurrency: 1)
        for (recipient, code) in [("locked", "keyStoreLocked"), ("bad/name", "invalidOption")] {
            let (bytes, failed) = batch.sealLine(BatchSealer.Line(number: 1, bytes: Array("{\"recipient\":\"\(recipient)\",\"notification\":{\"title\":\"t\"}}".utf8)))
            #expect(failed)
            let o = try Fixture.json(Array(bytes.dropLast()))
            #expect((o["error"] as? [String: Any])?["code"] as? String == code, "\(recipient)")
        }
        // A single seal throws the sender's error too.
        let sealer = try NotificationSealer(appID: Fixture.appID, keys: RecordingKeys(), clock: { Fixture.now })
        #expect(throws: SenderError(.keyStoreLocked, "")) { try sealer.seal(SealRequest(PushNotification(title: "t")), for: "locked") }
    }
}
