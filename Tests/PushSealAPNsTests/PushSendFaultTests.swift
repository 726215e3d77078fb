import PushSealTestSupport
import PushSealSystem
import Foundation
import Testing
@testable import PushSealAPNs

/// push-send run with a watchdog (a run that would hang is killed and reported, never waited
/// for), standard input from a thread, both outputs read on their own threads.
enum Guarded {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
        /// The watchdog had to kill it.
        let hung: Bool
        /// Ended by a signal (a crash, or the watchdog).
        let signaled: Bool
    }

    /// The push-send under test: the built one, or `PUSHSEAL_PUSH_SEND_UNDER_TEST` (to measure
    /// an older build with the same tests).
    static var executable: String { ProcessInfo.processInfo.environment["PUSHSEAL_PUSH_SEND_UNDER_TEST"] ?? PushSend.executable }

    static func run(_ arguments: [String], stdin: String = "", stdout: FileHandle? = nil, deadlineSeconds: Double = 90,
                    onStart: (TestChild) -> Void = { _ in }) throws -> Result {
        let p = try TestChild([executable] + arguments, stdinPipe: true,
                              stdout: stdout.map { .descriptor($0.fileDescriptor) } ?? .pipe)
        let hung = Flag()
        let watchdog = DispatchWorkItem {
            if p.isRunning {
                hung.set()
                p.signal(SIGKILL)
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + deadlineSeconds, execute: watchdog)
        defer { watchdog.cancel() }
        // SIGPIPE ignored (TestChild does it): push-send may stop reading (that is what some tests check).
        let bytes = Array(stdin.utf8)
        Thread.detachNewThread {
            try? p.write(bytes)
            p.closeInput()
        }
        let outBox = Box()
        if stdout == nil { Thread.detachNewThread { outBox.set(p.readOutputToEnd()) } } else { outBox.set(Data()) }
        onStart(p)
        let exit = p.wait()
        return Result(status: exit.signal ?? exit.status, stdout: String(decoding: outBox.wait(), as: UTF8.self),
                      stderr: String(decoding: p.errorOutput(), as: UTF8.self), hung: hung.isSet, signaled: exit.signal != nil)
    }

    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }
    }

    final class Box: @unchecked Sendable {
        private var data = Data()
        private let done = DispatchSemaphore(value: 0)
        func set(_ d: Data) { data = d; done.signal() }
        func wait() -> Data { done.wait(); return data }
    }

    /// The JSON objects of a file's complete lines (a partial or damaged line is left out).
    static func objects(_ path: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Only the outcome lines (intents left out).
    static func outcomes(_ path: String) -> [[String: Any]] { objects(path).filter { $0["outcome"] != nil } }

    /// Writes `text` to a new file at `path` with mode 0600.
    static func writePrivate(_ text: String, to path: String) throws {
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
    }
}

/// The fault proxy (Tests/MockAPNs/fault_proxy.py) in front of a mock: stopped by ``stop()``
/// or when the test process's end closes its standard input.
final class FaultProxy: @unchecked Sendable {
    let port: Int
    private let process: TestChild

    /// R2: the first connection wedged (no byte moves either way) after `bytes` from the client.
    convenience init(target: Int, blackholeFirstAfter bytes: Int) throws {
        try self.init(target: target, arguments: ["--blackhole-first-after", String(bytes)])
    }

    /// R10: the first `connections` connections (TLS ended at the proxy with the mock's
    /// certificate from `mock`'s directory) forward `bytes` of HTTP/2 from the client, stall
    /// until the client's writes block, then drop; one report line per dropped connection in
    /// `report` (fault_proxy.py's docstring).
    convenience init(dropping mock: MockAPNs, connections: Int, after bytes: Int, report: String) throws {
        try self.init(target: mock.port, arguments: ["--tls-dir", URL(fileURLWithPath: mock.caFile).deletingLastPathComponent().path,
                                                     "--drop-first", String(connections), "--drop-after", String(bytes), "--report", report])
    }

