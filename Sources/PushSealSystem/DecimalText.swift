/// Decimal digits written straight into memory, for hot paths that build bytes without a
/// `String` (HTTP/2 header values, outcome lines).
public enum DecimalText {
    /// The most bytes ``write(_:to:)`` writes: a sign and 19 digits.
    public static let maxByteCount = 20

    /// Writes `value` in decimal (a `-` first when negative) at `to`, which must have room for
    /// ``maxByteCount`` bytes.
    /// - Returns: the bytes written (1…20).
    public static func write(_ value: Int64, to: UnsafeMutablePointer<UInt8>) -> Int {
        var at = 0
        if value < 0 {
            to[0] = UInt8(ascii: "-")
            at = 1
        }
        var m = value.magnitude
        var digits = 1
        var t = m / 10
        while t > 0 {
            digits += 1
            t /= 10
        }
        for k in stride(from: at + digits - 1, through: at, by: -1) {
            to[k] = 0x30 &+ UInt8(truncatingIfNeeded: m % 10)
            m /= 10
        }
        return at + digits
    }
}
