import PushSealCrypto
import PushSealKeyRecords
public import PushSealServerKeys
/// What `push-keys registry export` reads, and the sender key side of `import`: everything the
/// registry holds per recipient (``RecipientRecord``) and each app's sender keys.
extension PostgresKeyStore {
    /// Every recipient the registry holds anything for (a keyset, registrations, device tokens),
    /// sorted by app id then recipient: keysets with their key bytes unwrapped (one query),
    /// registrations (one query per list, each authenticated), tokens (one query, authenticated), then grouped in memory.
    /// - Throws: `RegistryError` `.kekRequired`, `.wrongKEK`, `.corrupt`, `.unavailable`.
    public func recipientRecords() throws -> RecipientRecords {
        typealias Name = RecipientRecords.Name
        var keysets: [Name: KeysetState] = [:]
        for s in try loadAllStatesWithKeyBytes() { keysets[Name(appID: s.appID, recipient: s.recipient)] = s }
        var registrations: [Name: V2KeyList] = [:]
        // Every list authenticated as it is read (its rows, count and primary under the KEK).
        try pool.run { c in
            let lists = try c.exec("SELECT app_id, owner FROM pushseal_v2_lists WHERE owner <> $1 ORDER BY app_id, owner", [.text(Self.senderOwner)])
            for row in lists.rows {
                guard let app = row[0], let recipient = row[1] else { throw RegistryError(.corrupt, "a list row does not decode") }
                let list = try loadList(c, .registrations, appID: app, owner: recipient)
                if !list.entries.isEmpty { registrations[Name(appID: app, recipient: recipient)] = list }
            }
        }
        var tokens: [Name: [DeviceToken]] = [:]
        for t in try allDeviceTokens(appID: nil) { tokens[Name(appID: t.appID, recipient: t.recipient), default: []].append(t) }
        let names = Set(keysets.keys).union(registrations.keys).union(tokens.keys).sorted { ($0.appID, $0.recipient) < ($1.appID, $1.recipient) }
        return RecipientRecords(names: names) { n in
            RecipientRecord(appID: n.appID, recipient: n.recipient, keyset: keysets[n], registrations: registrations[n], deviceTokens: tokens[n] ?? [])
        }
    }

    /// Every app's sender key list (private keys unwrapped), sorted by app id.
    /// - Throws: `RegistryError` `.kekRequired`, `.wrongKEK`, `.corrupt`, `.unavailable`.
    public func allSenderKeyLists() throws -> [V2KeyList] {
        let apps = try pool.run { c in try c.exec("SELECT DISTINCT app_id FROM pushseal_sender_keys ORDER BY app_id") }.rows.compactMap { $0[0] }
        return try apps.compactMap { try loadV2List(.senderKeys, appID: $0, owner: Self.senderOwner, withSecrets: true) }.filter { !$0.entries.isEmpty }
    }

    /// Merges an app's sender key list from another store (private keys rewrapped under the
    /// KEK, never stored in clear) in one transaction, audited `importSenderKey` per key that changed.
    /// - Returns: `true` when something changed.
    /// - Throws: `KeysError` `.duplicateKeyID`, `.invalidState`, `.invalidName`; `RegistryError` `.kekRequired`.
    @discardableResult
    public func copyInSenderKeys(_ source: V2KeyList, now: Int64) throws -> Bool {
        guard !source.entries.isEmpty else { return false }
        _ = try requireKEK()
        var changed = false
        try changeV2List(.senderKeys, appID: source.appID, owner: Self.senderOwner, allowCreate: true) { list in
            let changes = try list.merge(from: source.withOwner(Self.senderOwner), now: now)
            changed = !changes.isEmpty
            return changes
        }
        return changed
    }
}
