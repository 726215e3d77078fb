internal import COpenSSL

/// HKDF with HMAC-SHA-256 (RFC 5869), through OpenSSL 3's `EVP_KDF` "HKDF".
public enum HKDFSHA256 {
    /// Largest output: 255 × 32 = 8160 bytes (RFC 5869 §2.3).
    public static let maxOutputByteCount = 255 * 32

    /// Extract-then-expand (RFC 5869 §2.2–2.3).
    /// - Parameters:
    ///   - ikm: input keying material (may be empty).
    ///   - salt: optional salt; empty means 32 zero bytes (RFC 5869 §2.2).
    ///   - info: context and application-specific information (may be empty).
    ///   - outputByteCount: L, 0...8160 bytes.
    /// - Returns: L bytes of output keying material, as a secret.
    /// - Throws: `CryptoError` `.invalidParameter` when L > 8160, `.internalFailure`.
    public static func deriveKey(inputKeyMaterial ikm: SecretBytes, salt: [UInt8] = [], info: [UInt8] = [], outputByteCount: Int) throws -> SecretBytes {
        var okm = try ikm.withUnsafeBytes { try derive(ikm: $0, salt: salt, info: info, outputByteCount: outputByteCount) }
        defer { SecretBytes.wipe(&okm) }
        return SecretBytes(copying: okm)
    }

    /// As ``deriveKey(inputKeyMaterial:salt:info:outputByteCount:)`` on plain bytes (tests, vectors).
    public static func derive(ikm: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8], outputByteCount: Int) throws -> [UInt8] {
        guard outputByteCount >= 0, outputByteCount <= maxOutputByteCount else {
            throw CryptoError(.invalidParameter, "HKDF-SHA256 output is at most \(maxOutputByteCount) bytes, asked for \(outputByteCount)")
        }
        if outputByteCount == 0 { return [] }
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL has no HKDF")
        }
        defer { EVP_KDF_free(kdf) }
        guard let ctx = EVP_KDF_CTX_new(kdf) else {
            ERR_clear_error()
            throw CryptoError(.internalFailure, "OpenSSL could not create an HKDF context")
        }
        defer { EVP_KDF_CTX_free(ctx) }
        // OpenSSL needs a non-null key pointer even for an empty IKM; one zero byte of storage, length 0.
        var emptyByte: UInt8 = 0
        var output = [UInt8](repeating: 0, count: outputByteCount)
        let status: Int32 = "digest".withCString { dKey in "SHA256".withCString { dValue in
            "key".withCString { kKey in "salt".withCString { sKey in "info".withCString { iKey in
                withUnsafeMutablePointer(to: &emptyByte) { empty in
                    var saltCopy = salt, infoCopy = info
                    return saltCopy.withUnsafeMutableBytes { s in infoCopy.withUnsafeMutableBytes { i in
                        var params: [OSSL_PARAM] = [
                            OSSL_PARAM_construct_utf8_string(dKey, UnsafeMutablePointer(mutating: dValue), 0),
                            OSSL_PARAM_construct_octet_string(kKey, UnsafeMutableRawPointer(mutating: ikm.baseAddress) ?? UnsafeMutableRawPointer(empty), ikm.count),
                        ]
                        if s.count > 0 { params.append(OSSL_PARAM_construct_octet_string(sKey, s.baseAddress, s.count)) }
                        if i.count > 0 { params.append(OSSL_PARAM_construct_octet_string(iKey, i.baseAddress, i.count)) }
                        params.append(OSSL_PARAM_construct_end())
                        return output.withUnsafeMutableBufferPointer { o in
                            EVP_KDF_derive(ctx, o.baseAddress, outputByteCount, &params)
                        }
                    } }
                }
            } } }
        } }
        guard status == 1 else {
            ERR_clear_error()
            SecretBytes.wipe(&output)
            throw CryptoError(.internalFailure, "OpenSSL HKDF failed")
        }
        return output
    }
}
