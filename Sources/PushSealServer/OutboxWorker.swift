import PushSealCrypto
public import PushSealAPNs
import PushSealRegistry
import PushSealSystem

/// Sends what the ``Outbox`` holds: one thread claims batches of queued rows under a lease
/// (`FOR UPDATE SKIP LOCKED`, so any number of workers on one database never claim one row
/// twice), sends them through one ``APNsClient`` (docs/apns.md's retry table), and writes the
/// final outcomes in batches. It wakes on `LISTEN/NOTIFY` (an enqueue committed) and polls as
/// the fallback; a heartbeat thread renews its leases every third of the lease while it holds
/// rows (requests in flight, or outcomes not yet written), and the loop returns the rows of dead
/// instances (``PostgresOutbox/reap(nowMs:)``). A 410 removes the token in the transaction that
/// records the outcome (registered before the 410's timestamp); a row past its TTL ends
/// `expired` unsent; a row whose row MAC fails ends `failed` `rowAuthenticationFailed` unsent.
///
/// ``drain()`` (SIGTERM): stops claiming, lets every request in flight finish, writes their
/// outcomes, closes the connections; the heartbeat keeps the leases until the last outcome is
/// written, so no other instance reaps a row the draining one is still retrying. A SIGKILL
/// loses nothing committed: the rows it held are reaped when their lease expires (resent when
/// they have a collapse id, else `failed` `mayHaveBeenDelivered`).
public final class OutboxWorker: Sendable {
    /// How the worker claims and leases.
    public struct Configuration: Sendable {
        /// This instance's name in the leases (random by default; unique per process).
        public var instanceID = "instance-" + Hex.encode(SecureRandom.bytes(8))
        /// Rows claimed at a time at most (500).
        public var claimBatch = 500
        /// Notifications in flight to APNs at most (1000; the client's window too).
        public var maxInFlight = 1000
        /// A claim's lease, ms (60 s): renewed every third of it while the worker holds the row
        /// (in flight, or its outcome not yet written; while it drains too); a dead instance's
        /// rows come back this long after its last renewal.
        public var leaseMs: Int64 = 60_000
        /// The longest wait without a notification before looking again, ms (1000).
        public var pollIntervalMs = 1000
        /// The shortest time between two claims, ms (20), unless the first was full: the
        /// `NOTIFY`s of every instance's commits in that time cost one claim, not one each.
        /// At 500 single requests/s each instance claimed ~500 times a second (most claims
        /// empty: the other instance had the row), a third of PostgreSQL's statements
        /// (bench-gateway). It adds at most this much to the time from the 202 to the send.
        public var claimIntervalMs = 20
        /// The shortest time between two writes of outcomes, ms (20), unless `claimBatch`
        /// outcomes wait or the worker drains: the outcomes of that time share one write.
        public var outcomeWriteIntervalMs = 20
        /// Called once per final outcome this instance wrote, after its transaction committed
        /// (and per row its reaper ended `failed` `mayHaveBeenDelivered`): the gateway's
        /// `outcome` log line. Runs on the worker's thread: keep it short.
        public var onFinal: (@Sendable (FinalOutcome) -> Void)?

        /// The defaults above.
        public init() {}
    }

    /// A final outcome written to the outbox, as the log shows it: ids, recipient, status,
    /// reason, attempts; never the payload or the device token.
    public struct FinalOutcome: Sendable, Hashable {
        /// The notification id (the gateway's).
        public var id: String
        /// The recipient it was sealed for.
        public var recipient: String
        /// The `apns-id` it was sent with (made at accept time).
        public var apnsID: String
        /// `accepted`, `unregistered`, `rejected`, `failed`, `expired`, or `cancelled` (reported by
        /// the outbox itself, ``Outbox/Configuration/onCancelled``).
        public var status: String
        /// APNs' HTTP status, when it answered.
        public var httpStatus: Int?
        /// APNs' reason or the gateway's (`ttlPassed`, `mayHaveBeenDelivered`, …).
        public var reason: String?
        /// `apns-unique-id` (development environment), when APNs gave one.
        public var apnsUniqueID: String?
        /// APNs requests made for it in all (earlier instances included).
        public var attempts: Int
    }