    private init(target: Int, arguments: [String]) throws {
        process = try TestChild(["/usr/bin/env", "python3", MockAPNs.mockDirectory.appendingPathComponent("fault_proxy.py").path,
                                 "--target", String(target)] + arguments, stdinPipe: true, stderr: .descriptor(2))
        guard let out = process.outputPipe else { throw MockFailure(description: "the fault proxy has no output pipe") }
        let (line, words) = MockAPNs.readyLine(out)
        guard words.count >= 2, words[0] == "listening", let port = Int(words[1]) else {
            process.signal(SIGTERM)
            throw MockFailure(description: "the fault proxy did not start: \(String(decoding: line, as: UTF8.self))")
        }
        self.port = port
    }

    /// Ends it by closing its standard input (it exits at the end of it), and waits.
    func stop() {
        process.closeInput()
        process.wait()
    }

    deinit { stop() }
}

@Suite("push-send under faults (issues 24-26)", .serialized)
struct PushSendFaultTests {
    static func lines(_ range: ClosedRange<Int>, id: Bool = false) -> String {
        range.map { n in
            let idMember = id ? "\"id\":\"n\(n)\"," : ""
            return "{\"recipient\":\"r\(n)\",\(idMember)\"line\":\(n),\"payload\":{\"aps\":{\"alert\":\"x\"}},\"headers\":{\"apns-push-type\":\"alert\",\"apns-topic\":\"\(MockAPNs.topic)\",\"apns-priority\":\"10\"},\"deviceToken\":\"\(token(n))\"}\n"
        }.joined()
    }

    @Test("R1: outcomes that cannot be written (stdout is /dev/full) stop the sending at once: exit 74, 'stopped after line N', the rest never sent")
    func outcomeWriteFailureStopsSending() throws {
        let mock = try MockAPNs()
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        let r = try Guarded.run(PushSend.base(mock) + ["--in-flight", "20", "-"], stdin: Self.lines(1...3000), stdout: full)
        mock.stop()
        #expect(r.status == 74 && !r.hung, "\(r.stderr)")
        #expect(r.stderr.contains("cannot write the outcomes") && r.stderr.contains("stopped after line"), "\(r.stderr)")
        let sent = try mock.records().count
        #expect(sent < 200, "only what was in flight when the first write failed may be unrecorded; sent \(sent) of 3000")
    }

    @Test("R9: a closed standard output is a quiet 74, and the rest is not sent")
    func closedStdoutIsQuiet() throws {
        let mock = try MockAPNs()
        let out = try FileDescriptor.makePipe()
        out.read.close()
        let r = try Guarded.run(PushSend.base(mock) + ["--in-flight", "20", "-"], stdin: Self.lines(1...3000),
                                stdout: FileHandle(fileDescriptor: out.write.rawValue, closeOnDealloc: false))
        mock.stop()
        #expect(r.status == 74 && !r.hung)
        #expect(!r.stderr.contains("error"), "quiet: \(r.stderr)")
        #expect(try mock.records().count < 200)
    }

    @Test("R3 (library): an intent that cannot be recorded is not sent, and nothing after it")
    func intentsBeforeBytes() throws {
        let mock = try MockAPNs()
        var configuration = APNsClient.Configuration(endpoint: try mock.endpoint())
        configuration.retry = APNsRetryPolicy(maxAttempts: 5, baseDelaySeconds: 0.01, maxDelaySeconds: 0.05)
        let cache = try ProviderTokenCache(key: ProviderKey(p8Path: mock.p8Path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID))
        let collected = Collected()
        let recorded = Recorded(allow: 50)
        let client = try APNsClient(configuration: configuration, tokens: cache, onOutcome: { collected.add($0) },
                                    beforeSending: { recorded.record($0) })
        for i in 1...400 { try client.send(notification(i), tag: i) }
        client.finish()
        mock.stop()
        let sentTokens = Set(try mock.records().compactMap { $0["token"] as? String })
        let allowed = Set(recorded.allowedTags.map { token($0) })
        #expect(sentTokens.isSubset(of: allowed), "every request that reached the mock had its intent recorded")
        #expect(collected.outcomes.count == 400, "one outcome each")
        #expect(client.statistics.sendingStopped)
        #expect(collected.outcomes.filter { $0.kind == .failed && $0.reason == "notSent" }.count >= 400 - allowed.count)
    }

