import Foundation
import Testing
import PushSealAPNs
import PushSealSystem
@testable import push_send

/// push-send's two pieces below the command (issue 27, step 5's acceptance): `SendInput` turns a
/// batch line into a request or a line error; `OutcomeLog` writes outcome, not-sent and intent
/// lines, and stops at the first failed write.
@Suite struct SendInputTests {
    static let payload = #"{"aps":{"alert":{"title":"New message","body":"Open the app"},"mutable-content":1},"encrypted_data":"AAEC"}"#
    static let headers = #"{"apns-push-type":"alert","apns-topic":"com.example.app","apns-priority":"10","apns-collapse-id":"c1"}"#
    static let token = String(repeating: "ab", count: 32)

    static func line(_ members: String) -> [UInt8] { Array("{\(members)}".utf8) }

    @Test("a batch line becomes the request its headers say, with the payload's exact bytes")
    func batchLine() throws {
        let bytes = Self.line(#""line":7,"deviceToken":"\#(Self.token)","payload":\#(Self.payload),"headers":\#(Self.headers)"#)
        guard case .notification(let line, let n) = SendInput.parse(bytes, physicalLine: 1, defaults: .init()) else {
            Issue.record("not a notification: \(SendInput.parse(bytes, physicalLine: 1, defaults: .init()))")
            return
        }
        #expect(line == 7)
        #expect(n.deviceToken == Self.token && n.topic == "com.example.app" && n.pushType == .alert)
        #expect(n.priority == 10 && n.collapseID == "c1")
        #expect(n.payload == Array(Self.payload.utf8))
    }

    @Test("defaults fill what a line does not say; the line's own headers win")
    func defaults() throws {
        let defaults = SendInput.Defaults(deviceToken: Self.token, topic: "com.example.other", pushType: "background", priority: 5,
                                          expiration: 0, collapseID: "d")
        guard case .notification(let line, let n) = SendInput.parse(Self.line(#""payload":\#(Self.payload)"#), physicalLine: 3, defaults: defaults) else {
            Issue.record("not a notification")
            return
        }
        #expect(line == 3, "without \"line\", the physical line")
        #expect(n.deviceToken == Self.token && n.pushType == .background && n.priority == 5 && n.expiration == 0 && n.collapseID == "d")
        #expect(n.topic == "com.example.other", "background keeps the bundle id")
        let own = Self.line(#""deviceToken":"\#(Self.token)","payload":\#(Self.payload),"headers":\#(Self.headers)"#)
        guard case .notification(_, let m) = SendInput.parse(own, physicalLine: 1, defaults: defaults) else {
            Issue.record("not a notification")
            return
        }
        #expect(m.pushType == .alert && m.topic == "com.example.app" && m.collapseID == "c1")
    }

    @Test("each bad line gets its code, its line number and the token it gave")
    func lineErrors() {
        let cases: [(members: String, code: String)] = [
            (#""line":2,"payload":\#(Self.payload),"headers":\#(Self.headers)"#, "missingDeviceToken"),
            (#""line":2,"deviceToken":"\#(Self.token)","headers":\#(Self.headers)"#, "badPayload"),
            (#""line":2,"deviceToken":"\#(Self.token)","payload":\#(Self.payload),"headers":{"apns-push-type":"shout","apns-topic":"a"}"#, "unknownPushType"),
            (#""line":2,"deviceToken":"\#(Self.token)","payload":\#(Self.payload),"headers":{"apns-push-type":"alert"}"#, "missingTopic"),
            (#""line":2,"deviceToken":"\#(Self.token)","payload":\#(Self.payload),"headers":{"apns-topic":"a","apns-priority":"high"}"#, "badPriority"),
            (#""line":2,"deviceToken":"\#(Self.token)","payload":\#(Self.payload),"headers":{"apns-topic":"a","apns-expiration":"soon"}"#, "badExpiration"),
            (#""line":2,"deviceToken":"\#(Self.token)","error":{"code":"unknownRecipient","message":"m"}"#, "notSealed"),
        ]
        for c in cases {
            let parsed = SendInput.parse(Self.line(c.members), physicalLine: 9, defaults: .init())
            guard case .invalid(let line, let token, let code, let message) = parsed else {
                Issue.record("\(c.code): accepted")
                continue
            }
            #expect(code == c.code, "\(c.members): \(code) \(message)")
            #expect(line == 2 && !message.isEmpty)
            #expect(token == (c.code == "missingDeviceToken" ? "" : Self.token))
        }
        guard case .invalid(let line, _, let code, _) = SendInput.parse(Array("not json".utf8), physicalLine: 4, defaults: .init()) else {
            Issue.record("accepted")
            return
        }
        #expect(line == 4 && !code.isEmpty)
    }

    @Test("the header cache gives the next line with the same headers the same fields, and a new line's own")
    func headerCache() {
        var cache = SendInput.HeaderCache()
        var context = OutcomeLog.LineContext()
        let first = Self.line(#""deviceToken":"\#(Self.token)","recipient":"alice","id":"n1","payload":\#(Self.payload),"headers":\#(Self.headers)"#)
        let other = Self.line(#""deviceToken":"\#(Self.token)","payload":\#(Self.payload),"headers":{"apns-push-type":"background","apns-topic":"com.example.app"}"#)
        var topics: [String] = []
        for bytes in [first, first, other, first] {
            if case .notification(_, let n) = SendInput.parse(bytes, physicalLine: 1, defaults: .init(), cache: &cache, validating: true, context: &context) {
                topics.append("\(n.pushType.rawValue) \(n.collapseID ?? "-")")
            }
        }
        #expect(topics == ["alert c1", "alert c1", "background -", "alert c1"])
        #expect(context == OutcomeLog.LineContext(recipient: "alice", id: "n1"), "the last line's recipient and id")
    }
}

@Suite struct OutcomeLogTests {
    /// A fresh file in a fresh directory, and a descriptor appending to it.
    static func file() throws -> (path: String, fd: FileDescriptor) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("outcomelog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent("outcomes.jsonl").path
        return (path, try FileDescriptor.open(path, [.writeOnly, .create, .append]))
    }

    static func lines(_ path: String) throws -> [[String: Any]] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
    }

    @Test("not-sent and unconfirmed lines are written on flush, counted by outcome and reason")
    func linesAndCounts() throws {
        let (path, fd) = try Self.file()
        let log = OutcomeLog(file: fd, invalidationsFile: nil, progress: false)
        log.addInvalid(line: 3, deviceToken: "ab", code: "missingTopic", message: "no apns-topic",
                       context: OutcomeLog.LineContext(recipient: "alice", id: "n3"))
        log.addUnconfirmed(line: 4, deviceToken: "cd", context: OutcomeLog.LineContext())
        #expect(try Self.lines(path).isEmpty, "nothing before the flush")
        log.flush()
        let lines = try Self.lines(path)
        #expect(lines.count == 2)
        #expect(lines.first?["line"] as? Int == 3 && lines.first?["outcome"] as? String == "failed")
        #expect(lines.first?["recipient"] as? String == "alice" && lines.first?["id"] as? String == "n3")
        #expect(lines.last?["line"] as? Int == 4)
        let counts = log.snapshot
        #expect(counts.total == 2 && counts.byOutcome["invalid"] == 1 && counts.byOutcome["failed"] == 1)
        #expect(log.failedWrite == nil)
    }

    @Test("with intents, each intent is written (with what is pending) before the requests may go")
    func intents() throws {
        let (path, fd) = try Self.file()
        let log = OutcomeLog(file: fd, invalidationsFile: nil, progress: false, intents: true)
        log.addInvalid(line: 1, deviceToken: "ab", code: "badPayload", message: "m")
        #expect(log.recordIntents([APNsIntent(tag: 2, apnsID: "00000000-0000-4000-8000-000000000002", hasCollapseID: true)]))
        let lines = try Self.lines(path)
        #expect(lines.count == 2, "the intent's write carries the pending outcome too")
        #expect(lines.last?["intent"] as? String == "send" && lines.last?["line"] as? Int == 2)
        let without = OutcomeLog(file: try Self.file().fd, invalidationsFile: nil, progress: false)
        #expect(without.recordIntents([APNsIntent(tag: 1, apnsID: "x", hasCollapseID: false)]), "standard output: nothing to write first")
    }

    @Test("the first failed write is kept, calls the handler once, and stops the intents")
    func failedWrite() throws {
        let (path, _) = try Self.file()
        let readOnly = try FileDescriptor.open(path, .readOnly)
        let log = OutcomeLog(file: readOnly, invalidationsFile: nil, progress: false, intents: true)
        let calls = Counter()
        log.onFirstFailure { calls.add() }
        log.addInvalid(line: 1, deviceToken: "ab", code: "badPayload", message: "m")
        log.flush()
        log.addInvalid(line: 2, deviceToken: "ab", code: "badPayload", message: "m")
        log.flush()
        #expect(log.failedWrite != nil)
        #expect(calls.value == 1)
        #expect(!log.recordIntents([APNsIntent(tag: 3, apnsID: "x", hasCollapseID: false)]), "no request goes out after a failed write")
        #expect(!log.failedOnBrokenPipe)
    }

    @Test("latency quantiles within the 1 % buckets")
    func latency() {
        var h = LatencyHistogram()
        #expect(h.quantile(0.5) == nil)
        for ms in 1...100 { h.add(nanoseconds: UInt64(ms) * 1_000_000) }
        let p50 = h.quantile(0.5) ?? 0
        let p99 = h.quantile(0.99) ?? 0
        #expect(p50 >= 50 && p50 <= 50 * 1.011, "\(p50)")
        #expect(p99 >= 99 && p99 <= 99 * 1.011, "\(p99)")
        #expect(h.count == 100)
    }

    /// A count the failure handler (a `@Sendable` closure) adds to.
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func add() { lock.withLock { n += 1 } }
        var value: Int { lock.withLock { n } }
    }
}