    private struct InFlight: Sendable {
        var id: String
        var startedAt: UInt64
        var recipient: String
        var apnsID: String
        var priorAttempts: Int
    }

    private struct State: Sendable {
        var inFlight: [Int: InFlight] = [:]
        var completions: [PostgresOutbox.Completion] = []
        /// Per completion not yet written: what the log line needs besides it.
        var pendingFinals: [String: FinalOutcome] = [:]
        var badTokens: [APNsInvalidation] = []
        var nextTag = 0
        var stopping = false
    }

    /// The outbox sent from.
    public let outbox: Outbox
    /// The configuration.
    public let configuration: Configuration
    /// The APNs client.
    public let client: APNsClient
    /// The provider token cache (shared through the registry: the fleet mints at most once per 20 minutes).
    public let tokens: ProviderTokenCache
    private let state = Locked(State())
    private let stopped = Locked<Bool>(false)
    private let claims = Locked(0)
    /// Renews the leases every third of the lease while the worker holds rows, from ``start()``
    /// until the last outcome is written at the end of ``drain()``: on its own thread, because
    /// after ``drain()`` the loop has ended while the client still retries what it holds (with
    /// APNs unreachable, minutes), and a lease that ran out then let another instance's reaper
    /// resend the row or end it `failed` `mayHaveBeenDelivered`, and this instance's outcome
    /// was dropped.
    private let heartbeat: PeriodicThread

    /// How many claims this worker has made (each one round trip to the database, whatever it
    /// found): with ``Configuration/claimIntervalMs`` a stream of single commits costs a claim
    /// per interval, not one per commit.
    public var claimCount: Int { claims.withLock { $0 } }
    private let listener: PostgresOutbox.Listener

    /// Makes the worker and its APNs client (connections open on the first send); ``start()``
    /// runs it.
    /// - Throws: `APNsError` `.badProviderKey`, `.badEndpoint`, `.transportUnavailable`.
    public init(outbox: Outbox, apns: APNsProviderConfiguration, configuration: Configuration = Configuration()) throws {
        self.outbox = outbox
        self.configuration = configuration
        var settings = apns.client
        settings.maxInFlight = configuration.maxInFlight
        // One provider token per (team, key) for the whole fleet, in the registry.
        tokens = ProviderTokenCache(key: try apns.tokenCache().key, shared: RegistryProviderTokens(rows: outbox.rows))
        listener = outbox.rows.listener()
        let state = self.state, metrics = outbox.metrics, listener = self.listener
        let rows = outbox.rows, owner = configuration.instanceID, leaseMs = configuration.leaseMs
        heartbeat = PeriodicThread(intervalMs: Int(leaseMs / 3), runsAtStart: false) { _ in
            // Rows held: requests in flight, and outcomes not yet written (``pendingFinals``
            // keeps them until their write succeeded).
            guard state.withLock({ !$0.inFlight.isEmpty || !$0.pendingFinals.isEmpty }) else { return }
            _ = try? rows.renewLeases(owner: owner, leaseMs: leaseMs, nowMs: unixTimeMilliseconds())
        }
        client = try APNsClient(configuration: settings, tokens: tokens, onOutcome: { o in
            let first = state.withLock { s -> Bool in
                guard let f = s.inFlight.removeValue(forKey: o.tag) else { return false }
                defer { s.completions.append(PostgresOutbox.Completion(
                    id: f.id, status: o.kind.rawValue, httpStatus: o.status, reason: o.reason, apnsUniqueID: o.apnsUniqueID,
                    attempts: o.attempts, unregisteredAtMs: o.kind == .unregistered ? o.timestampMilliseconds : nil)) }
                s.pendingFinals[f.id] = FinalOutcome(id: f.id, recipient: f.recipient, apnsID: f.apnsID, status: o.kind.rawValue, httpStatus: o.status,
                                                     reason: o.reason, apnsUniqueID: o.apnsUniqueID, attempts: f.priorAttempts + o.attempts)
                return s.completions.isEmpty
            }
            // The first outcome since the last write wakes the worker to write it (later ones
            // join that write): no polling while requests are in flight.
            if first { listener.wake() }
            metrics.finished(status: o.kind.rawValue, reason: o.reason, apnsNanoseconds: o.latencyNanoseconds)
        }, onInvalidation: { i in
            // 410s are applied with their outcome; BadDeviceToken the guard released, here.
            if i.timestampMilliseconds == nil {
                state.withLock { $0.badTokens.append(i) }
                listener.wake()
            }
        })
    }

