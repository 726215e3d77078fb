/// Paces sends to a rate: a token bucket (the generic cell rate algorithm) on a monotonic
/// clock given by the caller, so it is tested with made-up clock values. ``ratePerSecond``
/// sends a second on average, at most ``burst`` at once after an idle time; the time a sender
/// could have used but did not beyond the burst is not saved up.
///
/// `push-send --rate N` uses one before each ``APNsClient/send(_:tag:)`` (e.g. to stay under a
/// quota, or to measure latency at an offered rate below saturation).
public struct APNsRatePacer: Sendable {
    /// Sends a second on average (> 0).
    public let ratePerSecond: Double
    /// Sends allowed at once after an idle time (≥ 1).
    public let burst: Int
    /// Nanoseconds between two sends at the rate.
    private let interval: Double
    /// How far ahead of the rate a send may go: `(burst - 1)` intervals, in nanoseconds.
    private let tolerance: Double
    /// The clock value the next send is due at on the rate (nanoseconds relative to `origin`).
    private var due: Double = 0
    private let origin: UInt64

    /// A pacer starting at clock value `now` (monotonic nanoseconds) with a full burst.
    /// - Parameters:
    ///   - ratePerSecond: sends a second (clamped to at least one per 1,000 seconds).
    ///   - burst: sends at once after an idle time (at least 1). The default, 1 % of a second's
    ///     sends (at least 1), lets a sender that sleeps until ``nextAllowed(at:)`` catch up on
    ///     the time it overslept.
    public init(ratePerSecond: Double, burst: Int? = nil, now: UInt64) {
        self.ratePerSecond = max(0.001, ratePerSecond)
        self.burst = max(1, burst ?? Int(self.ratePerSecond / 100))
        interval = 1e9 / self.ratePerSecond
        tolerance = Double(self.burst - 1) * interval
        origin = now
    }

    /// Takes one send at clock value `now` if the rate allows it (`true`); else nothing changes
    /// (`false`): wait until ``nextAllowed(at:)``.
    public mutating func take(at now: UInt64) -> Bool {
        let t = elapsed(now)
        guard t >= due - tolerance else { return false }
        due = max(due, t) + interval
        return true
    }

    /// The earliest clock value (monotonic nanoseconds, ≥ `now`) at which ``take(at:)`` succeeds.
    public func nextAllowed(at now: UInt64) -> UInt64 {
        let t = elapsed(now)
        let at = due - tolerance
        guard at > t else { return now }
        return now + UInt64((at - t).rounded(.up))
    }

    private func elapsed(_ now: UInt64) -> Double { now >= origin ? Double(now - origin) : 0 }
}
