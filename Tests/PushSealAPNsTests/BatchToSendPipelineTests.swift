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
}
