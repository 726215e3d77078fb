public import PushSealCrypto

/// A recipient's current sealing key: its key id and the 32 key bytes.
public struct SealingKey: Sendable {
    /// The key id written as `key_id`: 1-64 characters of `A-Z a-z 0-9 _ -`.
    public let keyID: String
    /// The 32-byte AES-256-GCM key.
    public let key: SecretBytes

    /// Creates a sealing key.
    /// - Parameters:
    ///   - keyID: 1-64 characters of `A-Z a-z 0-9 _ -`.
    ///   - key: 32 bytes.
    public init(keyID: String, key: SecretBytes) {
        self.keyID = keyID
        self.key = key
    }
}

/// Where the sender gets a recipient's primary key: the seam between the sender and a key
/// store. It lives in the wire module so that key stores can conform without depending on the
/// sender. The real provider is PushSealKeyProviders' `KeychainSealingKeys` (a server key store,
/// which also counts the seal against the key's limit); PushSealSender's `InMemorySealingKeys`
/// is a fixed table for tests and benchmarks.
public protocol SealingKeyProvider: Sendable {
    /// The primary key for `recipient` of `appID`, counting one seal.
    /// - Parameters:
    ///   - appID: the app's bundle identifier (APNs topic).
    ///   - recipient: the recipient's name as the server knows it (user or device id).
    /// - Returns: the key id and key to seal one notification with.
    /// - Throws: ``SealingKeyError`` (`.unknownRecipient`, `.keyUnavailable`,
    ///   `.sealLimitReached`, `.invalidName`, `.keyStoreMissing`, `.keyStoreInsecure`,
    ///   `.keyStoreLocked`, `.keyStoreUnreadable`); the sender reports each under the
    ///   `SenderError` code of the same name (`.invalidName` as `.invalidOption`). A provider
    ///   may throw a `SenderError` directly.
    func primaryKey(appID: String, recipient: String) throws -> SealingKey

    /// Called by a batch sealer before each chunk of input lines (`push-seal batch`: at most
    /// 2,048), from one thread, while no seal of the batch runs. A caching provider may check
    /// each recipient's key once per chunk from then on instead of at every seal. The default
    /// does nothing.
    func beginBatch()
}

extension SealingKeyProvider {
    /// Does nothing: a provider without a cache needs no batch hook.
    public func beginBatch() {}
}
