import PushSealRegistry
import PushSealSystem

/// Deletes finished outbox rows once they are older than a retention time (push-gateway's
/// `--keep-finished`): without it the outbox grows by one row per notification for good. One
/// thread per instance; each pass deletes batches (``Configuration/batch`` rows, oldest
/// finished first) until fewer than a batch are left, then waits ``Configuration/intervalMs``.
/// Instances share the work without waiting for each other (`FOR UPDATE SKIP LOCKED`).
/// Queued and sending rows are never deleted, whatever their age.
///
/// What a deleted row takes with it: `GET /v1/notifications/{id}` answers 404 and a retract
/// of it `notFound` (the phone's copy stays until the app removes it). Idempotency answers
/// live 24 h on their own and are not affected.
public final class OutboxRetention: Sendable {
    /// How long rows stay and how the deleting is paced.
    public struct Configuration: Sendable {
        /// How long a row stays after its final status, ms (7 days by default). Must be > 0.
        public var keepFinishedMs: Int64 = 7 * 24 * 3600 * 1000
        /// Time between two passes, ms (60 s).
        public var intervalMs = 60_000
        /// Rows deleted per statement (5,000): one short transaction each.
        public var batch = 5_000
        /// A pause between two statements of one pass, ms (50): a backlog (the first start
        /// after an upgrade, a long outage) is worked off in steps that leave PostgreSQL room
        /// for the notifications being accepted and sent.
        public var pauseBetweenBatchesMs = 50
        /// Called after each pass that deleted rows, with their number (the gateway's log line
        /// and metric). Runs on the retention thread.
        public var onDeleted: (@Sendable (Int) -> Void)?

        /// The defaults above.
        public init() {}
    }

    private let rows: PostgresOutbox
    private let metrics: OutboxMetrics
    private let configuration: Configuration
    private let thread: PeriodicThread

    /// A retention for `outbox`'s rows.
    public init(outbox: Outbox, configuration: Configuration) {
        let (rows, metrics) = (outbox.rows, outbox.metrics)
        self.rows = rows
        self.metrics = metrics
        self.configuration = configuration
        thread = PeriodicThread(intervalMs: configuration.intervalMs, runsAtStart: true) { thread in
            _ = try? Self.pass(rows: rows, metrics: metrics, configuration: configuration, nowMs: unixTimeMilliseconds(), stopping: thread)
        }
    }

    /// One pass at `nowMs`: deletes batches until fewer than ``Configuration/batch`` rows were
    /// old enough (or ``stop()`` was asked for).
    /// - Returns: the rows deleted.
    /// - Throws: `RegistryError` (the database is away: the next pass tries again).
    @discardableResult
    public func pass(nowMs: Int64) throws -> Int {
        try Self.pass(rows: rows, metrics: metrics, configuration: configuration, nowMs: nowMs, stopping: thread)
    }

    private static func pass(rows: PostgresOutbox, metrics: OutboxMetrics, configuration: Configuration, nowMs: Int64, stopping: PeriodicThread) throws -> Int {
        let cutoff = nowMs - max(1, configuration.keepFinishedMs)
        var total = 0
        while !stopping.isStopping {
            let n = try rows.deleteFinished(before: cutoff, limit: configuration.batch)
            total += n
            if n < configuration.batch { break }
            if configuration.pauseBetweenBatchesMs > 0 { pauseThread(seconds: Double(configuration.pauseBetweenBatchesMs) / 1000) }
        }
        if total > 0 {
            metrics.deletedFinished(total)
            configuration.onDeleted?(total)
        }
        return total
    }

    /// Starts the thread (a first pass at once). Call once.
    /// - Throws: ``ServerError`` `.threadNotStarted` when the thread cannot be created.
    public func start() throws {
        guard thread.start() else {
            throw ServerError(.threadNotStarted, "cannot start the outbox retention thread")
        }
    }

    /// Stops the thread: a pass under way ends after its current statement. Idempotent.
    public func stop() { thread.stop() }
}
