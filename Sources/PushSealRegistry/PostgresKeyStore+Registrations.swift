import PushSealCrypto
import PushSealSystem
import PushSealKeyRecords
public import PushSealServerKeys
/// The registry as a ``RegistrationStore`` (schema version 3 and later): registrations are rows of
/// `pushseal_registrations`, sender keys rows of `pushseal_sender_keys` (the private key wrapped
/// under the ``KeyEncryptionKey`` with AAD binding the app id, the owner `/sender` — no recipient
/// can be named so — and the key id). Each list (a recipient's registrations, an app's sender
/// keys) has a row in `pushseal_v2_lists` that every change locks (`FOR UPDATE`) and whose
/// `version` it bumps, in the transaction that rewrites the list's rows and inserts its audit
/// lines; the rules are ``V2KeyList``'s, as for the file keychain. A registration watch reads
/// that version (one round trip per check: `RegistrationSealingKeys` checks once per batch chunk).
extension PostgresKeyStore: V2KeyListStore {
    /// The owner of an app's sender key list, in `pushseal_v2_lists` and in the KEK's AAD.
    static let senderOwner = "/sender"
    /// `/sender`.
    public var senderKeyOwner: String { Self.senderOwner }

    /// ``loadList(_:_:appID:owner:withSecrets:forUpdate:)`` on a pooled connection.
    /// - Throws: `RegistryError` (`.kekRequired`, `.wrongKEK` with `withSecrets`, `.corrupt`, `.unavailable`).
    public func loadV2List(_ kind: V2KeyList.Kind, appID: String, owner: String, withSecrets: Bool) throws -> V2KeyList? {
        try pool.run { c in try loadList(c, kind, appID: appID, owner: owner, withSecrets: withSecrets) }
    }

    // MARK: Registrations

    /// Every recipient's registrations, sorted by app id then recipient.
    /// - Throws: `RegistryError`.
    public func allRegistrations() throws -> [RegistrationSet] {
        let rows = try pool.run { c in
            try c.exec("SELECT DISTINCT app_id, recipient FROM pushseal_registrations ORDER BY app_id, recipient")
        }
        return try rows.rows.compactMap { row in
            guard let app = row[0], let recipient = row[1] else { return nil }
            return try registrations(appID: app, recipient: recipient)
        }
    }

    /// The app ids with sender keys, sorted.
    /// - Throws: `RegistryError`.
    public func senderKeyAppIDs() throws -> [String] {
        let rows = try pool.run { c in try c.exec("SELECT DISTINCT app_id FROM pushseal_sender_keys ORDER BY app_id") }
        return rows.rows.compactMap { $0[0] }
    }

    /// Whether any recipient of `appID` has a registration: one `SELECT EXISTS`, so a batch of
    /// v1 recipients costs no per-recipient round trip for v2 (asked once per batch chunk). A
    /// `true` is reused for ``registrationsHintNanoseconds`` without asking (a stale `true` only
    /// costs the per-recipient lookups that follow, never a wrong seal; a `false` is asked again
    /// every time): the gateway's single-notification requests are a chunk each, and this was
    /// one of their round trips.
    /// - Throws: `RegistryError`.
    public func mayHaveRegistrations(appID: String) throws -> Bool {
        let now = monotonicNanoseconds()
        if let seen = registrationsSeen.withLock({ $0[appID] }), now &- seen < Self.registrationsHintNanoseconds { return true }
        let rows = try pool.run { c in
            try c.exec("SELECT EXISTS (SELECT 1 FROM pushseal_registrations WHERE app_id = $1)", [.text(appID)])
        }
        let may = rows.rows.first?.first == "t"
        if may { registrationsSeen.withLock { $0[appID] = now } }
        return may
    }

