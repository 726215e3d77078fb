import PushSealSystem

/// The two clocks the APNs client reads: a monotonic one for ages, delays and latency, and the
/// wall clock for a provider token's `iat`. Injectable, so tests can age tokens by hours.
public protocol APNsClock: Sendable {
    /// Nanoseconds on a clock that never jumps (`CLOCK_MONOTONIC`); only differences count.
    func monotonicNanoseconds() -> UInt64
    /// Seconds since 1970, UTC (`CLOCK_REALTIME`).
    func wallSeconds() -> Int64
}

/// The system's clocks: `CLOCK_MONOTONIC` and `CLOCK_REALTIME`.
public struct SystemAPNsClock: APNsClock {
    /// Creates the system clock.
    public init() {}
    public func monotonicNanoseconds() -> UInt64 { PushSealSystem.monotonicNanoseconds() }
    public func wallSeconds() -> Int64 { unixTimeSeconds() }
}
