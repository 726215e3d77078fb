import PushSealCrypto

/// An error from a ``SealingKeyProvider``: why no key could be handed out for a seal.
///
/// Compare by ``code``; the codes have the names of the sender's (`SenderError`) codes they
/// are reported as. Reasons name app ids, recipients and key ids, never key bytes.
public struct SealingKeyError: CodedError {
    /// A stable, machine-readable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name, e.g. `unknownRecipient`.
        public let name: String

        init(_ name: String) { self.name = name }

        /// The key store knows no such recipient (for this app).
        public static let unknownRecipient = Code("unknownRecipient")
        /// The recipient exists but has no usable primary key (destroyed, disabled, revoked).
        public static let keyUnavailable = Code("keyUnavailable")
        /// The primary key reached 2^32 seals, the limit for random 96-bit nonces
        /// (NIST SP 800-38D §8.3): rotate the keyset before sealing again.
        public static let sealLimitReached = Code("sealLimitReached")
        /// An app id or recipient that breaks the key store's naming rules (the reason names
        /// the rule); reported by the sender as `invalidOption`.
        public static let invalidName = Code("invalidName")
        /// There is no key store at the given place.
        public static let keyStoreMissing = Code("keyStoreMissing")
        /// The key store is group- or world-accessible, or owned by another user: refused.
        public static let keyStoreInsecure = Code("keyStoreInsecure")
        /// The key store cannot be read in its current state (a keychain's
        /// `errSecInteractionNotAllowed`, -25308: locked, or before first unlock).
        public static let keyStoreLocked = Code("keyStoreLocked")
        /// The key store could not be read (damaged, an I/O error, another store failure).
        public static let keyStoreUnreadable = Code("keyStoreUnreadable")

        /// The name.
        public var description: String { name }
    }

    /// The stable code; equality and hashing use it alone.
    public let code: Code
    /// A human explanation: lower case, no key bytes.
    public let reason: String
    /// What the user can do about it, when known exactly (e.g. `chmod 700 DIR`); else `nil`.
    public let suggestion: String?

    /// Creates an error with a stable `code`, a human `reason` (no secrets) and, when the fix
    /// is known exactly, a `suggestion`.
    public init(_ code: Code, _ reason: String, suggestion: String? = nil) {
        self.code = code
        self.reason = reason
        self.suggestion = suggestion
    }
}