    /// The current registration and list version of every recipient of `appID` in
    /// `recipients` that has registrations, from one query per 4,096 recipients (the list row
    /// and its primary row read in one statement, so the watch matches what was read): a batch
    /// chunk of v2 recipients costs a round trip or two, not one per recipient. Invalid names are
    /// left out.
    /// - Throws: `KeysError` `.invalidName` (the app id); `RegistryError` `.corrupt`, `.unavailable`.
    public func batchRegistrations(appID: String, recipients: [String]) throws -> [String: BatchRegistration] {
        try KeyID.validateAppID(appID)
        _ = try rowMAC(table: AuthenticatedTable.registrations)  // no lookup without the KEK
        let names = recipients.filter { (try? KeyID.validateRecipient($0)) != nil }
        var out: [String: BatchRegistration] = [:]
        try Self.inStatementParts(names) { part in
            let rows = try pool.run { c in
                try c.execOnGenericPlan("""
                    SELECT l.owner, l.version, l.primary_key_id, l.entry_count, l.row_mac,
                           r.key_id, r.status, r.created_at, r.registered_at, r.superseded_at, r.public_key, r.position, r.kem_id, r.row_mac,
                           r.pinned_sender_key_ids, r.pins_reported_at
                    FROM pushseal_v2_lists l LEFT JOIN pushseal_registrations r
                      ON r.app_id = l.app_id AND r.recipient = l.owner AND r.status = 'primary'
                    WHERE l.app_id = $1 AND l.owner = ANY($2::text[])
                    """, [.text(appID), .text(Self.arrayLiteral(part))])
            }
            for i in rows.rows.indices {
                guard let owner = rows.rows[i][0], let version = try rows.int(i, 1) else {
                    throw RegistryError(.corrupt, "a registration list row of \(appID) does not decode")
                }
                let list = ListRow(version: version, primaryKeyID: rows.rows[i][2], entryCount: try rows.int(i, 3), mac: try rows.bytes(i, 4))
                try verifyListRow(list, appID: appID, owner: owner)
                guard rows.rows[i][5] == list.primaryKeyID else {
                    throw RegistryError(.corrupt,
                        "the \(AuthenticatedTable.registrations) primary row of \(appID)/\(owner) is not the one its \(AuthenticatedTable.lists) row authenticates (\(list.primaryKeyID ?? "none")): changed or deleted without the KEK: refused")
                }
                let watch = ListWatch(store: self, appID: appID, owner: owner, version: version)
                guard list.primaryKeyID != nil else {
                    out[owner] = BatchRegistration(watch: watch, current: nil)  // the current one was revoked
                    continue
                }
                let stored = try Self.registrationRow(rows, i, from: 5, appID: appID, owner: owner)
                try rowMAC(table: AuthenticatedTable.registrations).verify(stored.mac, stored.fields(appID: appID, owner: owner, listVersion: version),
                                                                          row: "\(appID)/\(owner)/\(stored.entry.keyID)")
                guard let key = try? X25519.PublicKey(rawRepresentation: stored.entry.publicKey) else {
                    throw RegistryError(.corrupt, "a registration row of \(appID)/\(owner) does not decode")
                }
                let e = stored.entry
                out[owner] = BatchRegistration(watch: watch, current: RegistrationInfo(keyID: e.keyID, publicKey: key, status: e.status, createdAt: e.createdAt,
                                                                                        registeredAt: e.registeredAt, supersededAt: e.retiredAt))
            }
        }
        return out
    }

    /// A watch over the list's version; `nil` without registrations. One round trip per check.
    /// - Throws: `KeysError` `.invalidName`; `RegistryError`.
    public func watchRegistrations(appID: String, recipient: String) throws -> (any KeysetWatch)? {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        guard let version = try listVersion(appID: appID, owner: recipient) else { return nil }
        return ListWatch(store: self, appID: appID, owner: recipient, version: version)
    }

    struct ListWatch: KeysetWatch {
        let store: PostgresKeyStore
        let appID: String
        let owner: String
        let version: Int64
        func isCurrent() throws -> Bool { try store.listVersion(appID: appID, owner: owner) == version }
    }

    /// The list's version, its row authenticated.
    /// - Throws: `RegistryError` `.corrupt`, `.kekRequired`, `.unavailable`.
    func listVersion(appID: String, owner: String) throws -> Int64? {
        let list = try pool.run { c in try readListRow(c, appID: appID, owner: owner, forUpdate: false) }
        guard let list else { return nil }
        try verifyListRow(list, appID: appID, owner: owner)
        return list.version
    }

    /// The list row of (app id, owner), locked with `forUpdate`; `nil` without one.
    func readListRow(_ c: PGConnection, appID: String, owner: String, forUpdate: Bool) throws -> ListRow? {
        let rows = try c.exec("SELECT version, primary_key_id, entry_count, row_mac FROM pushseal_v2_lists WHERE app_id = $1 AND owner = $2\(forUpdate ? " FOR UPDATE" : "")",
                              [.text(appID), .text(owner)])
        guard !rows.rows.isEmpty else { return nil }
        guard let version = try rows.int(0, 0) else { throw RegistryError(.corrupt, "the list row of \(appID)/\(owner) does not decode") }
        return ListRow(version: version, primaryKeyID: rows.rows[0][1], entryCount: try rows.int(0, 2), mac: try rows.bytes(0, 3))
    }

