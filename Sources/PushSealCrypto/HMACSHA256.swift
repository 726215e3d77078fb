/// HMAC-SHA256 (RFC 2104, FIPS 198-1) through OpenSSL 3's `EVP_MAC` "HMAC", on this thread's
/// reusable MAC context (the one HKDF's composition uses); the context is re-keyed with a zero
/// key afterwards, so no keyed state outlives the call.
public enum HMACSHA256 {
    /// Bytes of a tag: 32.
    public static let byteCount = 32

    /// The HMAC-SHA256 of `message` under `key`.
    /// - Parameters:
    ///   - message: the bytes to authenticate (may be empty).
    ///   - key: the key, at least 1 byte (32 for a derived key).
    /// - Returns: the 32-byte tag.
    /// - Throws: `CryptoError` `.invalidKeySize` (an empty key), `.internalFailure` (OpenSSL).
    public static func authenticate(_ message: [UInt8], key: SecretBytes) throws -> [UInt8] {
        guard key.byteCount > 0 else { throw CryptoError(.invalidKeySize, "an HMAC-SHA256 key is at least 1 byte") }
        var tag = [UInt8](repeating: 0, count: byteCount)
        let ok = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                tag.withUnsafeMutableBytes { out -> Bool in
                    guard let ctx = MACContext.threadContext(), let base = out.baseAddress else { return false }
                    let done = MACContext.begin(ctx, key: k) && MACContext.feed(ctx, m) && MACContext.finish(ctx, into: base)
                    if !done { MACContext.discardThreadContext() }
                    return done
                }
            }
        }
        MACContext.scrub()
        guard ok else { throw CryptoError(.internalFailure, "OpenSSL HMAC-SHA256 failed") }
        return tag
    }
}
