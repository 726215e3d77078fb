public import PushSealCrypto
public import PushSealKeychain
public import PushSealKeyRecords

/// The device side of a key's life in the one layout (docs/keychain.md "Device key items"):
/// rotation of the v2 device key, pruning after the grace window, listing without secrets.
extension DeviceKeyItem {
    /// One device key item's metadata, never its secret bytes (`push-keys device list`).
    public struct Entry: Sendable, Hashable {
        /// What the item holds.
        public var kind: DeviceKeyKind
        /// The key id (the item's account).
        public var keyID: String
        /// The record's status; nil for a damaged record (``damaged``).
        public var status: KeyStatus?
        /// Unix seconds (UTC); nil when damaged.
        public var createdAt: Int64?
        /// Unix seconds (UTC), or nil.
        public var retiredAt: Int64?
        /// Unix seconds (UTC), or nil.
        public var notAfter: Int64?
        /// Public data: the X25519 public key of a v2 device key or a pinned sender key; nil for v1 keys.
        public var publicKey: X25519.PublicKey?
        /// The record breaks the layout (the extension reports `corruptKey` for it).
        public var damaged: Bool
        /// The item's access group.
        public var accessGroup: String
        /// The app's key manifest does not vouch for the item (docs/keychain.md "The key
        /// manifest": an older copy put back, or no manifest): it does not open, `keyRolledBack`.
        public var rolledBack = false
        /// For a v1 key still held in a legacy keyset item (`pushseal.keyset:<appID>`, not yet
        /// converted): the keyset's recipient; nil for a key item.
        public var keysetRecipient: String? = nil
    }

    /// Every device key item of `appID` (kinds 1, 2 and 3), by kind then key id; reads item data
    /// to show status and dates, never returns key bytes (a v2 key shows its public key).
    /// - Throws: `KeysError` `.invalidName`; `KeychainError` (-25308 before first unlock, -34018, `.corrupt`).
    public static func list(appID: String, in keychain: Keychain, accessGroup: String?) throws -> [Entry] {
        try KeyID.validateAppID(appID)
        var entries: [Entry] = []
        // A damaged manifest vouches for nothing: every item is then listed as rolled back.
        let manifest = try? self.manifest(appID: appID, in: keychain, accessGroup: accessGroup)
        func vouched(_ kind: DeviceKeyKind, _ account: String, _ data: SecretBytes?) -> Bool {
            guard let data, let entry = manifest?.entry(kind, keyID: account), let digest = try? DeviceKeyManifest.digest(of: data) else { return false }
            return entry.accepts(digest)
        }
        for service in [DeviceKeyKind.v1Key.service(appID: appID), DeviceKeyKind.senderKey.service(appID: appID)] {
            let items: [KeychainItem]
            do {
                items = try keychain.copyMatching(ItemQuery(service: service, accessGroup: accessGroup), limit: .all, returning: [.attributes, .data])
            } catch let e as KeychainError where e.code == .itemNotFound {
                continue
            }
            for item in items {
                let a = item.attributes
                let fallbackKind: DeviceKeyKind = service.hasPrefix(DeviceKeyKind.senderKey.servicePrefix) ? .senderKey
                    : a.label == DeviceKeyKind.v2DeviceKey.label ? .v2DeviceKey : .v1Key
                let rolledBack = !vouched(fallbackKind, a.account, item.data)
                guard let data = item.data, let record = try? DeviceKeyRecord(decoding: data) else {
                    entries.append(Entry(kind: fallbackKind, keyID: a.account, damaged: true, accessGroup: a.accessGroup, rolledBack: rolledBack))
                    continue
                }
                var publicKey: X25519.PublicKey?
                switch record.kind {
                case .v1Key: publicKey = nil
                case .v2DeviceKey:
                    // A revoked key's bytes are zeros: it has no public key any more.
                    let held = record.key.copyBytes().contains { $0 != 0 }
                    publicKey = held ? (try? X25519.PrivateKey(rawRepresentation: record.key))?.publicKey : nil
                case .senderKey: publicKey = try? X25519.PublicKey(rawRepresentation: record.key.copyBytes())
                }
                entries.append(Entry(kind: record.kind, keyID: a.account, status: record.status, createdAt: record.createdAt,
                                     retiredAt: record.retiredAt, notAfter: record.notAfter, publicKey: publicKey, damaged: false,
                                     accessGroup: a.accessGroup, rolledBack: rolledBack))
            }
        }
        entries += try legacyKeysetEntries(appID: appID, in: keychain, accessGroup: accessGroup, except: Set(entries.map(\.keyID)))
        return entries.sorted { ($0.kind.rawValue, $0.keyID) < ($1.kind.rawValue, $1.keyID) }
    }