    // MARK: Rows

    /// One stored entry of a list: the entry, its position, tag, wrapped private key (sender
    /// keys) and KEM id (registrations).
    struct StoredEntry {
        var entry: V2KeyList.Entry
        var position: Int64
        var mac: [UInt8]?
        var wrapped: [UInt8]?
        var kemID: Int64

        func fields(appID: String, owner: String, listVersion: Int64) -> [RegistryRowField] {
            registrationFields(appID: appID, recipient: owner, entry, kemID: kemID, position: Int(position), listVersion: listVersion)
        }
    }

    static let registrationColumns = "key_id, status, created_at, registered_at, superseded_at, public_key, position, kem_id, row_mac, pinned_sender_key_ids, pins_reported_at"
    static let senderKeyColumns = "key_id, status, created_at, retired_at, not_after, public_key, wrapped_private_key, position, row_mac"

    /// Decodes ``registrationColumns`` starting at column `c`.
    static func registrationRow(_ rows: PGRows, _ r: Int, from c: Int, appID: String, owner: String) throws -> StoredEntry {
        guard let id = rows.rows[r][c], let status = rows.rows[r][c + 1].flatMap(KeyStatus.init(rawValue:)), let created = try rows.int(r, c + 2),
              let registered = try rows.int(r, c + 3), let key = try rows.bytes(r, c + 5), let position = try rows.int(r, c + 6), let kem = try rows.int(r, c + 7) else {
            throw RegistryError(.corrupt, "a registration row of \(appID)/\(owner) does not decode")
        }
        let pins = rows.rows[r][c + 9].map(Self.pinsFromColumn), pinsAt = try rows.int(r, c + 10)
        guard (pins == nil) == (pinsAt == nil) else { throw RegistryError(.corrupt, "a registration row of \(appID)/\(owner) has pins without their time") }
        return StoredEntry(entry: V2KeyList.Entry(keyID: id, status: status, createdAt: created, registeredAt: registered, retiredAt: try rows.int(r, c + 4), publicKey: key,
                                                  pinnedSenderKeyIDs: pins, pinsReportedAt: pinsAt),
                           position: position, mac: try rows.bytes(r, c + 8), wrapped: nil, kemID: kem)
    }

    /// `pinned_sender_key_ids` as stored: the ids joined with `,` (a key id has none; `""`: reported empty).
    static func pinsColumn(_ pins: [String]) -> String { pins.joined(separator: ",") }

    /// The ids of a `pinned_sender_key_ids` value.
    static func pinsFromColumn(_ text: String) -> [String] {
        text.isEmpty ? [] : text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    }

    /// Decodes ``senderKeyColumns`` starting at column `c`.
    static func senderKeyRow(_ rows: PGRows, _ r: Int, from c: Int, appID: String) throws -> StoredEntry {
        guard let id = rows.rows[r][c], let status = rows.rows[r][c + 1].flatMap(KeyStatus.init(rawValue:)), let created = try rows.int(r, c + 2),
              let key = try rows.bytes(r, c + 5), let position = try rows.int(r, c + 7) else {
            throw RegistryError(.corrupt, "a sender key row of \(appID) does not decode")
        }
        return StoredEntry(entry: V2KeyList.Entry(keyID: id, status: status, createdAt: created, registeredAt: created, retiredAt: try rows.int(r, c + 3),
                                                  notAfter: try rows.int(r, c + 4), publicKey: key),
                           position: position, mac: try rows.bytes(r, c + 8), wrapped: try rows.bytes(r, c + 6), kemID: registrationKEMID)
    }

    /// The stored entries of a list, in position order, not yet verified.
    static func storedEntries(_ c: PGConnection, _ kind: V2KeyList.Kind, appID: String, owner: String, forUpdate: Bool) throws -> [StoredEntry] {
        let lock = forUpdate ? " FOR UPDATE" : ""
        if kind == .registrations {
            let rows = try c.exec("SELECT \(registrationColumns) FROM pushseal_registrations WHERE app_id = $1 AND recipient = $2 ORDER BY position, key_id\(lock)",
                                  [.text(appID), .text(owner)])
            return try rows.rows.indices.map { try registrationRow(rows, $0, from: 0, appID: appID, owner: owner) }
        }
        let rows = try c.exec("SELECT \(senderKeyColumns) FROM pushseal_sender_keys WHERE app_id = $1 ORDER BY position, key_id\(lock)", [.text(appID)])
        return try rows.rows.indices.map { try senderKeyRow(rows, $0, from: 0, appID: appID) }
    }

