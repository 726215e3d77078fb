import Dispatch
import PushSealSystem

/// The in-flight window of an ``APNsClient``: at most ``capacity`` notifications without an
/// outcome. ``acquire()`` (the sending threads) takes a place, waiting while none is free;
/// the transfer thread counts outcomes with ``noteFinished()`` and gives their places back
/// once per round with ``release()``, one lock for the whole round. A waiting sender is woken
/// only when ``resumeThreshold`` or fewer are in flight (``capacity`` minus a batch of
/// `capacity / 16`, 1…64 places), so it sends a batch per wake-up instead of one notification
/// per outcome (a futex wait and wake each).
///
/// `@unchecked Sendable` is safe: `inFlight` and `waiters` are reached only under `lock`;
/// `unreleased` only on the transfer thread (``noteFinished()`` and ``release()`` are called
/// there alone); the semaphore is thread-safe.
final class APNsWindow: @unchecked Sendable {
    /// Places in all (≥ 1).
    let capacity: Int
    /// A waiting sender is woken when this many or fewer notifications are in flight.
    let resumeThreshold: Int
    private let lock = PosixLock()
    private var inFlight = 0
    private var waiters = 0
    private let wakeUp = DispatchSemaphore(value: 0)
    private var unreleased = 0

    /// A window of `capacity` places (at least 1).
    init(capacity: Int) {
        self.capacity = max(1, capacity)
        resumeThreshold = self.capacity - min(64, max(1, self.capacity / 16))
    }

    /// Takes a place, waiting while all are taken (any thread).
    func acquire() {
        while !tryAcquire(registeringWait: true) { wakeUp.wait() }
    }

    /// Takes a place if one is free (`true`). Else, with `registeringWait`, the caller is
    /// counted as waiting: the next ``release()`` that frees enough signals it once (a wake-up
    /// that may come before the caller waits; the semaphore keeps it).
    func tryAcquire(registeringWait: Bool) -> Bool {
        lock.withLock {
            if inFlight < capacity {
                inFlight += 1
                return true
            }
            if registeringWait { waiters += 1 }
            return false
        }
    }

    /// One notification has its outcome (the transfer thread); its place is given back at the
    /// next ``release()``.
    func noteFinished() { unreleased += 1 }

    /// Gives back the places of the outcomes noted since the last call and wakes the waiting
    /// senders when enough are free (the transfer thread, once per round).
    /// - Returns: how many waiting senders were woken.
    @discardableResult
    func release() -> Int {
        guard unreleased > 0 else { return 0 }
        let n = unreleased
        unreleased = 0
        lock.lock()
        inFlight -= n
        var wake = 0
        if waiters > 0 && inFlight <= resumeThreshold {
            wake = waiters
            waiters = 0
        }
        lock.unlock()
        for _ in 0..<wake { wakeUp.signal() }
        return wake
    }

    /// Notifications in flight (taken and not yet released).
    var count: Int { lock.withLock { inFlight } }
}
