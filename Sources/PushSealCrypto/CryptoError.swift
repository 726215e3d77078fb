public import PushSealSystem

/// An error from the crypto core.
///
/// Compare errors by ``code``: the human ``reason`` may change between releases, the codes
/// will not. Reasons never contain key bytes or plaintext.
public typealias CryptoError = DomainError<CryptoErrorDomain>

/// The domain of ``CryptoError``: `name` is `crypto`.
public enum CryptoErrorDomain: ErrorDomain { public static let name = "crypto" }

extension ErrorCode<CryptoError> {
    /// The tag did not verify: wrong key, wrong AAD, or modified nonce, ciphertext or tag.
    /// Open reports all of these the same way on purpose.
    public static var authenticationFailed: Self { Self("authenticationFailed") }
    /// A key was not exactly ``AES256GCM/keyByteCount`` (32) bytes, or an X25519 private key
    /// not ``X25519/privateKeyByteCount`` (32) bytes.
    public static var invalidKeySize: Self { Self("invalidKeySize") }
    /// A nonce was not exactly ``AES256GCM/nonceByteCount`` (12) bytes.
    public static var invalidNonceSize: Self { Self("invalidNonceSize") }
    /// A tag was not exactly ``AES256GCM/tagByteCount`` (16) bytes.
    public static var invalidTagSize: Self { Self("invalidTagSize") }
    /// A combined sealed box was shorter than nonce plus tag (28 bytes), or an HPKE sealed
    /// message shorter than enc plus tag (48 bytes).
    public static var truncatedBox: Self { Self("truncatedBox") }
    /// An X25519 public key, or an HPKE `enc`, was not exactly ``X25519/publicKeyByteCount``
    /// (32) bytes (a truncated or overlong `enc`).
    public static var invalidPublicKey: Self { Self("invalidPublicKey") }
    /// X25519 gave the all-zero shared secret: the peer's public key (an HPKE `enc` or a
    /// sender key) is a low-order point. Refused (RFC 9180 §7.1.4, RFC 7748 §6.1).
    public static var zeroSharedSecret: Self { Self("zeroSharedSecret") }
    /// A parameter was outside its documented range (e.g. HKDF output over 8160 bytes).
    public static var invalidParameter: Self { Self("invalidParameter") }
    /// The system random generator or a C library call failed unexpectedly.
    public static var internalFailure: Self { Self("internalFailure") }
}

// Re-exported so that code importing only this module reads the error's `code`, `reason` and
// `suggestion` (their declarations live in PushSealSystem; MemberImportVisibility).
@_exported public import struct PushSealSystem.DomainError
