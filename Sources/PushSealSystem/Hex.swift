/// Hexadecimal: lower case as PushSeal writes digests and ids (`media.sha256`, keychain item
/// file names), upper case for byte values in error reasons (`0xFF`, `U+001F`).
public enum Hex {
    private static let lower: [UInt8] = Array("0123456789abcdef".utf8)
    private static let upper: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// `bytes` as hex, two digits a byte (`[0x0a, 0xff]` → `0aff`, or `0AFF` with `uppercase`).
    public static func encode<Bytes: Sequence>(_ bytes: Bytes, uppercase: Bool = false) -> String where Bytes.Element == UInt8 {
        let digits = uppercase ? upper : lower
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// One byte as two hex digits (`0x0a` → `0a`, or `0A` with `uppercase`).
    public static func byte(_ b: UInt8, uppercase: Bool = false) -> String { encode(CollectionOfOne(b), uppercase: uppercase) }

    /// The value of one hex digit (either case), or `nil`.
    public static func value(ofDigit c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: nil
        }
    }

    /// Decodes hex digits (either case) two a byte.
    /// - Parameter text: the digits.
    /// - Returns: the bytes, or `nil` for an odd count or a non-hex character.
    public static func decode(_ text: String) -> [UInt8]? {
        let u = Array(text.utf8)
        guard u.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let hi = value(ofDigit: u[i]), let lo = value(ofDigit: u[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
