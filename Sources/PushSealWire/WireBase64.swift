internal import CPushSealSIMD
internal import CSodium
import PushSealSystem
public import PushSealJSON
public import PushSealCrypto

/// Base64 as wire format v1 writes and reads it (FORMAT.md §4).
///
/// Writing: always the standard alphabet (RFC 4648 §4) with `=` padding, no line breaks.
/// ``encode(_:)-([UInt8])`` is for public bytes such as a sealed box: on x86-64 the vectorized
/// encoder of `CPushSealSIMD` (AVX2 or SSSE3), elsewhere a table-driven loop (12 bits per lookup;
/// about 8× faster than libsodium's constant-time encoder for a 1 KB box); tests check every
/// path against libsodium's output. ``encodeSecret(_:)`` is for key bytes: libsodium's
/// `sodium_bin2base64`, whose timing does not depend on the data.
/// Reading: ``decode(_:)-(String)`` is for public text such as `encrypted_data`: whole blocks of
/// the standard alphabet by `CPushSealSIMD` (AVX2 or SSSE3), the rest in one pass with
/// pre-shifted tables, four characters per step, validating as it goes (in push-bench about 15×
/// faster than libsodium's constant-time decoder for a 1 KB box; tests check it against
/// libsodium on random inputs, valid and invalid, at every SIMD level). ``decodeSecret(_:)`` is for key text (`media.key`):
/// libsodium's constant-time `sodium_base642bin`, same rules. (Foundation's
/// `Data(base64Encoded:)` would be as fast, but this module does not import Foundation, so
/// the tools that use it start without loading it.)
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

    /// Encodes public `bytes` (e.g. a sealed box) as standard padded base64 (RFC 4648 §4).
    /// - Parameter bytes: any bytes.
    /// - Returns: ASCII text of length 4·⌈n/3⌉.
    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { encode($0) }
    }

    /// Encodes the public bytes at `bytes` as standard padded base64 (RFC 4648 §4) into a
    /// single allocation (see ``encode(_:into:)``; not constant-time: never for keys, use
    /// ``encodeSecret(_:)``).
    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        let length = encodedByteCount(bytes.count)
        guard length > 0 else { return "" }
        return String(unsafeUninitializedCapacity: length) { out in
            guard let o = out.baseAddress else { return 0 }
            encode(bytes, into: UnsafeMutableRawPointer(o))
            return length
        }
    }

    /// The length of standard padded base64 of `byteCount` bytes: 4·⌈n/3⌉.
    @inlinable public static func encodedByteCount(_ byteCount: Int) -> Int { (byteCount + 2) / 3 * 4 }

    /// Appends the standard base64 of `bytes` (padded, no quotes) to `sink`, encoded in place.
    /// Not constant-time: never for keys.
    /// - Parameters:
    ///   - bytes: public bytes (a sealed box).
    ///   - sink: where ``encodedByteCount(_:)`` bytes go (``BoundedByteSink/overflowed`` when
    ///     they do not fit).
    public static func encode(_ bytes: UnsafeRawBufferPointer, appendingTo sink: inout BoundedByteSink) {
        sink.append(byteCount: encodedByteCount(bytes.count)) { out in
            if let o = out.baseAddress { encode(bytes, into: o) }
        }
    }

    /// ``encode(_:appendingTo:)`` of the public bytes of `bytes` (a sealed box handed over as a
    /// span), or sets the sink's `overflowed`.
    public static func encode(_ bytes: RawSpan, appendingTo sink: inout BoundedByteSink) {
        // Safe: the span's bytes are valid inside the closure and only read there.
        bytes.withUnsafeBytes { encode($0, appendingTo: &sink) }
    }

    /// Two base64 characters for every 12-bit value, as little-endian `UInt16`s (8 KiB).
    private static let pairs: [UInt16] = standardAlphabet.withUTF8Buffer { t in
        (0..<4096).map { v in UInt16(t[v >> 6]) | UInt16(t[v & 63]) << 8 }
    }

    /// Writes standard padded base64 (RFC 4648 §4) of the public bytes at `bytes` to `out`,
    /// exactly ``encodedByteCount(_:)`` bytes, no quotes. Not constant-time: never for keys.
    /// On x86-64 the whole 3-byte groups go through `CPushSealSIMD` (AVX2 or SSSE3, picked at
    /// run time: 24 or 12 input bytes per vector step); the rest, and everything on other CPUs,
    /// through the table loop below (six input bytes per step, two lookups of 12 bits per
    /// three bytes). Tests compare every path with libsodium's encoder.
    /// - Parameters:
    ///   - bytes: any bytes.
    ///   - out: room for ``encodedByteCount(_:)`` bytes.
    public static func encode(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) {
        let n = bytes.count
        guard n > 0, let src = bytes.baseAddress else { return }
        let vectorized = pushseal_base64_encode_prefix(src.assumingMemoryBound(to: UInt8.self), n,
                                                       out.assumingMemoryBound(to: UInt8.self))
        encodeTable(src, from: vectorized, to: n, into: out, at: vectorized / 3 * 4)
    }

    /// The portable encoder: `src[from..<n]` to `out` from offset `at`, padding included.
    /// Internal so tests can compare it with the vectorized path on the same bytes.
    static func encodeTable(_ src: UnsafeRawPointer, from start: Int, to n: Int, into out: UnsafeMutableRawPointer, at outStart: Int) {
        pairs.withUnsafeBufferPointer { pair in
            guard let pt = pair.baseAddress else { return }
            var i = start
            var o = outStart
            // Eight-byte loads, six bytes used: two 24-bit groups, four pair lookups, one store;
            // two loads per step so the lookups of both overlap.
            @inline(__always) func six(_ v: UInt64) -> UInt64 {
                let g1 = Int(truncatingIfNeeded: v >> 40)
                let g2 = Int(truncatingIfNeeded: v >> 16) & 0xFF_FFFF
                return UInt64(pt[g1 >> 12]) | UInt64(pt[g1 & 0xFFF]) << 16 | UInt64(pt[g2 >> 12]) << 32 | UInt64(pt[g2 & 0xFFF]) << 48
            }
            while i + 14 <= n {
                let a = six(UInt64(bigEndian: src.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
                let b = six(UInt64(bigEndian: src.loadUnaligned(fromByteOffset: i + 6, as: UInt64.self)))
                out.storeBytes(of: a.littleEndian, toByteOffset: o, as: UInt64.self)
                out.storeBytes(of: b.littleEndian, toByteOffset: o + 8, as: UInt64.self)
                i += 12
                o += 16
            }
            while i + 8 <= n {
                let w = six(UInt64(bigEndian: src.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
                out.storeBytes(of: w.littleEndian, toByteOffset: o, as: UInt64.self)
                i += 6
                o += 8
            }
            while i + 3 <= n {
                let v = Int(src.load(fromByteOffset: i, as: UInt8.self)) << 16
                    | Int(src.load(fromByteOffset: i + 1, as: UInt8.self)) << 8
                    | Int(src.load(fromByteOffset: i + 2, as: UInt8.self))
                out.storeBytes(of: pt[v >> 12].littleEndian, toByteOffset: o, as: UInt16.self)
                out.storeBytes(of: pt[v & 0xFFF].littleEndian, toByteOffset: o + 2, as: UInt16.self)
                i += 3
                o += 4
            }
            let rest = n - i
            if rest > 0 {
                let table = standardAlphabet.utf8Start
                let b1 = rest == 2 ? Int(src.load(fromByteOffset: i + 1, as: UInt8.self)) : 0
                let v = Int(src.load(fromByteOffset: i, as: UInt8.self)) << 16 | b1 << 8
                out.storeBytes(of: table[v >> 18], toByteOffset: o, as: UInt8.self)
                out.storeBytes(of: table[(v >> 12) & 63], toByteOffset: o + 1, as: UInt8.self)
                out.storeBytes(of: rest == 2 ? table[(v >> 6) & 63] : UInt8(ascii: "="), toByteOffset: o + 2, as: UInt8.self)
                out.storeBytes(of: UInt8(ascii: "="), toByteOffset: o + 3, as: UInt8.self)
            }
        }
    }

    /// The standard alphabet, RFC 4648 Table 1.
    static let standardAlphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    /// Encodes secret bytes (a key) as standard padded base64 with libsodium's
    /// `sodium_bin2base64`, whose timing does not depend on the bytes.
    public static func encodeSecret(_ bytes: UnsafeRawBufferPointer) -> String {
        let length = 4 * ((bytes.count + 2) / 3)
        guard length > 0 else { return "" }
        return String(unsafeUninitializedCapacity: length + 1) { out in
            guard let o = out.baseAddress else { return 0 }
            o.withMemoryRebound(to: CChar.self, capacity: length + 1) { c in
                _ = sodium_bin2base64(c, length + 1, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count,
                                      sodium_base64_VARIANT_ORIGINAL)
            }
            return length
        }
    }

    /// Encodes a key's bytes as standard padded base64 (``encodeSecret(_:)-(UnsafeRawBufferPointer)``,
    /// constant time), read in place.
    public static func encodeSecret(_ key: SecretBytes) -> String {
        // Safe: the key's bytes are read during the call only, never kept.
        key.withUnsafeBytes { encodeSecret($0) }
    }

    /// Decodes public `text` (e.g. `encrypted_data`) by the tolerant reading rules above, with
    /// a table lookup per character (timing depends on the text: never for keys, use
    /// ``decodeSecret(_:)``).
    /// - Parameter text: base64 text.
    /// - Returns: the decoded bytes (possibly empty when `text` is only whitespace).
    /// - Throws: `FormatError` `.invalidBase64`.
    public static func decode(_ text: String) throws -> [UInt8] {
        try text.withContiguousUTF8 { try decode(UnsafeRawBufferPointer($0)) }
    }

    /// Table entries: 0–63 a digit of either alphabet, then these markers.
    private static let padMarker: UInt8 = 0x40, spaceMarker: UInt8 = 0x41, invalidMarker: UInt8 = 0xFF

    /// Character → digit value (both alphabets), `=`, ignored whitespace, or invalid.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: invalidMarker, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() { table[Int(c)] = UInt8(i) }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "_"))] = 63
        table[Int(UInt8(ascii: "="))] = padMarker
        for c in [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n")] { table[Int(c)] = spaceMarker }
        return table
    }()

    /// Four 256-entry tables, one per position in a group of four characters: the digit's
    /// value shifted into place (18, 12, 6, 0 bits), plus bit 29 for `+ /`, bit 30 for `- _`;
    /// every other character is bit 31 (handled one by one).
    private static let shiftedTables: [UInt32] = {
        var tables = [UInt32](repeating: 0x8000_0000, count: 1024)
        for c in 0..<256 {
            let v = decodeTable[c]
            guard v < 64 else { continue }
            let flag: UInt32 = v < 62 ? 0 : (c == Int(UInt8(ascii: "+")) || c == Int(UInt8(ascii: "/")) ? 0x2000_0000 : 0x4000_0000)
            for position in 0..<4 { tables[position * 256 + c] = UInt32(v) << (18 - 6 * position) | flag }
        }
        return tables
    }()

    /// Decodes the public ASCII bytes at `text` by the tolerant reading rules above (see
    /// ``decode(_:)-(String)``): validation and decoding in one pass.
    /// - Throws: `FormatError` `.invalidBase64`.
    public static func decode(_ text: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard let input = text.baseAddress?.assumingMemoryBound(to: UInt8.self), !text.isEmpty else { return [] }
        let count = text.count
        var failure: String?
        let bytes = decodeTable.withUnsafeBufferPointer { tablePointer -> [UInt8] in
          shiftedTables.withUnsafeBufferPointer { shiftedPointer -> [UInt8] in
            guard let table = tablePointer.baseAddress, let shifted = shiftedPointer.baseAddress else { return [] }
            return [UInt8](unsafeUninitializedCapacity: count / 4 * 3 + 3) { out, initialized in
                initialized = 0
                guard let o = out.baseAddress else { return }
                var acc: UInt32 = 0, inGroup = 0, pads = 0
                var standard = false, urlSafe = false
                var specials: UInt32 = 0
                // Whole blocks of the standard alphabet by SIMD (CPushSealSIMD); the loop below
                // goes on at the group boundary where it stopped.
                var sawSpecial: Int32 = 0
                var i = pushseal_base64_decode_prefix(input, count, o, &sawSpecial)
                var j = i / 4 * 3
                if sawSpecial != 0 { standard = true }
                while i < count {
                    // Fast path: four characters at a group boundary, no padding seen, one OR of
                    // four pre-shifted table entries (bit 31: not a digit → the careful path below;
                    // bits 29/30: `+ /` or `- _` seen).
                    if inGroup == 0, pads == 0, i + 4 <= count {
                        let x = shifted[Int(input[i])] | shifted[256 + Int(input[i + 1])]
                            | shifted[512 + Int(input[i + 2])] | shifted[768 + Int(input[i + 3])]
                        if x & 0x8000_0000 == 0 {
                            specials |= x
                            o[j] = UInt8(truncatingIfNeeded: x >> 16)
                            o[j + 1] = UInt8(truncatingIfNeeded: x >> 8)
                            o[j + 2] = UInt8(truncatingIfNeeded: x)
                            j += 3
                            i += 4
                            continue
                        }
                    }
                    let c = input[i]
                    let v = table[Int(c)]
                    i += 1
                    if v < 64 {
                        if pads > 0 { failure = "base64 has data after '='"; return }
                        if v >= 62 {
                            if c == UInt8(ascii: "+") || c == UInt8(ascii: "/") { standard = true } else { urlSafe = true }
                        }
                        acc = acc << 6 | UInt32(v)
                        inGroup += 1
                        if inGroup == 4 {
                            o[j] = UInt8(truncatingIfNeeded: acc >> 16)
                            o[j + 1] = UInt8(truncatingIfNeeded: acc >> 8)
                            o[j + 2] = UInt8(truncatingIfNeeded: acc)
                            j += 3
                            inGroup = 0
                            acc = 0
                        }
                    } else if v == padMarker {
                        pads += 1
                    } else if v != spaceMarker {
                        failure = c == 0 ? "base64 has a NUL character" : "base64 has a character outside both alphabets at offset \(i - 1)"
                        return
                    }
                }
                if specials & 0x2000_0000 != 0 { standard = true }
                if specials & 0x4000_0000 != 0 { urlSafe = true }
                if standard && urlSafe {
                    failure = "base64 mixes the standard (+ /) and URL-safe (- _) alphabets"
                    return
                }
                // Leftover characters: 2 → one byte (4 spare bits), 3 → two bytes (2 spare bits).
                switch inGroup {
                case 0:
                    break
                case 2:
                    guard acc & 0xF == 0 else { failure = "base64 has non-zero leftover bits in its last character"; return }
                    o[j] = UInt8(truncatingIfNeeded: acc >> 4)
                    j += 1
                case 3:
                    guard acc & 0x3 == 0 else { failure = "base64 has non-zero leftover bits in its last character"; return }
                    o[j] = UInt8(truncatingIfNeeded: acc >> 10)
                    o[j + 1] = UInt8(truncatingIfNeeded: acc >> 2)
                    j += 2
                default:
                    failure = "base64 length is not a whole number of bytes"
                    return
                }
                if pads > 0, pads != (4 - inGroup) % 4 || inGroup == 0 {
                    failure = "padded base64 is malformed (misplaced or wrong number of '=')"
                    return
                }
                initialized = j
            }
          }
        }
        if let failure { throw FormatError(.invalidBase64, failure) }
        return bytes
    }

    /// Decodes secret `text` (a key, e.g. `media.key`) by the same reading rules with
    /// libsodium's `sodium_base642bin`, whose timing does not depend on the digits.
    /// - Returns: the decoded bytes; wipe them when done.
    /// - Throws: `FormatError` `.invalidBase64`.
    public static func decodeSecret(_ text: String) throws -> [UInt8] {
        var text = text
        return try text.withUTF8 { try decodeSecret(UnsafeRawBufferPointer($0)) }
    }

    /// Decodes the secret ASCII bytes at `text` with libsodium (see ``decodeSecret(_:)-(String)``).
    /// - Throws: `FormatError` `.invalidBase64`.
    public static func decodeSecret(_ text: UnsafeRawBufferPointer) throws -> [UInt8] {
        var standard = false, urlSafe = false, padded = false
        for c in text {
            switch c {
            case UInt8(ascii: "+"), UInt8(ascii: "/"): standard = true
            case UInt8(ascii: "-"), UInt8(ascii: "_"): urlSafe = true
            case UInt8(ascii: "="): padded = true
            // libsodium looks characters up in the ignore list with strchr, which finds the
            // list's own terminating NUL: reject NUL here so it is not silently skipped.
            case 0: throw FormatError(.invalidBase64, "base64 has a NUL character")
            // libsodium also skips bytes 0x80–0xFF as if ignored (found by comparing it with
            // the table decoder on random text): FORMAT.md §4 refuses non-ASCII.
            case 0x80...: throw FormatError(.invalidBase64, "base64 has a non-ASCII byte")
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
            // A failed decode may have written part of a key before it stopped: zero it before
            // the buffer is released (safe: `o` holds `capacity` bytes, all within this array).
            if status != 0 { sodium_memzero(o, capacity) }
            initialized = status == 0 ? decodedCount : 0
        }
        guard status == 0 else {
            bytes.removeAll()
            throw FormatError(.invalidBase64, invalidReason(text, urlSafe: urlSafe, padded: padded))
        }
        return bytes
    }

    /// Decodes secret key text (a key file's) by the reading rules above with libsodium (as
    /// ``decodeSecret(_:)-(String)``) into a new `SecretBytes`, from a span of the caller's
    /// buffer (no copy of the text). The decoded bytes pass through one array of their exact
    /// size, which is wiped before this returns, on every path.
    /// - Parameters:
    ///   - text: the base64 text.
    ///   - byteCount: the key's length in bytes (32 for an X25519 private key).
    /// - Returns: the key, or `nil` when `text` is not base64 of exactly `byteCount` bytes.
    public static func decodeSecret(_ text: Span<UInt8>, byteCount: Int) -> SecretBytes? {
        // Safe: the span's bytes are valid for the closure and only read there.
        guard var bytes = try? text.withUnsafeBytes({ try decodeSecret($0) }) else { return nil }
        defer { SecretBytes.wipe(&bytes) }
        return bytes.count == byteCount ? SecretBytes(copying: bytes.span) : nil
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
