public import PushSealSystem
/// An error from the key lifecycle (keysets, provisioning, rotation, keyrings).
///
/// Compare by ``code``: codes are stable, the human ``reason`` may change. Reasons name key ids,
/// app ids and recipients, never key bytes. Keychain failures (OSStatus errors such as
/// `errSecInteractionNotAllowed` (-25308), `errSecMissingEntitlement` (-34018) or
/// `errSecItemNotFound` (-25300)) are not wrapped: they are thrown as the keychain's own
/// `KeychainError`, so a caller can never mistake a locked device for an unknown key.
public typealias KeysError = DomainError<KeysErrorDomain>

/// The domain of ``KeysError``: `name` is `keys`.
public enum KeysErrorDomain: ErrorDomain { public static let name = "keys" }

extension ErrorCode<KeysError> {
    /// The keyset exists but holds no key with this key id (never seen on this side).
    public static var unknownKey: Self { Self("unknownKey") }
    /// The key was destroyed (pruned after its grace window); only its tombstone remains.
    public static var keyDestroyed: Self { Self("keyDestroyed") }
    /// The key was revoked (disabled): it neither seals nor opens.
    public static var keyDisabled: Self { Self("keyDisabled") }
    /// A `decryptOnly` key is past its `notAfter` time (and waiting to be pruned).
    public static var keyExpired: Self { Self("keyExpired") }
    /// No keyset for this app id and recipient (an unknown recipient).
    public static var unknownKeyset: Self { Self("unknownKeyset") }
    /// `generate` for an app id and recipient that already have a keyset.
    public static var keysetExists: Self { Self("keysetExists") }
    /// The keyset has no primary key (e.g. the primary was revoked): nothing can be sealed.
    public static var noPrimaryKey: Self { Self("noPrimaryKey") }
    /// The primary key reached 2^32 seals, the limit for random 96-bit nonces
    /// (NIST SP 800-38D §8.3): rotate before sealing again.
    public static var sealLimitReached: Self { Self("sealLimitReached") }
    /// A key record (JSON) is malformed, truncated or has a field of the wrong type or size.
    public static var malformedRecord: Self { Self("malformedRecord") }
    /// A key record is for another app id than the keychain identity or `--app-id` expects.
    public static var wrongAppID: Self { Self("wrongAppID") }
    /// The same key id with different key bytes (in the record, or already in the keyset).
    public static var duplicateKeyID: Self { Self("duplicateKeyID") }
    /// A key id, app id or recipient that is not well formed (see ``KeyID``).
    public static var invalidName: Self { Self("invalidName") }
    /// A keyset item that does not decode (damaged or written by another program).
    public static var corruptKeyset: Self { Self("corruptKeyset") }
    /// A device key item (docs/keychain.md "Device key items") whose 59-byte key record breaks
    /// the layout (length, layout version, kind, status), or whose key bytes are not a usable
    /// key of its kind: the reader never guesses (fallback `corruptKey`).
    public static var corruptKey: Self { Self("corruptKey") }
    /// An X25519 public key of low order (RFC 7748 §6.1, RFC 9180 §7.1.4): every shared secret
    /// with it is all zero, so it authenticates nothing (a sender key record to pin).
    public static var lowOrderPoint: Self { Self("lowOrderPoint") }
    /// A keyset item older than the store's generation counter for it: an old copy of the
    /// item was put back (a partial restore, or someone who can write the keychain). Refused:
    /// it could bring back a revoked key or a lower seal count (F5).
    public static var keysetRolledBack: Self { Self("keysetRolledBack") }
    /// A device key item the app's key manifest does not vouch for (docs/keychain.md "The key
    /// manifest"): an older copy of the item put back (a key before its revoke or retirement), a
    /// pruned key or a removed pin restored, an item written around the toolkit, or key items
    /// without a manifest. Refused, never opened (fallback `keyRolledBack`; F5).
    public static var keyRolledBack: Self { Self("keyRolledBack") }
    /// An import into a sealing (server) store of a primary key that has already sealed
    /// elsewhere (seal count > 0): the per-store counter would under-count the key (F11).
    public static var sealCountInUse: Self { Self("sealCountInUse") }
    /// The identity has no access group it shares with its extension (no
    /// `keychain-access-groups` and no application group).
    public static var noSharedAccessGroup: Self { Self("noSharedAccessGroup") }
    /// A request that contradicts the keyset state (e.g. promoting a destroyed key, the same
    /// keychain given as server and device).
    public static var invalidState: Self { Self("invalidState") }
    /// A file operation outside the keychain failed (lock file, audit log, record file).
    public static var io: Self { Self("io") }
    /// A time (`now`, Unix seconds) outside 0 ... ``KeyTime/maxTimeSeconds``
    /// (9999-12-31T23:59:59Z), a negative or too long duration (a grace window, a rotation
    /// period), or a time computed from them (`now + grace`) after that bound. Nothing is
    /// changed: the check comes before any write.
    public static var timeOutOfRange: Self { Self("timeOutOfRange") }
}

extension KeysErrorDomain {
    /// The reason alone: key errors are read by people in the tools' output.
    public static func describe(_ error: KeysError) -> String { error.reason }
}

// Re-exported so that code importing only this module reads the error's `code`, `reason` and
// `suggestion` (their declarations live in PushSealSystem; MemberImportVisibility).
@_exported public import struct PushSealSystem.DomainError
