import Foundation
import PushSealKeyRecords
public import PushSealServerKeys
public import PushSealServerKeyProviders
import PushSealRegistry

/// Where the server keys, v2 registrations and device tokens live, as plain configuration.
public enum StoreConfiguration: Sendable, Hashable {
    /// A server file keychain directory (`push-keys generate --keychain DIR`), opened with the
    /// server identity (access group `pushseal.server`).
    case keychain(path: String)
    /// A PostgreSQL registry: a libpq connection string or URI and the key-encryption key file
    /// (32 bytes or 64 hex digits, 0600; `nil` opens for metadata only: sealing then throws
    /// `RegistryError` `.kekRequired`).
    case registry(connectionString: String, kekFile: String?)
}

/// An opened server store and the v1 sealing keys over it: what every server-side tool and the
/// gateway open once at start-up. Sendable; the store is safe to use from many threads.
public struct ServerStore: Sendable {
    /// The store (a `KeyStore` for a keychain, a `PostgresKeyStore` for a registry).
    public let store: any ServerKeyStore
    /// The v1 sealing key provider reading from ``store`` (each seal counted against the key's limit).
    public let sealingKeys: KeychainSealingKeys

    /// Opens the store of `configuration`.
    /// - Throws: for a keychain, `SealingKeyError` (`.keyStoreMissing`, `.keyStoreInsecure`,
    ///   `.keyStoreLocked`, `.keyStoreUnreadable`, convertible to `SenderError`); for a registry,
    ///   `RegistryError` (`.kekFile`, `.unavailable`, `.invalidConnectionString`,
    ///   `.schemaTooOld`, `.schemaTooNew`, `.wrongKEK`).
    public static func open(_ configuration: StoreConfiguration) throws -> ServerStore {
        switch configuration {
        case .keychain(let path):
            let keys = try KeychainSealingKeys(keychainAt: URL(fileURLWithPath: path))
            return ServerStore(sealingKeys: keys)
        case .registry(let connectionString, let kekFile):
            let kek = try kekFile.map { try KeyEncryptionKey(file: $0) }
            return ServerStore(store: try PostgresKeyStore(connectionString: connectionString, kek: kek))
        }
    }

    /// A store opened elsewhere (e.g. `push-keys` with its identity options).
    public init(store: any ServerKeyStore) {
        self.init(sealingKeys: KeychainSealingKeys(store: store))
    }

    /// The store of v1 sealing keys already made.
    public init(sealingKeys: KeychainSealingKeys) {
        self.sealingKeys = sealingKeys
        store = sealingKeys.keyring.store
    }

    /// The store's device tokens.
    /// - Throws: ``ServerError`` `.unsupportedStore` for a store without them.
    public func deviceTokenStore() throws -> any DeviceTokenStore {
        guard let s = store as? any DeviceTokenStore else {
            throw ServerError(.unsupportedStore, "this store holds no device tokens: use a server keychain or a registry")
        }
        return s
    }

    /// The store's v2 registrations and sender keys.
    /// - Throws: ``ServerError`` `.unsupportedStore` for a store without them.
    public func registrationStore() throws -> any RegistrationStore {
        guard let s = store as? any RegistrationStore else {
            throw ServerError(.unsupportedStore, "this store holds no v2 registrations: use a server keychain or a registry")
        }
        return s
    }
}
