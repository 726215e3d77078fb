import PushSealCrypto
import PushSealKeyRecords
public import PushSealDeviceKeys
import PushSealKeychain

// A device key store's legacy keysets converted to device key items (moved from DeviceKeyItem+V1.swift).
extension DeviceKeyItem {
    /// Converts the app's legacy keyset items in a device keychain (service
    /// `pushseal.keyset:<appID>`, what `push-keys import` wrote before 0.2.0) into kind 1 items:
    /// each keyset is read with its generation check (an old copy put back is refused,
    /// `keysetRolledBack`, and converts nothing), its keys are imported as by
    /// ``importV1(_:expectedAppID:in:accessGroup:)``, then its generation counter is set to
    /// the largest value (any keyset item put back later is refused) and the keyset item is
    /// deleted. A crash in between leaves both forms, and the kind 1 items decide; running it
    /// again finishes the job.
    /// - Parameters:
    ///   - appID: the app's bundle identifier.
    ///   - recipient: one keyset, or nil for every keyset of the app.
    ///   - store: the device's key store (its keychain and access group).
    /// - Returns: the key ids written or deleted as items.
    /// - Throws: `KeysError` `.keysetRolledBack`, `.corruptKeyset`, `.duplicateKeyID` (a kind 1
    ///   item with other bytes), `.keyRolledBack`; `KeychainError`.
    @discardableResult
    public static func convertKeysets(appID: String, recipient: String? = nil, in store: KeyStore) throws -> [String] {
        try KeyID.validateAppID(appID)
        var changed: [String] = []
        let infos: [KeysetInfo]
        do {
            infos = try store.keysets().filter { $0.appID == appID && (recipient == nil || $0.recipient == recipient) }
        } catch let e as KeychainError where e.code == .itemNotFound {
            return []
        }
        for info in infos {
            let record = try store.exportRecord(appID: appID, recipient: info.recipient)
            changed += try importV1(record, in: store.keychain, accessGroup: info.accessGroup)
            try store.retireKeysetItem(appID: appID, recipient: info.recipient)
        }
        return changed
    }
}

extension KeyStore {
    /// After a keyset was converted to device key items: its generation counter becomes
    /// `UInt64.max` (every keyset item put back is then older: `keysetRolledBack`) and the
    /// keyset item is deleted.
    /// - Throws: `KeychainError`.
    func retireKeysetItem(appID: String, recipient: String) throws {
        let tombstone = SecretBytes(copying: [UInt8](repeating: 0xFF, count: 8))
        let counter = ItemQuery(itemClass: .genericPassword, service: KeychainNames.generationService(appID: appID), account: recipient, accessGroup: accessGroup)
        do {
            try keychain.update(counter, with: ItemChanges(data: tombstone))
        } catch let e as KeychainError where e.code == .itemNotFound {
            try keychain.add(.genericPassword, service: KeychainNames.generationService(appID: appID), account: recipient,
                             label: "PushSeal keyset generation", accessGroup: accessGroup, accessibility: accessibility, data: tombstone)
        }
        do {
            try keychain.delete(ItemQuery(itemClass: .genericPassword, service: KeychainNames.service(appID: appID), account: recipient, accessGroup: accessGroup))
        } catch let e as KeychainError where e.code == .itemNotFound {
            // already deleted (a second run after a crash)
        }
    }
}
