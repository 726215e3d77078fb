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
}
