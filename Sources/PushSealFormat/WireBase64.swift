internal import CSodium

/// Base64 as wire format v1 writes and reads it (FORMAT.md §4), over libsodium.
///
/// Writing: always the standard alphabet (RFC 4648 §4) with `=` padding, no line breaks.
/// Reading is tolerant of the spellings servers produce, and strict about everything else:
/// - spaces, tabs, CR and LF anywhere are ignored;
/// - the alphabet is chosen by the special characters present: `+` or `/` → standard,
///   `-` or `_` → URL-safe (RFC 4648 §5); both kinds in one string is an error;
/// - if any `=` appears the text must be correctly padded, otherwise it must be unpadded;
/// - any other character, a length that is not a whole number of bytes, or non-zero
///   leftover bits in the last character is an error.
public enum WireBase64 {
    /// Characters ignored when reading: space, tab, CR, LF.
    static let ignored: StaticString = " \t\r\n"

    /// Encodes `bytes` as standard padded base64 (RFC 4648 §4).
    /// - Parameter bytes: any bytes.
    /// - Returns: ASCII text of length 4·⌈n/3⌉.
    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { encode($0) }
    }

    /// Encodes the bytes at `bytes` as standard padded base64 (RFC 4648 §4) into a single
    /// allocation.
    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        let length = 4 * ((bytes.count + 2) / 3)
        // libsodium writes a terminating NUL: ask for one byte more than the text.
        return String(unsafeUninitializedCapacity: length + 1) { out in
            guard let o = out.baseAddress else { return 0 }
            o.withMemoryRebound(to: CChar.self, capacity: length + 1) { c in
                _ = sodium_bin2base64(c, length + 1, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count,
                                      sodium_base64_VARIANT_ORIGINAL)
            }
            return length
        }
    }

    /// Decodes `text` by the tolerant reading rules above.
    /// - Parameter text: base64 text.
    /// - Returns: the decoded bytes (possibly empty when `text` is only whitespace).
    /// - Throws: `FormatError` `.invalidBase64`.
    public static func decode(_ text: String) throws -> [UInt8] {
        var text = text
        return try text.withUTF8 { try decode(UnsafeRawBufferPointer($0)) }
    }

    /// Decodes the ASCII bytes at `text` by the tolerant reading rules above.
    /// - Throws: `FormatError` `.invalidBase64`.
    public static func decode(_ text: UnsafeRawBufferPointer) throws -> [UInt8] {
        var standard = false, urlSafe = false, padded = false
        for c in text {
            switch c {
            case UInt8(ascii: "+"), UInt8(ascii: "/"): standard = true
            case UInt8(ascii: "-"), UInt8(ascii: "_"): urlSafe = true
            case UInt8(ascii: "="): padded = true
            // libsodium looks characters up in the ignore list with strchr, which finds the
            // list's own terminating NUL: reject NUL here so it is not silently skipped.
            case 0: throw FormatError(.invalidBase64, "base64 has a NUL character")
            default: break
            }
        }
        if standard && urlSafe {
            throw FormatError(.invalidBase64, "base64 mixes the standard (+ /) and URL-safe (- _) alphabets")
        }
        let variant: Int32 = switch (urlSafe, padded) {
        case (false, true): sodium_base64_VARIANT_ORIGINAL
        case (false, false): sodium_base64_VARIANT_ORIGINAL_NO_PADDING
        case (true, true): sodium_base64_VARIANT_URLSAFE
        case (true, false): sodium_base64_VARIANT_URLSAFE_NO_PADDING
        }
        let capacity = text.count / 4 * 3 + 3
        var decodedCount = 0
        var status: Int32 = -1
        var bytes = [UInt8](unsafeUninitializedCapacity: capacity) { out, initialized in
            initialized = 0
            guard let o = out.baseAddress else { return }
            guard let t = text.baseAddress else {
                status = 0 // empty input decodes to no bytes
                return
            }
            status = ignored.withUTF8Buffer { ignore in
                ignore.withMemoryRebound(to: CChar.self) { ig in
                    sodium_base642bin(o, capacity, t.assumingMemoryBound(to: CChar.self), text.count, ig.baseAddress,
                                      &decodedCount, nil, variant)
                }
            }
            initialized = status == 0 ? decodedCount : 0
        }
        guard status == 0 else {
            bytes.removeAll()
            throw FormatError(.invalidBase64, invalidReason(text, urlSafe: urlSafe, padded: padded))
        }
        return bytes
    }

    /// A reason that says what is wrong without echoing the (possibly long) text.
    static func invalidReason(_ text: UnsafeRawBufferPointer, urlSafe: Bool, padded: Bool) -> String {
        for (offset, c) in text.enumerated() {
            let isAlpha = (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39)
            let isKnown = isAlpha || c == 0x2B || c == 0x2F || c == 0x2D || c == 0x5F || c == 0x3D
                || c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A
            if !isKnown {
                return "base64 has a character outside both alphabets at offset \(offset)"
            }
        }
        let alphabet = urlSafe ? "URL-safe" : "standard"
        return padded
            ? "\(alphabet) padded base64 is malformed (misplaced or wrong number of '=', or non-zero leftover bits)"
            : "\(alphabet) unpadded base64 is malformed (length is not a whole number of bytes, or non-zero leftover bits)"
    }
}
