import PushSealTestSupport
import Foundation
import Testing
@testable import PushSealAPNs

/// Runs the built `push-send` (next to this test bundle in .build/debug).
enum PushSend {
    static var executable: String { builtTool("push-send")?.path ?? "push-send" }

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// The arguments that point push-send at `mock`.
    static func base(_ mock: MockAPNs, p8: String? = nil) -> [String] {
        ["--p8", p8 ?? mock.p8Path, "--key-id", MockAPNs.keyID, "--team-id", MockAPNs.teamID,
         "--host", "127.0.0.1:\(mock.port)", "--ca-file", mock.caFile, "--retry-delay", "10"]
    }

    static func run(_ arguments: [String], stdin: String = "") throws -> Result {
        let r = try runTool(URL(fileURLWithPath: executable), arguments, stdin: Data(stdin.utf8))
        return Result(status: r.status, stdout: r.stdout, stderr: r.stderr)
    }

    /// One batch line as push-seal batch writes it, plus a device token.
    static func line(_ n: Int, token: String, payload: String = "{\"aps\":{\"alert\":\"x\"}}", pushType: String = "alert") -> String {
        "{\"recipient\":\"r\",\"line\":\(n),\"payload\":\(payload),\"headers\":{\"apns-push-type\":\"\(pushType)\",\"apns-topic\":\"\(MockAPNs.topic)\",\"apns-priority\":\"10\"},\"deviceToken\":\"\(token)\"}\n"
    }

    static func outcomes(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
    }
}

