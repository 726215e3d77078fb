public import PushSealCrypto

/// A recipient's current sealing key: its key id, the key bytes and the `enc_alg` they are for.
public struct SealingKey: Sendable {
    /// The key id written as `key_id`: 1-64 characters of `A-Z a-z 0-9 _ -`.
    public let keyID: String
    /// The key the algorithm seals with: for `A256GCM` the 32-byte AES-256-GCM key (for an
    /// HPKE entry it would be the device's 32-byte X25519 public key).
    public let key: SecretBytes
    /// The `enc_alg` to seal with, looked up in the sealer's `EnvelopeRegistry`
    /// (default `A256GCM`, `WireFormat.algorithm`).
    public let algorithm: String
    /// Whether ``keyID`` is a valid key id (`WireFormat.isValidKeyID`), checked once when the
    /// key is made: a provider's table hands the same key to every seal.
    package let hasValidKeyID: Bool

    /// Creates a sealing key.
    /// - Parameters:
    ///   - keyID: 1-64 characters of `A-Z a-z 0-9 _ -`.
    ///   - key: the algorithm's key bytes (32 for `A256GCM`).
    ///   - algorithm: the `enc_alg` (default `A256GCM`).
    public init(keyID: String, key: SecretBytes, algorithm: String = WireFormat.algorithm) {
        self.keyID = keyID
        self.key = key
        self.algorithm = algorithm
        hasValidKeyID = WireFormat.isValidKeyID(keyID)
    }
}

/// Where the sender gets a recipient's primary key: the seam between the sender and a key
/// store. It lives in the wire module so that key stores can conform without depending on the
/// sender. The real provider is PushSealServerKeyProviders' `KeychainSealingKeys` (a server key store,
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

    /// `true` when the provider loads a chunk's recipients' keys in bulk: the batch sealer then
    /// calls ``beginBatch(appID:recipients:)`` with the chunk's recipients instead of
    /// ``beginBatch()``. Default `false`.
    var loadsBatchRecipientsInBulk: Bool { get }

    /// ``beginBatch()`` for a chunk whose lines name `recipients` (each once, in first-seen
    /// order; a line whose recipient could not be read quickly is not in it): a provider may
    /// load all their keys at once here (a database: one query, not one per recipient). Errors
    /// are not reported here: a recipient that did not load is looked up at its seal, which then
    /// reports the error. The default calls ``beginBatch()``.
    func beginBatch(appID: String, recipients: [String])
}

extension SealingKeyProvider {
    /// Does nothing: a provider without a cache needs no batch hook.
    public func beginBatch() {}

    /// `false`: no bulk loading.
    public var loadsBatchRecipientsInBulk: Bool { false }

    /// Calls ``beginBatch()``.
    public func beginBatch(appID: String, recipients: [String]) { beginBatch() }
}
