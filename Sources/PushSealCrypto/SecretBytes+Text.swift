internal import CSodium

// Key text to and from SecretBytes without an intermediate copy: the key records' and key
// files' base64 and hex, decoded by libsodium straight into the secret's own storage, and
// encoded into one array the caller wipes. The pointer work for the key modules lives here.
extension SecretBytes {
    /// Decodes strict standard padded base64 (RFC 4648 §4: `+` `/`, `=` padding, nothing
    /// ignored) with libsodium's constant-time `sodium_base642bin`, straight into a new secret:
    /// no other buffer ever holds the decoded key (a failed decode's storage is wiped).
    /// - Parameters:
    ///   - text: the base64 (e.g. a key record's `key` member, read in place from the record).
    ///   - maxByteCount: the most bytes the text may decode to; longer text is refused.
    /// - Returns: `nil` when `text` is not such base64 or decodes to more than `maxByteCount` bytes.
    public convenience init?(decodingBase64 text: Span<UInt8>, maxByteCount: Int) {
        self.init(capacity: maxByteCount) { out in
            text.withUnsafeBytes { t -> Int? in
                // Safe: libsodium reads `t.count` bytes at `t` (the span's bytes, valid for this
                // closure; base64 is read as `char`, the same size and layout as UInt8) and
                // writes at most `out.count` bytes at `out`; no NUL terminator is needed.
                guard let o = out.baseAddress?.assumingMemoryBound(to: UInt8.self),
                      let chars = t.baseAddress?.assumingMemoryBound(to: CChar.self) else { return nil }
                var decoded = 0
                let status = sodium_base642bin(o, out.count, chars, t.count, nil, &decoded, nil, sodium_base64_VARIANT_ORIGINAL)
                return status == 0 ? decoded : nil
            }
        }
    }

    /// Decodes exactly `2 × byteCount` hex digits (either case, nothing else) with libsodium's
    /// constant-time `sodium_hex2bin`, straight into a new secret: no other buffer ever holds
    /// the decoded key (a failed decode's storage is wiped).
    /// - Parameters:
    ///   - text: the digits (e.g. a key file's text, trailing line end already cut off).
    ///   - byteCount: the key's length in bytes (32 for an X25519 private key).
    /// - Returns: `nil` unless `text` is exactly `2 × byteCount` hex digits.
    public convenience init?(decodingHex text: Span<UInt8>, byteCount: Int) {
        guard byteCount > 0, text.count == 2 * byteCount else { return nil }
        self.init(capacity: byteCount) { out in
            text.withUnsafeBytes { t -> Int? in
                // Safe: libsodium reads `t.count` bytes at `t` (valid for this closure) and writes
                // at most `out.count` bytes at `out`; `end` points into `t` when it returns.
                guard let o = out.baseAddress?.assumingMemoryBound(to: UInt8.self),
                      let chars = t.baseAddress?.assumingMemoryBound(to: CChar.self) else { return nil }
                var decoded = 0
                var end: UnsafePointer<CChar>?
                let status = sodium_hex2bin(o, out.count, chars, t.count, nil, &decoded, &end)
                // `end` stops at the first byte that is not a digit: all of the text must be read.
                guard status == 0, end == chars + t.count, decoded == byteCount else { return nil }
                return decoded
            }
        }
    }

    /// The secret as standard padded base64 (RFC 4648 §4) from libsodium's constant-time
    /// `sodium_bin2base64`, in one array allocated at its final size (so no reallocation leaves
    /// a partial copy behind). It holds key text: wipe it with ``wipe(_:)`` when done.
    public func base64Text() -> [UInt8] {
        let length = (byteCount + 2) / 3 * 4
        // The array's capacity has room for libsodium's NUL terminator, which stays past the end.
        return [UInt8](unsafeUninitializedCapacity: length + 1) { out, initialized in
            initialized = 0
            guard let o = out.baseAddress else { return }
            withUnsafeBytes { secret in
                // Safe: libsodium writes `length` digits and a NUL, `length + 1` bytes, into `out`
                // (that capacity), reading `secret.count` bytes of this secret's storage.
                o.withMemoryRebound(to: CChar.self, capacity: length + 1) { c in
                    _ = sodium_bin2base64(c, length + 1, secret.baseAddress?.assumingMemoryBound(to: UInt8.self), secret.count,
                                          sodium_base64_VARIANT_ORIGINAL)
                }
            }
            initialized = length
        }
    }

    /// Appends the secret's bytes to `out`, e.g. into a keychain item's data. Reserve `out`'s
    /// capacity first: a reallocation would leave a copy of the key in the freed buffer. The
    /// caller wipes `out` when done.
    public func appendBytes(to out: inout [UInt8]) {
        withUnsafeBytes { out.append(contentsOf: $0) }
    }
}
