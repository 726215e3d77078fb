public import PushSealKeychain

/// Key items and the key manifest across access groups (issue 28): an app entitled to several
/// groups keeps its key items and the manifest that vouches for them in one group, since a
/// reader checks an item against the manifest it finds first; a write aimed at another group
/// would leave a key the extension refuses (`keyRolledBack`).
extension DeviceKeyItem {
    /// The access groups (among those `keychain`'s identity reaches) that hold the app's key
    /// items, pinned sender keys or key manifest, sorted (attributes only: any device state).
    /// - Throws: `KeychainError` (`.corrupt`, `.io`).
    public static func groupsHoldingItems(appID: String, in keychain: Keychain) throws -> [String] {
        var groups = Set<String>()
        for service in [DeviceKeyKind.v1Key.service(appID: appID), DeviceKeyKind.senderKey.service(appID: appID), DeviceKeyManifest.service(appID: appID)] {
            do {
                for item in try keychain.copyMatching(ItemQuery(service: service), limit: .all) { groups.insert(item.attributes.accessGroup) }
            } catch let e as KeychainError where e.code == .itemNotFound {
                continue
            }
        }
        return groups.sorted()
    }

    /// Where a write of the app's key items aimed at `accessGroup` lands, and the groups that
    /// already hold the app's items elsewhere: every writer of key items (import, generate,
    /// rotation, promote, pins) checks this before it changes anything, and refuses when
    /// `elsewhere` is not empty (the new item would not be covered by the manifest the
    /// extension reads).
    /// - Parameters:
    ///   - appID: the app's bundle identifier.
    ///   - keychain: the device keychain, opened as the app.
    ///   - accessGroup: the group the command writes into; `nil` is the identity's first group
    ///     (where the keychain puts an item added without one, as iOS does).
    /// - Returns: `target`: the group written into; `elsewhere`: the other groups holding the
    ///   app's key items, pinned sender keys or key manifest, sorted (empty: consistent).
    /// - Throws: `KeychainError` `.missingEntitlement` (no group, or one the identity lacks),
    ///   `.corrupt`, `.io`.
    public static func writeGroupCheck(appID: String, in keychain: Keychain, accessGroup: String?) throws -> (target: String, elsewhere: [String]) {
        let groups = keychain.entitlements.accessGroups
        guard let target = accessGroup ?? groups.first else {
            throw KeychainError(.missingEntitlement, "the caller has no keychain access group")
        }
        guard groups.contains(target) else {
            throw KeychainError(.missingEntitlement, "the caller is not entitled to access group \(target) (its groups: \(groups.joined(separator: ", ")))")
        }
        return (target, try groupsHoldingItems(appID: appID, in: keychain).filter { $0 != target })
    }
}