    /// Loads a list (empty when absent), every row authenticated (``verifyList(_:appID:owner:list:entries:)``);
    /// sender private keys unwrapped when `withSecrets`.
    /// - Throws: `RegistryError` `.corrupt`, `.kekRequired`, `.wrongKEK`.
    func loadList(_ c: PGConnection, _ kind: V2KeyList.Kind, appID: String, owner: String, withSecrets: Bool = false,
                  forUpdate: Bool = false) throws -> V2KeyList {
        let listRow = try readListRow(c, appID: appID, owner: owner, forUpdate: forUpdate)
        let stored = try Self.storedEntries(c, kind, appID: appID, owner: owner, forUpdate: forUpdate)
        try verifyList(kind, appID: appID, owner: owner, list: listRow, entries: stored)
        var entries = stored.map(\.entry)
        if kind == .senderKeys, withSecrets {
            for i in entries.indices {
                guard let wrapped = stored[i].wrapped else { continue }
                entries[i].secret = try requireKEK().unwrap(wrapped, appID: appID, recipient: Self.senderOwner, keyID: entries[i].keyID)
            }
        }
        return V2KeyList(kind: kind, appID: appID, owner: owner, entries: entries)
    }

    /// One transaction: lock the list's row (creating it), load, apply `body`, rewrite the rows,
    /// bump the version, insert the audit lines (`INSERT … ON CONFLICT DO NOTHING` then
    /// `FOR UPDATE`: two first changes of one list at once are serialized too).
    /// - Throws: `KeysError` `.unknownRegistration` / `.unknownKeyset` (no list, not `allowCreate`);
    ///   `RegistryError` (`.kekRequired` for sender keys without a KEK).
    @discardableResult
    public func changeV2List(_ kind: V2KeyList.Kind, appID: String, owner: String, allowCreate: Bool,
                             _ body: (inout V2KeyList) throws -> [KeysetChange]) throws -> V2KeyList {
        try KeyID.validateAppID(appID)
        return try pool.transaction { c in try changeV2List(c, kind, appID: appID, owner: owner, allowCreate: allowCreate, body) }
    }

    /// The body of ``changeV2List(_:appID:owner:allowCreate:_:)`` on `c`, inside the caller's transaction.
    @discardableResult
    func changeV2List(_ c: PGConnection, _ kind: V2KeyList.Kind, appID: String, owner: String, allowCreate: Bool,
                      _ body: (inout V2KeyList) throws -> [KeysetChange]) throws -> V2KeyList {
        let names: [PGValue?] = [.text(appID), .text(owner)]
        let listMAC = try rowMAC(table: AuthenticatedTable.lists)
        try c.exec("INSERT INTO pushseal_v2_lists (app_id, owner, version, primary_key_id, entry_count, row_mac) VALUES ($1, $2, 1, NULL, 0, $3) ON CONFLICT DO NOTHING",
                   names + [.bytes(try listMAC.tag(Self.listFields(appID: appID, owner: owner, version: 1, primaryKeyID: nil, entryCount: 0)))])
        guard let listRow = try readListRow(c, appID: appID, owner: owner, forUpdate: true) else {
            throw RegistryError(.corrupt, "the list row of \(appID)/\(owner) vanished inside its transaction")
        }
        var list = try loadList(c, kind, appID: appID, owner: owner, withSecrets: kind == .senderKeys, forUpdate: true)
        if list.entries.isEmpty, !allowCreate { throw V2KeyList.missing(kind, appID: appID, owner: owner, in: storeDescription) }
        let changes = try body(&list)
        guard !changes.isEmpty else { return list }
        let version = listRow.version + 1
        try saveList(c, list, version: version)
        let primary = Self.primaryKeyID(of: list.entries)
        try c.exec("UPDATE pushseal_v2_lists SET version = $3, primary_key_id = $4, entry_count = $5, row_mac = $6 WHERE app_id = $1 AND owner = $2",
                   names + [.int(version), primary.map { .text($0) }, .int(Int64(list.entries.count)),
                            .bytes(try listMAC.tag(Self.listFields(appID: appID, owner: owner, version: version, primaryKeyID: primary, entryCount: list.entries.count)))])
        let auditRecipient = kind == .registrations ? owner : KeychainNames.senderKeyAccount
        for ch in changes { try insertAudit(c, ch, appID: appID, recipient: auditRecipient) }
        return list
    }

