internal import CSodium

/// Argon2id password hashing (RFC 9106) through libsodium's `crypto_pwhash`
/// (`crypto_pwhash_ALG_ARGON2ID13`).
public enum Argon2id {
    /// Salt length in bytes (libsodium `crypto_pwhash_SALTBYTES`, 16).
    public static let saltByteCount = 16
    /// libsodium's "interactive" operations limit (2 passes).
    public static let interactiveOpsLimit: UInt64 = 2
    /// libsodium's "interactive" memory limit, 64 MiB.
    public static let interactiveMemLimitBytes = 64 << 20

    /// Derives `outputByteCount` bytes from `password` and `salt`.
    /// - Parameters:
    ///   - password: the passcode bytes.
    ///   - salt: 16 bytes.
    ///   - opsLimit: passes, >= 1.
    ///   - memLimitBytes: memory in bytes, >= 8 KiB.
    ///   - outputByteCount: 16...1024 bytes.
    /// - Throws: `CryptoError` `.invalidParameter` for out-of-range parameters, `.internalFailure`
    ///   when libsodium fails (e.g. out of memory).
    public static func deriveKey(password: [UInt8], salt: [UInt8], opsLimit: UInt64, memLimitBytes: Int, outputByteCount: Int = 32) throws -> SecretBytes {
        _ = SecureRandom.sodiumReady
        guard salt.count == saltByteCount else {
            throw CryptoError(.invalidParameter, "an Argon2id salt is \(saltByteCount) bytes, got \(salt.count)")
        }
        guard (16...1024).contains(outputByteCount), opsLimit >= 1, memLimitBytes >= 8192 else {
            throw CryptoError(.invalidParameter, "Argon2id parameters out of range")
        }
        var out = [UInt8](repeating: 0, count: outputByteCount)
        defer { SecretBytes.wipe(&out) }
        // libsodium wants a non-null password pointer even when the password is empty.
        let passwordStorage = password.isEmpty ? [UInt8(0)] : password
        let status = passwordStorage.withUnsafeBufferPointer { p -> Int32 in
            p.withMemoryRebound(to: CChar.self) { pc in
                guard let base = pc.baseAddress else { return -1 }
                return crypto_pwhash(&out, UInt64(outputByteCount), base, UInt64(password.count), salt,
                                     opsLimit, memLimitBytes, crypto_pwhash_ALG_ARGON2ID13)
            }
        }
        guard status == 0 else { throw CryptoError(.internalFailure, "Argon2id failed (out of memory?)") }
        return SecretBytes(copying: out)
    }
}
