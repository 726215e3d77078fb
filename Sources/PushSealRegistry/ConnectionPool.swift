import PushSealSystem

/// The process's connections to one registry database: idle connections are kept (at most
/// ``maxIdle``) and handed to one thread at a time; a lost connection is dropped and a new one
/// made, waiting with back-off (0.1 s doubling to 5 s) while the server is down or restarting,
/// for at most ``reconnectWaitSeconds`` in all before giving up with `.unavailable`.
///
/// **Outage** (reliability review R6): the first call that gives up marks the registry down for
/// the whole process; from then on every call tries once, without back-off, and fails at once
/// until a connection succeeds again (which clears the mark). So a long outage costs one wait,
/// not one per recipient and line. A stop request (SIGINT/SIGTERM after
/// `StopSignals.install()`) cuts a back-off short and fails the call at once.
///
/// Sendable (checked by hand): `idle` is guarded by `lock`; `downSince` is `Locked`; a
/// connection is used by the one thread that took it out of `idle`.
final class ConnectionPool: @unchecked Sendable {
    let conninfo: String
    /// Longest total wait for the server to come back, seconds (default 30).
    let reconnectWaitSeconds: Double
    /// Idle connections kept for reuse.
    let maxIdle = 8
    private let lock = PosixLock()
    private var idle: [PGConnection] = []
    /// How many times ``run(retryUnknownOutcome:maxWaitSeconds:_:)`` has run a body (each one
    /// or more statements, each a round trip): tests count a batch's database work with it.
    let bodyRuns = Locked(0)
    /// How many back-off pauses calls have waited (tests: none once the registry is marked down).
    let backoffPauses = Locked(0)
    /// Monotonic nanoseconds when a call gave up on the server, until a connection succeeds again.
    private let downSince = Locked<UInt64?>(nil)

    /// Whether a call gave up and no connection has succeeded since (calls fail at once).
    var isMarkedDown: Bool { downSince.withLock { $0 != nil } }

    /// First back-off step and its bound, seconds.
    static let firstBackoffSeconds = 0.1
    static let maxBackoffSeconds = 5.0

    init(conninfo: String, reconnectWaitSeconds: Double) {
        self.conninfo = conninfo
        self.reconnectWaitSeconds = reconnectWaitSeconds
    }

    private func take() -> PGConnection? {
        lock.lock()
        defer { lock.unlock() }
        return idle.popLast()
    }

    private func giveBack(_ c: PGConnection) {
        guard c.isOK, !c.committing, !c.discard else { return }
        lock.lock()
        defer { lock.unlock() }
        if idle.count < maxIdle { idle.append(c) }
    }

    /// Drops every idle connection (tests: after a server restart, or before one).
    func closeIdle() {
        lock.lock()
        idle.removeAll()
        lock.unlock()
    }

    /// Runs `body` on a connection. When the connection is lost (or cannot be made), waits with
    /// back-off and runs `body` again on a new one, unless the loss came while committing and
    /// `retryUnknownOutcome` is `false` (then `.outcomeUnknown`).
    /// - Parameter retryUnknownOutcome: `true` for a statement whose repetition is harmless
    ///   (a seal reservation: at worst a block over-counted).
    /// - Throws: `RegistryError` `.unavailable` after ``reconnectWaitSeconds``, at once while the
    ///   registry is marked down (see the type) or a stop is requested, `.outcomeUnknown`;
    ///   `body`'s errors.
    /// - Parameter maxWaitSeconds: overrides ``reconnectWaitSeconds`` (0: fail at the first loss).
    func run<R>(retryUnknownOutcome: Bool = false, maxWaitSeconds: Double? = nil, _ body: (PGConnection) throws -> R) throws -> R {
        let limit = maxWaitSeconds ?? reconnectWaitSeconds
        var waited = 0.0
        var backoff = Self.firstBackoffSeconds
        while true {
            var lostWhileCommitting = false
            do {
                let c = try take() ?? PGConnection(conninfo)
                do {
                    bodyRuns.withLock { $0 += 1 }
                    let r = try body(c)
                    downSince.withLock { $0 = nil }
                    giveBack(c)
                    return r
                } catch let e as RegistryError where e.code == .unavailable {
                    lostWhileCommitting = c.committing
                    throw e
                } catch {
                    // A statement error inside a transaction: the caller rolled back.
                    giveBack(c)
                    throw error
                }
            } catch let e as RegistryError where e.code == .unavailable {
                if lostWhileCommitting && !retryUnknownOutcome {
                    throw RegistryError(.outcomeUnknown,
                        "the registry connection was lost while committing; the change may or may not be stored: run the command again (\(e.reason))")
                }
                closeIdle()
                let now = monotonicNanoseconds()
                if let since = downSince.withLock({ $0 }) {
                    throw RegistryError(.unavailable,
                        "\(e.reason) (the registry has not answered for \((now &- since) / 1_000_000_000) s: failing at once until it answers again)", sqlState: e.sqlState)
                }
                if StopSignals.isRequested {
                    throw RegistryError(.unavailable, "\(e.reason) (not retried: stopping on a signal)", sqlState: e.sqlState)
                }
                guard waited + backoff <= limit else {
                    if limit > 0 { downSince.withLock { $0 = $0 ?? now } }
                    throw RegistryError(.unavailable, "\(e.reason) (\(limit == 0 ? "not retried" : "gave up after \(Int(waited.rounded())) s of retries"))", sqlState: e.sqlState)
                }
                backoffPauses.withLock { $0 += 1 }
                guard Self.pause(backoff) else {
                    throw RegistryError(.unavailable, "\(e.reason) (stopped waiting for the registry on a signal)", sqlState: e.sqlState)
                }
                waited += backoff
                backoff = min(backoff * 2, Self.maxBackoffSeconds)
            }
        }
    }

    /// Runs `body` inside `BEGIN … COMMIT` (rolled back when it throws), retried on a new
    /// connection when the connection is lost before the commit.
    func transaction<R>(_ body: (PGConnection) throws -> R) throws -> R {
        try run { c in
            try c.exec("BEGIN")
            let r: R
            do {
                r = try body(c)
            } catch {
                if c.isOK { _ = try? c.exec("ROLLBACK") }
                throw error
            }
            c.committing = true
            try c.exec("COMMIT")
            c.committing = false
            return r
        }
    }

    /// A back-off pause that a stop request cuts short; `false` when it did.
    static func pause(_ seconds: Double) -> Bool { StopSignals.pause(seconds: seconds) }
}
