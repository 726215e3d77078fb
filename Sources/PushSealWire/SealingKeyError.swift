public import PushSealSystem

/// An error from a ``SealingKeyProvider``: why no key could be handed out for a seal.
///
/// Compare by ``code``; the codes have the names of the sender's (`SenderError`) codes they
/// are reported as. Reasons name app ids, recipients and key ids, never key bytes.
public typealias SealingKeyError = DomainError<SealingKeyErrorDomain>

/// The domain of ``SealingKeyError``: `name` is `sealingKey`.
public enum SealingKeyErrorDomain: ErrorDomain { public static let name = "sealingKey" }

extension ErrorCode<SealingKeyError> {
    /// The key store knows no such recipient (for this app).
    public static var unknownRecipient: Self { Self("unknownRecipient") }
    /// The recipient exists but has no usable primary key (destroyed, disabled, revoked).
    public static var keyUnavailable: Self { Self("keyUnavailable") }
    /// The primary key reached 2^32 seals, the limit for random 96-bit nonces
    /// (NIST SP 800-38D §8.3): rotate the keyset before sealing again.
    public static var sealLimitReached: Self { Self("sealLimitReached") }
    /// An app id or recipient that breaks the key store's naming rules (the reason names
    /// the rule); reported by the sender as `invalidOption`.
    public static var invalidName: Self { Self("invalidName") }
    /// There is no key store at the given place.
    public static var keyStoreMissing: Self { Self("keyStoreMissing") }
    /// The key store is group- or world-accessible, or owned by another user: refused.
    public static var keyStoreInsecure: Self { Self("keyStoreInsecure") }
    /// The key store cannot be read in its current state (a keychain's
    /// `errSecInteractionNotAllowed`, -25308: locked, or before first unlock).
    public static var keyStoreLocked: Self { Self("keyStoreLocked") }
    /// The key store could not be read (damaged, an I/O error, another store failure).
    public static var keyStoreUnreadable: Self { Self("keyStoreUnreadable") }
    /// The key store could not be written because its disk is full (or its quota used up:
    /// a keychain's `errSecDiskFull`, -34): the seal count could not be recorded, so nothing
    /// was sealed. Free space and retry.
    public static var keyStoreUnwritable: Self { Self("keyStoreUnwritable") }
}

// Re-exported so that code importing only this module reads the error's `code`, `reason` and
// `suggestion` (their declarations live in PushSealSystem; MemberImportVisibility).
@_exported public import struct PushSealSystem.DomainError
