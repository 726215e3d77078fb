public import PushSealCrypto
import PushSealKeychain
import PushSealSystem
import PushSealWire
import PushSealKeyRecords

/// Reading the one device key layout (docs/keychain.md "Device key items"): one item per key,
/// service `pushseal.key:<appID>` (kinds 1 and 2) or `pushseal.sender:<appID>` (kind 3),
/// account = key id, a 59-byte ``DeviceKeyRecord``.
extension DeviceKeyring {
    /// The record of the `kind` item under `keyID`, or nil when there is none (no item, or an
    /// item of the other kind under the shared service: a v1 payload looks only at kind 1, a
    /// v2 payload only at kind 2). The account must equal the key id: no key is ever tried.
    /// - Parameters:
    ///   - kind: what to read.
    ///   - keyID: the payload's `key_id` (or `sender_key_id`).
    ///   - appID: the app's bundle identifier.
    /// - Throws: `KeysError` `.invalidName`, `.corruptKey` (a record that breaks the layout);
    ///   the keychain's own `KeychainError` (-25308 before first unlock, -34018 a group the
    ///   identity lacks, `.corrupt`, …); a missing item is nil, not an error.
    public func record(_ kind: DeviceKeyKind, keyID: String, appID: String) throws -> DeviceKeyRecord? {
        try KeyID.validate(keyID)
        try KeyID.validateAppID(appID)
        let data: SecretBytes
        do {
            data = try keychain.copyData(ItemQuery(service: kind.service(appID: appID), account: keyID, accessGroup: accessGroup))
        } catch let e as KeychainError where e.code == .itemNotFound {
            return nil
        }
        try checkManifest(kind, keyID: keyID, appID: appID, data: data)
        let record: DeviceKeyRecord
        do {
            record = try DeviceKeyRecord(decoding: data)
        } catch let e as KeysError {
            throw KeysError(e.code, "the \(kind.label) item \(keyID) of \(appID): \(e.reason)")
        }
        // The kinds of one service are told apart by the record; a sender item of another kind is damaged.
        if record.kind == kind { return record }
        if kind == .senderKey || record.kind == .senderKey {
            throw KeysError(.corruptKey, "the item \(keyID) under \(kind.service(appID: appID)) holds a record of kind \(record.kind.rawValue)")
        }
        return nil
    }

    /// The rollback guard (docs/keychain.md "The key manifest"): the item's data must be a
    /// state the app's key manifest lists for it.
    /// - Throws: `KeysError` `.keyRolledBack` (no manifest, no entry, another digest),
    ///   `.corruptKey` (a damaged manifest); `KeychainError`.
    func checkManifest(_ kind: DeviceKeyKind, keyID: String, appID: String, data: SecretBytes) throws {
        var held = try DeviceKeyItem.manifest(appID: appID, in: keychain, accessGroup: accessGroup)
        // A write killed between its manifest writes left two accepted states: the next open
        // finishes it first (security review G3), so an old copy put back later stays refused.
        if held?.entries.contains(where: { $0.previousDigest != nil }) == true,
           (try? DeviceKeyItem.finishInterruptedWrites(appID: appID, in: keychain, accessGroup: accessGroup)) == true {
            held = try DeviceKeyItem.manifest(appID: appID, in: keychain, accessGroup: accessGroup)
        }
        guard let manifest = held else {
            throw KeysError(.keyRolledBack, "\(appID) has no key manifest, so its key item \(keyID) is not vouched for (written around the toolkit, by an earlier 0.2.0 development build, or the manifest was removed): re-provision the device")
        }
        guard let entry = manifest.entry(kind, keyID: keyID) else {
            throw KeysError(.keyRolledBack, "the key item \(keyID) of \(appID) is not in its key manifest (generation \(manifest.generation)): a pruned key or removed pin put back, or an item written around the toolkit")
        }
        guard entry.accepts(try DeviceKeyManifest.digest(of: data)) else {
            throw KeysError(.keyRolledBack, "the key item \(keyID) of \(appID) is not the state its key manifest (generation \(manifest.generation)) lists: an older copy was put back")
        }
    }

