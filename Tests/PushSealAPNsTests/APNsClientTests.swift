import Foundation
import Testing
@testable import PushSealAPNs
import PushSealTestSupport

/// Collects a client's outcomes and invalidations (from its transfer thread).
final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var outcomesStore: [APNsOutcome] = []
    private var invalidationsStore: [APNsInvalidation] = []
    var outcomes: [APNsOutcome] { lock.withLock { outcomesStore } }
    var invalidations: [APNsInvalidation] { lock.withLock { invalidationsStore } }
    func add(_ o: APNsOutcome) { lock.withLock { outcomesStore.append(o) } }
    func add(_ i: APNsInvalidation) { lock.withLock { invalidationsStore.append(i) } }
}

/// Sends `notifications` through a new client to `mock` and returns what came back.
func sendAll(_ notifications: [APNsNotification], to mock: MockAPNs, tokens: ProviderTokenCache? = nil,
             configure: (inout APNsClient.Configuration) -> Void = { _ in }) throws -> (Collected, APNsClient.Statistics) {
    var configuration = APNsClient.Configuration(endpoint: try mock.endpoint())
    configuration.retry = APNsRetryPolicy(maxAttempts: 5, baseDelaySeconds: 0.01, maxDelaySeconds: 0.05)
    configuration.reconnectBaseDelaySeconds = 0.01
    configure(&configuration)
    let cache = try tokens ?? ProviderTokenCache(key: ProviderKey(p8Path: mock.p8Path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID))
    let collected = Collected()
    let client = try APNsClient(configuration: configuration, tokens: cache, onOutcome: { collected.add($0) },
                                onInvalidation: { collected.add($0) })
    for (i, n) in notifications.enumerated() { try client.send(n, tag: i + 1) }
    client.finish()
    return (collected, client.statistics)
}

/// A distinct hex device token for `i` (lengths vary: tokens are never assumed to be 64 digits).
func token(_ i: Int, length: Int = 64) -> String {
    let hex = String(format: "%08x", i)
    return String(repeating: "a", count: length - hex.count) + hex
}

func notification(_ i: Int, length: Int = 64, payload: String = "{\"aps\":{\"alert\":\"hi\"}}", collapseID: String? = nil) -> APNsNotification {
    APNsNotification(deviceToken: token(i, length: length), payload: Array(payload.utf8), topic: MockAPNs.topic, priority: 10,
                     expiration: 0, collapseID: collapseID)
}

@Suite("APNs client against the mock APNs", .serialized)
struct APNsClientTests {
    @Test("a burst of 300 is accepted over one connection, each sent once, even while the mock allows one stream")
    func burstOneConnection() throws {
        let mock = try MockAPNs()
        let (c, stats) = try sendAll((1...300).map { notification($0, length: $0 % 2 == 0 ? 64 : 200) }, to: mock)
        mock.stop()
        #expect(c.outcomes.count == 300)
        #expect(c.outcomes.allSatisfy { $0.kind == .accepted && $0.attempts == 1 && $0.apnsUniqueID != nil })
        let records = try mock.answered()
        #expect(records.count == 300)
        #expect(Set(records.compactMap { $0["token"] as? String }).count == 300)
        #expect(Set(records.compactMap { $0["session"] as? Int }).count <= 2, "connections: \(stats.connectionsOpened)")
        #expect(stats.connectionsOpened <= 2)
        // The server's nghttp2 refuses a stream over its limit (1 until the first valid token):
        // the client sent nothing before the server's SETTINGS (nghttp2 would assume 100 and
        // have 99 refused) and followed the limit after, so nothing was refused.
        #expect(stats.refusedStreamsResent == 0, "streams over the server's limit were refused: \(stats.refusedStreamsResent)")
        // apns-id sent is the one reported.
        let sentIDs = Set(records.compactMap { $0["apnsId"] as? String })
        #expect(Set(c.outcomes.map(\.apnsID)) == sentIDs)
    }
}

