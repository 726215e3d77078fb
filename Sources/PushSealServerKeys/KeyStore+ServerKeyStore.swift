import PushSealJSON
import PushSealCrypto
public import PushSealWire
import PushSealKeychain
import PushSealKeyRecords

/// The file keychain as a server store: the lifecycle methods are ``KeyStore``'s own; the
/// sealing methods below read and reserve through the keysets' lock and the keychain's change
/// tokens (``ItemVersion``).
extension KeyStore: ServerKeyStore {
    /// The keychain directory and access group, e.g. `/srv/keys (access group pushseal.server)`.
    public var storeDescription: String { "\(keychainPath) (access group \(accessGroup))" }

    /// A watch over the keyset item's change token (two `lstat` calls per check); `nil` when
    /// the item does not exist.
    /// - Throws: `KeysError` `.invalidName`; `KeychainError` (`.missingEntitlement`, `.io`, `.corrupt`).
    public func watchKeyset(appID: String, recipient: String) throws -> (any KeysetWatch)? {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        let location = try keychain.location(of: query(appID, recipient))
        guard let version = try keychain.itemVersion(at: location) else { return nil }
        return ItemWatch(keychain: keychain, location: location, version: version)
    }

    /// The primary's key id and bytes, read from the keyset item.
    /// - Throws: `KeysError` `.unknownKeyset`, `.noPrimaryKey`, `.invalidName`, `.corruptKeyset`; `KeychainError`.
    public func sealingPrimary(appID: String, recipient: String) throws -> SealingKey {
        guard let ks = try load(appID: appID, recipient: recipient) else {
            try KeyID.validateAppID(appID)
            try KeyID.validateRecipient(recipient)
            throw unknownKeyset(appID, recipient)
        }
        return try KeysetTransitions<KeyStore>.sealingPrimary(of: ks)
    }

    /// Raises the primary's stored counter under the keysets' lock (one durable keychain
    /// update, audited as `reserveSeals` with the new `sealCount`).
    /// - Throws: `KeysError` `.noPrimaryKey` (the primary changed), `.sealLimitReached`,
    ///   `.unknownKeyset`; `KeychainError`.
    public func reserveSeals(appID: String, recipient: String, keyID: String, count: UInt64) throws -> SealReservation {
        var reserved: SealReservation?
        try mutate(appID: appID, recipient: recipient) { ks, _ in
            guard let q = ks.primaryIndex, ks.keys[q].info.keyID == keyID else {
                throw KeysError(.noPrimaryKey, "keyset \(appID)/\(recipient) changed its primary while sealing; retry")
            }
            let used = ks.keys[q].info.sealCount
            guard used < KeyInfo.sealLimit else {
                throw KeysError(.sealLimitReached,
                    "key \(keyID) of \(appID)/\(recipient) reached 2^32 seals, the limit for random 96-bit nonces (NIST SP 800-38D 8.3): rotate the keyset")
            }
            let limit = min(used + max(count, 1), KeyInfo.sealLimit)
            ks.keys[q].info.sealCount = limit
            reserved = SealReservation(previousCount: used, reservedCount: limit)
            return [AuditEvent(event: "reserveSeals", time: KeyTime.now(), members: [("keyId", .string(keyID)), ("sealCount", .integer(Int64(limit)))])]
        }
        guard let reserved else { throw KeysError(.invalidState, "seal reservation failed") }
        return reserved
    }
}

/// A keyset item's change token and where to take it again.
struct ItemWatch: KeysetWatch {
    let keychain: Keychain
    let location: ItemLocation
    let version: ItemVersion

    func isCurrent() throws -> Bool {
        try keychain.itemVersion(at: location) == version
    }
}
