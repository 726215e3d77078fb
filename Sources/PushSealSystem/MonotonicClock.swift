#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`): unaffected by changes of the wall
/// clock; its zero is arbitrary (boot), so only differences mean anything.
public func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// Seconds on the monotonic clock (see ``monotonicNanoseconds()``), with nanosecond resolution.
public func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Whole seconds since 1970-01-01 00:00:00 UTC on the wall clock (`CLOCK_REALTIME_COARSE` on
/// Linux: whole seconds need no finer clock, and it is the cheapest read; `time(2)` elsewhere).
public func unixTimeSeconds() -> Int64 {
    #if os(Linux)
    var t = timespec()
    if clock_gettime(CLOCK_REALTIME_COARSE, &t) == 0 { return Int64(t.tv_sec) }
    #endif
    return Int64(time(nil))
}

/// Milliseconds since 1970-01-01 00:00:00 UTC on the wall clock (`CLOCK_REALTIME`): the unit
/// of APNs' 410 `timestamp` and of a device token's `registeredAt`.
public func unixTimeMilliseconds() -> Int64 {
    var t = timespec()
    if clock_gettime(CLOCK_REALTIME, &t) == 0 { return Int64(t.tv_sec) * 1000 + Int64(t.tv_nsec) / 1_000_000 }
    return Int64(time(nil)) * 1000
}

/// The number of processors online (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1.
public var activeProcessorCount: Int {
    max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
}

/// Blocks the calling thread for `seconds` (`nanosleep`, resumed after a signal), e.g. a
/// reconnect back-off. Not a way to wait for an event: wait on the event itself.
/// - Parameter seconds: the pause, at least 0 (a negative value returns at once).
public func pauseThread(seconds: Double) {
    guard seconds > 0 else { return }
    var ts = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    var rest = timespec()
    while nanosleep(&ts, &rest) != 0 && errno == EINTR { ts = rest }
}