/// The answered requests per token in a mock record.
func answeredCount(_ records: [[String: Any]]) -> [String: Int] {
    var out: [String: Int] = [:]
    for r in records where r["refused"] == nil { out[r["token"] as? String ?? "", default: 0] += 1 }
    return out
}

@Suite("APNs client: the retry table through the mock APNs", .serialized)
struct APNsClientRetryTests {
    @Test("scripted answers: each status and reason ends as the table says, with the attempts it says")
    func scripted() throws {
        // token index → (script, expected kind, expected status, expected reason, expected attempts)
        let cases: [(script: [[String: Any]], kind: APNsOutcome.Kind, status: Int?, reason: String?, attempts: Int)] = [
            ([["status": 400, "reason": "BadTopic"]], .rejected, 400, "BadTopic", 1),
            ([["status": 400, "reason": "DeviceTokenNotForTopic"]], .rejected, 400, "DeviceTokenNotForTopic", 1),
            ([["status": 403, "reason": "InvalidProviderToken"]], .rejected, 403, "InvalidProviderToken", 1),
            ([["status": 404, "reason": "BadPath"]], .rejected, 404, "BadPath", 1),
            ([["status": 413, "reason": "PayloadTooLarge"]], .rejected, 413, "PayloadTooLarge", 1),
            ([["status": 429, "reason": "TooManyRequests", "retryAfter": 0]], .accepted, 200, nil, 2),
            ([["status": 429, "reason": "TooManyProviderTokenUpdates"]], .accepted, 200, nil, 2),
            ([["status": 500, "reason": "InternalServerError"]], .accepted, 200, nil, 2),
            ([["status": 503, "reason": "ServiceUnavailable"], ["status": 503, "reason": "Shutdown"]], .accepted, 200, nil, 3),
            (Array(repeating: ["status": 500, "reason": "InternalServerError"], count: 6), .failed, 500, "InternalServerError", 5),
            ([["status": 410, "reason": "ExpiredToken", "timestamp": 1_700_000_000_250]], .unregistered, 410, "ExpiredToken", 1),
        ]
        var script: [String: Any] = [:]
        for (i, c) in cases.enumerated() { script[token(i + 1)] = c.script }
        let mock = try MockAPNs(["script": script, "unregistered": [token(100): 1_700_000_000_123]])
        let notifications = (1...cases.count).map { notification($0) } + [notification(100)]
        let (c, stats) = try sendAll(notifications, to: mock)
        mock.stop()
        let byTag = Dictionary(uniqueKeysWithValues: c.outcomes.map { ($0.tag, $0) })
        #expect(c.outcomes.count == notifications.count)
        for (i, expected) in cases.enumerated() {
            let o = try #require(byTag[i + 1])
            #expect(o.kind == expected.kind && o.status == expected.status && o.reason == expected.reason && o.attempts == expected.attempts,
                    "case \(i + 1) \(expected.script.first ?? [:]): got \(o.kind) \(o.status ?? 0) \(o.reason ?? "-") ×\(o.attempts)")
        }
        // 410: the timestamp in milliseconds, and an invalidation carrying it.
        let gone = try #require(byTag[notifications.count])
        #expect(gone.kind == .unregistered && gone.timestampMilliseconds == 1_700_000_000_123 && gone.invalidatesToken)
        #expect(Set(c.invalidations.map(\.deviceToken)) == [token(100), token(11)])
        #expect(c.invalidations.first { $0.deviceToken == token(100) }?.timestampMilliseconds == 1_700_000_000_123)
        // TooManyProviderTokenUpdates did not mint again.
        #expect(stats.requests == c.outcomes.reduce(0) { $0 + $1.attempts })
        // Retries after 500/503 went out on a new connection.
        let records = try mock.answered()
        let sessions500 = records.filter { $0["token"] as? String == token(8) }.compactMap { $0["session"] as? Int }
        #expect(sessions500.count == 2 && sessions500[0] != sessions500[1], "500 retried on a new connection: \(sessions500)")
        // The apns-id is the same on every attempt.
        let ids = Set(records.filter { $0["token"] as? String == token(9) }.compactMap { $0["apnsId"] as? String })
        #expect(ids.count == 1)
    }

    @Test("ExpiredProviderToken: resent once with a fresh token on a new connection; not when the token is under 20 minutes old")
    func expiredProviderToken() throws {
        let expired: [[String: Any]] = [["status": 403, "reason": "ExpiredProviderToken"]]
        let mock = try MockAPNs(["tokenUpdateSeconds": 0, "script": [token(1): expired, token(2): expired]])
        let key = try ProviderKey(p8Path: mock.p8Path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID)
        // A token 25 minutes old: a new one may be minted.
        let clock = TestClock()
        let aged = ProviderTokenCache(key: key, clock: clock)
        _ = try aged.current()
        clock.advance(seconds: 25 * 60)
        let (c1, _) = try sendAll([notification(1)], to: mock, tokens: aged)
        // A token just minted: minting again would break the 20-minute rule, so it is final.
        let fresh = ProviderTokenCache(key: key, clock: TestClock())
        let (c2, _) = try sendAll([notification(2)], to: mock, tokens: fresh)
        // This machine's wall clock 62 minutes behind: the mock itself finds the iat too old.
        let skewed = ProviderTokenCache(key: key, clock: ShiftedClock(base: TestClock(), wallShift: -3720))
        let (c3, _) = try sendAll([notification(3)], to: mock, tokens: skewed)
        mock.stop()
        let o1 = try #require(c1.outcomes.first)
        #expect(o1.kind == .accepted && o1.attempts == 2)
        #expect(aged.mintCount == 2)
        let sessions = try mock.answered().filter { $0["token"] as? String == token(1) }.compactMap { $0["session"] as? Int }
        #expect(sessions.count == 2 && sessions[0] != sessions[1], "retried on a new connection: \(sessions)")
        let o2 = try #require(c2.outcomes.first)
        #expect(o2.kind == .rejected && o2.reason == "ExpiredProviderToken" && o2.attempts == 1 && fresh.mintCount == 1)
        let o3 = try #require(c3.outcomes.first)
        #expect(o3.kind == .rejected && o3.status == 403 && o3.reason == "ExpiredProviderToken" && skewed.mintCount == 1)
    }

    @Test("refused streams and streams above a GOAWAY's last stream id are resent once, on another connection")
    func refusedAndGoaway() throws {
        var script: [String: Any] = [:]
        for i in 1...5 { script[token(i)] = [["refuse": true]] }
        let mock = try MockAPNs(["script": script, "faults": ["goawayAfter": 60, "goawayReason": "Shutdown"]])
        let (c, _) = try sendAll((1...200).map { notification($0) }, to: mock)
        mock.stop()
        #expect(c.outcomes.count == 200)
        let records = try mock.records()
        let answered = answeredCount(records)
        // Every notification accepted, each answered by the mock exactly once: the refused
        // streams and those above the GOAWAY's last stream id were resent once, nothing else was.
        #expect(c.outcomes.allSatisfy { $0.kind == .accepted }, "\(c.outcomes.filter { $0.kind != .accepted }.map { "\($0.kind) \($0.reason ?? "")" })")
        #expect(answered.count == 200 && answered.values.allSatisfy { $0 == 1 }, "a token answered twice, or never")
        let byToken = Dictionary(uniqueKeysWithValues: c.outcomes.map { ($0.deviceToken, $0) })
        for i in 1...5 {
            #expect(byToken[token(i)]?.attempts == 1, "a refused stream is resent, not counted as an attempt")
            #expect(records.filter { $0["token"] as? String == token(i) }.count == 2, "refused once, then answered: sent exactly twice")
        }
        let refused = records.filter { $0["refused"] as? String == "stream" }.compactMap { $0["token"] as? String }
        #expect(Set(refused) == Set((1...5).map { token($0) }))
        #expect(Set(records.compactMap { $0["session"] as? Int }).count >= 2, "the GOAWAY moved the rest to a new connection")
        // Exactly one accepted outcome per notification.
        #expect(Set(c.outcomes.map(\.tag)).count == 200)
    }

    @Test("3,000 notifications stay on one connection, each answered once: no RST_STREAM flood trips the server's rapid-reset limit")
    func longRunOneConnection() throws {
        // libcurl 7.88 sent RST_STREAM for every answered stream after the first; the mock's
        // nghttp2 (Node 20: the CVE-2023-44487 limit, a burst of 1000 then 33/s) answered with
        // GOAWAY(INTERNAL_ERROR) after ~2,000 streams. The client's own HTTP/2 session must not.
        let mock = try MockAPNs()
        let (c, stats) = try sendAll((1...3000).map { notification($0) }, to: mock) { $0.maxInFlight = 200 }
        mock.stop()
        #expect(c.outcomes.count == 3000 && Set(c.outcomes.map(\.tag)).count == 3000)
        #expect(c.outcomes.allSatisfy { $0.kind == .accepted && $0.attempts == 1 },
                "\(Dictionary(grouping: c.outcomes.filter { $0.kind != .accepted }, by: { $0.reason ?? "" }).mapValues(\.count))")
        let records = try mock.answered()
        let answered = answeredCount(records)
        #expect(answered.count == 3000 && answered.values.allSatisfy { $0 == 1 }, "a token answered twice, or never")
        #expect(Set(records.compactMap { $0["session"] as? Int }).count == 1, "sessions: \(Set(records.compactMap { $0["session"] as? Int }).sorted())")
        #expect(stats.refusedStreamsResent == 0)
        #expect(stats.connectionsOpened == 1 && stats.requests == 3000)
    }

    @Test("stream limit 1000 → 1 → 1000, 1% 500s, 0.5% 410s, one GOAWAY: one final outcome each, none accepted twice")
    func faultScript() throws {
        let mock = try MockAPNs(["faults": ["seed": 7, "rate500": 0.01, "rate410": 0.005, "goawayAfter": 400,
                                            "streamLimits": [[200, 1], [300, 1000]]]])
        let (c, _) = try sendAll((1...1000).map { notification($0) }, to: mock)
        mock.stop()
        #expect(c.outcomes.count == 1000)
        #expect(Set(c.outcomes.map(\.tag)).count == 1000)
        let accepted = c.outcomes.filter { $0.kind == .accepted }
        let unregistered = c.outcomes.filter { $0.kind == .unregistered }
        #expect(accepted.count + unregistered.count == 1000, "\(c.outcomes.filter { $0.kind != .accepted && $0.kind != .unregistered }.map { "\($0.kind) \($0.reason ?? "")" })")
        #expect(!unregistered.isEmpty && unregistered.allSatisfy { $0.timestampMilliseconds != nil })
        let records = try mock.answered()
        var acceptedByToken: [String: Int] = [:]
        for r in records where r["status"] as? Int == 200 { acceptedByToken[r["token"] as? String ?? "", default: 0] += 1 }
        #expect(acceptedByToken.count == accepted.count && acceptedByToken.values.allSatisfy { $0 == 1 }, "none accepted twice by the mock")
    }

    @Test("a connection dropped after APNs took 20 requests, before any answer (TCP reset, then FIN): none is accepted twice unless its outcome says attempts > 1",
          arguments: ["reset", "close"])
    func droppedConnection(kind: String) throws {
        // libcurl 7.88 resent such a request by itself and reported attempts 1 (docs/apns.md, history).
        // Odd notifications carry a collapse id: the client may resend those, and must count it.
        let mock = try MockAPNs(["faults": ["dropAfter": 20, "dropKind": kind]])
        let (c, _) = try sendAll((1...80).map { notification($0, collapseID: $0 % 2 == 1 ? "c-\($0)" : nil) }, to: mock)
        mock.stop()
        #expect(c.outcomes.count == 80 && Set(c.outcomes.map(\.tag)).count == 80, "one outcome per notification")
        let records = try mock.records()
        let held = Set(records.filter { $0["unanswered"] as? Bool == true }.compactMap { $0["token"] as? String })
        #expect(held.count == 20, "the mock took 20 requests and dropped the connection before answering them")
        var acceptedByToken: [String: Int] = [:]
        for r in records where r["status"] as? Int == 200 { acceptedByToken[r["token"] as? String ?? "", default: 0] += 1 }
        let outcome = Dictionary(uniqueKeysWithValues: c.outcomes.map { ($0.deviceToken, $0) })
        for (t, n) in acceptedByToken where n > 1 {
            #expect((outcome[t]?.attempts ?? 0) > 1, "\(t) accepted \(n) times by the mock, reported with attempts \(outcome[t]?.attempts ?? 0): \(records.filter { $0["token"] as? String == t })")
        }
        // Without a collapse id a request the mock took is never sent again: failed, may have been delivered.
        for t in held {
            let o = try #require(outcome[t])
            let collapsed = (Int(t.suffix(8), radix: 16) ?? 0) % 2 == 1
            if collapsed {
                #expect(o.kind == .accepted && o.attempts >= 2, "\(t): \(o.kind) \(o.reason ?? "") attempts \(o.attempts)")
            } else {
                #expect(o.kind == .failed && o.reason == "mayHaveBeenDelivered" && o.attempts == 1, "\(t): \(o.kind) \(o.reason ?? "") attempts \(o.attempts)")
                #expect(acceptedByToken[t] == 1)
            }
        }
        // Whatever the mock never took ends accepted, or failed as possibly delivered: never lost.
        #expect(c.outcomes.allSatisfy { $0.kind == .accepted || ($0.kind == .failed && $0.reason == "mayHaveBeenDelivered") },
                "\(Set(c.outcomes.map { "\($0.kind) \($0.reason ?? "")" }))")
    }

    @Test("a request that may have reached APNs is not resent without a collapse id; with one it is")
    func maybeDelivered() throws {
        let slow: [[String: Any]] = [["delayMs": 3000]]
        let mock = try MockAPNs(["script": [token(1): slow, token(2): slow]])
        let (c, _) = try sendAll([notification(1), notification(2, collapseID: "c-2")], to: mock) { $0.requestTimeoutSeconds = 1 }
        mock.stop()
        let byTag = Dictionary(uniqueKeysWithValues: c.outcomes.map { ($0.tag, $0) })
        let o1 = try #require(byTag[1]), o2 = try #require(byTag[2])
        #expect(o1.kind == .failed && o1.reason == "mayHaveBeenDelivered" && o1.attempts == 1)
        #expect(o2.kind == .accepted && o2.attempts == 2)
    }

    @Test("no server: connection failures back off and end as failed connectionFailed, nothing else")
    func noServer() throws {
        let mock = try MockAPNs()
        let port = mock.port
        let p8 = mock.p8Path
        let ca = mock.directory.appendingPathComponent("ca.pem").path
        try FileManager.default.copyItem(atPath: mock.caFile, toPath: ca)
        mock.stop()
        var configuration = APNsClient.Configuration(endpoint: try APNsEndpoint(hostAndPort: "127.0.0.1:\(port)", caFile: ca))
        configuration.retry = APNsRetryPolicy(maxAttempts: 3, baseDelaySeconds: 0.01, maxDelaySeconds: 0.02)
        configuration.reconnectBaseDelaySeconds = 0.01
        configuration.reconnectMaxDelaySeconds = 0.05
        let collected = Collected()
        let cache = ProviderTokenCache(key: try ProviderKey(p8Path: p8, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID))
        let client = try APNsClient(configuration: configuration, tokens: cache, onOutcome: { collected.add($0) })
        for i in 1...20 { try client.send(notification(i), tag: i) }
        client.finish()
        #expect(collected.outcomes.count == 20)
        #expect(collected.outcomes.allSatisfy { $0.kind == .failed && $0.reason == "connectionFailed" && $0.attempts == 3 })
    }

    @Test("a server whose certificate another CA signed: failed tlsVerificationFailed after one attempt, nothing reaches it")
    func untrustedServer() throws {
        let mock = try MockAPNs()
        // A CA of our own that did not sign the mock's certificate.
        let otherCA = mock.directory.appendingPathComponent("other-ca.pem").path
        try TestKey.write(to: mock.directory.appendingPathComponent("other-ca.key").path)
        let made = try runTool(URL(fileURLWithPath: "/usr/bin/env"),
                               ["openssl", "req", "-x509", "-key", mock.directory.appendingPathComponent("other-ca.key").path,
                                "-subj", "/CN=Another CA", "-days", "1", "-out", otherCA])
        #expect(made.status == 0 && !made.signaled, "\(made.stderr)")
        var configuration = APNsClient.Configuration(endpoint: try APNsEndpoint(hostAndPort: "127.0.0.1:\(mock.port)", caFile: otherCA))
        configuration.reconnectBaseDelaySeconds = 0.01
        let collected = Collected()
        let cache = ProviderTokenCache(key: try ProviderKey(p8Path: mock.p8Path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID))
        let client = try APNsClient(configuration: configuration, tokens: cache, onOutcome: { collected.add($0) })
        for i in 1...5 { try client.send(notification(i), tag: i) }
        client.finish()
        mock.stop()
        #expect(collected.outcomes.count == 5)
        #expect(collected.outcomes.allSatisfy { $0.kind == .failed && $0.reason == "tlsVerificationFailed" && $0.attempts == 1 },
                "\(collected.outcomes.map { "\($0.kind) \($0.reason ?? "") ×\($0.attempts)" })")
        #expect(try mock.records().isEmpty)
    }

    @Test("a BadDeviceToken burst (development tokens sent to production) invalidates nothing")
    func badDeviceTokenBurst() throws {
        let bad = (1...30).map { token($0) }
        let mock = try MockAPNs(["badTokens": bad])
        let (c, stats) = try sendAll((1...30).map { notification($0) } + (31...60).map { notification($0) }, to: mock) { $0.maxInFlight = 1 }
        mock.stop()
        #expect(c.outcomes.filter { $0.reason == "BadDeviceToken" }.count == 30)
        #expect(c.invalidations.isEmpty)
        #expect(stats.badDeviceTokenBurst && stats.suppressedInvalidations == 30)
    }

    @Test("bad requests are refused by send() and nothing reaches the mock")
    func badInputNothingSent() throws {
        let mock = try MockAPNs()
        var configuration = APNsClient.Configuration(endpoint: try mock.endpoint())
        configuration.retry = APNsRetryPolicy(maxAttempts: 1)
        let cache = ProviderTokenCache(key: try ProviderKey(p8Path: mock.p8Path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID))
        let collected = Collected()
        let client = try APNsClient(configuration: configuration, tokens: cache, onOutcome: { collected.add($0) })
        let bad = [
            APNsNotification(deviceToken: "not-hex", payload: Array("{}".utf8), topic: MockAPNs.topic),
            APNsNotification(deviceToken: token(1), payload: [UInt8](repeating: 0x20, count: 4097), topic: MockAPNs.topic),
            APNsNotification(deviceToken: token(2), payload: Array("{}".utf8), pushType: .background, topic: MockAPNs.topic, priority: 10),
        ]
        for (i, n) in bad.enumerated() { #expect(throws: APNsError.self) { try client.send(n, tag: i) } }
        client.finish()
        mock.stop()
        #expect(collected.outcomes.isEmpty)
        #expect(try mock.records().isEmpty)
    }
}

/// A clock whose wall time is shifted (an `iat` in the past), monotonic time shared with `base`.
struct ShiftedClock: APNsClock {
    let base: TestClock
    let wallShift: Int64
    func monotonicNanoseconds() -> UInt64 { base.monotonicNanoseconds() }
    func wallSeconds() -> Int64 { base.wallSeconds() + wallShift }
}