    final class Recorded: @unchecked Sendable {
        private let lock = NSLock()
        private var left: Int
        private var tags: [Int] = []
        init(allow: Int) { left = allow }
        func record(_ intents: [APNsIntent]) -> Bool {
            lock.withLock {
                guard intents.count <= left else {
                    left = 0
                    return false
                }
                left -= intents.count
                tags += intents.map(\.tag)
                return true
            }
        }
        var allowedTags: [Int] { lock.withLock { tags } }
    }

    @Test("R4/G5: retry-after inf, 1e20, -5, 2.5 or garbage neither crashes nor stalls: the notifications are retried and accepted")
    func retryAfterGarbage() throws {
        let values = ["inf", "Infinity", "1e20", "-5", "2.5", "soon", "99999999999999999999"]
        var script: [String: Any] = [:]
        for (i, v) in values.enumerated() { script[token(i + 1)] = [["status": 429, "reason": "TooManyRequests", "retryAfter": v]] }
        let mock = try MockAPNs(["script": script])
        let r = try Guarded.run(PushSend.base(mock) + ["-"], stdin: Self.lines(1...40), deadlineSeconds: 60)
        mock.stop()
        #expect(!r.signaled && r.status == 0, "exit \(r.status): \(r.stderr)")
        let outcomes = try PushSend.outcomes(r.stdout)
        #expect(outcomes.count == 40 && outcomes.allSatisfy { $0["outcome"] as? String == "accepted" })
    }

    @Test("R4 (library): Retry-After is integer seconds or an HTTP date, bounded by the longest back-off; due times saturate")
    func retryAfterRule() {
        func s(_ t: String) -> Int? { APNsRetryAfter.seconds(Array(t.utf8), nowSeconds: 784_111_777) }
        #expect(s("0") == 0 && s("120") == 120 && s(" 7 ") == 7)
        #expect(s("inf") == nil && s("1e20") == nil && s("-5") == nil && s("2.5") == nil && s("") == nil && s("1234567890") == nil)
        #expect(s("Sun, 06 Nov 1994 08:49:37 GMT") == 0 && s("Sun, 06 Nov 1994 08:50:37 GMT") == 60)
        #expect(s("Sun, 06 Nov 1994 08:49:37 XYZ") == nil)
        let policy = APNsRetryPolicy(maxAttempts: 5, baseDelaySeconds: 1, maxDelaySeconds: 60)
        let d = policy.decide(after: .answered(status: 429, reason: .apns(.tooManyRequests), retryAfterSeconds: 3600), attempt: 1, hasCollapseID: false,
                              tokenRefreshed: false, jitter: 0)
        #expect(d == .retry(delaySeconds: 60, newConnection: false, refreshToken: false))
        let inf = policy.decide(after: .answered(status: 503, reason: nil, retryAfterSeconds: .infinity), attempt: 1, hasCollapseID: false,
                                tokenRefreshed: false, jitter: 0)
        #expect(inf == .retry(delaySeconds: 60, newConnection: true, refreshToken: false))
        #expect(APNsRetryAfter.dueTime(after: UInt64.max - 5, seconds: 10) == UInt64.max)
        #expect(APNsRetryAfter.dueTime(after: 5, seconds: .infinity) == UInt64.max && APNsRetryAfter.dueTime(after: 5, seconds: -.infinity) == 5)
        #expect(APNsRetryAfter.dueTime(after: 5, seconds: .nan) == 5)
    }