    /// The v1 keys of the app's legacy keyset items whose key id has no key item (a kind 1 item
    /// decides for its key id), as entries with ``Entry/keysetRecipient``; a keyset that does
    /// not decode is one damaged entry named after its recipient.
    static func legacyKeysetEntries(appID: String, in keychain: Keychain, accessGroup: String?, except: Set<String>) throws -> [Entry] {
        let items: [KeychainItem]
        do {
            items = try keychain.copyMatching(ItemQuery(service: KeychainNames.service(appID: appID), accessGroup: accessGroup), limit: .all,
                                              returning: [.attributes, .data])
        } catch let e as KeychainError where e.code == .itemNotFound {
            return []
        }
        var entries: [Entry] = []
        for item in items {
            let a = item.attributes
            guard let data = item.data, let ks = try? data.withUnsafeBytes({ raw -> Keyset in
                var bytes = Array(raw)
                defer { SecretBytes.wipe(&bytes) }
                return try Keyset.decode(bytes)
            }) else {
                entries.append(Entry(kind: .v1Key, keyID: a.account, damaged: true, accessGroup: a.accessGroup, keysetRecipient: a.account))
                continue
            }
            for k in ks.keys where !except.contains(k.info.keyID) {
                entries.append(Entry(kind: .v1Key, keyID: k.info.keyID, status: k.info.status, createdAt: k.info.createdAt, retiredAt: k.info.retiredAt,
                                     notAfter: k.info.notAfter, damaged: false, accessGroup: a.accessGroup, keysetRecipient: ks.recipient))
            }
        }
        return entries
    }

    /// Rotates the app's v2 device key on the device, step one of two (the iOS reference's
    /// `rotate`/`makeDeviceKey`; security review G13): the new key pair is stored `pending`
    /// while the app holds a pending or primary v2 key (`primary` when it holds none, the first
    /// key). Nothing is retired: the older key stays primary and opens everything the server
    /// seals to the old registration until the app has uploaded the new registration record
    /// and the server accepted it; then ``promote(keyID:appID:in:accessGroup:now:graceSeconds:)``
    /// makes the new key primary and retires the older ones. A pending key opens too, so a
    /// message sealed to the new registration before the promote is read.
    /// - Parameters:
    ///   - key: the new private key.
    ///   - keyID: its key id (1–64 of `A-Z a-z 0-9 _ -`), not held yet.
    ///   - appID, keychain, accessGroup: as ``store(_:keyID:appID:in:accessGroup:now:)``.
    ///   - now: Unix seconds (UTC), the new key's `createdAt`.
    /// - Returns: the new item's attributes and its status (`pending`, or `primary` for a first key).
    /// - Throws: `KeysError` `.invalidName`, `.duplicateKeyID` (the key id is held), `.timeOutOfRange`,
    ///   `.corruptKey` (an older v2 item is damaged: nothing changed); `KeychainError`.
    public static func rotate(to key: X25519.PrivateKey, keyID: String, appID: String, in keychain: Keychain, accessGroup: String?,
                              now: Int64) throws -> (item: ItemAttributes, status: KeyStatus) {
        try KeyID.validate(keyID)
        try KeyID.validateAppID(appID)
        try KeyTime.checkTime(now)
        let usable = try usableV2Keys(appID: appID, in: keychain, accessGroup: accessGroup, refusing: keyID)
        let status: KeyStatus = usable.isEmpty ? .primary : .pending
        let record = try DeviceKeyRecord(kind: .v2DeviceKey, status: status, createdAt: now, key: key.rawRepresentation).encoded()
        let item = try written(try writeItem(.v2DeviceKey, keyID: keyID, appID: appID, data: record, in: keychain, accessGroup: accessGroup,
                                             mustBeNew: true))
        return (item, status)
    }

