internal import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's EVP digest interface, one-shot or streaming.
public final class SHA256Hasher {
    private let ctx: OpaquePointer?

    /// Digest length in bytes.
    public static let digestByteCount = 32

    /// Starts a new SHA-256 computation.
    public init() {
        ctx = EVP_MD_CTX_new()
        if let ctx { _ = EVP_DigestInit_ex(ctx, EVP_sha256(), nil) }
    }

    deinit { EVP_MD_CTX_free(ctx) }

    /// Feeds `bytes` into the hash.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let ctx, let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = EVP_DigestUpdate(ctx, base, bytes.count)
    }

    /// Feeds `bytes` into the hash.
    public func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// Feeds `bytes` into the hash, read in place (e.g. a media chunk borrowed from the fetcher).
    public func update(_ bytes: Span<UInt8>) {
        // Safe: the span's bytes are valid for the closure, and OpenSSL only reads them there.
        bytes.withUnsafeBytes { update($0) }
    }

    /// Finishes and returns the 32-byte digest. Call once.
    /// - Throws: `CryptoError` `.internalFailure` if OpenSSL failed.
    public func finalize() throws -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Self.digestByteCount)
        var length: UInt32 = 0
        guard let ctx, EVP_DigestFinal_ex(ctx, &digest, &length) == 1, length == 32 else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL SHA-256 failed")
        }
        return digest
    }

    /// SHA-256 of `bytes` in one call (32 bytes).
    /// - Throws: `CryptoError` `.internalFailure` if OpenSSL failed.
    public static func hash(_ bytes: [UInt8]) throws -> [UInt8] {
        let hasher = SHA256Hasher()
        hasher.update(bytes)
        return try hasher.finalize()
    }
}
