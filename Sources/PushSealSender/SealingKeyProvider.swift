import PushSealCrypto
import PushSealFormat

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

    /// Creates a sealing key.
    /// - Parameters:
    ///   - keyID: 1-64 characters of `A-Z a-z 0-9 _ -`.
    ///   - key: the algorithm's key bytes (32 for `A256GCM`).
    ///   - algorithm: the `enc_alg` (default `A256GCM`).
    public init(keyID: String, key: SecretBytes, algorithm: String = WireFormat.algorithm) {
        self.keyID = keyID
        self.key = key
        self.algorithm = algorithm
    }
}

/// Where the sender gets a recipient's primary key. The real provider,
/// ``KeychainSealingKeys`` (PushSealKeys' server keyring), also counts the seal against the
/// key's limit; ``InMemorySealingKeys`` is a fixed table for tests and benchmarks.
public protocol SealingKeyProvider: Sendable {
    /// The primary key for `recipient` of `appID`, counting one seal.
    /// - Parameters:
    ///   - appID: the app's bundle identifier (APNs topic).
    ///   - recipient: the recipient's name as the server knows it (user or device id).
    /// - Returns: the key id and key to seal one notification with.
    /// - Throws: `SenderError` `.unknownRecipient`, `.keyUnavailable` (destroyed, disabled),
    ///   `.sealLimitReached`, `.keyStoreMissing`, `.keyStoreInsecure`, `.keyStoreUnreadable`;
    ///   or the provider's own error type.
    func primaryKey(appID: String, recipient: String) throws -> SealingKey
}

/// A fixed in-memory key table, for tests and benchmarks: `(appID, recipient) -> key`.
/// Counts nothing. A recipient mapped to `nil` has a key that was destroyed or disabled.
public struct InMemorySealingKeys: SealingKeyProvider {
    private struct Entry: Hashable { let appID: String; let recipient: String }
    private let table: [Entry: SealingKey?]

    /// Creates a table.
    /// - Parameter keys: entries of app id, recipient, and key (`nil` for a disabled key).
    public init(_ keys: [(appID: String, recipient: String, key: SealingKey?)]) {
        var t: [Entry: SealingKey?] = [:]
        for k in keys { t[Entry(appID: k.appID, recipient: k.recipient)] = .some(k.key) }
        table = t
    }

    /// - Throws: `SenderError` `.unknownRecipient`, `.keyUnavailable`.
    public func primaryKey(appID: String, recipient: String) throws -> SealingKey {
        guard let entry = table[Entry(appID: appID, recipient: recipient)] else {
            throw SenderError(.unknownRecipient, "no recipient \(recipient) for app \(appID)")
        }
        guard let key = entry else {
            throw SenderError(.keyUnavailable, "recipient \(recipient) has no usable primary key (destroyed or disabled)")
        }
        return key
    }
}
