import Foundation
import PushSealSystem
@testable import PushSealSender
import Testing

/// `BatchSealer(deviceTokens:)`: one bulk lookup per run of lines, a line's own token wins, a
/// recipient without one fails its line unsealed, a failing store fails the lines that need it.
@Suite struct BatchDeviceTokenTests {
    /// Tokens by recipient; records every lookup.
    final class Tokens: DeviceTokenSource, @unchecked Sendable {
        // @unchecked Sendable: `calls` is guarded by `lock`; `tokens` and `fails` are immutable.
        let tokens: [String: String]
        let fails: Bool
        private let lock = PosixLock()
        private var calls: [[String]] = []
        init(_ tokens: [String: String], fails: Bool = false) { (self.tokens, self.fails) = (tokens, fails) }
        var lookups: [[String]] { lock.withLock { calls } }
        func deviceTokens(appID: String, recipients: [String]) throws -> [String: String] {
            lock.withLock { calls.append(recipients) }
            if fails { throw SenderError(.keyStoreUnreadable, "the store is down") }
            return tokens.filter { recipients.contains($0.key) }
        }
    }

    static func batch(_ tokens: Tokens, concurrency: Int = 2) throws -> BatchSealer {
        BatchSealer(sealer: try NotificationSealer(appID: Fixture.appID, keys: BatchSealerLineTests.RecordingKeys(), clock: { Fixture.now }),
                    concurrency: concurrency, deviceTokens: tokens)
    }

    static func outputs(_ chunk: BatchSealer.Chunk) throws -> [[String: Any]] {
        try chunk.output.split(separator: UInt8(ascii: "\n")).map { try Fixture.json(Array($0)) }
    }

    @Test func oneBulkLookupPerRunAndEveryLineKeepsItsNumber() throws {
        let tokens = Tokens(["alice": "aa11", "bob": "bb22"])
        let texts = [#"{"recipient":"alice","notification":{"title":"t"}}"#,
                     #"{"recipient":"bob","notification":{"title":"t"}}"#,
                     #"{"recipient":"carol","notification":{"title":"t"}}"#,
                     #"{"recipient":"alice","deviceToken":"cc33","notification":{"title":"t"}}"#,
                     #"{"notification":{"title":"t"},"recipient":"bob"}"#]
        let count = BatchSealer.revalidationLineCount + 5
        let lines = (0..<count).map { BatchSealer.Line(number: 100 + $0, bytes: Array(texts[$0 % texts.count].utf8)) }
        let out = try Self.outputs(try Self.batch(tokens).seal(lines))
        #expect(out.count == count)
        #expect(out.map { $0["line"] as? Int } == (0..<count).map { 100 + $0 })
        for (i, o) in out.enumerated() {
            switch i % texts.count {
            case 0: #expect(o["deviceToken"] as? String == "aa11" && o["payload"] != nil)
            case 1, 4: #expect(o["deviceToken"] as? String == "bb22" && o["payload"] != nil)
            case 2: #expect((o["error"] as? [String: Any])?["code"] as? String == "noDeviceToken" && o["payload"] == nil && o["deviceToken"] == nil)
            default: #expect(o["deviceToken"] as? String == "cc33", "the line's own token wins")
            }
        }
        // Two runs (2,048 + 5 lines): one bulk lookup each with the quick-scanned recipients.
        #expect(tokens.lookups.count == 2)
        #expect(tokens.lookups.allSatisfy { Set($0) == ["alice", "bob", "carol"] })
    }

    @Test func aRecipientTheQuickScanMissedIsLookedUpAlone() throws {
        let tokens = Tokens(["bob": "bb22"])
        let line = BatchSealer.Line(number: 1, bytes: Array(#"{"notification":{"title":"t"},"recipient":"bob"}"#.utf8))
        let out = try Self.outputs(try Self.batch(tokens, concurrency: 1).seal([line]))
        #expect(out.first?["deviceToken"] as? String == "bb22")
        #expect(tokens.lookups == [[], ["bob"]])
    }

    @Test func aFailingStoreFailsOnlyTheLinesThatNeedIt() throws {
        let tokens = Tokens([:], fails: true)
        let lines = [#"{"recipient":"alice","notification":{"title":"t"}}"#, #"{"recipient":"alice","deviceToken":"cc33","notification":{"title":"t"}}"#]
            .enumerated().map { BatchSealer.Line(number: $0.offset + 1, bytes: Array($0.element.utf8)) }
        let chunk = try Self.batch(tokens).seal(lines)
        let out = try Self.outputs(chunk)
        #expect(chunk.failureCount == 1)
        #expect((out[0]["error"] as? [String: Any])?["code"] as? String == "keyStoreUnreadable")
        #expect(out[1]["payload"] != nil && out[1]["deviceToken"] as? String == "cc33")
        #expect(tokens.lookups.count == 1, "a failed bulk lookup is not repeated per line")
    }
}
