import PushSealSystem

/// The outbox's counters and histograms as plain values, for the HTTP layer's `/metrics`
/// (`pushseal_gateway_*`): final outcomes by status and reason, items refused at accept by code,
/// seal latency (per accepted request) and APNs latency (send to final answer), provider token
/// mints and connections opened. Thread-safe (one lock); ``snapshot()`` copies.
public final class OutboxMetrics: Sendable {
    /// Histogram bucket upper bounds, in seconds (Prometheus `le`); the last bucket is `+Inf`.
    public static let bucketBoundsSeconds: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// A latency histogram: counts per bucket of ``OutboxMetrics/bucketBoundsSeconds`` (not
    /// cumulative; one more for `+Inf`), the sum in seconds and the count.
    public struct Histogram: Sendable, Hashable {
        /// Observations per bucket (`bucketBoundsSeconds.count + 1` entries).
        public var buckets = [Int](repeating: 0, count: OutboxMetrics.bucketBoundsSeconds.count + 1)
        /// Sum of the observations, seconds.
        public var sumSeconds = 0.0
        /// Observations.
        public var count = 0

        mutating func observe(nanoseconds: UInt64) {
            let s = Double(nanoseconds) / 1e9
            let i = OutboxMetrics.bucketBoundsSeconds.firstIndex { s <= $0 } ?? OutboxMetrics.bucketBoundsSeconds.count
            buckets[i] += 1
            sumSeconds += s
            count += 1
        }
    }

    /// Everything at one moment.
    public struct Snapshot: Sendable, Hashable {
        /// Final outcomes by (status, reason; `""` when none): `accepted`, `unregistered`,
        /// `rejected`, `failed`, `expired`.
        public var outcomes: [Pair: Int] = [:]
        /// Items refused at accept, by error code.
        public var refusedItems: [String: Int] = [:]
        /// Notifications sealed and stored.
        public var accepted = 0
        /// Seal latency per accept call.
        public var sealLatency = Histogram()
        /// APNs latency per notification (first send to final answer, retries included).
        public var apnsLatency = Histogram()
        /// Provider tokens this instance minted (the fleet's: `PostgresOutbox.providerTokenMints`).
        public var providerTokenMints = 0
        /// APNs connections this instance opened (a counter).
        public var connectionsOpened = 0
        /// APNs connections this instance has open now (a gauge).
        public var connectionsOpen = 0
        /// Notifications this instance has in flight to APNs now.
        public var inFlight = 0
        /// Notifications named by a retract request, by result: `queued` (a retract is queued
        /// for it), `cancelled` (it was still queued: never sent), `refused` (unknown, itself a
        /// retract, or the retract could not be sealed).
        public var retracts: [String: Int] = [:]
        /// Finished rows this instance's retention deleted (``OutboxRetention``).
        public var deletedFinished = 0
    }

    /// A (status, reason) pair.
    public struct Pair: Sendable, Hashable {
        /// Final status.
        public var status: String
        /// APNs' or the client's reason, `""` for none.
        public var reason: String

        /// A pair (fields as above).
        public init(status: String, reason: String) {
            self.status = status
            self.reason = reason
        }
    }

    private let state = Locked(Snapshot())

    /// Creates empty metrics.
    public init() {}

    /// A copy of every value now.
    public func snapshot() -> Snapshot { state.withLock { $0 } }

    func deletedFinished(_ count: Int) { state.withLock { $0.deletedFinished += count } }

    func retracted(_ result: String) { state.withLock { $0.retracts[result, default: 0] += 1 } }

    func itemRefused(code: String) { state.withLock { $0.refusedItems[code, default: 0] += 1 } }

    func sealed(count: Int, nanoseconds: UInt64) {
        state.withLock {
            $0.accepted += count
            $0.sealLatency.observe(nanoseconds: nanoseconds)
        }
    }

    func finished(status: String, reason: String?, apnsNanoseconds: UInt64?) {
        state.withLock {
            $0.outcomes[Pair(status: status, reason: reason ?? ""), default: 0] += 1
            if let n = apnsNanoseconds { $0.apnsLatency.observe(nanoseconds: n) }
        }
    }

    func client(mints: Int, connections: Int, open: Int, inFlight: Int) {
        state.withLock {
            $0.providerTokenMints = mints
            $0.connectionsOpened = connections
            $0.connectionsOpen = open
            $0.inFlight = inFlight
        }
    }
}
