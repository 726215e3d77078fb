import PushSealCrypto
public import PushSealKeychain
import PushSealKeyRecords

/// Every write of a device key item goes through the app's key manifest
/// (``DeviceKeyManifest``; docs/keychain.md "The key manifest"), as the iOS reference's
/// `PushSealDeviceKeys.store` / `delete` do: manifest with both digests, the item, manifest with
/// the new digest alone.
extension DeviceKeyItem {
    /// The app's key manifest, or nil when it has none (a device never provisioned).
    /// - Throws: `KeysError` `.corruptKey` (a damaged manifest); `KeychainError` (-25308 before
    ///   first unlock, -34018, `.corrupt`, …).
    public static func manifest(appID: String, in keychain: Keychain, accessGroup: String?) throws -> DeviceKeyManifest? {
        try KeyID.validateAppID(appID)
        let data: SecretBytes
        do {
            data = try keychain.copyData(ItemQuery(service: DeviceKeyManifest.service(appID: appID), account: DeviceKeyManifest.account,
                                                   accessGroup: accessGroup))
        } catch let e as KeychainError where e.code == .itemNotFound {
            return nil
        }
        return try DeviceKeyManifest(decoding: data)
    }

    /// The app ids that have a key manifest in reach (attributes only), sorted: the apps whose
    /// device key items `push-keys prune` looks at.
    /// - Throws: `KeychainError` (-34018, `.corrupt`, …).
    public static func appIDsWithManifest(in keychain: Keychain, accessGroup: String?) throws -> [String] {
        do {
            return try keychain.copyMatching(ItemQuery(accessGroup: accessGroup), limit: .all).map(\.attributes)
                .filter { $0.account == DeviceKeyManifest.account && $0.service.hasPrefix(DeviceKeyManifest.servicePrefix) }
                .map { String($0.service.dropFirst(DeviceKeyManifest.servicePrefix.count)) }.sorted()
        } catch let e as KeychainError where e.code == .itemNotFound {
            return []
        }
    }

    /// Writes (`data` non-nil: adds or replaces) or deletes (`data` nil) the item `keyID` of
    /// `kind`, bracketed by the manifest. The item there now must be one the manifest vouches
    /// for (a rolled-back item is never blessed by a later write); the first write of an app
    /// that has no manifest needs it to have no key items at all.
    /// - Parameters:
    ///   - data: the item's new data (a 59-byte record; tests write damaged ones), or nil.
    ///   - kind: the kind written (names the service and label).
    ///   - mustBeNew: refuse (`.duplicateKeyID`) when an item is there.
    /// - Returns: the item's attributes after an add or update; nil after a delete.
    /// - Throws: `KeysError` `.duplicateKeyID` (`mustBeNew`), `.keyRolledBack` (the item there, or the app's items without a
    ///   manifest, are not what the manifest says), `.corruptKey` (a damaged manifest);
    ///   `KeychainError`.
    ///
    /// The whole read-modify-write runs under an exclusive `flock` on ``manifestLockFileName``
    /// in the keychain directory (security review G3: concurrent writers lost each other's
    /// entries), and first finishes what a writer killed between its manifest writes left
    /// half-written (``finishHalfWrittenEntries(_:appID:in:accessGroup:)``).
    @discardableResult
    static func writeItem(_ kind: DeviceKeyKind, keyID: String, appID: String, data: SecretBytes?, in keychain: Keychain,
                          accessGroup: String?, mustBeNew: Bool = false) throws -> ItemAttributes? {
        try KeyID.validate(keyID)
        return try keychain.withExclusiveLock(named: manifestLockFileName) {
            try writeItemLocked(kind, keyID: keyID, appID: appID, data: data, in: keychain, accessGroup: accessGroup, mustBeNew: mustBeNew)
        }
    }

    /// The lock file serializing every key manifest write of the keychain: `device-keys.lock`
    /// (0600, beside `keys.lock`; the kernel releases it when its holder exits or is killed).
    public static let manifestLockFileName = "device-keys.lock"

    /// Finishes the entries a writer killed between its first and last manifest write left with
    /// two accepted digests (security review, "interrupted manifest writes"): an item that holds
    /// the new state keeps only it (a finished revocation can no longer be undone by putting the
    /// old item back); one that still holds the old state keeps only that (the write never
    /// happened: rerun it); a delete that went through drops its entry. Call under the lock.
    /// - Returns: true when an entry changed (the caller saves the manifest).
    /// - Throws: `KeychainError` (reading an item's data: -25308 in a state that forbids it, …).
    static func finishHalfWrittenEntries(_ manifest: inout DeviceKeyManifest, appID: String, in keychain: Keychain,
                                         accessGroup: String?) throws -> Bool {
        var changed = false
        for index in manifest.entries.indices.reversed() {
            let entry = manifest.entries[index]
            guard let previous = entry.previousDigest else { continue }
            let query = ItemQuery(service: entry.kind.service(appID: appID), account: entry.keyID, accessGroup: accessGroup)
            var held: [UInt8]?
            do {
                if let bytes = try keychain.copyMatching(query, returning: .data).first?.data { held = try DeviceKeyManifest.digest(of: bytes) }
            } catch let e as KeychainError where e.code == .itemNotFound {
                held = nil
            }
            if held == entry.digest || (held == nil && entry.digest == nil) {
                if entry.digest == nil { manifest.entries.remove(at: index) } else { manifest.entries[index].previousDigest = nil }
                changed = true
            } else if held == previous {
                manifest.entries[index].digest = previous
                manifest.entries[index].previousDigest = nil
                changed = true
            }
        }
        return changed
    }