    @Test("R2: a black-holed connection costs at most the requests on it; the rest are accepted on another connection")
    func wedgedConnection() throws {
        let mock = try MockAPNs()
        let proxy = try FaultProxy(target: mock.port, blackholeFirstAfter: 60_000)
        let count = 2000
        let args = ["--p8", mock.p8Path, "--key-id", MockAPNs.keyID, "--team-id", MockAPNs.teamID, "--host", "127.0.0.1:\(proxy.port)",
                    "--ca-file", mock.caFile, "--retry-delay", "10", "--timeout", "2", "--in-flight", "200", "-"]
        let r = try Guarded.run(args, stdin: Self.lines(1...count), deadlineSeconds: 120)
        proxy.stop()
        mock.stop()
        #expect(!r.hung, "\(r.stderr)")
        let outcomes = try PushSend.outcomes(r.stdout)
        #expect(outcomes.count == count)
        let failed = outcomes.filter { $0["outcome"] as? String != "accepted" }
        let accepted = outcomes.count - failed.count
        #expect(failed.count <= 200, "at most the in-flight window on the wedged connection: \(failed.count) failed, \(accepted) accepted")
        let ports = Set(failed.compactMap { $0["connection"] as? Int })
        #expect(ports.count <= 1, "the failures are all on the wedged connection: \(ports)")
        #expect(failed.allSatisfy { $0["reason"] as? String == "mayHaveBeenDelivered" })
        print("R2 wedged connection: \(failed.count) of \(count) failed, \(accepted) accepted")
    }

