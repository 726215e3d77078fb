internal import COpenSSL

/// An ECDSA P-256 private key (NIST P-256 / secp256r1 / prime256v1) held by OpenSSL 3.0, for
/// ES256 signatures (RFC 7518 §3.4): SHA-256, then ECDSA, the signature as raw `r‖s`
/// (``P256SigningKey/signatureByteCount``, 64 bytes, IEEE P1363), converted from OpenSSL's DER.
///
/// Made from an Apple `.p8` file (PKCS#8 PEM, `-----BEGIN PRIVATE KEY-----`) or PKCS#8 DER.
/// The key bytes never leave OpenSSL's `EVP_PKEY`; the PEM text read from a file is wiped by
/// the caller (``SecretBytes``). `description` never shows key material.
///
/// Sendable: the `EVP_PKEY` is written only in `init` and OpenSSL's signing with a shared
/// `EVP_PKEY` from several threads is safe (each call makes its own `EVP_MD_CTX`).
public final class P256SigningKey: @unchecked Sendable, CustomStringConvertible {
    /// Raw signature length: 32-byte `r` then 32-byte `s`, big-endian (IEEE P1363).
    public static let signatureByteCount = 64
    /// Length of one scalar (`r`, `s`) in bytes.
    public static let scalarByteCount = 32

    let pkey: OpaquePointer

    /// Parses a PKCS#8 private key in PEM (an Apple `.p8` file's contents) or DER.
    /// - Parameter keyFile: the file's bytes (PEM text or DER); not kept.
    /// - Throws: `CryptoError` `.invalidKey` when the bytes are not a private key, or the key
    ///   is not an EC key on P-256.
    public init(pkcs8 keyFile: SecretBytes) throws {
        let parsed: OpaquePointer? = keyFile.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.baseAddress, raw.count > 0, raw.count < Int(Int32.max) else { return nil }
            if let bio = BIO_new_mem_buf(base, Int32(raw.count)) {
                defer { BIO_free(bio) }
                if let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) { return key }
            }
            ERR_clear_error()
            var p: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
            return d2i_AutoPrivateKey(nil, &p, raw.count)
        }
        ERR_clear_error()
        guard let key = parsed else {
            throw CryptoError(.invalidKey, "not a PKCS#8 private key (PEM '-----BEGIN PRIVATE KEY-----' or DER)")
        }
        guard P256SigningKey.isP256(key) else {
            EVP_PKEY_free(key)
            throw CryptoError(.invalidKey, "not an EC P-256 key (APNs provider keys are ES256, P-256)")
        }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }

    /// `true` when `key` is an EC key on the P-256 curve.
    static func isP256(_ key: OpaquePointer) -> Bool {
        guard EVP_PKEY_is_a(key, "EC") == 1 else { return false }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, &name, name.count, &length) == 1 else {
            ERR_clear_error()
            return false
        }
        let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return group == "prime256v1" || group == "P-256" || group == "secp256r1"
    }

    /// The matching public key.
    /// - Throws: `CryptoError` `.internalFailure` if OpenSSL cannot export it.
    public func publicKey() throws -> P256VerifyingKey {
        var der: UnsafeMutablePointer<UInt8>?
        let n = i2d_PUBKEY(pkey, &der)
        guard n > 0, let der else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL could not export the public key")
        }
        defer { CRYPTO_free(der, #fileID, #line) }
        return try P256VerifyingKey(subjectPublicKeyInfo: Array(UnsafeBufferPointer(start: der, count: Int(n))))
    }

    /// Signs `message` with ECDSA P-256 over SHA-256 (ES256), a fresh random nonce each time.
    /// - Returns: 64 bytes, `r‖s` (each 32 bytes, big-endian, left-padded with zeros).
    /// - Throws: `CryptoError` `.internalFailure` if OpenSSL fails.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw CryptoError(.internalFailure, "OpenSSL EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(ctx) }
        var der = [UInt8](repeating: 0, count: 80)
        var length = der.count
        let ok = EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, pkey) == 1
            && message.withUnsafeBufferPointer { m in EVP_DigestSign(ctx, &der, &length, m.baseAddress, m.count) } == 1
        guard ok else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL ECDSA signing failed")
        }
        return try P256SigningKey.rawSignature(fromDER: Array(der.prefix(length)))
    }

    /// Converts a DER `ECDSA-Sig-Value` (SEQUENCE of two INTEGERs) to raw `r‖s`, 64 bytes.
    /// - Throws: `CryptoError` `.invalidParameter` when the DER does not parse or a scalar is
    ///   longer than 32 bytes.
    public static func rawSignature(fromDER der: [UInt8]) throws -> [UInt8] {
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { b in
            var p: UnsafePointer<UInt8>? = b.baseAddress
            return d2i_ECDSA_SIG(nil, &p, b.count)
        }
        guard let sig else {
            ERR_clear_error()
            throw CryptoError(.invalidParameter, "not a DER ECDSA signature")
        }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(sig, &r, &s)
        var out = [UInt8](repeating: 0, count: signatureByteCount)
        let ok = out.withUnsafeMutableBufferPointer { o -> Bool in
            guard let base = o.baseAddress, let r, let s else { return false }
            return BN_bn2binpad(r, base, Int32(scalarByteCount)) == Int32(scalarByteCount)
                && BN_bn2binpad(s, base + scalarByteCount, Int32(scalarByteCount)) == Int32(scalarByteCount)
        }
        guard ok else {
            ERR_clear_error()
            throw CryptoError(.invalidParameter, "an ECDSA scalar is longer than 32 bytes")
        }
        return out
    }

    /// Converts raw `r‖s` (64 bytes) to a DER `ECDSA-Sig-Value`.
    /// - Throws: `CryptoError` `.invalidParameter` when `raw` is not 64 bytes.
    public static func derSignature(fromRaw raw: [UInt8]) throws -> [UInt8] {
        guard raw.count == signatureByteCount else {
            throw CryptoError(.invalidParameter, "a raw P-256 signature is 64 bytes, got \(raw.count)")
        }
        guard let sig = ECDSA_SIG_new() else { throw CryptoError(.internalFailure, "OpenSSL ECDSA_SIG_new failed") }
        defer { ECDSA_SIG_free(sig) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32(scalarByteCount), nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress.map { $0 + scalarByteCount }, Int32(scalarByteCount), nil) }
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL ECDSA_SIG_set0 failed")
        }
        var der: UnsafeMutablePointer<UInt8>?
        let n = i2d_ECDSA_SIG(sig, &der)
        guard n > 0, let der else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL i2d_ECDSA_SIG failed")
        }
        defer { CRYPTO_free(der, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: der, count: Int(n)))
    }

    /// Never key material: `P256SigningKey(redacted)`.
    public var description: String { "P256SigningKey(redacted)" }
}
