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
        var text = text
        return text.withUTF8 { decode(utf8: $0) }
    }

    /// ``decode(_:)`` of digits given as UTF-8 code units (no copy into a `String`: the registry
    /// decodes every bytea column it reads, ~2.3 KB of digits per outbox row claimed). One table
    /// lookup per digit; a differential test holds it to ``value(ofDigit:)``, digit by digit.
    /// - Returns: the bytes, or `nil` for an odd count or a byte that is not a hex digit.
    public static func decode(utf8 digits: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard digits.count % 2 == 0 else { return nil }
        var valid = true
        let out = digitValues.withUnsafeBufferPointer { values in
            [UInt8](unsafeUninitializedCapacity: digits.count / 2) { buffer, count in
                var i = 0
                var j = 0
                while i < digits.count {
                    let hi = values[Int(digits[i])]
                    let lo = values[Int(digits[i + 1])]
                    // 0xFF marks a byte that is not a digit.
                    if (hi | lo) > 0x0F { valid = false; break }
                    buffer[j] = hi << 4 | lo
                    i += 2
                    j += 1
                }
                count = j
            }
        }
        return valid ? out : nil
    }

    /// ``value(ofDigit:)`` for every byte, 0xFF for a non-digit.
    private static let digitValues: [UInt8] = (0...255).map { value(ofDigit: UInt8($0)) ?? 0xFF }
}