    /// Rewrites the list's rows (delete, insert: a list is a few rows), each tagged for the
    /// list's new `version`.
    private func saveList(_ c: PGConnection, _ list: V2KeyList, version: Int64) throws {
        if list.kind == .registrations {
            try c.exec("DELETE FROM pushseal_registrations WHERE app_id = $1 AND recipient = $2", [.text(list.appID), .text(list.owner)])
            let mac = try rowMAC(table: AuthenticatedTable.registrations)
            // The primary last, so the one-primary index never sees two.
            for (i, e) in list.entries.enumerated() where e.status != .primary { try insertRegistration(c, list, i, e, version: version, mac: mac) }
            for (i, e) in list.entries.enumerated() where e.status == .primary { try insertRegistration(c, list, i, e, version: version, mac: mac) }
        } else {
            try c.exec("DELETE FROM pushseal_sender_keys WHERE app_id = $1", [.text(list.appID)])
            let mac = try rowMAC(table: AuthenticatedTable.senderKeys)
            for (i, e) in list.entries.enumerated() {
                let wrapped = try e.secret.map { try requireKEK().wrap($0, appID: list.appID, recipient: Self.senderOwner, keyID: e.keyID) }
                let tag = try mac.tag(Self.senderKeyFields(appID: list.appID, e, wrapped: wrapped, position: i, listVersion: version))
                try c.exec("""
                    INSERT INTO pushseal_sender_keys (app_id, key_id, position, status, created_at, retired_at, not_after, public_key, wrapped_private_key, row_mac)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                    """, [.text(list.appID), .text(e.keyID), .int(Int64(i)), .text(e.status.rawValue), .int(e.createdAt),
                          e.retiredAt.map { .int($0) }, e.notAfter.map { .int($0) }, .bytes(e.publicKey), wrapped.map { .bytes($0) }, .bytes(tag)])
            }
        }
    }

    private func insertRegistration(_ c: PGConnection, _ list: V2KeyList, _ i: Int, _ e: V2KeyList.Entry, version: Int64, mac: RegistryRowMAC) throws {
        let tag = try mac.tag(Self.registrationFields(appID: list.appID, recipient: list.owner, e, position: i, listVersion: version))
        try c.exec("""
            INSERT INTO pushseal_registrations (app_id, recipient, key_id, kem_id, public_key, created_at, superseded_at, position, status, registered_at, row_mac,
                                                pinned_sender_key_ids, pins_reported_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
            """, [.text(list.appID), .text(list.owner), .text(e.keyID), .int(Self.registrationKEMID), .bytes(e.publicKey), .int(e.createdAt), e.retiredAt.map { .int($0) },
                  .int(Int64(i)), .text(e.status.rawValue), .int(e.registeredAt), .bytes(tag),
                  e.pinnedSenderKeyIDs.map { .text(Self.pinsColumn($0)) }, e.pinnedSenderKeyIDs == nil ? nil : .int(e.pinsReportedAt ?? 0)])
    }

    /// Rewraps every sender private key under `newKEK` inside ``rewrap(to:)``'s transaction.
    /// - Returns: the number of keys rewrapped.
    func rewrapSenderKeys(_ c: PGConnection, from old: KeyEncryptionKey, to newKEK: KeyEncryptionKey) throws -> Int {
        let rows = try c.exec("SELECT app_id, key_id, wrapped_private_key FROM pushseal_sender_keys WHERE wrapped_private_key IS NOT NULL FOR UPDATE")
        for r in rows.rows.indices {
            guard let a = rows.rows[r][0], let id = rows.rows[r][1], let w = try rows.bytes(r, 2) else { continue }
            let secret = try old.unwrap(w, appID: a, recipient: Self.senderOwner, keyID: id)
            try c.exec("UPDATE pushseal_sender_keys SET wrapped_private_key = $3 WHERE app_id = $1 AND key_id = $2",
                       [.text(a), .text(id), .bytes(try newKEK.wrap(secret, appID: a, recipient: Self.senderOwner, keyID: id))])
        }
        return rows.rows.count
    }
}
