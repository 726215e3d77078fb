import Foundation
import Testing
import PushSealSystem
import PushSealTestSupport

/// The outbox's promise over HTTP: two `push-gateway serve` instances on one throwaway
/// PostgreSQL and the native mock APNs; notifications sent in batches of 500 with an
/// `Idempotency-Key` (a batch whose answer was lost is sent again with the same key, to either
/// instance); instances SIGKILLed at random moments and restarted; PostgreSQL stopped and started
/// mid-run. Every id that got a 202 ends in exactly one final status, nothing was enqueued twice,
/// and the mock never accepted one notification twice unless the repeats carried its collapse id.
///
/// The group commit (`acceptTogether`: small requests without a key stored together) under
/// SIGKILL: single-notification requests without a key from 16 threads, never retried.
///
/// `PUSHSEAL_GATEWAY_CHAOS_COUNT` sets how many notifications (20,000 by default, the issue's
/// number; rounded up to whole batches); `PUSHSEAL_GATEWAY_CHAOS_SINGLES` how many single requests.
@Suite(.serialized, .enabled(if: MockAPNs.nativeAvailable, "the native mock APNs is not built (scripts/build-mock-apns.sh)"))
struct GatewayChaosTests {
    static let batchSize = 500
    static var count: Int { Int(ProcessInfo.processInfo.environment["PUSHSEAL_GATEWAY_CHAOS_COUNT"] ?? "") ?? 20_000 }
    static let recipients = 40
    static let finals: Set<String> = ["accepted", "unregistered", "rejected", "failed", "expired"]

    /// The two instances, replaced when killed; the sending threads read the current ports.
    final class Instances: @unchecked Sendable {
        private let lock = NSLock()
        private var children: [GatewayChild]
        init(_ children: [GatewayChild]) { self.children = children }
        func port(_ n: Int) -> Int { lock.withLock { children[n % children.count].port } }
        func child(_ n: Int) -> GatewayChild { lock.withLock { children[n] } }
        func replace(_ n: Int, with c: GatewayChild) { lock.withLock { children[n] = c } }
        var all: [GatewayChild] { lock.withLock { children } }
    }

    /// What the senders learnt: every id answered with 202, batches done, retries.
    final class Progress: @unchecked Sendable {
        private let lock = NSLock()
        private var ids: [Int: [String]] = [:]
        private var next = 0
        private(set) var retries = 0
        private(set) var lost = 0
        var failure: String?
        func take(_ total: Int) -> Int? { lock.withLock { next < total ? { next += 1; return next - 1 }() : nil } }
        func done(_ batch: Int, _ answer: [String]) { lock.withLock { ids[batch] = answer } }
        func retried() { lock.withLock { retries += 1 } }
        /// A request answered neither 202 nor 4xx (a lost answer or a 5xx): stored or not, unknown.
        func answerLost() { lock.withLock { lost += 1 } }
        /// Requests answered 202 or lost.
        var finished: Int { lock.withLock { ids.count + lost } }
        func fail(_ s: String) { lock.withLock { if failure == nil { failure = s } } }
        var batchesDone: Int { lock.withLock { ids.count } }
        var accepted: [Int: [String]] { lock.withLock { ids } }
    }

    /// Notification `n`'s item: recipients in turn, each with its own text.
    static func item(_ n: Int) -> String {
        // Every tenth without a collapse id: after a crash it ends failed (mayHaveBeenDelivered), never resent.
        let collapse = n % 10 == 0 ? #","collapseId":null"# : ""
        return #"{"recipient":"phone-\#(n % recipients)","notification":{"title":"n\#(n)","body":"chaos \#(n)"},"ttl":3600\#(collapse)}"#
    }

