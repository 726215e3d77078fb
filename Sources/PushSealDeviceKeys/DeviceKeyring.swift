#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import PushSealCrypto
public import PushSealKeychain
import PushSealKeyRecords

/// The Notification Service Extension's view of a device keychain: the key for a payload's
/// `key_id`.
///
/// Opened as the extension's identity (its entitlements), it reads the app's key items from the
/// access group the app shares with it, in the one layout of docs/keychain.md "Device key
/// items" (`DeviceKeyring+KeyItems.swift`: kind 1 and 2 under `pushseal.key:<appID>`, kind 3
/// under `pushseal.sender:<appID>`); for a v1 key id without a kind 1 item it falls back to the
/// app's keyset items (service `pushseal.keyset:<appID>`, the legacy device form). The lookup is
/// by key id; no key is ever tried.
///
/// Sendable: all stored properties are immutable.
public final class DeviceKeyring: Sendable {
    /// The device keychain, opened as the extension's identity.
    public let keychain: Keychain
    /// The access group the app stored its keysets in, or `nil` to search every group of the
    /// identity. Naming it (as an app's code does) turns a missing entitlement into
    /// `errSecMissingEntitlement` (-34018) instead of `errSecItemNotFound` (-25300).
    public let accessGroup: String?

    /// Wraps an open keychain.
    public init(keychain: Keychain, accessGroup: String? = nil) {
        self.keychain = keychain
        self.accessGroup = accessGroup
    }

    /// Opens the device keychain at `url` as `entitlements`.
    /// - Throws: `KeychainError` (`.keychainMissing`, `.insecurePermissions`, `.corrupt`, `.io`).
    public convenience init(keychainAt url: URL, as entitlements: Entitlements, accessGroup: String? = nil) throws {
        self.init(keychain: try Keychain(opening: url, as: entitlements), accessGroup: accessGroup)
    }

    /// The 32-byte key for `keyID`, for opening a payload addressed to `appID`.
    /// - Parameters:
    ///   - keyID: the payload's `key_id`.
    ///   - appID: the app's bundle identifier (the APNs topic, also in the AAD).
    ///   - now: Unix seconds, 0 to ``KeyTime/maxTimeSeconds``, compared with a `decryptOnly`
    ///     key's `notAfter`.
    /// - Returns: the key (pending, primary, or decryptOnly within its grace window).
    /// - Throws: `KeysError` `.unknownKey` (no kind 1 item and no such key id in the app's
    ///   keysets), `.corruptKey` (a damaged kind 1 item), `.keyDestroyed`,
    ///   `.keyDisabled`, `.keyExpired`, `.invalidName`, `.corruptKeyset`, `.keysetRolledBack` (an
    ///   old keyset item put back), `.timeOutOfRange`
    ///   (`now` out of range; checked before the keychain is read); the keychain's own
    ///   `KeychainError` unchanged: `.itemNotFound` (-25300, no keyset for this app in reach),
    ///   `.interactionNotAllowed` (-25308, a `whenUnlocked` keyset while locked),
    ///   `.missingEntitlement` (-34018, ``accessGroup`` not in the identity's groups).
    public func key(for keyID: String, appID: String, now: Int64 = Int64(Date().timeIntervalSince1970)) throws -> SecretBytes {
        try lookup(keyID, appID: appID, now: now).key
    }

    /// The key for `keyID` and, for a `decryptOnly` key, its `retiredAt`: the receiver refuses a
    /// message whose sealed `iat` is after it (docs/keychain.md, "Device key items"; security
    /// review F4), since a retired key still opens but must not vouch for new messages.
    /// - Parameters: as ``key(for:appID:now:)``.
    /// - Returns: the key and `retiredAt` (seconds since 1970 UTC; `nil` for a pending or
    ///   primary key, or a decryptOnly key without one).
    /// - Throws: as ``key(for:appID:now:)``.
    public func lookup(_ keyID: String, appID: String, now: Int64 = Int64(Date().timeIntervalSince1970)) throws -> (key: SecretBytes, retiredAt: Int64?) {
        try KeyID.validate(keyID)
        try KeyID.validateAppID(appID)
        try KeyTime.checkTime(now)
        // The one device layout first (docs/keychain.md "Device key items"): a kind 1 item under
        // the key id decides, whatever its status (never a fall-through to an older keyset).
        if let item = try record(.v1Key, keyID: keyID, appID: appID) {
            return try usableKey(item, keyID: keyID, appID: appID, now: now)
        }
        // The legacy keysets are subject to the manifest too (security review G9): a key id the
        // manifest lists whose item is gone is missing, never looked for elsewhere (an old
        // keyset put back in place of a converted, revoked key must not open).
        if let entry = try DeviceKeyItem.manifest(appID: appID, in: keychain, accessGroup: accessGroup)?.entry(.v1Key, keyID: keyID), entry.kind == .v1Key {
            throw KeysError(.keyRolledBack, "the \(entry.kind.label) \(keyID) of \(appID) is in its key manifest but its item is missing (deleted around the toolkit); its legacy keyset is not consulted: re-provision the device")
        }
        return try legacyKeysetLookup(keyID, appID: appID, now: now)
    }

    /// The legacy device form: keyset items `pushseal.keyset:<appID>` (what `push-keys import`
    /// writes into a device keychain), with their generation check (F5).
    private func legacyKeysetLookup(_ keyID: String, appID: String, now: Int64) throws -> (key: SecretBytes, retiredAt: Int64?) {
        let items: [KeychainItem]
        do {
            items = try keychain.copyMatching(ItemQuery(itemClass: .genericPassword, service: KeychainNames.service(appID: appID), accessGroup: accessGroup),
                                              limit: .all, returning: .data)
        } catch let e as KeychainError where e.code == .itemNotFound {
            // No keyset: a device provisioned in the item layout (it has a key manifest) lacks
            // this key; one with nothing at all is not provisioned (-25300, as before).
            guard try DeviceKeyItem.manifest(appID: appID, in: keychain, accessGroup: accessGroup) != nil else { throw e }
            items = []
        }
        for item in items {
            guard let data = item.data else { continue }
            let ks = try data.withUnsafeBytes { raw -> Keyset in
                var bytes = Array(raw)
                defer { SecretBytes.wipe(&bytes) }
                return try Keyset.decode(bytes)
            }
            guard let i = ks.index(of: keyID) else { continue }
            try GenerationCounters.checkGeneration(ks, keychain: keychain, accessGroup: item.attributes.accessGroup)
            let k = ks.keys[i]
            switch k.info.status {
            case .destroyed:
                throw KeysError(.keyDestroyed, "key \(keyID) of \(appID) was destroyed (pruned after its grace window)")
            case .disabled:
                throw KeysError(.keyDisabled, "key \(keyID) of \(appID) was revoked")
            case .decryptOnly where (k.info.notAfter ?? Int64.max) <= now:
                throw KeysError(.keyExpired, "key \(keyID) of \(appID) is past its grace window (notAfter \(k.info.notAfter ?? 0))")
            case .pending, .primary, .decryptOnly:
                guard let secret = k.secret else { throw KeysError(.corruptKeyset, "key \(keyID) of \(appID) has no key bytes") }
                return (secret, k.info.status == .decryptOnly ? k.info.retiredAt : nil)
            }
        }
        throw KeysError(.unknownKey, "no key \(keyID) in the keysets of \(appID): not provisioned, or the server sealed with another app id's keyset (check push-seal --app-id)")
    }
}
