import PushSealCrypto
public import PushSealWire

/// A fixed in-memory key table, for tests and benchmarks: `(appID, recipient) -> key`.
/// Counts nothing. A recipient mapped to `nil` has a key that was destroyed or disabled.
public struct InMemorySealingKeys: SealingKeyProvider {
    private struct Entry: Hashable { let appID: String; let recipient: String }
    private let table: [Entry: SealingKey?]
    /// The same entries in order when there are at most ``linearSearchLimit``: compared one by
    /// one, which for a few short names costs less than hashing two strings.
    private let few: [(entry: Entry, key: SealingKey?)]?
    private static let linearSearchLimit = 8

    /// Creates a table.
    /// - Parameter keys: entries of app id, recipient, and key (`nil` for a disabled key); a
    ///   repeated (app id, recipient) keeps its last key.
    public init(_ keys: [(appID: String, recipient: String, key: SealingKey?)]) {
        var t: [Entry: SealingKey?] = [:]
        for k in keys { t[Entry(appID: k.appID, recipient: k.recipient)] = .some(k.key) }
        table = t
        few = t.count <= Self.linearSearchLimit ? t.map { (entry: $0.key, key: $0.value) } : nil
    }

    /// - Throws: `SenderError` `.unknownRecipient`, `.keyUnavailable`.
    public func primaryKey(appID: String, recipient: String) throws -> SealingKey {
        let found: SealingKey??
        if let few {
            found = few.first { $0.entry.recipient == recipient && $0.entry.appID == appID }.map(\.key)
        } else {
            found = table[Entry(appID: appID, recipient: recipient)]
        }
        guard let entry = found else {
            throw SenderError(.unknownRecipient, "no recipient \(recipient) for app \(appID)")
        }
        guard let key = entry else {
            throw SenderError(.keyUnavailable, "recipient \(recipient) has no usable primary key (destroyed or disabled)")
        }
        return key
    }
}
