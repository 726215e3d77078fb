import Dispatch
import PushSealSystem

/// Watches whether the database answers and reports each change once (push-gateway's
/// `database` log lines): a thread runs `check` every ``intervalMs`` and calls `onChange` when
/// the answer turns from success to failure (with the error's code) or back. The database is
/// taken to be up at start (serve checked it before listening). Requests and `/readyz` keep
/// answering on their own; this only gives an operator the outage's start and end in the log.
public final class DatabaseWatch: Sendable {
    /// Time between two checks, ms.
    public let intervalMs: Int
    private let check: @Sendable () throws -> Void
    private let onChange: @Sendable (_ up: Bool, _ code: String?) -> Void
    private let stopRequested = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let running = Locked(false)

    /// A watch that runs `check` (throws when the database does not answer) every
    /// `intervalMs` (2 s by default) and calls `onChange(up, code)` on each change; `code` is
    /// the error's code (`unavailable`, `schemaTooOld`, …) when it went down.
    public init(intervalMs: Int = 2000, check: @escaping @Sendable () throws -> Void,
                onChange: @escaping @Sendable (_ up: Bool, _ code: String?) -> Void) {
        self.intervalMs = max(1, intervalMs)
        self.check = check
        self.onChange = onChange
    }

    /// Starts the thread. Call once.
    /// - Returns: `false` when the thread could not be created (nothing is watched then).
    @discardableResult
    public func start() -> Bool {
        running.withLock { $0 = true }
        let started = startDetachedThread { [self] in
            var up = true
            while stopRequested.wait(timeout: .now() + .milliseconds(intervalMs)) == .timedOut {
                do {
                    try check()
                    if !up { up = true; onChange(true, nil) }
                } catch let e as any CodedError {
                    if up { up = false; onChange(false, "\(e.code)") }
                } catch {
                    if up { up = false; onChange(false, "error") }
                }
            }
            ended.signal()
        }
        if !started { running.withLock { $0 = false } }
        return started
    }

    /// Stops the thread (a check under way finishes first). Idempotent.
    public func stop() {
        let wasRunning = running.withLock { r -> Bool in defer { r = false }; return r }
        guard wasRunning else { return }
        stopRequested.signal()
        ended.wait()
    }
}
