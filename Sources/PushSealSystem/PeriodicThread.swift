import Dispatch

/// A detached thread that runs a body every ``intervalMs`` until ``stop()`` (push-gateway's
/// outbox retention and database watch). The first run is at ``start()`` or one interval
/// after it (`runsAtStart`); a run under way is never interrupted: ``stop()`` waits for it.
/// The body is given the thread: a long run asks its ``isStopping`` between steps.
public final class PeriodicThread: Sendable {
    /// Time between the end of one run and the start of the next, ms (at least 1).
    public let intervalMs: Int
    /// Whether the first run is at ``start()`` rather than one interval after it.
    public let runsAtStart: Bool
    private let body: @Sendable (PeriodicThread) -> Void
    private let stopRequested = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let state = Locked((started: false, stopping: false))

    /// A thread (not started) that runs `body(thread)` every `intervalMs` ms, the first time
    /// at start when `runsAtStart`.
    public init(intervalMs: Int, runsAtStart: Bool, body: @escaping @Sendable (PeriodicThread) -> Void) {
        self.intervalMs = max(1, intervalMs)
        self.runsAtStart = runsAtStart
        self.body = body
    }

    /// Whether ``stop()`` was called: a long run (many statements) checks it between steps.
    public var isStopping: Bool { state.withLock { $0.stopping } }

    /// Starts the thread. Call once; after ``stop()`` it does nothing.
    /// - Returns: `false` when the thread could not be created (the body never runs then).
    @discardableResult
    public func start() -> Bool {
        let go = state.withLock { s -> Bool in
            guard !s.started, !s.stopping else { return false }
            s.started = true
            return true
        }
        guard go else { return false }
        let started = startDetachedThread { [self] in
            if runsAtStart { body(self) }
            while stopRequested.wait(timeout: .now() + .milliseconds(intervalMs)) == .timedOut {
                body(self)
            }
            ended.signal()
        }
        if !started { state.withLock { $0.started = false } }
        return started
    }

    /// Stops the thread and returns when it has ended (after the run under way, if any).
    /// Idempotent; safe before ``start()``.
    public func stop() {
        let wasRunning = state.withLock { s -> Bool in
            defer { s.stopping = true }
            return s.started && !s.stopping
        }
        guard wasRunning else { return }
        stopRequested.signal()
        ended.wait()
    }
}
