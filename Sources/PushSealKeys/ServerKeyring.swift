import Foundation
import PushSealCrypto
import PushSealKeychain

/// The sender's view of a server keychain: the primary key of each (app id, recipient), with
/// a persistent seal counter.
///
/// Every call reads the recipient's keyset item (one keychain file; no scan, no trial
/// decryption), so a rotation or revocation made by another process is seen at the next seal.
/// Seals are counted in blocks: the first seal of a key in this process reserves
/// ``reservationBlockSize`` seals by raising the stored counter (one durable keychain update,
/// under the keysets' lock), and the next seals of the block cost nothing. After a crash the
/// stored counter is therefore an upper bound — it never under-counts. A key that reached
/// 2^32 seals (NIST SP 800-38D §8.3, random 96-bit nonces) refuses to seal.
///
/// Sendable: the reservations are guarded by `lock`; everything else is immutable.
public final class ServerKeyring: @unchecked Sendable {
    /// The key store (server keychain and access group).
    public let store: KeyStore
    /// Seals reserved per durable counter update: 1,024.
    public static let reservationBlockSize: UInt64 = 1024

    private struct Reservation {
        var keyID: String
        /// Seals already handed out from the stored counter (the next seal is `used + 1`).
        var used: UInt64
        /// The stored (reserved) counter; `used < limit` means a seal is available.
        var limit: UInt64
    }

    private let lock = NSLock()
    private var reservations: [String: Reservation] = [:]

    /// Wraps an open key store.
    public init(store: KeyStore) {
        self.store = store
    }

    /// Opens the server keychain at `url` (identity ``KeyStore/serverIdentity`` by default).
    /// - Throws: `KeychainError` (`.keychainMissing`, `.insecurePermissions`, …), `KeysError`.
    public convenience init(keychainAt url: URL, identity: Entitlements = KeyStore.serverIdentity, audit: KeyAudit = .keychainFile) throws {
        self.init(store: try KeyStore(keychain: try Keychain(opening: url, as: identity), audit: audit))
    }

    /// The primary key to seal one message for (app id, recipient), counting the seal.
    /// - Parameters:
    ///   - appID: the app's bundle identifier (APNs topic).
    ///   - recipient: the app installation.
    /// - Returns: the key id to put in the payload's `key_id` and the 32-byte key.
    /// - Throws: `KeysError` `.unknownKeyset` (unknown recipient), `.noPrimaryKey` (revoked, not
    ///   yet rotated), `.sealLimitReached` (2^32 seals: rotate), `.invalidName`, `.corruptKeyset`;
    ///   `KeychainError` for keychain failures.
    public func primaryKeyForSealing(appID: String, recipient: String) throws -> (keyID: String, key: SecretBytes) {
        guard let ks = try store.load(appID: appID, recipient: recipient) else {
            try KeyID.validateAppID(appID)
            try KeyID.validateRecipient(recipient)
            throw store.unknownKeyset(appID, recipient)
        }
        guard let p = ks.primaryIndex, let key = ks.keys[p].secret else {
            throw KeysError(.noPrimaryKey, "keyset \(appID)/\(recipient) has no primary key (revoked?): run push-keys rotate")
        }
        let keyID = ks.keys[p].info.keyID
        let slot = appID + "\u{0}" + recipient
        lock.lock()
        defer { lock.unlock() }
        if var r = reservations[slot], r.keyID == keyID, r.used < r.limit {
            r.used += 1
            reservations[slot] = r
            return (keyID, key)
        }
        // Reserve a new block durably before handing out a seal.
        var reserved: Reservation?
        try store.mutate(appID: appID, recipient: recipient) { ks, _ in
            guard let q = ks.primaryIndex, ks.keys[q].info.keyID == keyID else {
                throw KeysError(.noPrimaryKey, "keyset \(appID)/\(recipient) changed its primary while sealing; retry")
            }
            let used = ks.keys[q].info.sealCount
            guard used < KeyStore.sealLimit else {
                throw KeysError(.sealLimitReached,
                    "key \(keyID) of \(appID)/\(recipient) reached 2^32 seals, the limit for random 96-bit nonces (NIST SP 800-38D 8.3): rotate the keyset")
            }
            let limit = min(used + Self.reservationBlockSize, KeyStore.sealLimit)
            ks.keys[q].info.sealCount = limit
            reserved = Reservation(keyID: keyID, used: used, limit: limit)
            return [KeyStore.AuditEvent(event: "reserveSeals", time: KeyStore.now(), members: [("keyId", .string(keyID)), ("sealCount", .uint(limit))])]
        }
        guard var r = reserved else { throw KeysError(.invalidState, "seal reservation failed") }
        r.used += 1
        reservations[slot] = r
        return (keyID, key)
    }
}
