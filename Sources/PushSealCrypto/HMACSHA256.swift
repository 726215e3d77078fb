internal import COpenSSL

/// HMAC with SHA-256 (RFC 2104, FIPS 198-1) through OpenSSL 3's `EVP_MAC` "HMAC", on the
/// per-thread MAC context HPKE's key schedule uses (``MACContext``), scrubbed after each call.
///
/// For message authentication with a shared secret (registration tokens' HS256, RFC 7518 §3.2).
/// Verify with ``isValidAuthenticationCode(_:authenticating:using:)``, which compares in
/// constant time; never compare a tag with `==`.
public enum HMACSHA256 {
    /// Output of one HMAC-SHA256: 32 bytes.
    public static let byteCount = MACContext.hashByteCount

    /// The 32-byte HMAC-SHA256 of `message` under `key`.
    /// - Parameters:
    ///   - message: any bytes (may be empty).
    ///   - key: the secret, at least 1 byte (RFC 7518 §3.2 asks HS256 keys of at least 32 bytes;
    ///     callers enforce their own minimum).
    /// - Returns: the 32-byte tag.
    /// - Throws: `CryptoError` `.invalidKeySize` for an empty key, `.internalFailure` when OpenSSL fails.
    public static func authenticationCode(for message: UnsafeRawBufferPointer, using key: SecretBytes) throws -> [UInt8] {
        guard key.byteCount > 0 else { throw CryptoError(.invalidKeySize, "an HMAC key must not be empty") }
        var tag = [UInt8](repeating: 0, count: byteCount)
        let ok = key.withUnsafeBytes { k in
            tag.withUnsafeMutableBytes { out -> Bool in
                guard let ctx = MACContext.threadContext(), let base = out.baseAddress else { return false }
                defer { MACContext.scrub() }
                return MACContext.begin(ctx, key: k) && MACContext.feed(ctx, message) && MACContext.finish(ctx, into: base)
            }
        }
        guard ok else {
            ERR_clear_error()
            MACContext.discardThreadContext()
            throw CryptoError(.internalFailure, "OpenSSL HMAC-SHA256 failed")
        }
        return tag
    }

    /// ``authenticationCode(for:using:)-(UnsafeRawBufferPointer,_)`` of a byte array.
    public static func authenticationCode(for message: [UInt8], using key: SecretBytes) throws -> [UInt8] {
        try message.withUnsafeBytes { try authenticationCode(for: $0, using: key) }
    }

    /// `true` when `tag` is the HMAC-SHA256 of `message` under `key`, compared in constant time
    /// (``ConstantTime/equals(_:_:)-([UInt8],[UInt8])``); a tag of another length is `false`.
    /// - Throws: as ``authenticationCode(for:using:)-(UnsafeRawBufferPointer,_)``.
    public static func isValidAuthenticationCode(_ tag: [UInt8], authenticating message: [UInt8], using key: SecretBytes) throws -> Bool {
        var expected = try authenticationCode(for: message, using: key)
        defer { SecretBytes.wipe(&expected) }
        return ConstantTime.equals(expected, tag)
    }
}
