import Foundation
import Testing
import PushSealCrypto
import PushSealRegistry
import PushSealServer
import PushSealSystem
import PushSealTestSupport

/// The durable outbox on a real PostgreSQL and the native mock APNs (issue 23 "The outbox").
@Suite(.serialized, .enabled(if: MockAPNs.nativeAvailable, "the native mock APNs is not built (scripts/build-mock-apns.sh)"))
struct OutboxTests {
    static let appID = MockAPNs.topic

    struct Fixture {
        let cs: String
        let store: ServerStore
        let outbox: Outbox
        let tokens: [String: String]
        let kek: KeyEncryptionKey
        /// What the outbox reported through `onCancelled`, in order.
        let cancelled = Locked<[OutboxWorker.FinalOutcome]>([])

        /// A migrated registry with `recipients` registered (v2, development tokens) and an outbox.
        init(recipients: [String]) throws {
            let server = try PostgresServer.sharedServer()
            cs = try server.createDatabase()
            _ = try PostgresKeyStore.migrate(connectionString: cs)
            kek = .generate()
            store = ServerStore(store: try PostgresKeyStore(connectionString: cs, kek: kek, reconnectWaitSeconds: 10))
            var tokens: [String: String] = [:]
            for (i, r) in recipients.enumerated() {
                let token = Hex.encode([UInt8](repeating: UInt8(i + 1), count: 32))
                let body = try TestGatewayTests.upload(token: token).body
                _ = try store.importRegistration(try RegistrationUpload(body: body, expectedAppID: OutboxTests.appID), recipient: r,
                                                 nowMilliseconds: unixTimeMilliseconds() - 10_000)
                tokens[r] = token
            }
            self.tokens = tokens
            var configuration = Outbox.Configuration(sealer: SealerConfiguration(appID: OutboxTests.appID), environment: .development)
            configuration.onCancelled = { [cancelled] f in cancelled.withLock { $0.append(f) } }
            outbox = try Outbox(store: store, configuration: configuration)
        }

        func apns(_ mock: MockAPNs) throws -> APNsProviderConfiguration {
            var c = APNsClient.Configuration(endpoint: try mock.endpoint())
            c.reconnectBaseDelaySeconds = 0.01
            return APNsProviderConfiguration(p8Path: mock.p8Path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID, client: c)
        }

        func sql(_ q: String) throws -> String { try PostgresServer.sharedServer().psql(cs, q).trimmingCharacters(in: .whitespacesAndNewlines) }

        /// Waits (polling the database, bounded) until no row is queued or sending.
        func waitUntilDone(limitSeconds: Double = 60) throws {
            let start = monotonicNanoseconds()
            while try sql("SELECT count(*) FROM pushseal_outbox WHERE status IN ('queued', 'sending')") != "0" {
                guard Double(monotonicNanoseconds() - start) / 1e9 < limitSeconds else { throw MockFailure(description: "the outbox did not empty") }
                pauseThread(seconds: 0.02)
            }
        }
    }

    static func item(_ recipient: String, _ title: String, extra: [(String, JSONValue)] = []) -> JSONValue {
        .object(JSONObject([("recipient", .string(recipient)), ("notification", .object(JSONObject([("title", .string(title)), ("body", .string("secret-body-\(title)"))])))] + extra))
    }

