import PushSealFormat

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
        if value == 0 { bytes.append(0x30); return }
        var magnitude = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0) // 24 bytes, enough for 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { d in
            while magnitude > 0 {
                d[count] = UInt8(truncatingIfNeeded: magnitude % 10) &+ 0x30
                magnitude /= 10
                count += 1
            }
            while count > 0 {
                count -= 1
                bytes.append(d[count])
            }
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

    private static let base64Alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    /// The length of standard padded base64 (RFC 4648 §4) of `byteCount` bytes.
    public static func base64ByteCount(_ byteCount: Int) -> Int { (byteCount + 2) / 3 * 4 }

    /// Two base64 characters for every 12-bit value, as little-endian `UInt16`s (8 KB).
    private static let base64Pairs: [UInt16] = base64Alphabet.withUTF8Buffer { t in
        (0..<4096).map { v in UInt16(t[v >> 6]) | UInt16(t[v & 63]) << 8 }
    }

    /// Appends `data` as standard padded base64 (RFC 4648 §4), without quotes.
    public mutating func base64(_ data: UnsafeRawBufferPointer) {
        let n = data.count
        let outCount = PayloadWriter.base64ByteCount(n)
        guard outCount > 0, let src = data.baseAddress else { return }
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "="), count: outCount))
        PayloadWriter.base64Pairs.withUnsafeBufferPointer { pairs in
            PayloadWriter.base64Alphabet.withUTF8Buffer { table in
                bytes.withUnsafeMutableBytes { outBuffer in
                    guard let out = outBuffer.baseAddress?.advanced(by: start) else { return }
                    var o = 0
                    var i = 0
                    while i + 3 <= n {
                        let v = Int(src.load(fromByteOffset: i, as: UInt8.self)) << 16
                            | Int(src.load(fromByteOffset: i + 1, as: UInt8.self)) << 8
                            | Int(src.load(fromByteOffset: i + 2, as: UInt8.self))
                        out.storeBytes(of: pairs[v >> 12].littleEndian, toByteOffset: o, as: UInt16.self)
                        out.storeBytes(of: pairs[v & 0xFFF].littleEndian, toByteOffset: o + 2, as: UInt16.self)
                        i += 3
                        o += 4
                    }
                    let rest = n - i
                    if rest > 0 {
                        let b1 = rest == 2 ? Int(src.load(fromByteOffset: i + 1, as: UInt8.self)) : 0
                        let v = Int(src.load(fromByteOffset: i, as: UInt8.self)) << 16 | b1 << 8
                        out.storeBytes(of: table[v >> 18], toByteOffset: o, as: UInt8.self)
                        out.storeBytes(of: table[(v >> 12) & 63], toByteOffset: o + 1, as: UInt8.self)
                        if rest == 2 { out.storeBytes(of: table[(v >> 6) & 63], toByteOffset: o + 2, as: UInt8.self) }
                    }
                }
            }
        }
    }
}
