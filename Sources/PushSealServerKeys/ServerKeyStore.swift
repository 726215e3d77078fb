public import PushSealCrypto
public import PushSealWire
public import PushSealKeyRecords

/// The server side's keysets, whatever holds them: one protocol for the sender's key lookups
/// and seal counters and for `push-keys`' rotation steps. Its implementation today is the file
/// keychain (``KeyStore``); a database store (PostgreSQL) and public-key (v2) registrations are
/// meant to be further implementations, seen by the sender only through ``ServerKeyring``.
///
/// **Names.** App ids follow ``KeyID/isKeysetAppID(_:)`` (`A-Z a-z 0-9 . -`), recipients
/// ``KeyID/validateRecipient(_:)``, key ids ``KeyID/isValid(_:)``; every method checks the names
/// it is given before reading (`KeysError` `.invalidName`). **Times** are Unix seconds (UTC),
/// 0 ... ``KeyTime/maxTimeSeconds``, checked before anything is written (`.timeOutOfRange`).
///
/// **Changes.** Every state change of a keyset (generate, rotate steps, promote, revoke, prune,
/// import, seal reservations) is atomic for that keyset, serialized against every other change of
/// it (in every process), and audited with the lines ``KeyAudit`` describes (`event`, `time`,
/// `appId`, `recipient`, key ids; never key bytes) before it is reported done. A change that
/// cannot be audited is not made.
///
/// **Caches.** A cache of a keyset (``ServerKeyring``) takes a ``KeysetWatch`` before it reads
/// the keyset and asks it later whether the keyset is unchanged; ``batchChunkWillBegin()`` tells
/// the store a batch chunk starts (a store whose watches need a round trip refreshes them once
/// per chunk, before the chunk's first watch is asked).
///
/// **Another implementation** (a database store) conforms in its own module: it builds the
/// results with their public initializers (``KeyInfo``, ``KeysetInfo``, ``RotationResult``,
/// `KeyStore.PrunedKey`, `KeyStore.DueKeyset`, `KeyStore.ImportResult`,
/// ``KeyRecord/init(appID:recipient:keys:)``), installs on a device keychain through
/// ``KeyStore/importRecord(_:expectedAppID:graceSeconds:now:)``, and is handed to the sender as
/// `KeychainSealingKeys(store:)` (PushSealServerKeyProviders); neither the sender nor `ServerKeyring`
/// changes. It proves itself with the same test suite as the file keychain
/// (`Tests/PushSealKeysTests/ServerKeyStoreContract.swift`). Public-key (v2) registrations are
/// meant as a refinement of this protocol (registrations and sender keys per recipient), so a
/// v1-only store stays valid.
///
/// **Errors.** `KeysError` with the codes each method names; a store's own failures as its own
/// error type (the file keychain: `KeychainError`, e.g. `.interactionNotAllowed` -25308 while
/// its device state forbids reading).
public protocol ServerKeyStore: AnyObject, Sendable {
    /// Where the keysets are, for messages: the keychain directory (`/srv/keys`), a database
    /// name. Never a password or key.
    var storeDescription: String { get }

    // MARK: Lookup

    /// The keyset of (app id, recipient), without key bytes.
    /// - Throws: `KeysError` `.unknownKeyset`, `.invalidName`, `.corruptKeyset`; the store's errors.
    func keyset(appID: String, recipient: String) throws -> KeysetInfo

    /// Every keyset, sorted by app id then recipient (no key bytes).
    /// - Throws: `KeysError` `.corruptKeyset`; the store's errors.
    func keysets() throws -> [KeysetInfo]

    // MARK: Sealing (the sender's hot path, through ServerKeyring)

    /// A change watch on the keyset of (app id, recipient), taken before reading it; `nil` when
    /// there is no such keyset. Cheap (the file keychain: no file read).
    /// - Throws: `KeysError` `.invalidName`; the store's errors.
    func watchKeyset(appID: String, recipient: String) throws -> (any KeysetWatch)?

