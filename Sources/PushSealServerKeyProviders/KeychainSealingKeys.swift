#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import PushSealWire
import PushSealKeychain
import PushSealKeyRecords
public import PushSealServerKeys
/// The real sealing key provider: each recipient's primary key from a server key store (any
/// ``ServerKeyStore``; a server keychain by default), through PushSealServerKeys' ``ServerKeyring``,
/// which also counts every seal against the key's 2^32 limit (NIST SP 800-38D §8.3, random
/// 96-bit nonces).
///
/// The keyring caches each recipient's primary key: every seal checks the keyset item's change
/// token (two `lstat` calls) and re-reads the item when it changed, so a rotation or revocation
/// made by `push-keys` in another process is seen at the next seal. The item is also re-read at
/// the start of each block of reserved seals, and at least every second (see ``ServerKeyring``).
/// In a batch (PushSealSender's `BatchSealer` calls ``beginBatch()`` before each chunk of at most
/// 2,048 lines), the token is checked once per recipient per chunk instead of at every seal.
/// Sendable: the keyring guards its own state.
public struct KeychainSealingKeys: SealingKeyProvider {
    /// The keyring the keys come from.
    public let keyring: ServerKeyring

    /// Wraps an open server keyring.
    public init(keyring: ServerKeyring) {
        self.keyring = keyring
    }

    /// Seals from `store` (a file keychain's ``KeyStore``, or another ``ServerKeyStore``).
    public init(store: any ServerKeyStore) {
        self.keyring = ServerKeyring(store: store)
    }

    /// Opens the server keychain directory at `url` (mode 0700, owned by the caller).
    /// - Parameter url: the keychain directory (`push-keys generate --keychain DIR` makes one).
    /// - Throws: ``SealingKeyError`` `.keyStoreMissing` (no such directory or not a keychain),
    ///   `.keyStoreInsecure` (group- or world-accessible, or owned by another user),
    ///   `.keyStoreUnreadable` (damaged, I/O error).
    public init(keychainAt url: URL) throws {
        do {
            keyring = try ServerKeyring(keychainAt: url)
        } catch {
            throw Self.sealingKeyError(error, appID: nil, recipient: nil)
        }
    }

    /// Starts a batch chunk: until the next call, each recipient's change token is checked at its
    /// first seal only (``ServerKeyring/beginBatchChunk()``). PushSealSender's `BatchSealer`
    /// calls it before each chunk of at most 2,048 lines.
    public func beginBatch() {
        keyring.beginBatchChunk()
    }

    /// `true` when the store reads and reserves in bulk (a ``BulkSealingKeyStore``: the
    /// PostgreSQL registry, and the file keychain, which writes a chunk's reservations with one flush).
    public var loadsBatchRecipientsInBulk: Bool { keyring.store is any BulkSealingKeyStore }

    /// Starts a batch chunk and loads its recipients' keys in bulk
    /// (``ServerKeyring/beginBatchChunk(appID:recipients:)``).
    public func beginBatch(appID: String, recipients: [String]) {
        keyring.beginBatchChunk(appID: appID, recipients: recipients)
    }

    /// The primary key of (`appID`, `recipient`), counting one seal.
    /// - Throws: ``SealingKeyError`` `.invalidName` (an app id or recipient that breaks the naming
    ///   rules of ``KeyID``), `.unknownRecipient` (no keyset),
    ///   `.keyUnavailable` (the primary key was disabled or destroyed: no key seals),
    ///   `.sealLimitReached` (2^32 seals: rotate), `.keyStoreLocked` (errSecInteractionNotAllowed:
    ///   the keychain's device state does not allow reading the keyset), `.keyStoreMissing`,
    ///   `.keyStoreInsecure`, `.keyStoreUnreadable`.
    public func primaryKey(appID: String, recipient: String) throws -> SealingKey {
        do {
            let (keyID, key) = try keyring.primaryKeyForSealing(appID: appID, recipient: recipient)
            return SealingKey(keyID: keyID, key: key)
        } catch {
            throw Self.sealingKeyError(error, appID: appID, recipient: recipient, keyring: keyring)
        }
    }

    /// Maps the key store's errors onto the provider codes (reasons never hold key bytes).
    static func sealingKeyError(_ error: any Error, appID: String?, recipient: String?, keyring: ServerKeyring? = nil) -> SealingKeyError {
        let who = "\(appID ?? "?")/\(recipient ?? "?")"
        // What was being read: a recipient's keyset, else (RegistrationSealingKeys' start) the app's sender key.
        let subject = recipient != nil ? "keyset \(who)" : appID.map { "the sender key of app \($0)" } ?? "the keychain"
        if let e = error as? SealingKeyError { return e }
        if let e = error as? KeysError {
            switch e.code {
            case .unknownKeyset:
                return SealingKeyError(.unknownRecipient, "no keyset for recipient \(recipient ?? "?") of app \(appID ?? "?") in the keychain")
            case .invalidName:
                return SealingKeyError(.invalidName, e.reason)
            case .noPrimaryKey, .keyDisabled, .keyDestroyed:
                return SealingKeyError(.keyUnavailable, "keyset \(who) has no primary key: \(lastPrimaryState(keyring, appID, recipient))")
            case .sealLimitReached:
                return SealingKeyError(.sealLimitReached, e.reason)
            default:
                return SealingKeyError(.keyStoreUnreadable, "\(subject): \(e.reason)")
            }
        }
        if let e = error as? KeychainError {
            switch e.code {
            case .keychainMissing, .deviceSecretMissing: return SealingKeyError(.keyStoreMissing, e.description, suggestion: e.suggestion)
            case .insecurePermissions: return SealingKeyError(.keyStoreInsecure, e.description, suggestion: e.suggestion)
            case .interactionNotAllowed:
                return SealingKeyError(.keyStoreLocked, "\(subject) cannot be read in the keychain's device state: \(e.description)",
                                   suggestion: e.suggestion)
            case .diskFull: return SealingKeyError(.keyStoreUnwritable, "the keychain is full: \(e.description)", suggestion: e.suggestion)
            default: return SealingKeyError(.keyStoreUnreadable, e.description, suggestion: e.suggestion)
            }
        }
        return SealingKeyError(.keyStoreUnreadable, "the key store failed: \(error)")
    }

    /// What became of the keyset's last primary key ("its primary key k was disabled (revoked)", …).
    static func lastPrimaryState(_ keyring: ServerKeyring?, _ appID: String?, _ recipient: String?) -> String {
        guard let keyring, let appID, let recipient,
              let info = try? keyring.store.keyset(appID: appID, recipient: recipient),
              let last = info.keys.filter({ $0.promotedAt != nil }).max(by: { ($0.promotedAt ?? 0) < ($1.promotedAt ?? 0) })
        else { return "revoked or never promoted" }
        switch last.status {
        case .disabled: return "its primary key \(last.keyID) was disabled (revoked)"
        case .destroyed: return "its primary key \(last.keyID) was destroyed"
        default: return "its last primary key \(last.keyID) is \(last.status)"
        }
    }
}
