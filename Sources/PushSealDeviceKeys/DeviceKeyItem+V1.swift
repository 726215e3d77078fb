import PushSealCrypto
public import PushSealKeychain
public import PushSealKeyRecords

/// Version 1 keys in the one device layout (docs/keychain.md "Device key items"): one kind 1
/// item per key, as the iOS reference's `PushSealDeviceKeys.importV1` writes them.
extension DeviceKeyItem {
    /// Imports a version 1 key record into a device keychain as kind 1 items (service
    /// `pushseal.key:<appID>`, account = key id, label `PushSeal v1 key`). All-or-nothing checks
    /// first; then per key: a new id is added, a held one only moves forward (pending → primary
    /// → decryptOnly → disabled), `destroyed` deletes the item, the same id with other bytes is
    /// refused; a disabled key's bytes are replaced by zeros (it never opens again).
    /// - Parameters:
    ///   - record: the decoded `pushseal-key-record` (holds key bytes).
    ///   - expectedAppID: refuse a record for another app id (nil: the record's own).
    ///   - keychain: the device keychain, opened as the app.
    ///   - accessGroup: the group; nil: the identity's first.
    /// - Returns: the key ids written or deleted (unchanged ones left out).
    /// - Throws: `KeysError` `.wrongAppID`, `.duplicateKeyID` (another key's bytes, or a v2 key
    ///   under that id), `.corruptKey` (a held item is damaged), `.malformedRecord` (a live key
    ///   without bytes); `KeychainError`. Nothing is written when a check fails.
    @discardableResult
    public static func importV1(_ record: KeyRecord, expectedAppID: String? = nil, in keychain: Keychain,
                                accessGroup: String?) throws -> [String] {
        let appID = record.appID
        if let expectedAppID, expectedAppID != appID {
            throw KeysError(.wrongAppID, "the key record is for \(appID), not \(expectedAppID)")
        }
        let keyring = DeviceKeyring(keychain: keychain, accessGroup: accessGroup)
        var plan: [(keyID: String, record: DeviceKeyRecord?, held: Bool)] = []
        for key in record.keys {
            let info = key.info
            if try keyring.record(.v2DeviceKey, keyID: info.keyID, appID: appID) != nil {
                throw KeysError(.duplicateKeyID, "\(appID) holds a v2 device key \(info.keyID): a v1 key cannot take its id")
            }
            let held = try keyring.record(.v1Key, keyID: info.keyID, appID: appID)
            if info.status == .destroyed {
                if held != nil { plan.append((info.keyID, nil, true)) }
                continue
            }
            let zero = SecretBytes(copying: [UInt8](repeating: 0, count: DeviceKeyRecord.keyByteCount))
            var bytes = zero
            if info.status != .disabled {
                guard let secret = key.secret, secret.byteCount == DeviceKeyRecord.keyByteCount else {
                    throw KeysError(.malformedRecord, "key \(info.keyID) of \(appID) is \(info.status) but has no 32 key bytes")
                }
                bytes = secret
            }
            var new = DeviceKeyRecord(kind: .v1Key, status: info.status, createdAt: info.createdAt, retiredAt: info.retiredAt,
                                      notAfter: info.notAfter, key: bytes)
            if let held {
                if info.status != .disabled, held.status != .disabled, held.key != bytes {
                    throw KeysError(.duplicateKeyID, "key \(info.keyID) of \(appID) is held with other key bytes")
                }
                if held.status.rank >= info.status.rank { continue }  // statuses only move forward
                if info.status == .disabled { new.key = zero }
            }
            plan.append((info.keyID, new, held != nil))
        }
        for step in plan {
            try writeItem(.v1Key, keyID: step.keyID, appID: appID, data: try step.record?.encoded(), in: keychain, accessGroup: accessGroup)
        }
        return plan.map(\.keyID)
    }
}