    @Test("accept seals at once: the rows hold no plaintext (pg_dump), per-item errors, idempotency keys")
    func acceptSealsAndIsIdempotent() throws {
        let f = try Fixture(recipients: ["alice", "bob"])
        let items = [Self.item("alice", "Zanzibar-Quokka"), Self.item("nobody", "x"), Self.item("bob", "Yttrium-Walrus", extra: [("collapseId", .string("mine"))]),
                     .object(JSONObject([("recipient", .string("bob")), ("notification", .string("not an object"))]))]
        let key = Outbox.IdempotencyKey(scope: "api-key-1", key: "req-1")
        let hash = try Outbox.requestHash(Array("body-1".utf8))
        let first = try f.outbox.accept(items, idempotency: (key, hash), nowMs: unixTimeMilliseconds())
        #expect(!first.replayed && first.items.count == 4)
        guard case .queued(let aliceID, "alice") = first.items[0], case .queued(let bobID, "bob") = first.items[2] else {
            Issue.record("items 1 and 3 should be queued: \(first.items)"); return
        }
        if case .failed(_, let code, let message) = first.items[1] {
            #expect(code == "noDeviceToken")
            // The outbox's wording, not push-seal batch's (an item has no deviceToken member).
            #expect(message.contains("nobody") && message.contains("POST /v1/devices") && !message.contains("deviceToken)"), "\(message)")
        } else { Issue.record("item 2 should fail") }
        if case .failed(_, let code, _) = first.items[3] { #expect(code == "invalidNotification") } else { Issue.record("item 4 should fail") }
        #expect(try f.sql("SELECT count(*) FROM pushseal_outbox") == "2")
        // A random collapse id by default; the caller's own wins.
        #expect(try f.sql("SELECT length(collapse_id) FROM pushseal_outbox WHERE id = '\(aliceID)'") == "32")
        #expect(try f.sql("SELECT collapse_id FROM pushseal_outbox WHERE id = '\(bobID)'") == "mine")
        #expect(try f.outbox.status(id: aliceID)?.status == "queued")
        #expect(try f.outbox.status(id: "not-a-uuid") == nil)

        // Same key, same body: the first answer, nothing stored. Another body: refused.
        let again = try f.outbox.accept(items, idempotency: (key, hash), nowMs: unixTimeMilliseconds())
        #expect(again.replayed && again.body == first.body && again.items == first.items)
        #expect(try f.sql("SELECT count(*) FROM pushseal_outbox") == "2")
        #expect(throws: ServerError(.idempotencyKeyReused, "")) {
            try f.outbox.accept(items, idempotency: (key, try Outbox.requestHash(Array("body-2".utf8))), nowMs: unixTimeMilliseconds())
        }
        // Another caller's key of the same name is its own.
        #expect(try !f.outbox.accept([Self.item("alice", "Other")], idempotency: (Outbox.IdempotencyKey(scope: "api-key-2", key: "req-1"), hash),
                                    nowMs: unixTimeMilliseconds()).replayed)

        // The database never holds a readable notification.
        let dump = try PostgresServer.sharedServer().run("pg_dump", ["-d", f.cs, "--inserts"], asServerUser: false)
        #expect(dump.contains("pushseal_outbox"))
        for word in ["Zanzibar", "Quokka", "Yttrium", "Walrus", "secret-body"] { #expect(!dump.contains(word), "\(word) is in the dump") }
        // Nor the caller's idempotency key, nor an unkeyed hash of the body (a short text could
        // be guessed against it offline): both are HMACs under the KEK.
        #expect(!dump.contains("req-1"), "the idempotency key is in the dump")
        #expect(try f.sql("SELECT count(*) FROM pushseal_idempotency WHERE request_hash = '\\x\(Hex.encode(hash))'::bytea") == "0")
        #expect(try f.sql("SELECT count(*) FROM pushseal_idempotency WHERE length(request_hash) = 32 AND length(key) = 64") == "2")

        // Cancel a recipient's queued notifications.
        #expect(f.cancelled.withLock { $0 }.isEmpty)
        #expect(try f.outbox.cancel(recipient: "alice", nowMs: unixTimeMilliseconds()) == 2)
        #expect(try f.outbox.status(id: aliceID)?.status == "cancelled" && f.outbox.status(id: aliceID)?.reason == "forgotten")
        // Each row it cancelled is reported once, as its final outcome (the gateway logs it).
        let reported = f.cancelled.withLock { $0 }
        #expect(reported.count == 2 && Set(reported.map(\.id)).count == 2 && reported.map(\.id).contains(aliceID), "\(reported)")
        #expect(reported.allSatisfy { $0.status == "cancelled" && $0.reason == "forgotten" && $0.recipient == "alice" && !$0.apnsID.isEmpty && $0.attempts == 0 })
        #expect(try f.outbox.cancel(recipient: "alice", nowMs: unixTimeMilliseconds()) == 0 && f.cancelled.withLock { $0 }.count == 2)
        // Counted as final outcomes (pushseal_gateway_notifications_total), once.
        #expect(f.outbox.metrics.snapshot().outcomes[OutboxMetrics.Pair(status: "cancelled", reason: "forgotten")] == 2)
    }

    @Test("small requests without an idempotency key stored together (group commit): each gets its own answers and rows, once, at its own time")
    func concurrentSmallRequestsKeepTheirOwnAnswers() throws {
        let recipients = (0..<8).map { "g\($0)" }
        let f = try Fixture(recipients: recipients)
        let base = unixTimeMilliseconds() - 50_000
        let requests = 64
        // Request n: one or two items for recipient g(n % 8) (every fifth also names nobody), accepted at base + n.
        let answers = Locked<[Int: Outbox.Acceptance]>([:])
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: requests) { n in
            var items = [Self.item(recipients[n % recipients.count], "req-\(n)")]
            if n % 5 == 0 { items.append(Self.item("nobody", "x-\(n)")) }
            do {
                let a = try f.outbox.accept(items, idempotency: nil, nowMs: base + Int64(n))
                answers.withLock { $0[n] = a }
            } catch {
                failures.withLock { $0.append("\(n): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let all = answers.withLock { $0 }
        #expect(all.count == requests)
        var ids = Set<String>()
        for (n, a) in all {
            #expect(!a.replayed && a.items.count == (n % 5 == 0 ? 2 : 1))
            guard case .queued(let id, let recipient)? = a.items.first else { Issue.record("request \(n) not queued: \(a.items)"); continue }
            #expect(recipient == recipients[n % recipients.count])
            #expect(ids.insert(id).inserted, "id \(id) given twice")
            // The answer body is this request's own.
            let body = String(decoding: a.body, as: UTF8.self)
            #expect(body.contains(id) && body.components(separatedBy: "\"id\"").count == 2, "\(body)")
            if n % 5 == 0 {
                if case .failed(_, let code, _) = a.items[1] { #expect(code == "noDeviceToken") } else { Issue.record("request \(n)'s second item should fail") }
            }
            // Its row: stored once, for its recipient, accepted at its own time.
            #expect(try f.sql("SELECT recipient || ' ' || created_at FROM pushseal_outbox WHERE id = '\(id)'") == "\(recipient) \(base + Int64(n))")
        }
        #expect(try f.sql("SELECT count(*) FROM pushseal_outbox") == "\(requests)")
    }

    @Test("two workers send every row once; a 410 removes the token in the outcome's transaction; past TTL is expired unsent")
    func twoWorkersSendOnce() throws {
        let recipients = (0..<20).map { "r\($0)" }
        let f = try Fixture(recipients: recipients + ["gone"])
        let mock = try MockAPNs(["unregistered": [f.tokens["gone"] ?? "": unixTimeMilliseconds() + 60_000]], kind: .native)
        defer { mock.stop() }
        var ids: [String] = []
        for round in 0..<10 {
            let accepted = try f.outbox.accept(recipients.map { Self.item($0, "t\(round)") }, idempotency: nil, nowMs: unixTimeMilliseconds())
            ids += accepted.items.compactMap { if case .queued(let id, _) = $0 { id } else { nil } }
        }
        let gone = try f.outbox.accept([Self.item("gone", "bye")], idempotency: nil, nowMs: unixTimeMilliseconds())
        guard case .queued(let goneID, _)? = gone.items.first else { Issue.record("gone not queued"); return }
        // ttl 0 is "now or never": a row claimed a minute later ends expired, unsent.
        let late = try f.outbox.accept([Self.item("r0", "late", extra: [("ttl", .integer(0))])], idempotency: nil, nowMs: unixTimeMilliseconds() - 120_000)
        guard case .queued(let lateID, _)? = late.items.first else { Issue.record("late not queued"); return }
        #expect(ids.count == 200)

        var one = OutboxWorker.Configuration(), two = OutboxWorker.Configuration()
        one.claimBatch = 7
        two.claimBatch = 5
        let w1 = try OutboxWorker(outbox: f.outbox, apns: try f.apns(mock), configuration: one)
        let w2 = try OutboxWorker(outbox: f.outbox, apns: try f.apns(mock), configuration: two)
        try w1.start()
        try w2.start()
        try f.waitUntilDone()
        w1.drain()
        w2.drain()

        #expect(try f.sql("SELECT count(*) FROM pushseal_outbox WHERE status = 'accepted'") == "200")
        let seen = try mock.answered()
        #expect(seen.count == 201, "each row sent once: \(seen.count) requests")
        #expect(Set(seen.compactMap { $0["apnsId"] as? String }).count == seen.count, "no apns-id twice")
        let status = try f.outbox.status(id: goneID)
        #expect(status?.status == "unregistered" && status?.httpStatus == 410 && status?.attempts == 1)
        #expect(try f.store.deviceTokenStore().deviceTokens(appID: Self.appID, recipient: "gone").isEmpty, "the 410 removed the token")
        #expect(try f.outbox.status(id: lateID)?.status == "expired")
        #expect(try f.sql("SELECT count(DISTINCT lease_owner) FROM pushseal_outbox") == "0", "no lease left")
        let metrics = f.outbox.metrics.snapshot()
        #expect(metrics.outcomes[OutboxMetrics.Pair(status: "accepted", reason: "")] == 200 && metrics.accepted == 202)
        // One provider token for both instances, minted once, stored sealed (no JWT in clear).
        #expect(try f.outbox.rows.providerTokenMints(teamID: MockAPNs.teamID, keyID: MockAPNs.keyID) == 1)
        #expect(w1.tokens.mintCount + w2.tokens.mintCount == 1)
        #expect(try !f.sql("SELECT jwt FROM pushseal_provider_tokens").contains("eyJ"))
    }

    @Test("an idle worker is woken by NOTIFY and by its first outcome (its polling interval and lease renewal are 10 minutes); drain with nothing in flight ends it")
    func notifyWakesAnIdleWorker() throws {
        let f = try Fixture(recipients: ["n"])
        let mock = try MockAPNs([:], kind: .native)
        defer { mock.stop() }
        var settings = OutboxWorker.Configuration()
        settings.pollIntervalMs = 600_000
        // Nothing else wakes it while the request is in flight (leases renewed every 10 minutes):
        // the outcome is written because the APNs client's outcome wakes the worker.
        settings.leaseMs = 1_800_000
        let w = try OutboxWorker(outbox: f.outbox, apns: try f.apns(mock), configuration: settings)
        try w.start()
        // Wait until the worker listens (then it waits for a NOTIFY, or 10 minutes).
        let start = monotonicNanoseconds()
        while try f.sql("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'") == "0" {
            guard monotonicNanoseconds() - start < 30_000_000_000 else { Issue.record("the worker never listened"); break }
            pauseThread(seconds: 0.01)
        }
        let accepted = try f.outbox.accept([Self.item("n", "wake")], idempotency: nil, nowMs: unixTimeMilliseconds())
        guard case .queued(let id, _)? = accepted.items.first else { Issue.record("not queued"); return }
        try f.waitUntilDone(limitSeconds: 60)
        #expect(try f.outbox.status(id: id)?.status == "accepted")
        let q = try f.outbox.queueStatistics(nowMs: unixTimeMilliseconds())
        #expect(q.queued == 0 && q.sending == 0 && q.oldestQueuedAgeMs == 0)
        w.drain()
        #expect(w.isStopped)
    }

    @Test("single commits in a burst share claims: at most one claim per claimIntervalMs unless full; every row is sent once")
    func aBurstOfCommitsSharesClaims() throws {
        let f = try Fixture(recipients: ["c"])
        let mock = try MockAPNs([:], kind: .native)
        defer { mock.stop() }
        var settings = OutboxWorker.Configuration()
        settings.claimIntervalMs = 500
        let w = try OutboxWorker(outbox: f.outbox, apns: try f.apns(mock), configuration: settings)
        try w.start()
        // 40 requests of one item, each its own commit and NOTIFY: a claim per NOTIFY would be ~40.
        var ids: [String] = []
        for n in 0..<40 {
            let accepted = try f.outbox.accept([Self.item("c", "burst \(n)")], idempotency: nil, nowMs: unixTimeMilliseconds())
            if case .queued(let id, _)? = accepted.items.first { ids.append(id) }
        }
        #expect(ids.count == 40)
        try f.waitUntilDone(limitSeconds: 60)
        w.drain()
        #expect(try ids.allSatisfy { try f.outbox.status(id: $0)?.status == "accepted" })
        #expect(try mock.answered().count == 40)
        #expect(w.claimCount <= 20, "\(w.claimCount) claims for 40 commits")
    }

    @Test("a worker claims only its own app's and environment's rows: a staging gateway on the same database never sends production's")
    func claimsKeepToTheirAppAndEnvironment() throws {
        let f = try Fixture(recipients: ["a", "b", "c"])
        let now = unixTimeMilliseconds()
        let accepted = try f.outbox.accept(["a", "b", "c"].map { Self.item($0, "t-\($0)") }, idempotency: nil, nowMs: now)
        let ids = accepted.items.compactMap { if case .queued(let id, _) = $0 { id } else { nil } }
        try #require(ids.count == 3)
        // The third row belongs to another app (as if its gateway shared the database).
        _ = try f.sql("UPDATE pushseal_outbox SET app_id = 'com.example.other' WHERE id = '\(ids[2])'")
        let production = try Outbox(store: f.store, configuration: Outbox.Configuration(sealer: SealerConfiguration(appID: OutboxTests.appID), environment: .production))
        #expect(try production.claim(owner: "prod", limit: 10, leaseMs: 60_000, nowMs: now).isEmpty, "development rows are not production's")
        #expect(try production.queueStatistics(nowMs: now).queued == 0)
        #expect(try f.outbox.queueStatistics(nowMs: now).queued == 2, "the other app's row is not in this queue")
        let claimed = try f.outbox.claim(owner: "dev", limit: 10, leaseMs: 60_000, nowMs: now)
        #expect(Set(claimed.map(\.row.id)) == Set(ids[0..<2]))
        #expect(try f.sql("SELECT status FROM pushseal_outbox WHERE id = '\(ids[2])'") == "queued", "left for its own app's gateway")
    }

    @Test("a dead instance's rows: resent when they have a collapse id, failed mayHaveBeenDelivered without")
    func reaperRespectsCollapseIDs() throws {
        let f = try Fixture(recipients: ["a", "b"])
        let mock = try MockAPNs([:], kind: .native)
        defer { mock.stop() }
        let accepted = try f.outbox.accept([Self.item("a", "one"), Self.item("b", "two", extra: [("collapseId", .null)])], idempotency: nil, nowMs: unixTimeMilliseconds())
        let ids = accepted.items.compactMap { if case .queued(let id, _) = $0 { id } else { nil } }
        #expect(ids.count == 2)
        // An instance claims both and dies (its lease expires).
        let claimed = try f.outbox.claim(owner: "dead", limit: 10, leaseMs: 1, nowMs: unixTimeMilliseconds() - 1000)
        #expect(claimed.count == 2 && claimed.allSatisfy(\.authentic))
        #expect(try f.outbox.claim(owner: "other", limit: 10, leaseMs: 60_000, nowMs: unixTimeMilliseconds()).isEmpty, "a leased row is not claimed again")
        let w = try OutboxWorker(outbox: f.outbox, apns: try f.apns(mock))
        try w.start()
        try f.waitUntilDone()
        w.drain()
        #expect(try f.outbox.status(id: ids[0])?.status == "accepted" && f.outbox.status(id: ids[0])?.sends == 2)
        let noCollapse = try f.outbox.status(id: ids[1])
        #expect(noCollapse?.status == "failed" && noCollapse?.reason == "mayHaveBeenDelivered")
        #expect(noCollapse?.attempts == 1, "the dead instance's claim counts as an attempt: it may have been sent")
        #expect(try f.outbox.status(id: ids[0])?.attempts == 2, "one by the dead instance, one by the worker")
        #expect(try mock.answered().count == 1, "only the row with a collapse id was sent again")
        // The row the reaper ended is counted as a final outcome (pushseal_gateway_notifications_total).
        #expect(f.outbox.metrics.snapshot().outcomes[OutboxMetrics.Pair(status: "failed", reason: "mayHaveBeenDelivered")] == 1)

        // A row changed without the KEK is never sent.
        let more = try f.outbox.accept([Self.item("a", "three")], idempotency: nil, nowMs: unixTimeMilliseconds())
        guard case .queued(let id3, _)? = more.items.first else { return }
        _ = try f.sql("UPDATE pushseal_outbox SET device_token = 'ffff' WHERE id = '\(id3)'")
        let w2 = try OutboxWorker(outbox: f.outbox, apns: try f.apns(mock))
        try w2.start()
        try f.waitUntilDone()
        w2.drain()
        #expect(try f.outbox.status(id: id3)?.reason == "rowAuthenticationFailed" && mock.answered().count == 1)
    }

    @Test("a draining worker keeps its leases while APNs answers later than the lease: no other instance reaps its rows, and its outcomes are the ones written")
    func drainKeepsItsLeases() throws {
        let f = try Fixture(recipients: ["a", "b"])
        // Each row's first attempt is answered (200) 6 s late: three times the 2 s lease. The
        // Node mock, for its script.
        let late: [[String: Any]] = [["delayMs": 6_000]]
        let mock = try MockAPNs(["script": [f.tokens["a"] ?? "": late, f.tokens["b"] ?? "": late]])
        defer { mock.stop() }
        // One row with a collapse id (a reaper would resend it), one without (a reaper would end
        // it failed mayHaveBeenDelivered).
        let accepted = try f.outbox.accept([Self.item("a", "one"), Self.item("b", "two", extra: [("collapseId", .null)])], idempotency: nil, nowMs: unixTimeMilliseconds())
        let ids = accepted.items.compactMap { if case .queued(let id, _) = $0 { id } else { nil } }
        #expect(ids.count == 2)
        var settings = OutboxWorker.Configuration()
        settings.leaseMs = 2_000
        var apns = try f.apns(mock)
        apns.client.requestTimeoutSeconds = 120  // a late answer, not a lost one: no retry
        let w = try OutboxWorker(outbox: f.outbox, apns: apns, configuration: settings)
        try w.start()
        let owner = settings.instanceID
        let held = "SELECT count(*) FROM pushseal_outbox WHERE status = 'sending' AND lease_owner = '\(owner)'"
        let start = monotonicNanoseconds()
        while try f.sql(held) != "2" {
            guard monotonicNanoseconds() - start < 60_000_000_000 else { Issue.record("the worker never claimed both rows"); w.drain(); return }
            pauseThread(seconds: 0.01)
        }
        let firstLeaseEndMs = Int64(try f.sql("SELECT max(lease_until) FROM pushseal_outbox")) ?? Int64.max
        #expect(startDetachedThread { w.drain() })
        // Another instance's reaper, over and over until the drain ends: it never finds an expired
        // lease, also after the first lease would have run out while the rows were still held.
        var reapedPastFirstLease = false
        while !w.isStopped {
            guard monotonicNanoseconds() - start < 180_000_000_000 else { Issue.record("the drain did not end"); return }
            let now = unixTimeMilliseconds()
            let reaped = try f.outbox.rows.reap(nowMs: now)
            #expect(reaped.requeued == 0, "a reaper requeued a row the draining worker holds")
            #expect(reaped.failed.isEmpty, "a reaper ended a row the draining worker holds failed mayHaveBeenDelivered")
            if now > firstLeaseEndMs, try f.sql(held) == "2" { reapedPastFirstLease = true }
            pauseThread(seconds: 0.02)
        }
        #expect(reapedPastFirstLease, "the drain outlasted the first lease while the rows were held (else the test shows nothing)")
        for id in ids {
            let status = try f.outbox.status(id: id)
            #expect(status?.status == "accepted" && status?.sends == 1 && status?.attempts == 1, "\(id): \(String(describing: status))")
        }
        #expect(try mock.answered().count == 2, "each row sent once")
        #expect(try f.sql("SELECT count(*) FROM pushseal_outbox WHERE lease_owner IS NOT NULL") == "0", "no lease left")
    }

    @Test("retention deletes finished rows older than its time, in batches, each once though two instances run at once; queued, sending and newer rows stay")
    func retentionDeletesOnlyOldFinishedRows() throws {
        let f = try Fixture(recipients: ["a"])
        let now = unixTimeMilliseconds()
        let day: Int64 = 86_400_000
        let accepted = try f.outbox.accept((0..<30).map { Self.item("a", "r\($0)") }, idempotency: nil, nowMs: now)
        let ids = accepted.items.compactMap { if case .queued(let id, _) = $0 { id } else { nil } }
        try #require(ids.count == 30)
        func set(_ range: Range<Int>, _ assignments: String) throws {
            _ = try f.sql("UPDATE pushseal_outbox SET \(assignments) WHERE id IN (\(range.map { "'\(ids[$0])'" }.joined(separator: ",")))")
        }
        // 0..<20 finished 10 days ago (every final status); 20..<24 an hour ago; 24..<27 queued
        // and 27..<30 sending (an expired lease), both created 10 days ago.
        let finals = ["accepted", "unregistered", "rejected", "failed", "expired", "cancelled"]
        for i in 0..<20 { try set(i..<(i + 1), "status = '\(finals[i % finals.count])', finished_at = \(now - 10 * day - Int64(i))") }
        try set(20..<24, "status = 'accepted', finished_at = \(now - 3_600_000)")
        try set(24..<27, "created_at = \(now - 10 * day)")
        try set(27..<30, "status = 'sending', lease_owner = 'gone', lease_until = \(now - 10 * day), created_at = \(now - 10 * day)")

        var keep = OutboxRetention.Configuration()
        keep.keepFinishedMs = 7 * day
        keep.batch = 3
        let reported = Locked<[Int]>([])
        keep.onDeleted = { n in reported.withLock { $0.append(n) } }
        let instances = [OutboxRetention(outbox: f.outbox, configuration: keep), OutboxRetention(outbox: f.outbox, configuration: keep)]
        let counts = Locked<[Int]>([])
        let errors = Locked<[String]>([])
        let done = DispatchGroup()
        for retention in instances {
            done.enter()
            DispatchQueue.global().async {
                defer { done.leave() }
                do {
                    let n = try retention.pass(nowMs: now)
                    counts.withLock { $0.append(n) }
                } catch {
                    errors.withLock { $0.append("\(error)") }
                }
            }
        }
        done.wait()
        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0 })")
        #expect(counts.withLock { $0.reduce(0, +) } == 20, "\(counts.withLock { $0 })")
        #expect(reported.withLock { $0.reduce(0, +) } == 20)
        #expect(f.outbox.metrics.snapshot().deletedFinished == 20)
        let left = Set(try f.sql("SELECT id FROM pushseal_outbox").split(separator: "\n").map(String.init))
        #expect(left == Set(ids[20...]), "only the old finished rows are gone")
        #expect(try f.outbox.status(id: ids[0]) == nil)
        // Nothing more is old enough: a pass deletes nothing and reports nothing.
        #expect(try instances[0].pass(nowMs: now) == 0)
        #expect(reported.withLock { $0.count } <= 2)
        // The finish-time index is what finds them (migration 11).
        #expect(try f.sql("SELECT count(*) FROM pg_indexes WHERE indexname = 'pushseal_outbox_finished'") == "1")
    }

    @Test("retract: one background push per recipient (priority 5, no collapse id, kind retract); a caller's id is sealed to its row; a dead instance's retract is requeued")
    func retractGroupsByRecipientAndIsRequeued() throws {
        let f = try Fixture(recipients: ["a", "b"])
        let now = unixTimeMilliseconds()
        let own = JSONValue.object(JSONObject([("recipient", .string("a")), ("notification", .object(JSONObject([("body", .string("two")), ("id", .string("msg-a2"))])))]))
        let accepted = try f.outbox.accept([Self.item("a", "one"), own, Self.item("b", "three"), Self.item("a", "four")], idempotency: nil, nowMs: now)
        let ids = accepted.items.compactMap { if case .queued(let id, _) = $0 { id } else { nil } }
        try #require(ids.count == 4)
        #expect(try f.sql("SELECT count(*) FROM pushseal_outbox WHERE device_id_sealed IS NOT NULL") == "1", "only the caller's own id is stored")
        #expect(try f.sql("SELECT position('msg-a2' in encode(device_id_sealed, 'escape')) FROM pushseal_outbox WHERE id = '\(ids[1])'") == "0")
        // The fourth row gets the second's sealed id: it opens only in its own row.
        _ = try f.sql("UPDATE pushseal_outbox SET device_id_sealed = (SELECT device_id_sealed FROM pushseal_outbox WHERE id = '\(ids[1])') WHERE id = '\(ids[3])'")
        // All four were sent (claimed and completed).
        let claimed = try f.outbox.claim(owner: "sent", limit: 10, leaseMs: 60_000, nowMs: now)
        try f.outbox.rows.complete(claimed.map { PostgresOutbox.Completion(id: $0.row.id, status: "accepted", httpStatus: 200, attempts: 1) }, owner: "sent", nowMs: now)

        let done = try f.outbox.retract(ids, single: false, idempotency: nil, nowMs: now)
        guard case .queued(_, "a", let forA) = done.results[0], case .queued(_, "a", let forA2) = done.results[1],
              case .queued(_, "b", let forB) = done.results[2], case .failed(_, _, "notRetractable", _) = done.results[3] else {
            Issue.record("unexpected results: \(done.results)"); return
        }
        #expect(forA == forA2 && forA != forB, "one retract per recipient")
        for r in [forA, forB] {
            #expect(try f.sql("SELECT kind, push_type, priority, collapse_id IS NULL, status FROM pushseal_outbox WHERE id = '\(r)'") == "retract|background|5|t|queued")
        }
        #expect(throws: ServerError.self) { try f.outbox.retract([forA], single: true, idempotency: nil, nowMs: now) }
        #expect(try f.sql("SELECT count(*) FROM pushseal_outbox WHERE kind = 'retract'") == "2")

        // An instance claims both retracts and dies: they are requeued without a collapse id.
        let dead = try f.outbox.claim(owner: "dead", limit: 10, leaseMs: 1, nowMs: now - 1000)
        #expect(dead.count == 2)
        let reaped = try f.outbox.rows.reap(nowMs: now)
        #expect(reaped.requeued == 2 && reaped.failed.isEmpty)
        #expect(try f.outbox.status(id: forA)?.status == "queued")

        // A notification retracted while still queued is cancelled, and reported once as its final outcome.
        #expect(f.cancelled.withLock { $0 }.isEmpty)
        let late = try f.outbox.accept([Self.item("b", "five")], idempotency: nil, nowMs: now)
        guard case .queued(let lateID, "b")? = late.items.first else { Issue.record("\(late.items)"); return }
        _ = try f.outbox.retract([lateID], single: true, idempotency: nil, nowMs: now)
        #expect(try f.outbox.status(id: lateID)?.status == "cancelled")
        let reported = f.cancelled.withLock { $0 }
        #expect(reported.map(\.id) == [lateID] && reported.first?.reason == "retracted" && reported.first?.recipient == "b", "\(reported)")
    }

    /// The outbox-stress helper next to the test binary.
    static var stressBinary: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("outbox-stress").path) { return url.appendingPathComponent("outbox-stress").path }
        }
        return "outbox-stress"
    }

    @Test("a worker process SIGKILLed mid-run: another takes over, nothing lost, nothing resent without a collapse id")
    func killedWorkerLosesNothing() throws {
        let recipients = (0..<20).map { "k\($0)" }
        let f = try Fixture(recipients: recipients)
        let mock = try MockAPNs([:], kind: .native)
        defer { mock.stop() }
        // 2,000 rows: a quarter without a collapse id.
        var ids: [String] = []
        for round in 0..<100 {
            let items = recipients.enumerated().map { i, r in Self.item(r, "m\(round)", extra: i % 4 == 0 ? [("collapseId", .null)] : []) }
            ids += try f.outbox.accept(items, idempotency: nil, nowMs: unixTimeMilliseconds()).items.compactMap { if case .queued(let id, _) = $0 { id } else { nil } }
        }
        #expect(ids.count == 2000)
        let dir = try TemporaryDirectory("outbox-kill")
        defer { dir.remove() }
        let kekPath = dir.appending("kek").path
        var line = f.kek.hexLine()
        defer { SecretBytes.wipe(&line) }
        #expect(FileManager.default.createFile(atPath: kekPath, contents: Data(line), attributes: [.posixPermissions: 0o600]))
        let child = try PipedChild([Self.stressBinary, f.cs, kekPath, Self.appID, "127.0.0.1:\(mock.port)", mock.caFile, mock.p8Path,
                                    MockAPNs.keyID, MockAPNs.teamID, "1000"])
        #expect(child.readLine()?.hasPrefix("started") == true)
        // Kill it while it sends (some accepted, most not).
        let start = monotonicNanoseconds()
        while try Int(f.sql("SELECT count(*) FROM pushseal_outbox WHERE status = 'accepted'")) ?? 0 < 100 {
            guard monotonicNanoseconds() - start < 60_000_000_000 else { break }
            pauseThread(seconds: 0.005)
        }
        kill(child.pid, SIGKILL)
        #expect(child.finish().status == 128 + SIGKILL)
        let sentBefore = try mock.answered().count
        #expect(sentBefore < 2000, "the kill came mid-run")

        // Another instance takes over once the leases expire.
        var settings = OutboxWorker.Configuration()
        settings.leaseMs = 1000
        let w = try OutboxWorker(outbox: f.outbox, apns: try f.apns(mock), configuration: settings)
        try w.start()
        try f.waitUntilDone(limitSeconds: 120)
        w.drain()

        // Every row has one final status: accepted, or failed mayHaveBeenDelivered (no collapse id, in flight at the kill).
        let counts = try f.sql("SELECT k || '=' || count(*) FROM (SELECT status || ':' || coalesce(reason, '') || ':' || (collapse_id IS NULL) AS k FROM pushseal_outbox) t GROUP BY k ORDER BY k")
        for row in counts.split(separator: "\n") {
            #expect(row.hasPrefix("accepted::") || row.hasPrefix("failed:mayHaveBeenDelivered:true="), "\(row)")
        }
        print("outbox kill test: \(counts.split(separator: "\n").joined(separator: ", ")); mock requests before the kill \(sentBefore)")
        // The mock never took a notification without a collapse id twice.
        let noCollapse = Set(try f.sql("SELECT apns_id FROM pushseal_outbox WHERE collapse_id IS NULL").split(separator: "\n").map(String.init))
        var seen: [String: Int] = [:]
        for r in try mock.answered() { if let id = r["apnsId"] as? String { seen[id, default: 0] += 1 } }
        let twice = seen.filter { $0.value > 1 }
        #expect(twice.keys.allSatisfy { !noCollapse.contains($0) }, "resent without a collapse id: \(twice.filter { noCollapse.contains($0.key) })")
        // Every accepted row reached the mock.
        let accepted = try f.sql("SELECT apns_id FROM pushseal_outbox WHERE status = 'accepted'").split(separator: "\n").map(String.init)
        #expect(accepted.allSatisfy { seen[$0] != nil })
    }

    @Test("SIGTERM drains a worker process: it exits 0 and holds no lease; what it sent is recorded")
    func sigtermDrains() throws {
        let recipients = (0..<20).map { "d\($0)" }
        let f = try Fixture(recipients: recipients)
        let mock = try MockAPNs([:], kind: .native)
        defer { mock.stop() }
        for round in 0..<25 { _ = try f.outbox.accept(recipients.map { Self.item($0, "s\(round)") }, idempotency: nil, nowMs: unixTimeMilliseconds()) }
        let dir = try TemporaryDirectory("outbox-term")
        defer { dir.remove() }
        let kekPath = dir.appending("kek").path
        var line = f.kek.hexLine()
        defer { SecretBytes.wipe(&line) }
        #expect(FileManager.default.createFile(atPath: kekPath, contents: Data(line), attributes: [.posixPermissions: 0o600]))
        let child = try PipedChild([Self.stressBinary, f.cs, kekPath, Self.appID, "127.0.0.1:\(mock.port)", mock.caFile, mock.p8Path,
                                    MockAPNs.keyID, MockAPNs.teamID, "60000"])
        #expect(child.readLine()?.hasPrefix("started") == true)
        let start = monotonicNanoseconds()
        while try f.sql("SELECT count(*) FROM pushseal_outbox WHERE status <> 'queued'") == "0" {
            guard monotonicNanoseconds() - start < 60_000_000_000 else { break }
            pauseThread(seconds: 0.005)
        }
        kill(child.pid, SIGTERM)
        #expect(child.finish().status == 0)
        // Nothing left under a lease: every row is final or queued for the next instance.
        #expect(try f.sql("SELECT count(*) FROM pushseal_outbox WHERE status = 'sending'") == "0")
        let accepted = Int(try f.sql("SELECT count(*) FROM pushseal_outbox WHERE status = 'accepted'")) ?? -1
        #expect(accepted == (try mock.answered().count), "every request the mock answered has its outcome recorded")
    }
}
