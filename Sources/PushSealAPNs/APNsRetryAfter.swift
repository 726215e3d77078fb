internal import CPushSealTLS

/// The `retry-after` header of a 429/500/503 answer, read as RFC 9110 §10.2.3 allows it and
/// no other way: a non-negative integer of seconds (`delay-seconds`, at most 9 digits), or an
/// HTTP date (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, read by the C library's
/// `strptime` and `timegm` through CPushSealTLS) turned into the seconds from now (0 when it has passed).
/// Anything else (`inf`, `1e20`, `-5`, `2.5`, `soon`) is ignored, as if the header were absent.
///
/// The value is then bounded by ``APNsRetryPolicy/maxDelaySeconds`` (60 s by default):
/// a server asking for longer gets the notification back after the maximum, within the
/// attempts allowed (docs/apns.md, "Retries"). The outbox of the gateway uses the same rule.
public enum APNsRetryAfter {
    /// The most digits of `delay-seconds` read (999,999,999 s; longer is ignored).
    public static let maxDigits = 9

    /// Seconds to wait, or `nil` when `value` is neither form.
    /// - Parameters:
    ///   - value: the header value's bytes.
    ///   - nowSeconds: the wall clock, seconds since 1970 (for an HTTP date).
    public static func seconds(_ value: some Collection<UInt8>, nowSeconds: Int64) -> Int? {
        var bytes = Array(value)
        while let f = bytes.first, f == 0x20 || f == 0x09 { bytes.removeFirst() }
        while let l = bytes.last, l == 0x20 || l == 0x09 { bytes.removeLast() }
        guard !bytes.isEmpty else { return nil }
        if bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            guard bytes.count <= maxDigits else { return nil }
            return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        }
        guard bytes.count == 29, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        let at = String(decoding: bytes, as: UTF8.self).withCString { pushseal_http_date_seconds($0) }
        guard at >= 0 else { return nil }
        return Int(clamping: max(0, at - nowSeconds))
    }

    /// `seconds` as nanoseconds after `now`, saturating at `UInt64.max` (never traps): the due
    /// time of a retry. Negative, NaN or infinite seconds count as 0 / the maximum.
    public static func dueTime(after now: UInt64, seconds: Double) -> UInt64 {
        guard seconds > 0 else { return now }
        guard seconds < 1.8e10 else { return UInt64.max }
        let (sum, overflow) = now.addingReportingOverflow(UInt64(seconds * 1e9))
        return overflow ? UInt64.max : sum
    }
}
