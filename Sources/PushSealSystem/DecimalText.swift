/// Decimal digits written straight into memory, for hot paths that build bytes without a
/// `String` (HTTP/2 header values, outcome lines).
public enum DecimalText {
    /// The most bytes ``write(_:to:)`` writes: a sign and 19 digits.
    public static let maxByteCount = 20

    /// Writes `value` in decimal (a `-` first when negative) at `to`, which must have room for
    /// ``maxByteCount`` bytes.
    /// - Returns: the bytes written (1…20).
    @inlinable public static func write(_ value: Int64, to: UnsafeMutablePointer<UInt8>) -> Int {
        withDigits(value) { d in
            if let b = d.baseAddress { Memory.copy(UnsafeMutableRawPointer(to), from: b, count: d.count) }
            return d.count
        }
    }

    /// Calls `body` with `value` in decimal (a `-` first when negative; 1…20 bytes) in a stack
    /// buffer, for a caller that copies the digits on (a byte sink).
    /// - Returns: what `body` returns.
    @inlinable @inline(__always) public static func withDigits<R>(_ value: Int64, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for maxByteCount
        return try withUnsafeMutableBytes(of: &digits) { b -> R in
            guard let base = b.baseAddress else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
            let n = write(value, endingAt: base + 24)
            return try body(UnsafeRawBufferPointer(start: base + 24 - n, count: n))
        }
    }

    /// Writes `value` in decimal so that its last byte is just before `end`, which must have
    /// ``maxByteCount`` bytes of room before it: two digits per division, right to left (the
    /// length is known only at the end; a caller copies the bytes where it wants them).
    /// - Returns: the bytes written (1…20), at `end - count ..< end`.
    @inlinable @inline(__always) public static func write(_ value: Int64, endingAt end: UnsafeMutableRawPointer) -> Int {
        var m = value.magnitude
        let pairs = UnsafeRawPointer(digitPairs.utf8Start)
        var at = end
        while m >= 100 {
            let r = Int(m % 100)
            m /= 100
            at -= 2
            at.storeBytes(of: pairs.loadUnaligned(fromByteOffset: 2 * r, as: UInt16.self), as: UInt16.self)
        }
        if m >= 10 {
            at -= 2
            at.storeBytes(of: pairs.loadUnaligned(fromByteOffset: 2 * Int(m), as: UInt16.self), as: UInt16.self)
        } else {
            at -= 1
            at.storeBytes(of: 0x30 &+ UInt8(truncatingIfNeeded: m), as: UInt8.self)
        }
        if value < 0 {
            at -= 1
            at.storeBytes(of: UInt8(ascii: "-"), as: UInt8.self)
        }
        return end - at
    }

    /// "00" … "99": two decimal digits for every value below 100.
    @usableFromInline static var digitPairs: StaticString {
        """
        0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
        5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899
        """
    }
}
