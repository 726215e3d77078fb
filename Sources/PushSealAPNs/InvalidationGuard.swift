/// Decides which dead-token answers may delete a token from the caller's registry.
///
/// 410 (`Unregistered`, `ExpiredToken`) always invalidates, with its timestamp. `BadDeviceToken`
/// (400) deletes a token only once the run has shown it talks to the right environment and
/// topic: it is held until ``confirmAcceptedCount`` notifications were accepted, and dropped
/// for good once `BadDeviceToken` comes in a burst (at least ``burstMinimumCount`` and at least
/// ``burstFraction`` of the last ``windowCount`` answers): that is a development token sent to
/// production (or the other way round) or a wrong topic, not dead tokens.
///
/// Not thread-safe: the client calls it from its transfer thread only.
public struct InvalidationGuard: Sendable {
    /// Answers looked at for a burst (100).
    public var windowCount = 100
    /// `BadDeviceToken` answers at least, in the window, for a burst (5).
    public var burstMinimumCount = 5
    /// Fraction of the window at least, for a burst (0.2).
    public var burstFraction = 0.2
    /// Accepted notifications needed before a `BadDeviceToken` may invalidate (10).
    public var confirmAcceptedCount = 10
    /// Held `BadDeviceToken` answers at most; more are not invalidated (1000).
    public var maxHeldCount = 1000

    /// `true` once a burst was seen: no `BadDeviceToken` invalidates for the rest of the run.
    public private(set) var burstDetected = false
    /// `BadDeviceToken` answers that were not turned into invalidations.
    public private(set) var suppressedCount = 0

    private var window: [Bool] = []
    private var windowNext = 0
    private var badInWindow = 0
    private var accepted = 0
    private var held: [APNsInvalidation] = []

    /// Creates a guard with the default thresholds.
    public init() {}

    /// Records one final answer; returns the invalidations it releases (possibly earlier held ones).
    public mutating func record(kind: APNsOutcome.Kind, status: Int?, reason: String?, invalidation: APNsInvalidation?) -> [APNsInvalidation] {
        let isBad = status == 400 && reason == "BadDeviceToken"
        push(isBad)
        if kind == .accepted { accepted += 1 }
        if !burstDetected && badInWindow >= burstMinimumCount && Double(badInWindow) >= burstFraction * Double(window.count) {
            burstDetected = true
            suppressedCount += held.count
            held = []
        }
        var out: [APNsInvalidation] = []
        if let invalidation {
            if !isBad {
                out.append(invalidation)
            } else if burstDetected {
                suppressedCount += 1
            } else if accepted >= confirmAcceptedCount {
                out.append(invalidation)
            } else if held.count < maxHeldCount {
                held.append(invalidation)
            } else {
                suppressedCount += 1
            }
        }
        if !burstDetected && accepted >= confirmAcceptedCount && !held.isEmpty {
            out += held
            held = []
        }
        return out
    }

    /// At the end of a run: the held `BadDeviceToken` answers that were never confirmed are
    /// not invalidated (counted in ``suppressedCount``).
    public mutating func finish() {
        suppressedCount += held.count
        held = []
    }

    private mutating func push(_ bad: Bool) {
        if window.count < windowCount {
            window.append(bad)
        } else {
            if window[windowNext] { badInWindow -= 1 }
            window[windowNext] = bad
            windowNext = (windowNext + 1) % windowCount
        }
        if bad { badInWindow += 1 }
    }
}