    /// Starts the worker's thread and its lease heartbeat's.
    /// - Throws: ``ServerError`` `.unsupportedStore` never; `APNsError` `.transportUnavailable`
    ///   when a thread cannot start.
    public func start() throws {
        guard withAllSignalsBlocked({ heartbeat.start() }) else {
            throw APNsError(.transportUnavailable, "cannot start the outbox worker's lease heartbeat thread")
        }
        guard withAllSignalsBlocked({ startDetachedThread { [self] in run() } }) else {
            heartbeat.stop()
            throw APNsError(.transportUnavailable, "cannot start the outbox worker's thread")
        }
    }

    /// Stops claiming, waits for every request in flight, writes the outcomes, closes the
    /// connections and returns (SIGTERM). Rows claimed and never sent do not exist: every
    /// claimed row is handed to the client at once. The leases stay renewed until the last
    /// outcome is written, however long the client's retries take. Call once, after ``start()``.
    public func drain() {
        state.withLock { $0.stopping = true }
        listener.interrupt()
        while !stopped.withLock({ $0 }) { pauseThread(seconds: 0.01) }
    }

    /// `true` once ``drain()`` finished.
    public var isStopped: Bool { stopped.withLock { $0 } }

    /// The loop: claims when a `NOTIFY` came (an enqueue committed, rows reaped or released),
    /// when the last claim was full (more may wait), or at the poll interval (the fallback);
    /// writes outcomes when the APNs client's first outcome since the last write wakes it
    /// (``PostgresOutbox/Listener/wake()``). It used to look again every 10 ms while requests
    /// were in flight: a claim transaction (four round trips) per 10 ms and per `NOTIFY` on
    /// each instance, most of them empty, which took PostgreSQL's CPU from the requests being
    /// accepted (bench-gateway, single requests at 500/s). Two claims that were not full are
    /// at least ``Configuration/claimIntervalMs`` apart, two writes of outcomes at least
    /// ``Configuration/outcomeWriteIntervalMs``.
    private func run() {
        let rows = outbox.rows
        var lastReap: Int64 = 0
        var claimDue = true
        // Monotonic ns: the last claim that was not full, the last look at the table (claim or
        // poll), the last write of outcomes.
        var lastClaim: UInt64 = 0, lastLook = monotonicNanoseconds(), lastWrite: UInt64 = 0
        /// Milliseconds left until `intervalMs` has passed since `since` (0: it has).
        func remainingMs(since: UInt64, intervalMs: Int) -> Int {
            let elapsed = Int((monotonicNanoseconds() &- since) / 1_000_000)
            return since == 0 ? 0 : max(0, intervalMs - elapsed)
        }
        /// Writes the outcomes when the interval since the last write has passed or a claim's
        /// worth waits; the milliseconds until the next write is due, when some wait.
        func writeIfDue() -> Int? {
            let (waiting, bad) = state.withLock { ($0.completions.count, $0.badTokens.count) }
            guard waiting + bad > 0 else {
                updateClientMetrics()
                return nil
            }
            let wait = waiting >= configuration.claimBatch ? 0 : remainingMs(since: lastWrite, intervalMs: configuration.outcomeWriteIntervalMs)
            guard wait == 0 else { return wait }
            lastWrite = monotonicNanoseconds()
            return flush() ? nil : configuration.outcomeWriteIntervalMs
        }
        while !state.withLock({ $0.stopping }) {
            let now = unixTimeMilliseconds()
            if now - lastReap >= configuration.leaseMs / 4 {
                if let reaped = try? rows.reap(nowMs: now) {
                    lastReap = now
                    for r in reaped.failed {
                        outbox.metrics.finished(status: "failed", reason: "mayHaveBeenDelivered", apnsNanoseconds: nil)
                        configuration.onFinal?(FinalOutcome(id: r.id, recipient: r.recipient, apnsID: r.apnsID, status: "failed",
                                                            reason: "mayHaveBeenDelivered", attempts: r.attempts))
                    }
                }
            }
            let inFlight = state.withLock { $0.inFlight.count }
            _ = writeIfDue()
            var claimed: [PostgresOutbox.Claimed] = []
            let room = configuration.maxInFlight - inFlight
            let claimWait = remainingMs(since: lastClaim, intervalMs: configuration.claimIntervalMs)
            if room > 0, claimDue, claimWait == 0 {
                let limit = min(configuration.claimBatch, room)
                lastLook = monotonicNanoseconds()
                claims.withLock { $0 += 1 }
                do {
                    claimed = try outbox.claim(owner: configuration.instanceID, limit: limit, leaseMs: configuration.leaseMs, nowMs: now)
                } catch {
                    // The database is away: look again after a wait (the rows stay where they are).
                    _ = listener.wait(timeoutMs: configuration.pollIntervalMs)
                    continue
                }
                // A full claim may have left rows behind: claim again without waiting.
                claimDue = claimed.count == limit
                lastClaim = claimDue ? 0 : lastLook
            }
            for c in claimed { dispatch(c, nowMs: now) }
            let writeWait = writeIfDue()
            if claimDue && room > 0 && claimWait == 0 { continue }
            // Wake at the poll interval, or for a claim or a write waiting for its interval
            // when it is due (the heartbeat renews the leases).
            var timeout = max(1, configuration.pollIntervalMs - Int((monotonicNanoseconds() &- lastLook) / 1_000_000))
            if claimDue && room > 0 { timeout = min(timeout, max(1, remainingMs(since: lastClaim, intervalMs: configuration.claimIntervalMs))) }
            if let writeWait { timeout = min(timeout, max(1, writeWait)) }
            let notified = listener.wait(timeoutMs: timeout)
            // Claim after a NOTIFY or at the poll interval (polling: a NOTIFY may be lost with
            // its connection); a wake for outcomes alone only writes them.
            if notified || monotonicNanoseconds() &- lastLook >= UInt64(max(0, configuration.pollIntervalMs - 1)) * 1_000_000 { claimDue = true }
        }
        client.finish()
        var tries = 0
        while !flush(), tries < 100 {
            tries += 1
            pauseThread(seconds: 0.1)
        }
        // Everything held is written (or, the database away, left to the reaper): no lease to keep.
        heartbeat.stop()
        listener.close()
        stopped.withLock { $0 = true }
    }

