import PushSealSystem
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import PushSealCrypto
public import PushSealWire
public import PushSealKeychain
public import PushSealDeviceKeys
import PushSealKeyRecords
/// The real key provider: reads the key for a payload's key id from the device keychain as the
/// extension's identity (its entitlements), through PushSealDeviceKeys' ``DeviceKeyring``
/// (docs/keychain.md "Device key items"). For version 2, give the same provider to the opener
/// as its sender policy: `DecryptingServiceConfiguration(appID:keyProvider: p, opener:
/// WireFormatOpener(pinnedSenderKeys: p))` (the default opener opens version 1 only).
///
/// Failures keep their identity so the fallback reason tells them apart (PushSealExtension's
/// `FallbackReason.key(_:)`, through ``FallbackReasonProviding``): `unknownKey`, `keyDestroyed`, `keyDisabled`, `keyExpired`
/// (`KeysError`), and `keychain:errSecInteractionNotAllowed(-25308)` (a `whenUnlocked` keyset
/// while the device is locked, or any keyset before first unlock),
/// `keychain:errSecMissingEntitlement(-34018)` (the named access group is not among the
/// extension's), `keychain:errSecItemNotFound(-25300)` (entitled, but no keyset for this app).
public struct KeychainKeyProvider: NotificationKeyProvider {
    /// The keyring the lookups go through.
    public let keyring: DeviceKeyring
    /// The app's bundle identifier: the keyset searched (`pushseal.keyset:<appID>`).
    public let appID: String
    private let now: @Sendable () -> Int64

    /// Creates a provider over an open keychain.
    /// - Parameters:
    ///   - keychain: the device keychain, opened as the extension's identity.
    ///   - accessGroup: the group the extension's code names when reading its key (as
    ///     `kSecAttrAccessGroup`); a group the identity lacks gives -34018. `nil` searches every
    ///     group of the identity (a missing key is then -25300).
    ///   - appID: the app's bundle identifier (from the extension's configuration).
    ///   - now: Unix seconds, for a `decryptOnly` key's grace window (default: the system clock).
    public init(keychain: Keychain, accessGroup: String? = nil, appID: String,
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }) {
        self.keyring = DeviceKeyring(keychain: keychain, accessGroup: accessGroup)
        self.appID = appID
        self.now = now
    }

    /// The 32-byte key stored under `keyID` in the app's keyset.
    /// - Throws: `KeysError` `.unknownKey`, `.keyDestroyed`, `.keyDisabled`, `.keyExpired`,
    ///   `.invalidName`, `.corruptKeyset`; `KeychainError` with its OSStatus (-25308, -34018, -25300).
    public func key(for keyID: String) throws -> SecretBytes {
        try keyring.key(for: keyID, appID: appID, now: now())
    }

    /// The key and, for a `decryptOnly` key, its `retiredAt` (``DeviceKeyring/lookup(_:appID:now:)``).
    /// - Throws: as ``key(for:)``.
    public func keyAndRetirement(for keyID: String) throws -> (key: SecretBytes, retiredAt: Int64?) {
        try keyring.lookup(keyID, appID: appID, now: now())
    }

    /// The key for an envelope by its version (docs/keychain.md "Device key items"): a version
    /// 2 (HPKE) envelope reads the kind 2 item under its key id — and, in auth mode, the
    /// pinned sender key's status again, `retiredAt` being the earlier of the two — every other
    /// envelope ``keyAndRetirement(for:)-(String)`` (version 1 keys).
    /// - Throws: as ``key(for:)``; `KeysError` `.corruptKey` (a damaged item or an all-zero key).
    public func keyAndRetirement(for envelope: SealedPayload) throws -> (key: SecretBytes, retiredAt: Int64?) {
        guard envelope.envelope is HPKEBaseEnvelope || envelope.envelope is HPKEAuthEnvelope else {
            do {
                return try keyAndRetirement(for: envelope.keyID)
            } catch let e as KeysError where e.code == .unknownKey {
                try diagnoseMissingKey(.v1Key, keyID: envelope.keyID)
                throw e
            } catch let e as KeychainError where e.code == .itemNotFound {
                try diagnoseMissingKey(.v1Key, keyID: envelope.keyID)
                throw e
            }
        }
        let time = now()
        var senderRetiredAt: Int64?
        if envelope.envelope is HPKEAuthEnvelope, let senderKeyID = envelope.headerValues.first {
            senderRetiredAt = try keyring.usableKey(.senderKey, keyID: senderKeyID, appID: appID, now: time).retiredAt
        }
        let (key, retiredAt) = try keyring.usableKey(.v2DeviceKey, keyID: envelope.keyID, appID: appID, now: time)
        let earliest = [retiredAt, senderRetiredAt].compactMap { $0 }.min()
        return (key, earliest)
    }
}

/// The app's pinned sender keys, for `WireFormatOpener(pinnedSenderKeys:)`: the kind 3 items
/// of the device keychain (``DeviceKeyring/pinnedSenderKeyIDs(appID:)``), read for each version 2 payload.
extension KeychainKeyProvider: PinnedSenderKeySource {
    /// Every pinned sender key id of ``appID`` (attributes only).
    /// - Throws: `KeychainError` (-34018, `.corrupt`, …).
    public func pinnedSenderKeyIDs() throws -> [String] {
        try keyring.pinnedSenderKeyIDs(appID: appID)
    }

