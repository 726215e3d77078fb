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
/// `PUSHSEAL_GATEWAY_CHAOS_COUNT` sets how many notifications (20,000 by default, the issue's
/// number; rounded up to whole batches).
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
        var failure: String?
        func take(_ total: Int) -> Int? { lock.withLock { next < total ? { next += 1; return next - 1 }() : nil } }
        func done(_ batch: Int, _ answer: [String]) { lock.withLock { ids[batch] = answer } }
        func retried() { lock.withLock { retries += 1 } }
        func fail(_ s: String) { lock.withLock { if failure == nil { failure = s } } }
        var batchesDone: Int { lock.withLock { ids.count } }
        var accepted: [Int: [String]] { lock.withLock { ids } }
    }

    /// One batch's body: items for recipients in turn, each with its own text.
    static func body(batch: Int) -> [UInt8] {
        let items = (0..<batchSize).map { i -> String in
            let n = batch * batchSize + i
            // Every tenth without a collapse id: after a crash it ends failed (mayHaveBeenDelivered), never resent.
            let collapse = n % 10 == 0 ? #","collapseId":null"# : ""
            return #"{"recipient":"phone-\#(n % recipients)","notification":{"title":"n\#(n)","body":"chaos \#(n)"},"ttl":3600\#(collapse)}"#
        }
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

        // Every row reaches a final status (a killed instance's rows come back after its lease).
        let settled = waitUntil(seconds: 120, every: 0.25) {
            (try? server.psql(fleet.cs, "SELECT count(*) FROM pushseal_outbox WHERE status IN ('queued', 'sending')"))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == "0"
        }
        #expect(settled, "rows still queued or sending")

        let answered = progress.accepted
        #expect(answered.count == total)
        let ids = answered.values.flatMap { $0 }
        #expect(Set(ids).count == ids.count && ids.count == total * Self.batchSize, "each 202 names its own ids")
        let rows = try server.psql(fleet.cs, "SELECT id, status, apns_id, coalesce(collapse_id, '') FROM pushseal_outbox")
            .split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
        var statusOf: [String: String] = [:], collapseOf: [String: String] = [:]
        for r in rows where r.count == 4 {
            statusOf[r[0]] = r[1]
            collapseOf[r[2].lowercased()] = r[3]
        }
        #expect(rows.count == ids.count, "nothing was enqueued twice: \(rows.count) rows for \(ids.count) ids")
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
        print("gateway chaos: \(ids.count) notifications in \(total) batches, \(progress.retries) retried requests, 4 SIGKILLs, 1 PostgreSQL restart; "
              + "\(accepted) accepted, \(statusOf.values.filter { $0 == "failed" }.count) failed; the mock accepted \(seen.values.map(\.count).reduce(0, +)) requests "
              + "for \(seen.count) notifications, \(seen.values.filter { $0.count > 1 }.count) resent with their collapse id")
    }
}