@Suite("push-send against the mock APNs", .serialized)
struct PushSendCLITests {
    @Test("a batch: one outcome line per input line with the documented names, a summary, metrics, exit 2 for a rejection")
    func batch() throws {
        let mock = try MockAPNs(["unregistered": [token(3): 1_700_000_000_777], "script": [token(4): [["status": 400, "reason": "DeviceTokenNotForTopic"]]]])
        let metrics = mock.directory.appendingPathComponent("m.prom").path
        let invalidations = mock.directory.appendingPathComponent("inv.jsonl").path
        let input = (1...6).map { PushSend.line($0, token: token($0)) }.joined()
        let r = try PushSend.run(PushSend.base(mock) + ["--metrics", metrics, "--invalidations", invalidations, "-"], stdin: input)
        mock.stop()
        #expect(r.status == 2, "\(r.stderr)")
        let outcomes = try PushSend.outcomes(r.stdout)
        #expect(outcomes.count == 6)
        #expect(Set(outcomes.compactMap { $0["line"] as? Int }) == Set(1...6))
        let byLine = Dictionary(uniqueKeysWithValues: outcomes.map { ($0["line"] as? Int ?? 0, $0) })
        #expect(byLine[1]?["outcome"] as? String == "accepted" && byLine[1]?["status"] as? Int == 200 && byLine[1]?["apnsId"] is String
                && byLine[1]?["apnsUniqueId"] is String && byLine[1]?["attempts"] as? Int == 1 && byLine[1]?["deviceToken"] as? String == token(1))
        #expect(byLine[3]?["outcome"] as? String == "unregistered" && byLine[3]?["timestamp"] as? Int == 1_700_000_000_777)
        #expect(byLine[4]?["outcome"] as? String == "rejected" && byLine[4]?["reason"] as? String == "DeviceTokenNotForTopic")
        #expect(r.stderr.contains("push-send: 6 notifications: 4 accepted, 1 rejected (400 DeviceTokenNotForTopic: 1), 1 unregistered (410 Unregistered: 1)"))
        #expect(r.stderr.contains("1 provider token minted"))
        let prom = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(prom.contains("pushsend_notifications_total{outcome=\"accepted\",status=\"200\",reason=\"\"} 4"))
        #expect(prom.contains("pushsend_provider_tokens_minted_total 1"))
        let inv = try String(contentsOfFile: invalidations, encoding: .utf8)
        #expect(inv == "{\"line\":3,\"deviceToken\":\"\(token(3))\",\"reason\":\"Unregistered\",\"timestamp\":1700000000777}\n")
    }

    @Test("a killed push-send, resumed from its outcome file, sends no line again that had an outcome or an intent, and ends with one outcome per line")
    func killAndResume() throws {
        let count = 3000
        let mock = try MockAPNs(["faults": ["delayMs": 5]])
        let dir = mock.directory
        let inputPath = dir.appendingPathComponent("in.jsonl").path
        try (1...count).map { PushSend.line($0, token: token($0)) }.joined().write(toFile: inputPath, atomically: true, encoding: .utf8)
        let outPath = dir.appendingPathComponent("out.jsonl").path
        let p = try TestChild([PushSend.executable] + PushSend.base(mock) + ["--in-flight", "20", "--outcomes", outPath, inputPath],
                              stdout: .null, stderr: .null)
        // Wait until part of the run has outcomes, then SIGKILL it mid-run.
        while (try? String(contentsOfFile: outPath, encoding: .utf8))?.split(separator: "\n").count ?? 0 < 500 {
            #expect(p.isRunning, "push-send finished before it could be killed")
            if !p.isRunning { return }
            usleep(5_000)
        }
        p.signal(SIGKILL)
        p.wait()
        let firstRun = try String(contentsOfFile: outPath, encoding: .utf8)
        let completeFirst = firstRun.hasSuffix("\n") ? firstRun : String(firstRun[..<(firstRun.lastIndex(of: "\n").map { firstRun.index(after: $0) } ?? firstRun.startIndex)])
        // Lines with an outcome, or an intent (written before a request's bytes went out).
        let doneFirst = Set(try PushSend.outcomes(completeFirst).compactMap { $0["line"] as? Int })
        // 500 file lines: intents and outcomes, at least 250 lines.
        #expect(doneFirst.count >= 250 && doneFirst.count < count)
        // The first run's connections. The mock may still record a request of the killed run
        // after this (it answers after 5 ms): such a line is on one of these connections.
        let firstSessions = Set(try mock.records().compactMap { $0["session"] as? Int })

        let r = try PushSend.run(PushSend.base(mock) + ["--resume", outPath, "--outcomes", outPath, inputPath])
        mock.stop()
        // 75 when lines the killed run had sent without an answer are recorded mayHaveBeenDelivered.
        #expect(r.status == 0 || r.status == 75, "\(r.stderr)")
        let all = try String(contentsOfFile: outPath, encoding: .utf8).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["outcome"] != nil }
        #expect(all.filter { $0["outcome"] as? String != "accepted" }.allSatisfy { $0["reason"] as? String == "mayHaveBeenDelivered" && $0["resumed"] as? Bool == true })
        var perLine: [Int: Int] = [:]
        for o in all { if let n = o["line"] as? Int { perLine[n, default: 0] += 1 } }
        #expect(perLine.count == count && perLine.values.allSatisfy { $0 == 1 }, "one outcome per line over both runs")
        // The second run sent none of the lines that had an outcome.
        let resent = try mock.records().filter { !firstSessions.contains($0["session"] as? Int ?? 0) }.compactMap { $0["token"] as? String }
        let doneTokens = Set(doneFirst.map { token($0) })
        #expect(resent.filter { doneTokens.contains($0) }.isEmpty)
        #expect(Set(resent).count == count - doneFirst.count)
    }

    @Test("SIGTERM: the lines read are finished, 'stopped after line N', exit 130")
    func sigterm() throws {
        let mock = try MockAPNs()
        let p = try TestChild([PushSend.executable] + PushSend.base(mock) + ["-"], stdinPipe: true)
        try p.write(Array((1...5).map { PushSend.line($0, token: token($0)) }.joined().utf8))
        // Wait for the five outcome lines (the input stays open: a quiet producer).
        var text = Data()
        while String(decoding: text, as: UTF8.self).split(separator: "\n").count < 5 {
            let chunk = p.readOutput()
            if chunk.isEmpty { break }
            text.append(chunk)
        }
        p.signal(SIGTERM)
        text.append(p.readOutputToEnd())
        let stderr = String(decoding: p.errorOutput(), as: UTF8.self)
        let exit = p.wait()
        p.closeInput()
        mock.stop()
        #expect(exit.status == 130 && exit.signal == nil)
        #expect(stderr.contains("push-send: stopped after line 5"), "\(stderr)")
        #expect(try PushSend.outcomes(String(decoding: text, as: UTF8.self)).count == 5)
    }

    @Test("bad input: unreadable or wrong .p8, a payload over 4096 bytes, a non-hex token, an unknown push type: a clear error, nothing sent")
    func badInput() throws {
        let mock = try MockAPNs()
        let dir = mock.directory
        let payload = dir.appendingPathComponent("payload.json").path
        try "{\"aps\":{\"alert\":\"hi\"}}".write(toFile: payload, atomically: true, encoding: .utf8)
        let big = dir.appendingPathComponent("big.json").path
        try ("{\"aps\":{},\"x\":\"" + String(repeating: "a", count: 4100) + "\"}").write(toFile: big, atomically: true, encoding: .utf8)
        let p384 = dir.appendingPathComponent("p384.p8").path
        try TestKey.write(to: p384, arguments: ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])
        let single = ["--device-token", token(1), "--topic", MockAPNs.topic]

        let missing = try PushSend.run(PushSend.base(mock, p8: dir.appendingPathComponent("nope.p8").path) + single + [payload])
        #expect(missing.status == 66 && missing.stderr.hasPrefix("push-send: error: cannot read the .p8 key file") && missing.stderr.contains("\nhint: "))
        let wrong = try PushSend.run(PushSend.base(mock, p8: p384) + single + [payload])
        #expect(wrong.status == 65 && wrong.stderr.contains("is not an APNs .p8 key: not an EC P-256 key"), "\(wrong.stderr)")
        let tooBig = try PushSend.run(PushSend.base(mock) + single + [big])
        #expect(tooBig.status == 65 && tooBig.stderr.contains("push-send: error: the payload is 4117 bytes, over the 4096-byte limit"), "\(tooBig.stderr)")
        let nonHex = try PushSend.run(PushSend.base(mock) + ["--device-token", "12zz", "--topic", MockAPNs.topic, payload])
        #expect(nonHex.status == 65 && nonHex.stderr.contains("push-send: error: the device token is not hex digits"), "\(nonHex.stderr)")
        let unknownFlag = try PushSend.run(PushSend.base(mock) + single + ["--push-type", "alarm", payload])
        #expect(unknownFlag.status == 64 && unknownFlag.stderr.contains("push-send: error: unknown push type 'alarm'"))
        // The same in batch lines: outcome "failed" with attempts 0, exit 65.
        let lines = PushSend.line(1, token: "12zz") + PushSend.line(2, token: token(2), pushType: "alarm")
            + PushSend.line(3, token: token(3), payload: "{\"x\":\"" + String(repeating: "a", count: 4100) + "\"}")
        let batch = try PushSend.run(PushSend.base(mock) + ["-"], stdin: lines)
        #expect(batch.status == 65, "\(batch.stderr)")
        let outcomes = try PushSend.outcomes(batch.stdout)
        #expect(outcomes.count == 3 && outcomes.allSatisfy { $0["outcome"] as? String == "failed" && $0["attempts"] as? Int == 0 })
        #expect(Set(outcomes.compactMap { $0["reason"] as? String }) == ["badDeviceToken", "unknownPushType", "payloadTooLarge"])
        mock.stop()
        #expect(try mock.records().isEmpty, "nothing reached the mock")
    }

    @Test("lines with different headers each send their own (headers decoded once per distinct member); --rate paces without losing a line")
    func headersPerLineAndRate() throws {
        let mock = try MockAPNs()
        func line(_ n: Int, priority: String?) -> String {
            let headers = priority.map { ",\"headers\":{\"apns-push-type\":\"alert\",\"apns-topic\":\"\(MockAPNs.topic)\",\"apns-priority\":\"\($0)\"}" } ?? ""
            return "{\"line\":\(n),\"payload\":{\"aps\":{\"alert\":\"x\"}}\(headers),\"deviceToken\":\"\(token(n))\"}\n"
        }
        // nil: no headers member (the flags' --topic and --priority 1 apply).
        let priorities: [String?] = ["10", "10", "5", "5", "10", nil, "10", nil, "5"]
        let input = priorities.enumerated().map { line($0.offset + 1, priority: $0.element) }.joined()
        let r = try PushSend.run(PushSend.base(mock) + ["--topic", MockAPNs.topic, "--priority", "1", "--rate", "500", "-"], stdin: input)
        let zero = try PushSend.run(PushSend.base(mock) + ["--rate", "0", "-"])
        #expect(zero.status == 64 && zero.stderr.contains("--rate needs 1 to 1000000"), "\(zero.stderr)")
        mock.stop()
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try PushSend.outcomes(r.stdout).count == priorities.count)
        let sent = Dictionary(try mock.answered().map { ($0["token"] as? String ?? "", $0["priority"] as? String ?? "-") }, uniquingKeysWith: { a, _ in a })
        for (i, p) in priorities.enumerated() { #expect(sent[token(i + 1)] == (p ?? "1"), "line \(i + 1)") }
    }
}
