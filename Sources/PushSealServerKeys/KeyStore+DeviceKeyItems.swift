import PushSealCrypto
import PushSealJSON
public import PushSealKeyRecords
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

extension KeyStore {
    /// `push-keys generate` into a device keychain: one new version 1 key (32 random bytes,
    /// primary, created `now`) written as a kind 1 device key item under the app's key manifest
    /// (``DeviceKeyItem/importV1(_:expectedAppID:in:accessGroup:)``: the layout the iOS
    /// reference reads, docs/keychain.md "Device key items"), never a keyset item. Audited as
    /// `generate` (key id only). Refuses, changing nothing, when the app already has a current
    /// v1 key there — a pending or primary kind 1 item, or a legacy keyset of `recipient`:
    /// replacing one is a rotation.
    /// - Parameters:
    ///   - appID: the app's bundle identifier.
    ///   - recipient: the recipient of the key record `push-keys export` makes from it.
    ///   - now: Unix seconds, 0 to `KeyTime.maxTimeSeconds`.
    /// - Returns: the new key's metadata (its key id).
    /// - Throws: `KeysError` `.keysetExists`, `.invalidName`, `.timeOutOfRange`, `.keyRolledBack`
    ///   (items of the app the manifest does not vouch for), `.io` (the audit log); `KeychainError`.
    @discardableResult
    public func generateDeviceKeyItem(appID: String, recipient: String, now: Int64) throws -> KeyInfo {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        try KeyTime.checkTime(now)
        let entries = try DeviceKeyItem.list(appID: appID, in: keychain, accessGroup: accessGroup).filter { $0.kind == .v1Key }
        let current = entries.filter { $0.keysetRecipient == recipient || ($0.keysetRecipient == nil && ($0.status == .primary || $0.status == .pending)) }
        if !current.isEmpty {
            let ids = current.map(\.keyID).joined(separator: ", ")
            throw KeysError(.keysetExists, "\(appID) already has a current v1 key in this device keychain (\(ids))")
        }
        let sink = try audit.open(keychain: keychain)
        let info = KeyInfo(keyID: KeyID.generate(avoiding: Set(entries.map(\.keyID))), status: .primary, createdAt: now, promotedAt: now)
        let record = KeyRecord(appID: appID, recipient: recipient,
                               keys: [ManagedKey(info: info, secret: SecretBytes(randomByteCount: AES256GCM.keyByteCount))])
        try DeviceKeyItem.importV1(record, in: keychain, accessGroup: accessGroup)
        try writeAudit(AuditEvent(event: "generate", time: now, members: [("keyId", .string(info.keyID)), ("status", .string("primary")),
                                                                         ("layout", .string("deviceItems"))]),
                       appID: appID, recipient: recipient, to: sink)
        return info
    }
}
