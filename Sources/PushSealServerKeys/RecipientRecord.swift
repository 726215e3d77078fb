import PushSealCrypto
import PushSealJSON
import PushSealKeychain
public import PushSealKeyRecords

/// Everything a server store holds for one recipient (`push-keys registry import` / `export`):
/// its v1 keyset (keys, statuses, times, seal counters, an unfinished rotation), its v2
/// registrations (with their history) and its device tokens. An app's sender keys are not
/// per recipient: they move as a ``V2KeyList`` of kind `.senderKeys`. Holds secrets (key
/// bytes): never print it.
public struct RecipientRecord: Sendable {
    /// The app id.
    public var appID: String
    /// The recipient.
    public var recipient: String
    /// The v1 keyset, key bytes included; `nil` when the recipient has none.
    public var keyset: KeysetState?
    /// The v2 registrations (kind `.registrations`, owner = the recipient); `nil` when none.
    public var registrations: V2KeyList?
    /// The device tokens (at most one per environment).
    public var deviceTokens: [DeviceToken]

    /// Creates a record from its parts.
    public init(appID: String, recipient: String, keyset: KeysetState?, registrations: V2KeyList?, deviceTokens: [DeviceToken]) {
        self.appID = appID
        self.recipient = recipient
        self.keyset = keyset
        self.registrations = registrations
        self.deviceTokens = deviceTokens
    }
}

extension KeysetState {
    /// Makes this keyset hold `source`'s keys and rotation as they are (statuses, times, key
    /// bytes), with each seal counter the larger of the two (a copy never lowers a counter), for
    /// a store that copies inside its own transaction (`PostgresKeyStore`). Idempotent.
    /// - Parameter now: Unix seconds for the audit changes.
    /// - Returns: the audit changes (`import` per key that changed); empty: nothing changed.
    /// - Throws: `KeysError` `.duplicateKeyID` (a key id here with other bytes), `.invalidState`.
    public mutating func copy(from source: KeysetState, now: Int64) throws -> [KeysetChange] {
        let events = try KeyStore.copyKeys(&keyset, from: source.keyset, now: now)
        try KeyStore.checkInvariants(keyset)
        return events.map { KeysetChange(event: $0) }
    }
}

extension V2KeyList {
    /// Merges `source` (the same kind and app, from another store) into this list: an entry
    /// whose key id is new is appended; one already here takes `source`'s status and times (a
    /// destroyed sender key drops its private key); the rest stays. Idempotent. Audited as
    /// `importRegistration` / `importSenderKey` (`keyId`, `status`) per entry that changed.
    /// - Parameter now: Unix seconds for the audit changes.
    /// - Returns: the audit changes; empty: nothing changed.
    /// - Throws: `KeysError` `.duplicateKeyID` (a key id here with another public or private
    ///   key: nothing changed), `.invalidState` (the result would have two primaries),
    ///   `.futureRegistration` (a registration created more than 5 minutes after the later of
    ///   `now` and when its store took it, `registeredAt`: a record no store should have taken).
    public mutating func merge(from source: V2KeyList, now: Int64) throws -> [KeysetChange] {
        if kind == .registrations {
            for e in source.entries { try DeviceRegistration.checkNotFuture(keyID: e.keyID, createdAt: e.createdAt, now: max(now, e.registeredAt)) }
        }
        var merged = entries
        var changes: [KeysetChange] = []
        let event = kind == .registrations ? "importRegistration" : "importSenderKey"
        for e in source.entries {
            if let i = merged.firstIndex(where: { $0.keyID == e.keyID }) {
                let here = merged[i]
                if here.publicKey != e.publicKey || (here.secret != nil && e.secret != nil && here.secret != e.secret) {
                    throw KeysError(.duplicateKeyID, "key id \(e.keyID) is already in the v2 keys of \(appID)/\(owner) with another key")
                }
                if Self.sameEntry(here, e) { continue }
                merged[i] = e
            } else {
                merged.append(e)
            }
            changes.append(KeysetChange(event: KeyStore.AuditEvent(event: event, time: now, members: [("keyId", .string(e.keyID)), ("status", .string(e.status.rawValue))])))
        }
        guard merged.filter({ $0.status == .primary }).count <= 1 else {
            throw KeysError(.invalidState, "merging the v2 keys of \(appID)/\(owner) would give two primaries: refused")
        }
        entries = merged
        return changes
    }

    /// Equal in every field, private key included.
    static func sameEntry(_ a: Entry, _ b: Entry) -> Bool {
        a.keyID == b.keyID && a.status == b.status && a.createdAt == b.createdAt && a.registeredAt == b.registeredAt && a.retiredAt == b.retiredAt
            && a.notAfter == b.notAfter && a.publicKey == b.publicKey && a.secret == b.secret
            && a.pinnedSenderKeyIDs == b.pinnedSenderKeyIDs && a.pinsReportedAt == b.pinsReportedAt
    }