    /// The primary key to seal with: its key id and 32 bytes (PushSealWire's `SealingKey`). Counts nothing (see
    /// ``reserveSeals(appID:recipient:keyID:count:)``).
    /// - Throws: `KeysError` `.unknownKeyset`, `.noPrimaryKey` (revoked, not yet rotated; also a
    ///   primary without bytes), `.invalidName`, `.corruptKeyset`; the store's errors.
    func sealingPrimary(appID: String, recipient: String) throws -> SealingKey

    /// Reserves up to `count` seals of the primary `keyID` durably: raises its stored seal
    /// counter to `min(counter + count, KeyInfo.sealLimit)` in one atomic, audited change
    /// (event `reserveSeals`) and returns the counter before and after. Seals are handed out
    /// from the reservation in memory, so after a crash the counter is an upper bound of the
    /// seals made; it never under-counts. A database store does it with one
    /// `UPDATE … RETURNING`.
    /// - Parameter count: 1 or more seals.
    /// - Throws: `KeysError` `.noPrimaryKey` (`keyID` is no longer the primary: re-read),
    ///   `.sealLimitReached` (the counter is at 2^32, NIST SP 800-38D §8.3), `.unknownKeyset`,
    ///   `.invalidName`; the store's errors.
    func reserveSeals(appID: String, recipient: String, keyID: String, count: UInt64) throws -> SealReservation

    /// A batch chunk starts (``ServerKeyring/beginBatchChunk()``, at most every 2,048 lines):
    /// a store may refresh what its watches compare against, once for the chunk, before the
    /// chunk's first use of a watch (the registry does it then, so a chunk that uses none asks
    /// nothing). Default: nothing.
    func batchChunkWillBegin()

    // MARK: Lifecycle (push-keys)

    /// Creates a keyset with one primary key of 32 random bytes.
    /// - Returns: the new primary key's metadata.
    /// - Throws: `KeysError` `.keysetExists`, `.invalidName`, `.timeOutOfRange`; the store's errors.
    @discardableResult
    func generate(appID: String, recipient: String, now: Int64) throws -> KeyInfo

    /// Rotates a keyset in Tink's order (add pending, install on `device`, promote, finish), each
    /// step durable and idempotent; a rotation interrupted at any step is resumed by the next
    /// call. See ``KeyStore/rotate(appID:recipient:graceSeconds:device:promote:now:afterStep:)``.
    /// - Parameters:
    ///   - device: the device keychain's keysets to install the new key in first, or `nil`.
    ///   - afterStep: called after each durable step.
    /// - Throws: `KeysError` `.unknownKeyset`, `.invalidState`, `.duplicateKeyID`,
    ///   `.timeOutOfRange`, `.invalidName`; the store's errors.
    @discardableResult
    func rotate(appID: String, recipient: String, graceSeconds: Int64, device: KeyStore?, promote: Bool, now: Int64,
                afterStep: (RotationStep) -> Void) throws -> RotationResult

    /// Makes `keyID` the primary; the former primary becomes `decryptOnly` until
    /// `now + graceSeconds`. Idempotent.
    /// - Throws: `KeysError` `.unknownKeyset`, `.unknownKey`, `.invalidState`, `.invalidName`,
    ///   `.timeOutOfRange`; the store's errors.
    @discardableResult
    func promote(appID: String, recipient: String, keyID: String, graceSeconds: Int64, now: Int64) throws -> KeysetInfo

    /// Disables `keyID` at once (it neither seals nor opens). Idempotent.
    /// - Returns: the key's metadata after the change.
    /// - Throws: `KeysError` `.unknownKeyset`, `.unknownKey`, `.invalidName`, `.timeOutOfRange`;
    ///   the store's errors.
    @discardableResult
    func revoke(appID: String, recipient: String, keyID: String, now: Int64) throws -> KeyInfo

