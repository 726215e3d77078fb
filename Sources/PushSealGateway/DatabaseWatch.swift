import PushSealSystem

/// Watches whether the database answers and reports each change once (push-gateway's
/// `database` log lines): a thread runs `check` every ``intervalMs`` and calls `onChange` when
/// the answer turns from success to failure (with the error's code) or back. The database is
/// taken to be up at start (serve checked it before listening). Requests and `/readyz` keep
/// answering on their own; this only gives an operator the outage's start and end in the log.
public final class DatabaseWatch: Sendable {
    /// Time between two checks, ms.
    public let intervalMs: Int
    private let thread: PeriodicThread

    /// A watch that runs `check` (throws when the database does not answer) every
    /// `intervalMs` (2 s by default) and calls `onChange(up, code)` on each change; `code` is
    /// the error's code (`unavailable`, `schemaTooOld`, …) when it went down.
    public init(intervalMs: Int = 2000, check: @escaping @Sendable () throws -> Void,
                onChange: @escaping @Sendable (_ up: Bool, _ code: String?) -> Void) {
        self.intervalMs = max(1, intervalMs)
        let up = Locked(true)
        thread = PeriodicThread(intervalMs: self.intervalMs, runsAtStart: false) { _ in
            let code: String?
            do {
                try check()
                code = nil
            } catch let e as any CodedError {
                code = "\(e.code)"
            } catch {
                code = "error"
            }
            let changed = up.withLock { u -> Bool in
                defer { u = code == nil }
                return u != (code == nil)
            }
            if changed { onChange(code == nil, code) }
        }
    }

    /// Starts the thread. Call once.
    /// - Returns: `false` when the thread could not be created (nothing is watched then).
    @discardableResult
    public func start() -> Bool { thread.start() }

    /// Stops the thread (a check under way finishes first). Idempotent.
    public func stop() { thread.stop() }
}
