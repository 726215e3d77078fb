import PushSealTestSupport
import Foundation
import Testing

/// `push-seal batch | push-send` with the device token and collapse id given on the batch's
/// input lines (issue 14): push-send sends each line to its own token with its own
/// apns-collapse-id, and a line push-seal could not seal is reported for its token, unsent.
@Suite("push-seal batch | push-send with per-line fields", .serialized)
struct BatchToSendPipelineTests {
    @Test func theLinesTokenAndCollapseIDReachAPNs() throws {
        let dir = try TemporaryDirectory("pipeline")
        defer { dir.remove() }
        let pushKeys = try #require(builtTool("push-keys"), "push-keys is not built")
        let pushSeal = try #require(builtTool("push-seal"), "push-seal is not built")
        let kc = dir.url.appendingPathComponent("kc").path
        #expect(try runTool(pushKeys, ["generate", "--keychain", kc, "--app-id", MockAPNs.topic, "--recipient", "alice"]).status == 0)
        let input = [
            #"{"recipient":"alice","deviceToken":"\#(token(1))","collapseId":"chat-1","notification":{"title":"a"}}"#,
            #"{"recipient":"alice","deviceToken":"\#(token(2))","notification":{"title":"b"}}"#,
            #"{"recipient":"alice","deviceToken":"\#(token(3))","aps":{"badge":-1},"notification":{"title":"c"}}"#,
        ].joined(separator: "\n") + "\n"
        let sealed = try runTool(pushSeal, ["batch", "--app-id", MockAPNs.topic, "--keychain", kc, "--collapse-id", "default-collapse", "-"],
                                 stdin: Data(input.utf8))
        #expect(sealed.status == 2, "\(sealed.stderr)")
        let mock = try MockAPNs()
        let r = try PushSend.run(PushSend.base(mock) + ["-"], stdin: sealed.stdout)
        mock.stop()
        let outcomes = try PushSend.outcomes(r.stdout)
        let byLine = Dictionary(uniqueKeysWithValues: outcomes.map { ($0["line"] as? Int ?? 0, $0) })
        #expect(outcomes.count == 3)
        #expect(byLine[1]?["outcome"] as? String == "accepted" && byLine[1]?["deviceToken"] as? String == token(1), "\(r.stdout)\(r.stderr)")
        #expect(byLine[2]?["outcome"] as? String == "accepted" && byLine[2]?["deviceToken"] as? String == token(2))
        #expect(byLine[3]?["outcome"] as? String == "failed" && byLine[3]?["deviceToken"] as? String == token(3) && byLine[3]?["reason"] as? String == "notSealed")
        let sent = try mock.answered()
        #expect(sent.count == 2)
        let collapse = Dictionary(uniqueKeysWithValues: sent.map { ($0["token"] as? String ?? "", $0["collapseId"] as? String) })
        #expect(collapse[token(1)] == "chat-1" && collapse[token(2)] == "default-collapse")
    }

    /// Issue 24, "Operators": every push-send outcome line carries the recipient and the
    /// notification id, push-seal batch passing them through beside the payload — the line's own id,
    /// the one push-seal generated for a notification without one, and the input's id on a line
    /// push-seal could not seal; the payload (what reaches APNs) holds neither in clear.
    @Test func theRecipientAndNotificationIDReachTheOutcomeLines() throws {
        let dir = try TemporaryDirectory("pipeline-ids")
        defer { dir.remove() }
        let pushKeys = try #require(builtTool("push-keys"), "push-keys is not built")
        let pushSeal = try #require(builtTool("push-seal"), "push-seal is not built")
        let kc = dir.url.appendingPathComponent("kc").path
        for r in ["alice", "bob"] {
            #expect(try runTool(pushKeys, ["generate", "--keychain", kc, "--app-id", MockAPNs.topic, "--recipient", r]).status == 0)
        }
        let input = [
            #"{"recipient":"alice","deviceToken":"\#(token(1))","notification":{"id":"order-7","title":"a"}}"#,
            #"{"recipient":"bob","deviceToken":"\#(token(2))","notification":{"title":"b"}}"#,
            #"{"recipient":"bob","deviceToken":"\#(token(3))","aps":{"badge":-1},"notification":{"id":"order-9","title":"c"}}"#,
        ].joined(separator: "\n") + "\n"
        let sealed = try runTool(pushSeal, ["batch", "--app-id", MockAPNs.topic, "--keychain", kc, "-"], stdin: Data(input.utf8))
        #expect(sealed.status == 2, "\(sealed.stderr)")
        let lines = try sealed.stdout.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(lines.count == 3)
        let generated = try #require(lines.dropFirst().first?["id"] as? String)
        #expect(lines.first?["id"] as? String == "order-7" && !generated.isEmpty && lines.last?["id"] as? String == "order-9", "\(sealed.stdout)")
        for line in lines.prefix(2) {
            let payload = try #require(line["payload"] as? [String: Any])
            #expect(payload["id"] == nil && payload["recipient"] == nil, "in the payload APNs receives: \(payload.keys.sorted())")
        }
        let mock = try MockAPNs()
        let r = try PushSend.run(PushSend.base(mock) + ["-"], stdin: sealed.stdout)
        mock.stop()
        let outcomes = try PushSend.outcomes(r.stdout)
        let byLine = Dictionary(uniqueKeysWithValues: outcomes.map { ($0["line"] as? Int ?? 0, $0) })
        #expect(byLine[1]?["recipient"] as? String == "alice" && byLine[1]?["id"] as? String == "order-7" && byLine[1]?["outcome"] as? String == "accepted",
                "\(r.stdout)\(r.stderr)")
        #expect(byLine[2]?["recipient"] as? String == "bob" && byLine[2]?["id"] as? String == generated && byLine[2]?["outcome"] as? String == "accepted")
        #expect(byLine[3]?["recipient"] as? String == "bob" && byLine[3]?["id"] as? String == "order-9" && byLine[3]?["reason"] as? String == "notSealed")
    }
}