    /// Destroys every `decryptOnly` key past its `notAfter` (bytes removed, a tombstone stays),
    /// and drops the bytes of every `disabled` (revoked) key at once.
    /// - Returns: the keys destroyed by this call.
    /// - Throws: `KeysError` `.corruptKeyset`, `.timeOutOfRange`; the store's errors.
    @discardableResult
    func prune(now: Int64) throws -> [KeyStore.PrunedKey]

    /// Keysets due for rotation: primary at least `rotationPeriodSeconds` old (since promotion)
    /// or with at least `sealThreshold` seals, no primary, or an unfinished rotation.
    /// - Throws: `KeysError` `.corruptKeyset`, `.timeOutOfRange`; the store's errors.
    func due(now: Int64, rotationPeriodSeconds: Int64, sealThreshold: UInt64) throws -> [KeyStore.DueKeyset]

    /// The keyset (or one key of it) as a key record for the device side (holds key bytes).
    /// - Throws: `KeysError` `.unknownKeyset`, `.unknownKey`, `.invalidName`; the store's errors.
    func exportRecord(appID: String, recipient: String, keyID: String?) throws -> KeyRecord

    /// Merges a key record into the store (creating the keyset), all or nothing, idempotent.
    /// - Throws: `KeysError` `.wrongAppID`, `.duplicateKeyID`, `.timeOutOfRange`; the store's errors.
    @discardableResult
    func importRecord(_ record: KeyRecord, expectedAppID: String?, graceSeconds: Int64, now: Int64) throws -> KeyStore.ImportResult
}

extension ServerKeyStore {
    /// Does nothing (the file keychain's watches are two `lstat` calls each).
    public func batchChunkWillBegin() {}

    /// The metadata of one key, by app id, recipient and key id.
    /// - Throws: `KeysError` `.unknownKeyset`, `.unknownKey`, `.invalidName`; the store's errors.
    public func key(appID: String, recipient: String, keyID: String) throws -> KeyInfo {
        try KeyID.validate(keyID)
        guard let k = try keyset(appID: appID, recipient: recipient).keys.first(where: { $0.keyID == keyID }) else {
            throw KeysError(.unknownKey, "keyset \(appID)/\(recipient) has no key \(keyID)")
        }
        return k
    }
}

/// Tells a cache whether a keyset changed since the watch was taken (``ServerKeyStore/watchKeyset(appID:recipient:)``).
public protocol KeysetWatch: Sendable {
    /// `true` while the keyset is unchanged since the watch was taken (any change — a rotation,
    /// revoke, promote, reservation by another process, a delete, a lock-state change — makes it
    /// `false`). The file keychain: two `lstat` calls, no read; equal tokens may miss a file
    /// replaced twice within one timestamp tick, so a cache also re-reads at intervals.
    /// - Throws: the store's errors.
    func isCurrent() throws -> Bool
}

/// A block of seals reserved durably (``ServerKeyStore/reserveSeals(appID:recipient:keyID:count:)``):
/// seals `previousCount + 1 ... reservedCount` may be handed out.
public struct SealReservation: Sendable, Hashable {
    /// The stored seal counter before the reservation.
    public var previousCount: UInt64
    /// The stored seal counter after it (at most ``KeyInfo/sealLimit``, 2^32).
    public var reservedCount: UInt64

    /// Creates a reservation.
    public init(previousCount: UInt64, reservedCount: UInt64) {
        self.previousCount = previousCount
        self.reservedCount = reservedCount
    }
}

extension KeyRecord {
    /// Creates a record from key metadata and bytes (for a store that keeps keys elsewhere).
    /// - Parameter keys: each key's metadata and its 32 bytes (`nil` for a tombstone).
    public init(appID: String, recipient: String, keys: [(info: KeyInfo, key: SecretBytes?)]) {
        self.init(appID: appID, recipient: recipient, keys: keys.map { ManagedKey(info: $0.info, secret: $0.key) })
    }

    /// The record's keys with their bytes (`nil` for tombstones). Holds secrets: never print it.
    public var keysWithBytes: [(info: KeyInfo, key: SecretBytes?)] { keys.map { ($0.info, $0.secret) } }
}