    /// The next open after an interrupted write (a reader's too): when no writer holds the
    /// manifest lock, finishes the half-written entries (``finishHalfWrittenEntries(_:appID:in:accessGroup:)``)
    /// and saves the manifest. Does nothing while a live writer holds the lock.
    /// - Returns: true when the manifest was rewritten.
    /// - Throws: `KeysError` `.corruptKey` (a damaged manifest); `KeychainError`.
    @discardableResult
    public static func finishInterruptedWrites(appID: String, in keychain: Keychain, accessGroup: String?) throws -> Bool {
        try keychain.withExclusiveLockIfFree(named: manifestLockFileName) {
            guard var held = try manifest(appID: appID, in: keychain, accessGroup: accessGroup),
                  try finishHalfWrittenEntries(&held, appID: appID, in: keychain, accessGroup: accessGroup) else { return false }
            try save(&held, appID: appID, in: keychain, accessGroup: accessGroup)
            return true
        } ?? false
    }

    private static func writeItemLocked(_ kind: DeviceKeyKind, keyID: String, appID: String, data: SecretBytes?, in keychain: Keychain,
                                        accessGroup: String?, mustBeNew: Bool) throws -> ItemAttributes? {
        let service = kind.service(appID: appID)
        let query = ItemQuery(service: service, account: keyID, accessGroup: accessGroup)
        let held = try manifest(appID: appID, in: keychain, accessGroup: accessGroup)
        var manifest = held ?? DeviceKeyManifest()
        if held != nil, try finishHalfWrittenEntries(&manifest, appID: appID, in: keychain, accessGroup: accessGroup) {
            try save(&manifest, appID: appID, in: keychain, accessGroup: accessGroup)
        }
        if held == nil, let any = try anyItem(appID: appID, in: keychain, accessGroup: accessGroup) {
            throw KeysError(.keyRolledBack, "\(appID) has key items but no key manifest (\(any)): written around the toolkit, by an earlier 0.2.0 development build, or its manifest was removed; re-provision the device (docs/keychain.md \"The key manifest\")")
        }
        var current: [UInt8]?
        var currentAttributes: ItemAttributes?
        do {
            let item = try keychain.copyMatching(query, returning: [.attributes, .data]).first
            if let bytes = item?.data { current = try DeviceKeyManifest.digest(of: bytes) }
            currentAttributes = item?.attributes
        } catch let e as KeychainError where e.code == .itemNotFound {
            current = nil
        }
        if mustBeNew, currentAttributes != nil {
            throw KeysError(.duplicateKeyID, "\(appID) already holds a key item \(keyID) under \(service); nothing changed")
        }
        let index = manifest.entries.firstIndex { $0.keyID == keyID && $0.kind.servicePrefix == kind.servicePrefix }
        if let current, index.map({ manifest.entries[$0].accepts(current) }) != true {
            throw KeysError(.keyRolledBack, "the \(kind.label) item \(keyID) of \(appID) is not the one its key manifest lists: an older copy put back, or written around the toolkit; nothing changed")
        }
        let new = try data.map(DeviceKeyManifest.digest(of:))
        if current == nil, new == nil {
            if let index { manifest.entries.remove(at: index); try save(&manifest, appID: appID, in: keychain, accessGroup: accessGroup) }
            return nil
        }
        // 1. Both states accepted, then 2. the item, then 3. the new state alone.
        let entry = DeviceKeyManifest.Entry(kind: kind, keyID: keyID, digest: new, previousDigest: current)
        if let index { manifest.entries[index] = entry } else { manifest.entries.append(entry) }
        try save(&manifest, appID: appID, in: keychain, accessGroup: accessGroup)
        var attributes: ItemAttributes?
        if let data {
            if currentAttributes != nil {
                try keychain.update(query, with: ItemChanges(data: data))
                attributes = try keychain.copyMatching(query).first?.attributes
            } else {
                attributes = try keychain.add(.genericPassword, service: service, account: keyID, label: kind.label, accessGroup: accessGroup,
                                              accessibility: accessibility, data: data)
            }
        } else {
            try keychain.delete(query)
        }
        let at = manifest.entries.firstIndex { $0.keyID == keyID && $0.kind.servicePrefix == kind.servicePrefix }
        if let at {
            if new == nil { manifest.entries.remove(at: at) } else { manifest.entries[at].previousDigest = nil }
        }
        try save(&manifest, appID: appID, in: keychain, accessGroup: accessGroup)
        return attributes
    }

    /// Writes `manifest` with its generation one higher (adds the item for the first one).
    private static func save(_ manifest: inout DeviceKeyManifest, appID: String, in keychain: Keychain, accessGroup: String?) throws {
        let first = manifest.generation == 0
        manifest.generation += 1
        let data = try manifest.encoded()
        let service = DeviceKeyManifest.service(appID: appID)
        if first {
            try keychain.add(.genericPassword, service: service, account: DeviceKeyManifest.account, label: DeviceKeyManifest.label,
                             accessGroup: accessGroup, accessibility: accessibility, data: data)
        } else {
            try keychain.update(ItemQuery(service: service, account: DeviceKeyManifest.account, accessGroup: accessGroup), with: ItemChanges(data: data))
        }
    }

    /// Some key item of the app (`service/account`), attributes only, or nil.
    private static func anyItem(appID: String, in keychain: Keychain, accessGroup: String?) throws -> String? {
        for service in [DeviceKeyKind.v1Key.service(appID: appID), DeviceKeyKind.senderKey.service(appID: appID)] {
            do {
                if let a = try keychain.copyMatching(ItemQuery(service: service, accessGroup: accessGroup)).first?.attributes {
                    return "\(service)/\(a.account)"
                }
            } catch let e as KeychainError where e.code == .itemNotFound {
                continue
            }
        }
        return nil
    }
}
