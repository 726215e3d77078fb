import PushSealSystem

/// The awaitable side of ``APNsClient``: `await client.send(notification)` returns the
/// notification's one final ``APNsOutcome``, on the same engine (connections, retries, provider
/// tokens, the in-flight window) as ``APNsClient/send(_:tag:)``.
///
/// A client made with ``APNsClient/init(configuration:tokens:onInvalidation:onOtherOutcome:)``
/// routes every outcome of ``APNsClient/send(_:)`` to the task waiting for it (by a process-wide
/// unique tag, so many such clients can run at once). Outcomes of notifications given to
/// ``APNsClient/send(_:tag:)`` on the same client go to `onOtherOutcome`.
extension APNsClient {
    /// Starts a client whose outcomes are awaited through ``send(_:)``.
    /// - Parameters:
    ///   - configuration: where and how to connect (``Configuration``).
    ///   - tokens: the provider token cache of the (team, key) (one per key, shared by its clients).
    ///   - onInvalidation: each token to delete (a 410, or a `BadDeviceToken` the
    ///     ``InvalidationGuard`` let through), on the transfer thread; keep it short (queue the
    ///     store change, do not run it there).
    ///   - onOtherOutcome: outcomes of notifications given to ``send(_:tag:)`` instead.
    /// - Throws: `APNsError` `.transportUnavailable`, `.badEndpoint` (as the designated initializer).
    public convenience init(configuration: Configuration, tokens: ProviderTokenCache,
                            onInvalidation: @escaping @Sendable (APNsInvalidation) -> Void = { _ in },
                            onOtherOutcome: @escaping @Sendable (APNsOutcome) -> Void = { _ in }) throws {
        try self.init(configuration: configuration, tokens: tokens, onOutcome: { outcome in
            if let waiter = AsyncOutcomes.shared.take(outcome.tag) {
                waiter.resume(returning: outcome)
            } else {
                onOtherOutcome(outcome)
            }
        }, onInvalidation: onInvalidation)
    }

    /// Sends one notification and returns its final outcome (after the retries of
    /// ``Configuration/retry``). Waits first, without blocking the caller's task, while
    /// ``Configuration/maxInFlight`` notifications have no outcome yet (only then a thread of its
    /// own waits for the place: keep the callers' notifications in flight under that bound).
    ///
    /// Only for a client made with ``init(configuration:tokens:onInvalidation:onOtherOutcome:)``:
    /// on another client the outcome goes to its `onOutcome` handler and this call never returns.
    /// A notification ``APNsNotification/validate()`` refuses is not sent: its outcome is
    /// `rejected` with no status, `attempts` 0 and the error's code as `reason`
    /// (`payloadTooLarge`, `badDeviceToken`, …).
    /// - Returns: the outcome; its `tag` is the process-wide tag this call chose.
    public func send(_ notification: APNsNotification) async -> APNsOutcome {
        let tag = AsyncOutcomes.shared.nextTag()
        do {
            try notification.validate()
        } catch let e as APNsError {
            return Self.refused(notification, tag: tag, reason: e.code.name)
        } catch {
            return Self.refused(notification, tag: tag, reason: "invalidNotification")
        }
        return await withCheckedContinuation { (waiter: CheckedContinuation<APNsOutcome, Never>) in
            AsyncOutcomes.shared.put(tag, waiter)
            if window.tryAcquire(registeringWait: false) {
                engine.submit(notification, tag: tag, at: configuration.clock.monotonicNanoseconds())
                return
            }
            // The window is full: send(_:tag:) waits for a place, never on a task's thread.
            let started = startDetachedThread { [self] in
                do {
                    try send(notification, tag: tag)
                } catch {
                    // Validated above; a throw here resumes the waiter with the same refusal.
                    AsyncOutcomes.shared.take(tag)?.resume(returning: Self.refused(notification, tag: tag, reason: "invalidNotification"))
                }
            }
            if !started {
                AsyncOutcomes.shared.take(tag)?.resume(returning: Self.refused(notification, tag: tag, reason: "transportUnavailable"))
            }
        }
    }

    /// The outcome of a notification that was not sent.
    static func refused(_ n: APNsNotification, tag: Int, reason: String) -> APNsOutcome {
        APNsOutcome(tag: tag, deviceToken: n.deviceToken, kind: .rejected, status: nil, reason: reason, apnsID: n.apnsID ?? "",
                    apnsUniqueID: nil, timestampMilliseconds: nil, attempts: 0, connection: nil, latencyNanoseconds: 0,
                    invalidatesToken: false)
    }
}

/// The tasks waiting in ``APNsClient/send(_:)``, by tag (process-wide, so tags never collide
/// between clients).
final class AsyncOutcomes: Sendable {
    static let shared = AsyncOutcomes()

    private let state = Locked(State())
    private struct State: Sendable {
        var next = 1 << 48
        var waiting: [Int: CheckedContinuation<APNsOutcome, Never>] = [:]
    }

    /// A tag no other awaited send uses.
    func nextTag() -> Int { state.withLock { s in s.next += 1; return s.next } }

    func put(_ tag: Int, _ waiter: CheckedContinuation<APNsOutcome, Never>) { state.withLock { $0.waiting[tag] = waiter } }

    /// The waiter of `tag`, removed (each outcome resumes it once).
    @discardableResult
    func take(_ tag: Int) -> CheckedContinuation<APNsOutcome, Never>? { state.withLock { $0.waiting.removeValue(forKey: tag) } }
}
