public import PushSealCrypto
public import PushSealWire

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