    private func dispatch(_ c: PostgresOutbox.Claimed, nowMs: Int64) {
        let r = c.row
        if !c.authentic {
            finish(c, "failed", reason: "rowAuthenticationFailed")
            return
        }
        if let expires = r.expiresAtMs, expires < nowMs {
            finish(c, "expired", reason: "ttlPassed")
            return
        }
        let n = APNsNotification(deviceToken: r.deviceToken, payload: r.payload, pushType: APNsPushType(rawValue: r.pushType) ?? .alert,
                                 topic: r.topic, priority: r.priority, expiration: r.expiration, collapseID: r.collapseID, apnsID: r.apnsID)
        let tag = state.withLock { s -> Int in
            s.nextTag += 1
            s.inFlight[s.nextTag] = InFlight(id: r.id, startedAt: monotonicNanoseconds(), recipient: r.recipient, apnsID: r.apnsID, priorAttempts: c.attempts)
            return s.nextTag
        }
        do {
            try client.send(n, tag: tag)
        } catch let e as APNsError {
            state.withLock { _ = $0.inFlight.removeValue(forKey: tag) }
            finish(c, "rejected", reason: e.code.name)
        } catch {
            state.withLock { _ = $0.inFlight.removeValue(forKey: tag) }
            finish(c, "rejected", reason: "invalidNotification")
        }
    }