    @Test("R10: a lost connection fails as mayHaveBeenDelivered only requests whose END_STREAM was written to the socket; those still in the client's own buffer are retried on a fresh connection")
    func lostConnectionCountsOnlyWhatWasWritten() throws {
        // VoIP payloads near their 5120-byte limit, 1000 streams a connection: more than the
        // kernel's socket buffers hold, so when the proxy stops reading, the client's writes block
        // with requests in its own output buffer. Each line's body carries "n": LINE, which the
        // proxy reads from the HTTP/2 frames (it ends the TLS itself) to list every request whose
        // END_STREAM the client wrote to the socket before the drop.
        let count = 3300, dropped = 3
        let voip = MockAPNs.topic + ".voip"
        let mock = try MockAPNs(["topics": [MockAPNs.topic, voip]])
        let report = mock.directory.appendingPathComponent("proxy-report.jsonl").path
        let proxy = try FaultProxy(dropping: mock, connections: dropped, after: 200_000, report: report)
        let pad = String(repeating: "p", count: 4950)
        let input = (1...count).map { n in
            "{\"line\":\(n),\"payload\":{\"aps\":{},\"n\":\(n),\"pad\":\"\(pad)\"},\"headers\":{\"apns-push-type\":\"voip\",\"apns-topic\":\"\(voip)\",\"apns-priority\":\"10\"},\"deviceToken\":\"\(token(n))\"}\n"
        }.joined()
        let args = ["--p8", mock.p8Path, "--key-id", MockAPNs.keyID, "--team-id", MockAPNs.teamID, "--host", "127.0.0.1:\(proxy.port)",
                    "--ca-file", mock.caFile, "--retry-delay", "10", "--timeout", "60", "--in-flight", "3000", "-"]
        let r = try Guarded.run(args, stdin: input, deadlineSeconds: 240)
        // The proxy writes a connection's line once it has read all the client wrote there.
        for _ in 0..<3000 where Guarded.objects(report).count < dropped { usleep(10_000) }
        proxy.stop()
        mock.stop()
        #expect(!r.hung && !r.signaled, "\(r.stderr)")
        let outcomes = try PushSend.outcomes(r.stdout)
        let lines = outcomes.compactMap { $0["line"] as? Int }
        #expect(lines.count == count && Set(lines).count == count, "every line ends exactly once")
        let delivered = Set(outcomes.filter { $0["reason"] as? String == "mayHaveBeenDelivered" }.compactMap { $0["line"] as? Int })
        let accepted = outcomes.filter { $0["outcome"] as? String == "accepted" }
        let reports = Guarded.objects(report)
        let attempts = Dictionary(grouping: outcomes, by: { "\($0["reason"] as? String ?? "accepted") \($0["attempts"] as? Int ?? 0)" }).mapValues(\.count)
        // Every other line accepted, or (on a starved machine, when healthy connections miss their
        // PING and the attempts run out) failed with a reason that says APNs never got it: never
        // lost, never counted as delivered.
        let neverSent: Set<String> = ["notSent", "connectionFailed", "refusedStream"]
        let others = outcomes.filter { $0["outcome"] as? String != "accepted" && $0["reason"] as? String != "mayHaveBeenDelivered" }
        #expect(others.allSatisfy { neverSent.contains($0["reason"] as? String ?? "") } && !accepted.isEmpty,
                "every other line accepted or never sent: exit \(r.status), \(r.stderr); by reason and attempts \(attempts); proxy \(reports.map { $0.filter { $0.key != "endStreams" } })")
        #expect(reports.count == dropped, "\(reports)")
        let written = Set(reports.flatMap { $0["endStreams"] as? [Int] ?? [] })
        // The client blocked with requests it had not written: they were retried, not failed.
        #expect(reports.allSatisfy { ($0["blockedSendQueue"] as? Int ?? 0) > 0 }, "\(reports.map { $0.filter { $0.key != "endStreams" } })")
        let retried = accepted.filter { ($0["attempts"] as? Int ?? 1) > 1 }.count
        #expect(retried > 0)
        // A request counts as written from the first byte of its last DATA frame (the safe side):
        // per dropped connection at most that one frame, cut by the write that blocked, may be
        // mayHaveBeenDelivered with its END_STREAM unwritten. Before the fix, every END_STREAM
        // serialized into the client's 64 KB output buffer counted (about a dozen a connection).
        let notWritten = delivered.subtracting(written).sorted()
        #expect(notWritten.count <= dropped, "mayHaveBeenDelivered though its END_STREAM never reached the socket: \(notWritten.count) lines \(notWritten.prefix(20))")
        // No line accepted twice, by the mock's own record.
        var acceptedByToken: [String: Int] = [:]
        for record in try mock.records() where record["status"] as? Int == 200 { acceptedByToken[record["token"] as? String ?? "", default: 0] += 1 }
        #expect(acceptedByToken.values.allSatisfy { $0 == 1 }, "accepted twice: \(acceptedByToken.filter { $0.value > 1 }.count)")
        #expect(accepted.allSatisfy { acceptedByToken[$0["deviceToken"] as? String ?? ""] == 1 })
        print("R10 lost connections: \(delivered.count) mayHaveBeenDelivered (\(notWritten.count) of them not written), \(accepted.count) accepted (\(retried) after a retry), \(dropped) connections dropped")
    }

    @Test("G4: a 70,000-digit token and a 70,000-byte topic are refused before sending; the run ends and the other lines are accepted")
    func oversizedHeaders() throws {
        let mock = try MockAPNs()
        let huge = String(repeating: "ab", count: 35_000)
        let input = Self.lines(1...1) + "{\"line\":2,\"payload\":{\"aps\":{}},\"headers\":{\"apns-topic\":\"\(MockAPNs.topic)\"},\"deviceToken\":\"\(huge)\"}\n"
            + Self.lines(3...3) + "{\"line\":4,\"payload\":{\"aps\":{}},\"headers\":{\"apns-topic\":\"\(String(repeating: "a", count: 70_000))\"},\"deviceToken\":\"\(token(4))\"}\n"
        let r = try Guarded.run(PushSend.base(mock) + ["-"], stdin: input, deadlineSeconds: 30)
        mock.stop()
        #expect(!r.hung && r.status == 65, "exit \(r.status), hung \(r.hung): \(r.stderr)")
        let byLine = Dictionary(try PushSend.outcomes(r.stdout).map { ($0["line"] as? Int ?? 0, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byLine[1]?["outcome"] as? String == "accepted" && byLine[3]?["outcome"] as? String == "accepted")
        #expect(byLine[2]?["reason"] as? String == "badDeviceToken" && byLine[2]?["attempts"] as? Int == 0)
        #expect(byLine[4]?["reason"] as? String == "badTopic" && byLine[4]?["attempts"] as? Int == 0)
    }

    @Test("R5: a partial last line of --outcomes and --invalidations is ended before the next line")
    func partialLastLine() throws {
        let mock = try MockAPNs(["unregistered": [token(2): 1_700_000_000_000]])
        let out = mock.directory.appendingPathComponent("out.jsonl").path
        let inv = mock.directory.appendingPathComponent("inv.jsonl").path
        try Guarded.writePrivate("{\"line\":1,\"deviceToken\":\"aa\",\"outcome\":\"acc", to: out)
        try Guarded.writePrivate("{\"line\":9,\"deviceToken\":\"aa\",\"rea", to: inv)
        let r = try Guarded.run(PushSend.base(mock) + ["--resume", out, "--outcomes", out, "--invalidations", inv, "-"], stdin: Self.lines(1...3))
        mock.stop()
        #expect(r.status == 2, "\(r.stderr)")
        let lines = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
        #expect(lines.first == "{\"line\":1,\"deviceToken\":\"aa\",\"outcome\":\"acc")
        #expect(Guarded.outcomes(out).count == 3, "the partial line is alone on its line; three whole outcomes follow")
        let invLines = try String(contentsOfFile: inv, encoding: .utf8).split(separator: "\n")
        #expect(invLines.count == 2 && invLines[1].hasPrefix("{\"line\":2,"))
    }

    @Test("G6: --resume sends again the lines that failed without reaching APNs, and exits non-zero while a line has no success")
    func resumeResendsFailures() throws {
        let mock = try MockAPNs()
        let dir = mock.directory
        let out = dir.appendingPathComponent("out.jsonl").path
        // Nothing listens on a port of a stopped mock: every line fails connectionFailed.
        let gone = try MockAPNs()
        gone.stop()
        let down = ["--p8", mock.p8Path, "--key-id", MockAPNs.keyID, "--team-id", MockAPNs.teamID, "--host", "127.0.0.1:\(gone.port)",
                    "--ca-file", mock.caFile, "--retry-delay", "10", "--attempts", "1", "--outcomes", out, "-"]
        let first = try Guarded.run(down, stdin: Self.lines(1...5))
        #expect(first.status == 75, "\(first.stderr)")
        #expect(Guarded.outcomes(out).allSatisfy { $0["reason"] as? String == "connectionFailed" })
        let second = try Guarded.run(PushSend.base(mock) + ["--resume", out, "--outcomes", out, "-"], stdin: Self.lines(1...5))
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("5 failed lines sent again"), "\(second.stderr)")
        #expect(try mock.records().count == 5)
        // A line that failed for good (may have been delivered) is not sent again, and the exit says so.
        let final = dir.appendingPathComponent("final.jsonl").path
        try Guarded.writePrivate("{\"line\":1,\"deviceToken\":\"\(token(1))\",\"outcome\":\"failed\",\"reason\":\"mayHaveBeenDelivered\",\"attempts\":1}\n", to: final)
        let third = try Guarded.run(PushSend.base(mock) + ["--resume", final, "--outcomes", final, "-"], stdin: Self.lines(1...2))
        mock.stop()
        #expect(third.status == 75, "\(third.stderr)")
        #expect(third.stderr.contains("1 failed for good"), "\(third.stderr)")
        #expect(try mock.records().count == 6)
    }

    @Test("R7: --resume streams its file: a file over 1 GiB (sparse) is read through, and its outcomes honoured")
    func resumeHasNoSizeLimit() throws {
        let mock = try MockAPNs()
        let path = mock.directory.appendingPathComponent("big.jsonl").path
        _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        let h = try #require(FileHandle(forWritingAtPath: path))
        try h.seek(toOffset: (1 << 30) + 4096)
        h.write(Data("\n{\"line\":1,\"deviceToken\":\"\(token(1))\",\"outcome\":\"accepted\",\"status\":200,\"attempts\":1}\n".utf8))
        try h.close()
        let r = try Guarded.run(PushSend.base(mock) + ["--resume", path, "-"], stdin: Self.lines(1...2), deadlineSeconds: 120)
        mock.stop()
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try PushSend.outcomes(r.stdout).compactMap { $0["line"] as? Int } == [2])
    }

    @Test("G7: a server's reason is escaped on the terminal summary and never a raw Prometheus label value")
    func hostileReason() throws {
        let evil = "\u{1B}]0;PWNED\u{07}\u{1B}[2J\"} 1\nforged_metric 1"
        let mock = try MockAPNs(["script": [token(1): [["status": 400, "reason": evil]]]])
        let metrics = mock.directory.appendingPathComponent("m.prom").path
        let r = try Guarded.run(PushSend.base(mock) + ["--metrics", metrics, "-"], stdin: Self.lines(1...2))
        mock.stop()
        #expect(r.status == 2, "\(r.stderr)")
        #expect(!r.stderr.contains("\u{1B}") && !r.stderr.contains("\u{07}"), "no terminal control in the summary")
        let prom = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(!prom.contains("forged_metric") && prom.contains("reason=\"other\""), "\(prom)")
    }

    @Test("G11: the .p8 and the outcome files follow the private-file rules (0600, the user's, no links)")
    func privateFiles() throws {
        let mock = try MockAPNs()
        let dir = mock.directory.path
        let open = "\(dir)/open.p8"
        try FileManager.default.copyItem(atPath: mock.p8Path, toPath: open)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: open)
        let a = try Guarded.run(PushSend.base(mock, p8: open) + ["-"], stdin: Self.lines(1...1))
        #expect(a.status == 77 && a.stderr.contains("accessible by group or others"), "\(a.stderr)")
        let link = "\(dir)/link.p8"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: mock.p8Path)
        let b = try Guarded.run(PushSend.base(mock, p8: link) + ["-"], stdin: Self.lines(1...1))
        #expect(b.status == 77 && b.stderr.contains("symbolic link"), "\(b.stderr)")
        let victim = "\(dir)/victim.txt"
        try Guarded.writePrivate("some other file\n", to: victim)
        try FileManager.default.createSymbolicLink(atPath: "\(dir)/out.jsonl", withDestinationPath: victim)
        let c = try Guarded.run(PushSend.base(mock) + ["--outcomes", "\(dir)/out.jsonl", "-"], stdin: Self.lines(1...1))
        #expect(c.status == 77, "\(c.stderr)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "some other file\n")
        let shared = "\(dir)/shared.jsonl"
        _ = FileManager.default.createFile(atPath: shared, contents: nil, attributes: [.posixPermissions: 0o644])
        let d = try Guarded.run(PushSend.base(mock) + ["--invalidations", shared, "-"], stdin: Self.lines(1...1))
        #expect(d.status == 77 && d.stderr.contains("accessible by group or others"), "\(d.stderr)")
        let fresh = "\(dir)/fresh.jsonl"
        let e = try Guarded.run(PushSend.base(mock) + ["--outcomes", fresh, "-"], stdin: Self.lines(1...1))
        mock.stop()
        #expect(e.status == 0)
        let mode = try FileManager.default.attributesOfItem(atPath: fresh)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("issue 24: outcome lines carry the input's recipient and notification id, also for lines that failed before sending")
    func recipientAndID() throws {
        let mock = try MockAPNs()
        let input = Self.lines(1...2, id: true) + "{\"recipient\":\"r3\",\"id\":\"n3\",\"line\":3,\"payload\":{\"aps\":{}},\"deviceToken\":\"12zz\"}\n"
        let r = try Guarded.run(PushSend.base(mock) + ["--topic", MockAPNs.topic, "-"], stdin: input)
        mock.stop()
        let outcomes = try PushSend.outcomes(r.stdout)
        #expect(outcomes.count == 3)
        for o in outcomes {
            let n = o["line"] as? Int ?? 0
            #expect(o["recipient"] as? String == "r\(n)" && o["id"] as? String == "n\(n)", "\(o)")
        }
    }

    @Test("R12: SIGTERM while push-send is still setting up (blocked opening a FIFO as --ca-file) is a clean stop: exit 130, not death by signal")
    func earlyStopSignal() throws {
        let mock = try MockAPNs()
        let fifo = mock.directory.appendingPathComponent("ca.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let args = ["--p8", mock.p8Path, "--key-id", MockAPNs.keyID, "--team-id", MockAPNs.teamID, "--host", "127.0.0.1:\(mock.port)",
                    "--ca-file", fifo, "-"]
        let r = try Guarded.run(args, deadlineSeconds: 60) { p in
            // Wait until it blocks in the FIFO's open (the kernel's wait_for_partner), then SIGTERM.
            let wchan = "/proc/\(p.pid)/wchan"
            while p.isRunning, (try? String(contentsOfFile: wchan, encoding: .utf8)) != "wait_for_partner" { usleep(1000) }
            p.signal(SIGTERM)
        }
        mock.stop()
        #expect(!r.signaled && r.status == 130, "exit \(r.status), signaled \(r.signaled): \(r.stderr)")
        #expect(r.stderr.contains("stopped after line 0"), "\(r.stderr)")
    }

    @Test("G4: SIGTERM ends push-send within a bound even while its connection is wedged (--timeout 600)")
    func stopWhileWedged() throws {
        let mock = try MockAPNs()
        let proxy = try FaultProxy(target: mock.port, blackholeFirstAfter: 60_000)
        let out = mock.directory.appendingPathComponent("out.jsonl").path
        let args = ["--p8", mock.p8Path, "--key-id", MockAPNs.keyID, "--team-id", MockAPNs.teamID, "--host", "127.0.0.1:\(proxy.port)",
                    "--ca-file", mock.caFile, "--timeout", "600", "--in-flight", "200", "--outcomes", out, "-"]
        let started = Date()
        var signalledAt = Date()
        let r = try Guarded.run(args, stdin: Self.lines(1...2000), deadlineSeconds: 60) { p in
            // Once the answers stop (the wedge), SIGTERM.
            var last = -1
            while p.isRunning {
                let n = Guarded.outcomes(out).count
                if n > 0 && n == last { break }
                last = n
                usleep(300_000)
            }
            signalledAt = Date()
            p.signal(SIGTERM)
        }
        proxy.stop()
        mock.stop()
        #expect(!r.hung && r.status == 130, "exit \(r.status), hung \(r.hung): \(r.stderr)")
        #expect(Date().timeIntervalSince(signalledAt) < 30, "ended within the PING bound, not the 600-s timeout (run took \(Date().timeIntervalSince(started)) s)")
        let outcomes = Guarded.outcomes(out)
        let lines = Set(outcomes.compactMap { $0["line"] as? Int })
        #expect(lines.count == outcomes.count, "one outcome per line")
    }

    @Test("token hygiene: a burst of BadDeviceToken stops the run (exit 3, its own summary line), the rest not sent")
    func badDeviceTokenBurst() throws {
        let count = 400
        let mock = try MockAPNs(["badTokens": (1...count).map { token($0) }])
        let r = try Guarded.run(PushSend.base(mock) + ["--in-flight", "10", "-"], stdin: Self.lines(1...count))
        mock.stop()
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains("BadDeviceToken came in a burst"), "\(r.stderr)")
        let sent = try mock.records().count
        #expect(sent < 100, "stopped after the burst: \(sent) sent")
        let outcomes = try PushSend.outcomes(r.stdout)
        #expect(Set(outcomes.compactMap { $0["line"] as? Int }).count == outcomes.count)
    }
}