    /// This list's entries under another owner (an app's sender keys moving between stores that
    /// name the owner differently: the file keychain `-`, the registry `/sender`).
    public func withOwner(_ owner: String) -> V2KeyList { V2KeyList(kind: kind, appID: appID, owner: owner, entries: entries) }
}

extension DeviceToken {
    /// Whether copying `self` into a store that holds `current` for the same recipient and
    /// environment (or `nil`) changes it: only when the store has none, or one registered
    /// before `self` (a copy never replaces a newer registration, and the same token at the same
    /// time is no change).
    public func supersedes(_ current: DeviceToken?) -> Bool {
        guard let current else { return true }
        if current.token == token { return current.registeredAtMs < registeredAtMs }
        return current.registeredAtMs < registeredAtMs
    }
}

extension KeyStore {
    /// Every recipient this keychain holds anything for (a keyset, registrations, device
    /// tokens), sorted by app id then recipient; each record read when the sequence reaches it
    /// (one recipient's key bytes in memory at a time).
    /// - Throws: `KeysError` `.corruptKeyset`; `KeychainError` (listing; a record that fails to
    ///   read stops the iteration: see ``RecipientRecords/error``).
    public func recipientRecords() throws -> RecipientRecords {
        var names = Set<RecipientRecords.Name>()
        for ks in try keysets() { names.insert(.init(appID: ks.appID, recipient: ks.recipient)) }
        for r in try allRegistrations() { names.insert(.init(appID: r.appID, recipient: r.recipient)) }
        for t in try allDeviceTokens(appID: nil) { names.insert(.init(appID: t.appID, recipient: t.recipient)) }
        return RecipientRecords(names: names.sorted { ($0.appID, $0.recipient) < ($1.appID, $1.recipient) }) { n in
            RecipientRecord(appID: n.appID, recipient: n.recipient, keyset: try self.state(appID: n.appID, recipient: n.recipient),
                            registrations: try self.loadV2List(.registrations, appID: n.appID, owner: n.recipient, withSecrets: false),
                            deviceTokens: try self.deviceTokens(appID: n.appID, recipient: n.recipient))
        }
    }

    /// Every app's sender key list (private keys included), sorted by app id.
    /// - Throws: `KeysError` `.corruptKeyset`; `KeychainError`.
    public func allSenderKeyLists() throws -> [V2KeyList] {
        let prefix = Self.senderKeyService(appID: "")
        let items: [KeychainItem]
        do {
            items = try keychain.copyMatching(ItemQuery(accessGroup: accessGroup), limit: .all, returning: [.attributes])
        } catch let e as KeychainError where e.code == .itemNotFound {
            return []
        }
        var out: [V2KeyList] = []
        for item in items where item.attributes.service.hasPrefix(prefix) && item.attributes.account == KeychainNames.senderKeyAccount {
            let appID = String(item.attributes.service.dropFirst(prefix.count))
            if let list = try loadV2List(.senderKeys, appID: appID, owner: KeychainNames.senderKeyAccount, withSecrets: true) { out.append(list) }
        }
        return out.sorted { $0.appID < $1.appID }
    }

    /// Copies a record from another store (`push-keys registry export`): the keyset as
    /// ``copyIn(_:now:)`` (counters never lowered), the registrations merged
    /// (``V2KeyList/merge(from:now:)``), each device token added when it supersedes the one
    /// here (``DeviceToken/supersedes(_:)``). Each of the three is atomic under the keysets'
    /// lock and audited; the record as a whole is not one step (a keychain has no
    /// transactions), but the copy is idempotent: run again after an interruption, it completes.
    /// - Returns: `true` when something changed.
    /// - Throws: `KeysError` `.duplicateKeyID`, `.invalidState`, `.invalidName`; `KeychainError`.
    @discardableResult
    public func copyIn(_ record: RecipientRecord, now: Int64) throws -> Bool {
        var changed = false
        if let ks = record.keyset { changed = try copyIn(ks, now: now) || changed }
        if let source = record.registrations, !source.entries.isEmpty {
            try changeV2List(.registrations, appID: record.appID, owner: record.recipient, allowCreate: true) { list in
                let changes = try list.merge(from: source, now: now)
                changed = changed || !changes.isEmpty
                return changes
            }
        }
        for t in record.deviceTokens where t.supersedes(try deviceTokens(appID: t.appID, recipient: t.recipient).first { $0.environment == t.environment }) {
            try addDeviceToken(t.token, appID: t.appID, recipient: t.recipient, environment: t.environment, registeredAtMs: t.registeredAtMs)
            changed = true
        }
        return changed
    }

