#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealWire

// The range of times and durations the key lifecycle accepts, and checked arithmetic on them:
// every time a caller gives (`now`) or the store computes (`now + grace`) lies within
// 0 ... maxTimeSeconds, so no operation traps on overflow and no keyset stores a time a person
// cannot read back.

/// Times of the key lifecycle, shared by the device and the server stores: the current time, the
/// range of times and durations every store accepts, and checked arithmetic on them.
public enum KeyTime {
    /// The current time in Unix seconds (UTC), the default `now` of every operation.
    public static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    /// Default grace window of a retired primary: 30 days, in seconds (APNs and FCM may hold
    /// a message for weeks).
    public static let defaultGraceSeconds: Int64 = 30 * 86_400

    /// The latest time, in Unix seconds, the key lifecycle accepts or computes: 253402300799,
    /// 9999-12-31T23:59:59Z (the last second with a four-digit year). The earliest is 0
    /// (1970-01-01T00:00:00Z). It is the wire format's `exp` bound, `WireFormat.maxTimeSeconds`.
    public static let maxTimeSeconds: Int64 = WireFormat.maxTimeSeconds

    /// ``maxTimeSeconds`` as people read it, for error messages: `9999-12-31T23:59:59Z (253402300799)`.
    public static let maxTimeText = WireFormat.maxTimeText

    /// Checks a time given by the caller.
    /// - Parameters:
    ///   - seconds: Unix seconds (UTC).
    ///   - name: what the time is called in the message, e.g. `now` or `--now`.
    /// - Throws: `KeysError` `.timeOutOfRange` when `seconds` is negative or after ``maxTimeSeconds``.
    public static func checkTime(_ seconds: Int64, named name: String = "now") throws {
        guard seconds >= 0, seconds <= maxTimeSeconds else {
            throw KeysError(.timeOutOfRange,
                "\(name) \(seconds) is out of range: a time is 0 (1970-01-01T00:00:00Z) to \(maxTimeText), in Unix seconds")
        }
    }

    /// Checks a duration given by the caller (a grace window, a rotation period).
    /// - Parameters:
    ///   - seconds: the duration in seconds.
    ///   - name: what the duration is called in the message, e.g. `graceSeconds` or `--period`.
    /// - Throws: `KeysError` `.timeOutOfRange` when `seconds` is negative or longer than
    ///   ``maxTimeSeconds`` (no two times in range are further apart).
    public static func checkDuration(_ seconds: Int64, named name: String) throws {
        guard seconds >= 0 else {
            throw KeysError(.timeOutOfRange, "\(name) \(secondsText(seconds)) is negative: a duration is 0 or more seconds")
        }
        guard seconds <= maxTimeSeconds else {
            throw KeysError(.timeOutOfRange, "\(name) \(secondsText(seconds)) is too long: a duration is at most \(maxTimeSeconds) seconds")
        }
    }

    /// `now + seconds`, checked: `now` a time in range, `seconds` a duration, and the sum at or
    /// before ``maxTimeSeconds``.
    /// - Parameters:
    ///   - now: Unix seconds.
    ///   - seconds: the duration added, in seconds.
    ///   - name: the duration's name in the message, e.g. `graceSeconds` or `--grace`.
    ///   - nowName: the time's name in the message, e.g. `now` or `--now`.
    /// - Returns: the sum, Unix seconds.
    /// - Throws: `KeysError` `.timeOutOfRange` (from ``checkTime(_:named:)``,
    ///   ``checkDuration(_:named:)``, or a sum after ``maxTimeSeconds``).
    public static func time(_ now: Int64, plus seconds: Int64, named name: String, nowNamed nowName: String = "now") throws -> Int64 {
        try checkTime(now, named: nowName)
        try checkDuration(seconds, named: name)
        // Both are within 0 ... maxTimeSeconds, so the sum cannot overflow.
        let sum = now + seconds
        guard sum <= maxTimeSeconds else {
            throw KeysError(.timeOutOfRange,
                "\(name) \(secondsText(seconds)) is too long: \(nowName) \(now) + \(name) is after \(maxTimeText), the latest time the key tools store")
        }
        return sum
    }

    /// `n seconds` (`1 second`), for messages.
    package static func secondsText(_ n: Int64) -> String { n == 1 ? "1 second" : "\(n) seconds" }

    /// `now - since`, the age of something created at `since`, in seconds; saturating instead of
    /// trapping for stored times written before times were checked (a negative `createdAt`).
    package static func age(at now: Int64, since: Int64) -> Int64 {
        let (difference, overflow) = now.subtractingReportingOverflow(since)
        guard overflow else { return difference }
        return since < 0 ? Int64.max : Int64.min
    }
}