    /// Ends a claimed row unsent.
    private func finish(_ c: PostgresOutbox.Claimed, _ status: String, reason: String) {
        let r = c.row
        state.withLock {
            $0.completions.append(PostgresOutbox.Completion(id: r.id, status: status, reason: reason))
            $0.pendingFinals[r.id] = FinalOutcome(id: r.id, recipient: r.recipient, apnsID: r.apnsID, status: status, reason: reason, attempts: c.attempts)
        }
        outbox.metrics.finished(status: status, reason: reason, apnsNanoseconds: nil)
    }

    /// The APNs client's gauges and counters for `/metrics`.
    private func updateClientMetrics() {
        let statistics = client.statistics
        outbox.metrics.client(mints: tokens.mintCount, connections: statistics.connectionsOpened, open: statistics.connectionsOpen,
                              inFlight: state.withLock { $0.inFlight.count })
    }

    /// Writes the outcomes gathered so far in one transaction (and the guard's BadDeviceToken
    /// invalidations); `true` when nothing is left to write.
    @discardableResult
    private func flush() -> Bool {
        let (batch, bad) = state.withLock { s -> ([PostgresOutbox.Completion], [APNsInvalidation]) in
            defer { s.completions = []; s.badTokens = [] }
            return (s.completions, s.badTokens)
        }
        updateClientMetrics()
        var ok = true
        if !batch.isEmpty {
            do {
                let written = try outbox.rows.complete(batch, owner: configuration.instanceID, nowMs: unixTimeMilliseconds()).written
                let finals = state.withLock { s in batch.compactMap { s.pendingFinals.removeValue(forKey: $0.id) } }
                if let onFinal = configuration.onFinal {
                    for f in finals where written.contains(f.id) { onFinal(f) }
                }
            } catch {
                state.withLock { $0.completions = batch + $0.completions }
                ok = false
            }
        }
        if !bad.isEmpty {
            do {
                _ = try outbox.store.apply(bad, appID: outbox.configuration.sealer.appID, nowMilliseconds: unixTimeMilliseconds())
            } catch {
                state.withLock { $0.badTokens = bad + $0.badTokens }
                ok = false
            }
        }
        return ok
    }
}

/// The registry's `pushseal_provider_tokens` row as the fleet's provider token (one per team and
/// key, minted under the row's lock, stored sealed under the KEK).
struct RegistryProviderTokens: SharedProviderTokens {
    let rows: PostgresOutbox

    func token(key: ProviderKey, refreshAfterSeconds: Int64, rejectedGeneration: Int?,
               mint: (Int64) throws -> String) throws -> (jwt: String, issuedAt: Int64, generation: Int)? {
        guard let t = try rows.providerToken(teamID: key.teamID, keyID: key.keyID, refreshAfterSeconds: refreshAfterSeconds,
                                             rejectedGeneration: rejectedGeneration.map(Int64.init), nowSeconds: unixTimeSeconds(), mint: mint) else { return nil }
        return (t.jwt, t.issuedAt, Int(t.generation))
    }
}
