/// An error from the crypto core.
///
/// Compare errors by ``code``: the human ``reason`` may change between releases, the codes
/// will not. Reasons never contain key bytes or plaintext.
public struct CryptoError: CodedError {
    /// A stable, machine-readable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name, e.g. `authenticationFailed`.
        public let name: String

        init(_ name: String) { self.name = name }

        /// The tag did not verify: wrong key, wrong AAD, or modified nonce, ciphertext or tag.
        /// Open reports all of these the same way on purpose.
        public static let authenticationFailed = Code("authenticationFailed")
        /// A key was not exactly ``AES256GCM/keyByteCount`` (32) bytes, or an X25519 private key
        /// not ``X25519/privateKeyByteCount`` (32) bytes.
        public static let invalidKeySize = Code("invalidKeySize")
        /// A nonce was not exactly ``AES256GCM/nonceByteCount`` (12) bytes.
        public static let invalidNonceSize = Code("invalidNonceSize")
        /// A tag was not exactly ``AES256GCM/tagByteCount`` (16) bytes.
        public static let invalidTagSize = Code("invalidTagSize")
        /// A combined sealed box was shorter than nonce plus tag (28 bytes), or an HPKE sealed
        /// message shorter than enc plus tag (48 bytes).
        public static let truncatedBox = Code("truncatedBox")
        /// An X25519 public key, or an HPKE `enc`, was not exactly ``X25519/publicKeyByteCount``
        /// (32) bytes (a truncated or overlong `enc`).
        public static let invalidPublicKey = Code("invalidPublicKey")
        /// X25519 gave the all-zero shared secret: the peer's public key (an HPKE `enc` or a
        /// sender key) is a low-order point. Refused (RFC 9180 §7.1.4, RFC 7748 §6.1).
        public static let zeroSharedSecret = Code("zeroSharedSecret")
        /// A parameter was outside its documented range (e.g. HKDF output over 8160 bytes).
        public static let invalidParameter = Code("invalidParameter")
        /// The system random generator or a C library call failed unexpectedly.
        public static let internalFailure = Code("internalFailure")

        public var description: String { name }
    }

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