    /// Rotation, step two (the iOS reference's `promote`; security review G13): run once the
    /// server accepted the registration of `keyID`. Every other pending or primary v2 key
    /// becomes `decryptOnly` with `retiredAt = now` and `notAfter = now + grace` — a message
    /// sealed to it before `now` still opens until then, one sealed after it falls back
    /// (`keys:keyRetired`) — and then `keyID` becomes primary (in that order, as the reference:
    /// a crash in between leaves `keyID` pending, which opens, and running promote again
    /// finishes). Promoting the primary again changes nothing (`promoted` false) but retires a
    /// second primary left by an interrupted older rotation; a pending key made since stays pending.
    /// - Parameters:
    ///   - keyID: a pending (or the primary) v2 device key of `appID`.
    ///   - appID, keychain, accessGroup: as ``store(_:keyID:appID:in:accessGroup:now:)``.
    ///   - now: Unix seconds (UTC).
    ///   - graceSeconds: the grace window, seconds (`now + grace` within ``KeyTime/maxTimeSeconds``).
    /// - Returns: whether `keyID` changed to primary, and the key ids retired.
    /// - Throws: `KeysError` `.invalidName`, `.timeOutOfRange`; `.unknownKey` (no v2 device key
    ///   `keyID`); `.invalidState` (`keyID` is decryptOnly or disabled: a retired key never
    ///   becomes primary again); `.corruptKey` (a v2 item is damaged: nothing changed); `KeychainError`.
    public static func promote(keyID: String, appID: String, in keychain: Keychain, accessGroup: String?,
                               now: Int64, graceSeconds: Int64) throws -> (promoted: Bool, retired: [String]) {
        try KeyID.validate(keyID)
        try KeyID.validateAppID(appID)
        let notAfter = try KeyTime.time(now, plus: graceSeconds, named: "the grace window")
        guard var new = try DeviceKeyring(keychain: keychain, accessGroup: accessGroup).record(.v2DeviceKey, keyID: keyID, appID: appID) else {
            throw KeysError(.unknownKey, "\(appID) holds no v2 device key \(keyID)")
        }
        guard new.status == .pending || new.status == .primary else {
            throw KeysError(.invalidState, "the v2 device key \(keyID) of \(appID) is \(new.status.rawValue), not pending: a retired or revoked key never becomes primary again")
        }
        let wasPrimary = new.status == .primary
        let others = try usableV2Keys(appID: appID, in: keychain, accessGroup: accessGroup, refusing: nil)
            .filter { $0.0 != keyID && (!wasPrimary || $0.1.status == .primary) }
        for (oldID, var record) in others {
            record.status = .decryptOnly
            record.retiredAt = now
            record.notAfter = notAfter
            try writeItem(.v2DeviceKey, keyID: oldID, appID: appID, data: try record.encoded(), in: keychain, accessGroup: accessGroup)
        }
        if !wasPrimary {
            new.status = .primary
            try writeItem(.v2DeviceKey, keyID: keyID, appID: appID, data: try new.encoded(), in: keychain, accessGroup: accessGroup)
        }
        return (!wasPrimary, others.map(\.0))
    }

    /// The app's pending and primary v2 device keys with their records, by key id.
    /// - Parameter refusing: a key id that must not be held yet (`.duplicateKeyID`), or nil.
    /// - Throws: `KeysError` `.duplicateKeyID`, `.corruptKey` (a damaged v2 item); `KeychainError`.
    static func usableV2Keys(appID: String, in keychain: Keychain, accessGroup: String?,
                             refusing: String?) throws -> [(String, DeviceKeyRecord)] {
        let keyring = DeviceKeyring(keychain: keychain, accessGroup: accessGroup)
        var current: [(String, DeviceKeyRecord)] = []
        for entry in try list(appID: appID, in: keychain, accessGroup: accessGroup) where entry.kind != .senderKey {
            if entry.keyID == refusing { throw KeysError(.duplicateKeyID, "\(appID) already holds a device key \(entry.keyID)") }
            guard entry.kind == .v2DeviceKey else { continue }
            if entry.damaged { throw KeysError(.corruptKey, "the v2 device key item \(entry.keyID) of \(appID) is damaged; nothing changed") }
            if let record = try keyring.record(.v2DeviceKey, keyID: entry.keyID, appID: appID), record.status == .pending || record.status == .primary {
                current.append((entry.keyID, record))
            }
        }
        return current
    }

    /// Deletes the app's v1 and v2 device key items whose grace window is over — decryptOnly
    /// or disabled with `notAfter` ≤ `now`, and disabled ones without `notAfter` retired at
    /// least `graceSeconds` ago (the iOS reference's `prune`). A message for a pruned key then
    /// falls back with `unknownKey`. Pinned sender keys retired (`decryptOnly`) with `notAfter` ≤
    /// `now` are unpinned (security review G15) while another pin remains, so the downgrade
    /// check never turns off; a revoked (disabled) pin stays, so the key is never pinned again.
    /// - Returns: the key ids deleted.
    /// - Throws: `KeysError` `.invalidName`; `KeychainError`.
    public static func prune(appID: String, in keychain: Keychain, accessGroup: String?, now: Int64,
                             graceSeconds: Int64 = KeyTime.defaultGraceSeconds) throws -> [String] {
        var pruned: [String] = []
        for entry in try list(appID: appID, in: keychain, accessGroup: accessGroup)
        where entry.kind != .senderKey && !entry.damaged && entry.keysetRecipient == nil {
            guard let status = entry.status, status == .decryptOnly || status == .disabled else { continue }
            let end = entry.notAfter ?? entry.retiredAt.map { $0 &+ graceSeconds } ?? Int64.max
            guard end <= now else { continue }
            try writeItem(entry.kind, keyID: entry.keyID, appID: appID, data: nil, in: keychain, accessGroup: entry.accessGroup)
            pruned.append(entry.keyID)
        }
        let pins = try list(appID: appID, in: keychain, accessGroup: accessGroup).filter { $0.kind == .senderKey && !$0.damaged }
        let ended = pins.filter { $0.status == .decryptOnly && ($0.notAfter ?? Int64.max) <= now }
        if ended.count < pins.count {
            for entry in ended {
                try writeItem(.senderKey, keyID: entry.keyID, appID: appID, data: nil, in: keychain, accessGroup: entry.accessGroup)
                pruned.append(entry.keyID)
            }
        }
        return pruned
    }
}
