public import PushSealJSON
import PushSealWire

/// A minimal JSON writer that appends UTF-8 bytes to an array: compact (no whitespace outside
/// strings), minimal escapes (`"`, `\`, and control characters below U+0020 only; never `\/`;
/// every other scalar as raw UTF-8), integers in decimal.
///
/// The sender writes every payload with it, so its output is exactly what is measured against
/// the 4096-byte APNs budget. ``escapedByteCount(_:)`` counts exactly what ``string(_:)`` writes.
public struct PayloadWriter: Sendable {
    /// The bytes written so far.
    public var bytes: [UInt8]

    /// A writer with room for `capacity` bytes.
    public init(capacity: Int = 4096) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends ASCII punctuation or a literal key, unescaped. For text known to need no escape.
    @inlinable public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends one byte.
    @inlinable public mutating func byte(_ b: UInt8) { bytes.append(b) }

    /// Appends `s` as a JSON string literal with quotes.
    public mutating func string(_ s: String) {
        bytes.append(0x22)
        var s = s
        s.withUTF8 { appendEscaped($0) }
        bytes.append(0x22)
    }

    /// Appends `s` as a JSON string literal with quotes.
    public mutating func string(_ s: Substring) {
        bytes.append(0x22)
        var s = s
        s.withUTF8 { appendEscaped($0) }
        bytes.append(0x22)
    }

    private static let hex: StaticString = "0123456789abcdef"

    /// The index of the first byte at or after `from` that needs an escape (a control
    /// character, `"` or `\`), or `utf8.count`. Scans eight bytes at a time (SWAR).
    @inline(__always)
    static func firstEscapeIndex(_ utf8: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        let n = utf8.count
        var i = from
        guard let base = utf8.baseAddress else { return n }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while i + 8 <= n {
            let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            // A byte b has its high bit set in `flags` when b < 0x20, b == 0x22 or b == 0x5C
            // (exact for bytes < 0x80; bytes >= 0x80 never match because of `& ~w`).
            let control = w &- ones &* 0x20
            let quote = (w ^ (ones &* 0x22)) &- ones
            let backslash = (w ^ (ones &* 0x5C)) &- ones
            let quoteMask = quote & ~(w ^ (ones &* 0x22))
            let backslashMask = backslash & ~(w ^ (ones &* 0x5C))
            let flags = (control | quoteMask | backslashMask) & ~w & highs
            if flags != 0 {
                return i + (flags.littleEndian.trailingZeroBitCount >> 3)
            }
            i += 8
        }
        while i < n {
            let c = utf8[i]
            if c < 0x20 || c == 0x22 || c == 0x5C { return i }
            i += 1
        }
        return n
    }

    private mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        var start = 0
        let n = utf8.count
        while true {
            let i = PayloadWriter.firstEscapeIndex(utf8, from: start)
            if start < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i])) }
            if i >= n { return }
            let c = utf8[i]
            bytes.append(0x5C)
            switch c {
            case 0x22: bytes.append(0x22)
            case 0x5C: bytes.append(0x5C)
            case 0x0A: bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "t"))
            case 0x08: bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(UInt8(ascii: "f"))
            default:
                bytes.append(UInt8(ascii: "u"))
                bytes.append(0x30)
                bytes.append(0x30)
                PayloadWriter.hex.withUTF8Buffer { h in
                    bytes.append(h[Int(c >> 4)])
                    bytes.append(h[Int(c & 0xF)])
                }
            }
            start = i + 1
        }
    }

    /// The number of bytes ``string(_:)`` writes for `s`, quotes included.
    public static func escapedByteCount(_ s: String) -> Int {
        var count = 2
        for c in s.utf8 {
            if c >= 0x20 && c != 0x22 && c != 0x5C { count += 1; continue }
            switch c {
            case 0x22, 0x5C, 0x0A, 0x0D, 0x09, 0x08, 0x0C: count += 2
            default: count += 6
            }
        }
        return count
    }

    /// Appends `value` in decimal.
    public mutating func integer(_ value: Int64) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes, enough for a sign and 19 digits
        withUnsafeMutableBytes(of: &digits) { d in
            guard let base = d.baseAddress else { return }
            let n = PayloadWriter.writeDecimal(value, to: base)
            bytes.append(contentsOf: UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: n))
        }
    }

    /// "00" … "99": two decimal digits for every value below 100.
    private static let digitPairs: StaticString = """
        0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
        5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899
        """

    /// Writes `value` in decimal at `out` (room for 20 bytes) and returns the byte count.
    /// Two digits per division, right to left into a 20-byte stack buffer, then one copy.
    static func writeDecimal(_ value: Int64, to out: UnsafeMutableRawPointer) -> Int {
        var magnitude = value.magnitude
        var sign = 0
        if value < 0 { out.storeBytes(of: UInt8(ascii: "-"), as: UInt8.self); sign = 1 }
        return withUnsafeTemporaryAllocation(byteCount: 20, alignment: 8) { buffer -> Int in
            guard let b = buffer.baseAddress else { return 0 }
            let pairs = UnsafeRawPointer(digitPairs.utf8Start)
            var at = 20
            while magnitude >= 100 {
                let r = Int(magnitude % 100)
                magnitude /= 100
                at -= 2
                b.storeBytes(of: pairs.loadUnaligned(fromByteOffset: 2 * r, as: UInt16.self), toByteOffset: at, as: UInt16.self)
            }
            if magnitude >= 10 {
                at -= 2
                b.storeBytes(of: pairs.loadUnaligned(fromByteOffset: 2 * Int(magnitude), as: UInt16.self), toByteOffset: at, as: UInt16.self)
            } else {
                at -= 1
                b.storeBytes(of: UInt8(truncatingIfNeeded: magnitude) &+ 0x30, toByteOffset: at, as: UInt8.self)
            }
            (out + sign).copyMemory(from: b + at, byteCount: 20 - at)
            return sign + 20 - at
        }
    }

    /// Appends a finite `Double` in Swift's shortest round-trip form (`0.5`, `1.0`, `1e-07`).
    /// - Throws: `SenderError` `.invalidOption` for NaN or infinity, which JSON cannot express.
    public mutating func number(_ value: Double) throws {
        guard value.isFinite else { throw SenderError(.invalidOption, "JSON has no NaN or infinity") }
        bytes.append(contentsOf: value.description.utf8)
    }

    /// Appends any JSON value (objects in member order).
    /// - Throws: `SenderError` `.invalidOption` for a non-finite number.
    public mutating func value(_ value: JSONValue) throws {
        switch value {
        case .null: raw("null")
        case .bool(let b): if b { raw("true") } else { raw("false") }
        case .integer(let i): integer(i)
        case .number(let d): try number(d)
        case .string(let s): string(s)
        case .array(let a):
            bytes.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                try self.value(v)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let o):
            try object(o)
        }
    }

    /// Appends an object with its members in order.
    /// - Throws: `SenderError` `.invalidOption` for a non-finite number.
    public mutating func object(_ o: JSONObject) throws {
        bytes.append(UInt8(ascii: "{"))
        var first = true
        for m in o {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            string(m.key)
            bytes.append(UInt8(ascii: ":"))
            try value(m.value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Appends bytes as they are (already valid JSON text, e.g. a string's content copied
    /// from a scanned input).
    public mutating func raw(bytes data: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: data.baseAddress?.assumingMemoryBound(to: UInt8.self), count: data.count))
    }
}