    /// One batch's body: items `batch * batchSize ..< (batch + 1) * batchSize`.
    static func body(batch: Int) -> [UInt8] {
        let items = (0..<batchSize).map { item(batch * batchSize + $0) }
        return Array(#"{"notifications":[\#(items.joined(separator: ","))]}"#.utf8)
    }

    /// Sends batches until none is left: each with key `chaos-B`; an error, a 5xx or a lost
    /// answer is retried with the same key (on the other instance first), until a 202.
    static func sendAll(_ fleet: GatewayFleet, _ instances: Instances, _ progress: Progress, total: Int, thread: Int) {
        while let batch = progress.take(total) {
            let body = Self.body(batch: batch)
            var attempt = 0
            let start = monotonicNanoseconds()
            while true {
                let port = instances.port(thread + attempt)
                let answer = try? rawHTTP(port: UInt16(port), "POST", "/v1/notifications",
                                          headers: fleet.headers + [("Idempotency-Key", "chaos-\(batch)")], body: body)
                if let a = answer ?? nil, a.status == 202, let items = a.json?["notifications"] as? [[String: Any]] {
                    let ids = items.compactMap { $0["id"] as? String }
                    if ids.count != batchSize { progress.fail("batch \(batch): \(ids.count) ids queued: \(a.text.prefix(300))") }
                    progress.done(batch, ids)
                    break
                }
                if let a = answer ?? nil, a.status < 500, a.status != 429 {
                    progress.fail("batch \(batch): \(a.status) \(a.text.prefix(300))")
                    return
                }
                progress.retried()
                attempt += 1
                if Double(monotonicNanoseconds() - start) / 1e9 > 120 {
                    progress.fail("batch \(batch): no 202 in 120 s")
                    return
                }
                pauseThread(seconds: 0.05 * Double(min(attempt, 10)))  // a client's back-off before the retry
            }
        }
    }

    @Test("2 instances, SIGKILLs and a PostgreSQL restart mid-run: every 202'd id ends once, nothing enqueued twice, no repeat without its collapse id")
    func killsAndDatabaseRestart() throws {
        let server = try PostgresServer()  // its own: this test stops and starts it
        defer { server.stop() }
        let fleet = try GatewayFleet(server: server)
        let total = (Self.count + Self.batchSize - 1) / Self.batchSize
        let extra = ["--threads", "3", "--lease-seconds", "3", "--connections", "2"]
        let instances = Instances([try fleet.start(extra), try fleet.start(extra)])
        defer { for c in instances.all { c.kill9() } }
        for r in 0..<Self.recipients {
            try fleet.register(port: instances.port(r), recipient: "phone-\(r)", deviceToken: String(format: "%064x", r + 1))
        }

        let progress = Progress()
        let senders = (0..<2).map { t in
            let thread = Thread { Self.sendAll(fleet, instances, progress, total: total, thread: t) }
            thread.start()
            return thread
        }
        // Chaos at random batch counts: four kills (alternating instances) and one database restart.
        var random = SystemRandomNumberGenerator()
        let marks = (1...5).map { k in max(1, total * k / 6 + Int.random(in: -total / 20...total / 20 + 1, using: &random)) }
        for (n, mark) in marks.enumerated() {
            waitUntil(seconds: 240, every: 0.01) { progress.batchesDone >= min(mark, total) || progress.failure != nil }
            if n == 2 {
                try server.stopServer()
                try server.start()
            } else {
                let which = n % 2
                instances.child(which).kill9()
                instances.replace(which, with: try fleet.start(extra))
            }
        }
        while senders.contains(where: { !$0.isFinished }) { pauseThread(seconds: 0.05) }
        #expect(progress.failure == nil, "\(progress.failure ?? "")")

        let answered = progress.accepted
        #expect(answered.count == total)
        let ids = answered.values.flatMap { $0 }
        #expect(Set(ids).count == ids.count && ids.count == total * Self.batchSize, "each 202 names its own ids")
        let end = try Self.checkSettled(server, fleet, ids: ids)
        #expect(end.rows == ids.count, "nothing was enqueued twice: \(end.rows) rows for \(ids.count) ids")
        let (accepted, seen) = (end.accepted, end.mock)
        print("gateway chaos: \(ids.count) notifications in \(total) batches, \(progress.retries) retried requests, 4 SIGKILLs, 1 PostgreSQL restart; "
              + "\(accepted) accepted, \(end.failed) failed; the mock accepted \(seen.values.map(\.count).reduce(0, +)) requests "
              + "for \(seen.count) notifications, \(seen.values.filter { $0.count > 1 }.count) resent with their collapse id")
    }

    /// What ``checkSettled(_:_:ids:)`` found: outbox rows, how many ended accepted and failed,
    /// and what the mock accepted (200) by apns-id: the collapse id of each time (`""` for none).
    struct Settled {
        var rows: Int
        var accepted: Int
        var failed: Int
        var mock: [String: [String]]
    }

    /// Waits until no outbox row is queued or sending (a killed instance's rows come back after
    /// its lease), then checks that every one of `ids` has a final status, and (the mock
    /// stopped) that the mock accepted no notification in no row and none twice unless the
    /// repeats carried its collapse id, and that every accepted row reached it.
    static func checkSettled(_ server: PostgresServer, _ fleet: GatewayFleet, ids: [String]) throws -> Settled {
        let settled = waitUntil(seconds: 120, every: 0.25) {
            (try? server.psql(fleet.cs, "SELECT count(*) FROM pushseal_outbox WHERE status IN ('queued', 'sending')"))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == "0"
        }
        #expect(settled, "rows still queued or sending")
        let rows = try server.psql(fleet.cs, "SELECT id, status, apns_id, coalesce(collapse_id, '') FROM pushseal_outbox")
            .split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
        var statusOf: [String: String] = [:], collapseOf: [String: String] = [:]
        for r in rows where r.count == 4 {
            statusOf[r[0]] = r[1]
            collapseOf[r[2].lowercased()] = r[3]
        }
        let unfinished = ids.filter { !Self.finals.contains(statusOf[$0] ?? "missing") }
        #expect(unfinished.isEmpty, "\(unfinished.count) ids without a final status, e.g. \(unfinished.prefix(3).map { "\($0): \(statusOf[$0] ?? "missing")" })")
        let accepted = statusOf.values.filter { $0 == "accepted" }.count

        // The mock's record: what it accepted (200), by apns-id; a repeat only with its collapse id.
        fleet.mock.stop()
        var seen: [String: [String]] = [:]
        for r in try fleet.mock.answered() where r["status"] as? Int == 200 {
            seen[(r["apnsId"] as? String ?? "").lowercased(), default: []].append(r["collapseId"] as? String ?? "")
        }
        let strangers = seen.keys.filter { collapseOf[$0] == nil }
        #expect(strangers.isEmpty, "the mock accepted \(strangers.count) notifications in no outbox row")
        let twiceWithout = seen.filter { $0.value.count > 1 && ($0.value.contains("") || Set($0.value).count > 1 || $0.value[0] != collapseOf[$0.key]) }
        #expect(twiceWithout.isEmpty, "\(twiceWithout.count) notifications accepted twice without their collapse id")
        #expect(seen.count >= accepted, "every accepted row reached the mock")
        return Settled(rows: rows.count, accepted: accepted, failed: statusOf.values.filter { $0 == "failed" }.count, mock: seen)
    }

    /// SIGKILLs in the group commit test (a kill between a group's answers and its commit is what
    /// it can catch: the more kills, the likelier).
    static let singleKills = 8

    /// Single-notification requests for the group commit test (`PUSHSEAL_GATEWAY_CHAOS_SINGLES`, 2,000 by default).
    static var singles: Int { Int(ProcessInfo.processInfo.environment["PUSHSEAL_GATEWAY_CHAOS_SINGLES"] ?? "") ?? 2_000 }

    /// Sends requests of one notification without an `Idempotency-Key` until none is left, each
    /// ONCE: a lost answer or a 5xx is never retried (without a key the gateway cannot tell a
    /// resend from a new notification, so a retry could queue it twice) and is counted lost.
    /// A refused connection (the instance is down: nothing was sent) goes to the other instance.
    static func sendSingles(_ fleet: GatewayFleet, _ instances: Instances, _ progress: Progress, total: Int, thread: Int) {
        while let n = progress.take(total) {
            let body = Array(#"{"notifications":[\#(item(n))]}"#.utf8)
            var answer: RawHTTPResponse?? = nil
            for attempt in 0..<100 {
                do {
                    answer = try rawHTTP(port: UInt16(instances.port(thread + n + attempt)), "POST", "/v1/notifications", headers: fleet.headers, body: body)
                    break
                } catch {
                    pauseThread(seconds: 0.01 * Double(min(attempt + 1, 10)))  // not connected: nothing sent
                }
            }
            guard let sent = answer else {
                progress.fail("request \(n): no instance took the connection")
                return
            }
            guard let a = sent else {
                progress.answerLost()  // sent, answer lost: stored or not, the client cannot know
                continue
            }
            if a.status == 202, let items = a.json?["notifications"] as? [[String: Any]] {
                let ids = items.compactMap { $0["id"] as? String }
                if ids.count != 1 { progress.fail("request \(n): \(ids.count) ids queued: \(a.text.prefix(300))") }
                progress.done(n, ids)
            } else if a.status >= 500 {
                progress.answerLost()  // a 503 (database unreachable, commit outcome unknown): not counted either
            } else {
                progress.fail("request \(n): \(a.status) \(a.text.prefix(300))")
                return
            }
        }
    }

    /// From an instance's `/metrics`: its 202 answers to `POST /v1/notifications` and its seal
    /// calls (one per group the group commit stored); `nil` when it does not answer.
    static func groupCounts(_ fleet: GatewayFleet, port: Int) -> (answered: Int, groups: Int)? {
        guard let m = (try? rawHTTP(port: UInt16(port), "GET", "/metrics", headers: [fleet.headers[0]])) ?? nil,
              let groups = metricValue(m.text, "pushseal_gateway_seal_duration_seconds_count") else { return nil }
        let answered = metricValue(m.text, #"pushseal_gateway_requests_total{route="POST /v1/notifications",status="202"}"#) ?? 0
        return (Int(answered), Int(groups))
    }

    @Test("group commit under SIGKILL: single requests without a key from 16 threads; every 202'd id ends once, no repeat without its collapse id, groups of more than one request")
    func groupCommitKills() throws {
        let server = try PostgresServer.sharedServer()
        let fleet = try GatewayFleet(server: server)
        let total = Self.singles
        let extra = ["--threads", "8", "--lease-seconds", "3", "--connections", "2"]
        let instances = Instances([try fleet.start(extra), try fleet.start(extra)])
        defer { for c in instances.all { c.kill9() } }
        for r in 0..<Self.recipients {
            try fleet.register(port: instances.port(r), recipient: "phone-\(r)", deviceToken: String(format: "%064x", r + 1))
        }

        let progress = Progress()
        let senders = (0..<16).map { t in
            let thread = Thread { Self.sendSingles(fleet, instances, progress, total: total, thread: t) }
            thread.start()
            return thread
        }
        // Eight SIGKILLs at random request counts, alternating instances; each victim's metrics read just before.
        var random = SystemRandomNumberGenerator()
        var counts: [(answered: Int, groups: Int)] = []
        let marks = (1...Self.singleKills).map { k in max(1, total * k / (Self.singleKills + 1) + Int.random(in: -total / 40...total / 40 + 1, using: &random)) }
        for (n, mark) in marks.enumerated() {
            waitUntil(seconds: 240, every: 0.005) { progress.finished >= min(mark, total) || progress.failure != nil }
            let which = n % 2
            if let c = Self.groupCounts(fleet, port: instances.child(which).port) { counts.append(c) }
            instances.child(which).kill9()
            instances.replace(which, with: try fleet.start(extra))
        }
        while senders.contains(where: { !$0.isFinished }) { pauseThread(seconds: 0.05) }
        #expect(progress.failure == nil, "\(progress.failure ?? "")")
        for c in instances.all { if let m = Self.groupCounts(fleet, port: c.port) { counts.append(m) } }

        // Only ids that got a 202 are checked: a request whose answer was lost (or a 5xx) may or
        // may not be stored, and without an Idempotency-Key the client cannot find out.
        let ids = progress.accepted.values.flatMap { $0 }
        #expect(Set(ids).count == ids.count, "each 202 names its own id")
        #expect(ids.count + progress.lost == total)
        #expect(ids.count > total / 2, "most requests got a 202: \(ids.count) of \(total)")
        let end = try Self.checkSettled(server, fleet, ids: ids)
        // Each request sent once: at most one row each, lost ones included.
        #expect(end.rows >= ids.count && end.rows <= total, "\(end.rows) rows for \(ids.count) 202s of \(total) requests")

        // Grouping happened: an instance answered more 202s than it sealed groups (a seal call
        // counted before its commit, a 202 after it: the comparison can only undercount groups).
        let answered = counts.map(\.answered).reduce(0, +), groups = counts.map(\.groups).reduce(0, +)
        #expect(answered > groups, "no group held more than one request: \(answered) 202s, \(groups) seal calls")
        print("gateway group-commit chaos: \(total) single requests, \(ids.count) answered 202, \(progress.lost) answers lost, \(Self.singleKills) SIGKILLs; "
              + "\(end.rows) rows, \(end.accepted) accepted, \(end.failed) failed; the instances' metrics read: \(answered) 202s in \(groups) seal calls; "
              + "the mock accepted \(end.mock.values.map(\.count).reduce(0, +)) requests for \(end.mock.count) notifications")
    }
}