extension DeviceKeyItem {
    /// Applies a revocation record (security review F4) to the app's device key items, as the
    /// iOS reference's `importRevocation`: every listed key id's item of any kind (v1 key, v2
    /// device key, pinned sender key) becomes `disabled` with `retiredAt` = the earlier of its
    /// own and `revokedAt`; v1 and v2 key bytes are replaced by zeros (they never open again).
    /// Idempotent: an item already disabled no later than `revokedAt` is left alone.
    /// - Returns: the (kind, key id) of every item changed.
    /// - Throws: `KeysError` `.invalidName`, `.corruptKey` (a listed item is damaged: nothing
    ///   after it changed); `KeychainError`.
    @discardableResult
    public static func revoke(_ record: RevocationRecord, in keychain: Keychain, accessGroup: String?) throws -> [(kind: DeviceKeyKind, keyID: String)] {
        let keyring = DeviceKeyring(keychain: keychain, accessGroup: accessGroup)
        var changed: [(kind: DeviceKeyKind, keyID: String)] = []
        for keyID in record.keyIDs {
            for kind in DeviceKeyKind.allCases {
                guard var held = try keyring.record(kind, keyID: keyID, appID: record.appID) else { continue }
                let retiredAt = min(held.retiredAt ?? record.revokedAt, record.revokedAt)
                if held.status == .disabled, held.retiredAt == retiredAt { continue }
                held.status = .disabled
                held.retiredAt = retiredAt
                if kind != .senderKey { held.key = SecretBytes(copying: [UInt8](repeating: 0, count: DeviceKeyRecord.keyByteCount)) }
                try writeItem(kind, keyID: keyID, appID: record.appID, data: try held.encoded(), in: keychain, accessGroup: accessGroup)
                changed.append((kind, keyID))
            }
        }
        return changed
    }
}

extension DeviceKeyItem {
    /// The app's version 1 key items (kind 1) as a key record for `recipient`, for the other
    /// side (`push-keys export` from a device keychain whose keys `push-keys generate` made):
    /// every kind 1 item the key manifest vouches for (``DeviceKeyring/record(_:keyID:appID:)``),
    /// by key id; a disabled key travels without bytes. A primary key's `promotedAt` is its
    /// `createdAt` (the items keep no promotion time); seal counts are 0 (a device never seals).
    /// - Parameters:
    ///   - appID: the app's bundle identifier.
    ///   - recipient: the recipient the record names (the items keep none: one app installation
    ///     has one recipient).
    ///   - keyID: only this key; nil for every kind 1 item.
    ///   - keychain: the device keychain, opened as the app.
    ///   - accessGroup: the group; nil: every group of the identity.
    /// - Returns: the record (holds key bytes: the caller wipes its encoding).
    /// - Throws: `KeysError` `.unknownKeyset` (no kind 1 item), `.unknownKey` (no item `keyID`),
    ///   `.keyRolledBack`, `.corruptKey`, `.invalidName`; `KeychainError`.
    public static func exportV1(appID: String, recipient: String, keyID: String? = nil, in keychain: Keychain,
                                accessGroup: String?) throws -> KeyRecord {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        if let keyID { try KeyID.validate(keyID) }
        let keyring = DeviceKeyring(keychain: keychain, accessGroup: accessGroup)
        let ids = try list(appID: appID, in: keychain, accessGroup: accessGroup)
            .filter { $0.kind == .v1Key && $0.keysetRecipient == nil }.map(\.keyID)
        guard !ids.isEmpty else {
            throw KeysError(.unknownKeyset, "\(appID) has no v1 key items in this device keychain")
        }
        var keys: [ManagedKey] = []
        for id in ids where keyID == nil || keyID == id {
            guard let r = try keyring.record(.v1Key, keyID: id, appID: appID) else { continue }
            let info = KeyInfo(keyID: id, status: r.status, createdAt: r.createdAt, promotedAt: r.status == .pending ? nil : r.createdAt,
                               retiredAt: r.retiredAt, notAfter: r.notAfter)
            keys.append(ManagedKey(info: info, secret: r.status == .disabled ? nil : r.key))
        }
        if let keyID, keys.isEmpty {
            throw KeysError(.unknownKey, "\(appID) has no v1 key item \(keyID)")
        }
        return KeyRecord(appID: appID, recipient: recipient, keys: keys)
    }
}
