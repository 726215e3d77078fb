public import PushSealWire

/// A ``ServerKeyStore`` that reads many recipients' primaries and reserves their seals in bulk,
/// so a batch chunk costs a few round trips rather than a few per recipient (`PostgresKeyStore`),
/// or one flush of the file system rather than one per recipient (the file keychain, ``KeyStore``).
/// ``ServerKeyring/beginBatchChunk(appID:recipients:)`` uses it; a store that is not one is read
/// one recipient at a time, at each seal.
public protocol BulkSealingKeyStore: ServerKeyStore {
    /// The primary (key id and 32 bytes) and a change watch of each keyset of `appID` named in
    /// `recipients`, read together (the watch and the key from one consistent view).
    /// Recipients with no keyset, no primary, or a malformed name are left out (their seal
    /// reports the error). Counts nothing.
    /// - Throws: the store's errors (then nothing is loaded; each seal reads alone).
    func sealingPrimaries(appID: String, recipients: [String]) throws -> [String: (watch: any KeysetWatch, key: SealingKey)]

    /// Reserves a block of seals for each (recipient, primary key id, count) at once, with the
    /// guarantees of ``ServerKeyStore/reserveSeals(appID:recipient:keyID:count:)`` per key
    /// (durable and audited before it returns; never under-counts; only on a key that is still
    /// the primary and below 2^32). A request that cannot be granted (the key is no longer the
    /// primary, the limit is reached, no such keyset) is left out of the result. Unlike a single
    /// reservation, it leaves the watches from ``sealingPrimaries(appID:recipients:)`` current
    /// (the reservation cannot change the key to seal with).
    /// - Returns: the granted reservations by recipient.
    /// - Throws: the store's errors (then none is granted, or some are: an over-count only).
    func reserveSeals(appID: String, blocks: [(recipient: String, keyID: String, count: UInt64)]) throws -> [String: SealReservation]
}