    /// Copies many records from another store (`push-keys registry export`, in batches): the
    /// keysets this keychain lacks are added together under one hold of the keysets' lock —
    /// every keyset item written, one flush of the file system, the renames, one directory sync
    /// (``Keychain/addItems(_:)``), then their generation counters alike, audited `import` per
    /// key as ``copyIn(_:now:)`` — instead of one durable write each; the rest of each record
    /// (and every keyset already here) is copied as ``copyIn(_:now:)`` of a record does.
    /// - Returns: per record, whether something changed.
    /// - Throws: as ``copyIn(_:now:)`` of a record; `KeychainError` `.duplicateItem` when
    ///   another writer added one of the keysets meanwhile (run it again).
    public func bulkCopyIn(_ records: [RecipientRecord], now: Int64) throws -> [Bool] {
        try KeyTime.checkTime(now)
        var added = Set<Int>()
        try withLock {
            var fresh: [(index: Int, keyset: Keyset, events: [AuditEvent])] = []
            for (i, r) in records.enumerated() {
                guard let s = r.keyset else { continue }
                try KeyID.validateAppID(s.appID)
                try KeyID.validateRecipient(s.recipient)
                guard try load(appID: s.appID, recipient: s.recipient) == nil else { continue }
                var ks = Keyset(appID: s.appID, recipient: s.recipient, keys: [], rotation: nil)
                let events = try Self.copyKeys(&ks, from: s.keyset, now: now)
                try Self.checkInvariants(ks)
                if !events.isEmpty { fresh.append((i, ks, events)) }
            }
            guard !fresh.isEmpty else { return }
            let sink = try audit.open(keychain: keychain)
            var items: [NewItem] = [], counterAdds: [NewItem] = []
            var counterUpdates: [(query: ItemQuery, data: SecretBytes)] = []
            for f in fresh {
                var ks = f.keyset
                let present = try GenerationCounters.presentGeneration(keychain, accessGroup: accessGroup, appID: ks.appID, recipient: ks.recipient)
                ks.generation = max(ks.generation, present ?? 0) &+ 1
                var bytes = ks.encode()
                items.append(NewItem(service: KeychainNames.service(appID: ks.appID), account: ks.recipient, label: "PushSeal keyset", accessGroup: accessGroup,
                                     accessibility: accessibility, data: SecretBytes(copying: bytes)))
                SecretBytes.wipe(&bytes)
                // A missing counter is added first, at 0, and raised after the items (G10).
                if present == nil {
                    counterAdds.append(NewItem(service: KeychainNames.generationService(appID: ks.appID), account: ks.recipient, label: "PushSeal keyset generation",
                                               accessGroup: accessGroup, accessibility: accessibility, data: Self.generationBytes(0)))
                }
                counterUpdates.append((generationQuery(ks), Self.generationBytes(ks.generation)))
            }
            try keychain.addItems(counterAdds)
            try keychain.addItems(items)
            try keychain.updateData(counterUpdates)
            for f in fresh {
                for e in f.events { try writeAudit(e, appID: f.keyset.appID, recipient: f.keyset.recipient, to: sink) }
                added.insert(f.index)
            }
        }
        return try records.enumerated().map { i, r in
            guard added.contains(i) else { return try copyIn(r, now: now) }
            var rest = r
            rest.keyset = nil
            _ = try copyIn(rest, now: now)
            return true
        }
    }

    /// Merges an app's sender key list from another store (private keys included), as one
    /// atomic, audited change of the app's sender key item.
    /// - Returns: `true` when something changed.
    /// - Throws: `KeysError` `.duplicateKeyID`, `.invalidState`; `KeychainError`.
    @discardableResult
    public func copyInSenderKeys(_ source: V2KeyList, now: Int64) throws -> Bool {
        guard !source.entries.isEmpty else { return false }
        var changed = false
        try changeV2List(.senderKeys, appID: source.appID, owner: senderKeyOwner, allowCreate: true) { list in
            let changes = try list.merge(from: source.withOwner(senderKeyOwner), now: now)
            changed = !changes.isEmpty
            return changes
        }
        return changed
    }
}

/// The recipients of a store, each record read when reached (``KeyStore/recipientRecords()``).
/// A read that fails ends the sequence and is kept in ``error``: check it after the loop.
public final class RecipientRecords: Sequence, @unchecked Sendable {
    // @unchecked: used by one thread (a command's copy loop); `error` is written only while iterating.
    /// An (app id, recipient).
    public struct Name: Hashable, Sendable {
        /// The app id.
        public var appID: String
        /// The recipient.
        public var recipient: String

        /// Creates a name.
        public init(appID: String, recipient: String) {
            self.appID = appID
            self.recipient = recipient
        }
    }

    /// The recipients, in order.
    public let names: [Name]
    private let read: (Name) throws -> RecipientRecord
    /// The error that ended the iteration early, if any.
    public private(set) var error: (any Error)?

    /// A sequence over `names`, reading each with `read`.
    public init(names: [Name], read: @escaping (Name) throws -> RecipientRecord) {
        self.names = names
        self.read = read
    }

    /// An iterator reading each record when reached.
    public func makeIterator() -> AnyIterator<RecipientRecord> {
        var i = 0
        return AnyIterator { [self] in
            guard error == nil, i < names.count else { return nil }
            defer { i += 1 }
            do {
                return try read(names[i])
            } catch {
                self.error = error
                return nil
            }
        }
    }
}