    /// The pinned sender key `keyID`, if its status lets it authenticate now.
    /// - Throws: `FormatError` `.unknownSenderKey` (a pin whose item is missing); `KeysError`
    ///   `.corruptKey`, `.keyDisabled`, `.keyExpired`, `.keyRolledBack`; `KeychainError`.
    public func pinnedSenderKey(_ keyID: String) throws -> PinnedSenderKey {
        try PinnedSenderKey(keyID: keyID, publicKey: keyring.pinnedSenderKey(keyID, appID: appID, now: now()).publicKey)
    }

    /// Before any sender check: the app's version 2 device key `keyID` must be in reach, or
    /// the reason it is not is reported (``diagnoseMissingKey(_:keyID:)``).
    /// - Throws: `KeysError` `.wrongAppID`; `KeychainError` `.itemNotFound` (-25300),
    ///   `.missingEntitlement` (-34018).
    public func checkDeviceKey(_ keyID: String) throws {
        try diagnoseMissingKey(.v2DeviceKey, keyID: keyID)
    }

    /// Why the `kind` key `keyID` of ``appID`` is not in reach, when it is a setup mistake
    /// (newcomer review, friction 16); returns when the item is there, or when the app has key
    /// items in reach but not this one (the lookup then reports `unknownKey`).
    /// - The key id is a key item of another app id in reach: `KeysError` `.wrongAppID`
    ///   naming both (the extension's `PushSealAppID` set to its own bundle id, say).
    /// - Nothing of the app is in reach and the keychain was restored onto a new device that
    ///   left the app's key items behind (``Keychain/restoreLeftBehind()``): `KeysError`
    ///   `.unknownKey` (the key is gone from this device).
    /// - Nothing of the app is in reach, neither key items nor its key manifest: `KeychainError`
    ///   `.itemNotFound` (-25300) saying the app's keychain group is not among the extension's
    ///   (Keychain Sharing), or the device is not provisioned. A named group the identity
    ///   lacks is -34018 from the keychain itself.
    /// - Throws: those, and the keychain's own errors (attributes only are read: any device state).
    func diagnoseMissingKey(_ kind: DeviceKeyKind, keyID: String) throws {
        let keychain = keyring.keychain, group = keyring.accessGroup
        func matches(_ query: ItemQuery) throws -> [KeychainItem] {
            do { return try keychain.copyMatching(query, limit: .all) } catch let e as KeychainError where e.code == .itemNotFound { return [] }
        }
        let service = kind.service(appID: appID)
        guard try matches(ItemQuery(service: service, account: keyID, accessGroup: group)).isEmpty else { return }
        let others = try matches(ItemQuery(account: keyID, accessGroup: group)).map(\.attributes.service)
            .filter { $0.hasPrefix(kind.servicePrefix) && $0 != service }
        if let other = others.first {
            throw KeysError(.wrongAppID, "the payload's key \(keyID) is a key of app \(other.dropFirst(kind.servicePrefix.count)), but the extension opens for app id \(appID): PushSealAppID (the extension's configuration) must be the app's bundle identifier, the APNs topic, not the extension's own")
        }
        let legacy = kind == .v1Key ? try matches(ItemQuery(service: KeychainNames.service(appID: appID), accessGroup: group)) : []
        guard try matches(ItemQuery(service: service, accessGroup: group)).isEmpty, legacy.isEmpty,
              try DeviceKeyItem.manifest(appID: appID, in: keychain, accessGroup: group) == nil else { return }
        // A keychain restored onto a new device left the app's …ThisDeviceOnly key items behind:
        // the key is gone from this device (unknownKey, as on iOS), not a setup mistake.
        if try keychain.restoreLeftBehind().contains(where: { $0.service == service || $0.service == DeviceKeyManifest.service(appID: appID) }) {
            throw KeysError(.unknownKey, "no key item \(keyID) of \(appID): this keychain was restored from a backup onto a new device, which leaves …ThisDeviceOnly key items behind; the app's next run makes and registers a new key")
        }
        let groups = group.map { [$0] } ?? keychain.entitlements.keychainAccessGroups
        throw KeychainError(.itemNotFound, "no key item of \(appID) is in reach of the extension (access groups \(groups.joined(separator: ", "))): the app's shared keychain group is missing from the extension's keychain-access-groups (Keychain Sharing), or the device was never provisioned")
    }

    /// Whether the app's v1 key `keyID` may open although a sender key is pinned (security
    /// review G2): its item is `decryptOnly` with a `notAfter` (the migration window `push-keys
    /// device pin-sender` gives v1 keys), or there is no v1 item under that id (the key lookup
    /// then refuses the payload with `unknownKey`).
    /// - Throws: `KeysError` `.corruptKey`, `.keyRolledBack`, `.invalidName`; `KeychainError`.
    public func keepsVersionOne(keyID: String) throws -> Bool {
        guard let record = try keyring.record(.v1Key, keyID: keyID, appID: appID) else { return true }
        return record.status == .decryptOnly && record.notAfter != nil
    }
}