    /// The key of the `kind` item under `keyID` after the reader rules (docs/keychain.md): it
    /// opens if pending, primary, or decryptOnly before `notAfter`.
    /// - Parameters:
    ///   - kind: ``DeviceKeyKind/v1Key`` or ``DeviceKeyKind/v2DeviceKey`` (a v2 private key is
    ///     checked to be a usable X25519 key), or ``DeviceKeyKind/senderKey``.
    ///   - keyID, appID: as ``record(_:keyID:appID:)``.
    ///   - now: Unix seconds (UTC), 0 to ``KeyTime/maxTimeSeconds``.
    /// - Returns: the 32 key bytes and, for a decryptOnly key, its `retiredAt`.
    /// - Throws: `KeysError` `.unknownKey` (no such item of that kind), `.corruptKey`,
    ///   `.keyDisabled`, `.keyExpired`, `.invalidName`, `.timeOutOfRange`; `KeychainError`.
    public func usableKey(_ kind: DeviceKeyKind, keyID: String, appID: String, now: Int64) throws -> (key: SecretBytes, retiredAt: Int64?) {
        try KeyTime.checkTime(now)
        guard let record = try record(kind, keyID: keyID, appID: appID) else {
            throw KeysError(.unknownKey, "no \(kind.label) \(keyID) for \(appID) in the device keychain (service \(kind.service(appID: appID))): not provisioned, pruned, or sealed for another app id")
        }
        return try usableKey(record, keyID: keyID, appID: appID, now: now)
    }

    /// ``usableKey(_:keyID:appID:now:)`` for a record already read.
    func usableKey(_ record: DeviceKeyRecord, keyID: String, appID: String, now: Int64) throws -> (key: SecretBytes, retiredAt: Int64?) {
        let kind = record.kind
        let retiredAt = try record.checkUsable(now: now, what: "\(kind.label) \(keyID) of \(appID)")
        if kind == .v2DeviceKey {
            // X25519 takes any 32 bytes as a private key; an all-zero one is what a revoke leaves.
            guard record.key.copyBytes().contains(where: { $0 != 0 }) else {
                throw KeysError(.corruptKey, "the \(kind.label) \(keyID) of \(appID) holds no key (all zero)")
            }
        }
        return (record.key, retiredAt)
    }

    /// The key ids of every sender key pinned for `appID`, sorted: the kind 3 entries of the
    /// app's key manifest (whatever their status) together with every kind 3 item there — so a
    /// pin item deleted around the toolkit still counts (the downgrade check stays on) and a pin
    /// item put back without its entry is refused when it is read (`keyRolledBack`).
    /// - Throws: `KeysError` `.invalidName`, `.keyRolledBack` (pin items but no manifest),
    ///   `.corruptKey` (a damaged manifest); `KeychainError` (-25308 before first unlock,
    ///   -34018, `.corrupt`, …).
    public func pinnedSenderKeyIDs(appID: String) throws -> [String] {
        try KeyID.validateAppID(appID)
        var items: [String] = []
        do {
            items = try keychain.copyMatching(ItemQuery(service: DeviceKeyKind.senderKey.service(appID: appID), accessGroup: accessGroup),
                                              limit: .all).map(\.attributes.account)
        } catch let e as KeychainError where e.code == .itemNotFound {
            items = []
        }
        let manifest = try DeviceKeyItem.manifest(appID: appID, in: keychain, accessGroup: accessGroup)
        if manifest == nil, let first = items.first {
            throw KeysError(.keyRolledBack, "\(appID) has a pinned sender key item (\(first)) but no key manifest: re-provision the device")
        }
        return Set(items + (manifest?.senderKeyIDs ?? [])).sorted()
    }

    /// The pinned sender public key `keyID` of `appID`, after the reader rules of its status.
    /// - Returns: the key and, for a decryptOnly one, its `retiredAt`.
    /// - Throws: `FormatError` `.unknownSenderKey` (no item); `KeysError` `.corruptKey` (a record
    ///   that breaks the layout, or a low-order point), `.keyDisabled`, `.keyExpired`,
    ///   `.keyRolledBack`; `KeychainError`.
    public func pinnedSenderKey(_ keyID: String, appID: String, now: Int64) throws -> (publicKey: X25519.PublicKey, retiredAt: Int64?) {
        try KeyTime.checkTime(now)
        // A pin the key manifest lists whose item is gone (deleted around the toolkit): still
        // pinned for the downgrade check, but nothing to authenticate with.
        guard let record = try record(.senderKey, keyID: keyID, appID: appID) else {
            throw FormatError(.unknownSenderKey, "sender key \(keyID) is pinned in the key manifest of \(appID) but its item is missing: pin it again",
                              field: HPKEAuthEnvelope.senderKeyIDField)
        }
        let (bytes, retiredAt) = try usableKey(record, keyID: keyID, appID: appID, now: now)
        do {
            let key = try X25519.PublicKey(rawRepresentation: bytes.copyBytes())
            try key.validate()
            return (key, retiredAt)
        } catch let e as CryptoError {
            throw KeysError(.corruptKey, "the pinned sender key \(keyID) of \(appID) is not a usable X25519 public key (\(e.code.name))")
        }
    }
}
