internal import COpenSSL

/// An ECDSA P-256 public key held by OpenSSL 3.0, verifying ES256 signatures given as raw
/// `r‖s` (64 bytes, IEEE P1363), as Wycheproof's `ecdsa_*_p1363` vectors and JWTs carry them.
///
/// Sendable: the `EVP_PKEY` is written only in `init`; each verification makes its own context.
public final class P256VerifyingKey: @unchecked Sendable {
    let pkey: OpaquePointer

    /// The DER prefix of a P-256 SubjectPublicKeyInfo before the 65-byte uncompressed point
    /// (RFC 5480: id-ecPublicKey, prime256v1, BIT STRING).
    static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A,
        0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// Parses a DER SubjectPublicKeyInfo (RFC 5480).
    /// - Throws: `CryptoError` `.invalidKey` when it does not parse or is not a P-256 key.
    public init(subjectPublicKeyInfo der: [UInt8]) throws {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { b in
            var p: UnsafePointer<UInt8>? = b.baseAddress
            return d2i_PUBKEY(nil, &p, b.count)
        }
        ERR_clear_error()
        guard let key = parsed else { throw CryptoError(.invalidKey, "not a DER SubjectPublicKeyInfo") }
        guard P256SigningKey.isP256(key) else {
            EVP_PKEY_free(key)
            throw CryptoError(.invalidKey, "not an EC P-256 public key")
        }
        pkey = key
    }

    /// Parses an uncompressed point (`04‖x‖y`, 65 bytes, SEC 1 §2.3.3).
    /// - Throws: `CryptoError` `.invalidKey` when it is not a point on P-256.
    public convenience init(uncompressedPoint point: [UInt8]) throws {
        guard point.count == 65, point.first == 0x04 else {
            throw CryptoError(.invalidKey, "an uncompressed P-256 point is 65 bytes starting with 04")
        }
        try self.init(subjectPublicKeyInfo: P256VerifyingKey.spkiPrefix + point)
    }

    deinit { EVP_PKEY_free(pkey) }

    /// `true` when `signature` (raw `r‖s`, 64 bytes) is a valid ES256 signature of `message`.
    /// Any other length, `r` or `s` zero or not below the group order, is `false`.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == P256SigningKey.signatureByteCount,
              let der = try? P256SigningKey.derSignature(fromRaw: signature),
              let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        let ok = EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1
            && message.withUnsafeBufferPointer { m in
                der.withUnsafeBufferPointer { d in EVP_DigestVerify(ctx, d.baseAddress, d.count, m.baseAddress, m.count) }
            } == 1
        ERR_clear_error()
        return ok
    }
}
