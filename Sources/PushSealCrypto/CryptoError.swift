public import PushSealSystem

/// An error from the crypto core.
///
/// Compare errors by ``code``: the human ``reason`` may change between releases, the codes
/// will not. Reasons never contain key bytes or plaintext.
public struct CryptoError: CodedError {
    /// The stable codes of this domain (constants below).
    public typealias Code = ErrorCode<CryptoError>
    /// `crypto`.
    public static let domain = "crypto"
    /// The stable code; equality and hashing use it alone.
    public let code: Code
    /// A human explanation, without secrets.
    public let reason: String

    /// Creates an error with a stable `code` and a human `reason` (no secrets).
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

extension ErrorCode<CryptoError> {
    /// The tag did not verify: wrong key, wrong AAD, or modified nonce, ciphertext or tag.
    /// Open reports all of these the same way on purpose.
    public static var authenticationFailed: Self { Self("authenticationFailed") }
    /// A key was not exactly ``AES256GCM/keyByteCount`` (32) bytes.
    public static var invalidKeySize: Self { Self("invalidKeySize") }
    /// A nonce was not exactly ``AES256GCM/nonceByteCount`` (12) bytes.
    public static var invalidNonceSize: Self { Self("invalidNonceSize") }
    /// A tag was not exactly ``AES256GCM/tagByteCount`` (16) bytes.
    public static var invalidTagSize: Self { Self("invalidTagSize") }
    /// A combined sealed box was shorter than nonce plus tag (28 bytes).
    public static var truncatedBox: Self { Self("truncatedBox") }
    /// A parameter was outside its documented range (e.g. HKDF output over 8160 bytes).
    public static var invalidParameter: Self { Self("invalidParameter") }
    /// The system random generator or a C library call failed unexpectedly.
    public static var internalFailure: Self { Self("internalFailure") }
}
