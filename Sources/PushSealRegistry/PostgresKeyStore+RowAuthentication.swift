import PushSealCrypto
import PushSealSystem
import PushSealKeyRecords
import PushSealServerKeys

/// The registry's authenticated rows (schema version 5, security review G1): each row of
/// `pushseal_registrations`, `pushseal_sender_keys`, `pushseal_device_tokens` and
/// `pushseal_v2_lists` carries a ``RegistryRowMAC`` tag (`row_mac`) under a key derived from the
/// KEK for that table, over the row's identity and content:
///
/// - a registration: app id, recipient, key id, KEM id, public key, createdAt, supersededAt,
///   position, status, registeredAt, and its list's version; then, when the device reported
///   them (schema 10, issue 24), the sender key ids it pinned and when — they decide whether
///   `sender promote` goes ahead, so they are trust-relevant. The two fields are appended only
///   to rows that have them: rows of before keep their tags (no re-tagging, the same table
///   label), and the field count is part of the authenticated encoding, so clearing the pins
///   of a row, or adding some, fails its tag;
/// - a sender key: app id, key id, position, status, createdAt, retiredAt, notAfter, public key,
///   wrapped private key, and its list's version;
/// - a list: app id, owner, version, the primary's key id (or none) and the number of rows;
/// - a device token: app id, recipient, token, environment, registeredAt.
///
/// So a row changed, moved to another recipient or app, put back from an older version of its
/// list, added or deleted from a list (the list row's count and primary) fails, and is refused as
/// `corrupt` naming the table and the row. Deleting a whole list (its row and every entry) or a
/// token is not detected: it makes that recipient's notifications fail or fall back to v1, never
/// readable by the database role.
extension PostgresKeyStore {
    /// Table labels of the authenticated tables (the HKDF info of their row keys).
    enum AuthenticatedTable {
        static let registrations = "pushseal_registrations"
        static let senderKeys = "pushseal_sender_keys"
        static let lists = "pushseal_v2_lists"
        static let deviceTokens = "pushseal_device_tokens"
        static let apiKeys = "pushseal_gateway_api_keys"
    }

    /// The KEM id stored with every registration (DHKEM(X25519, HKDF-SHA256)).
    static let registrationKEMID: Int64 = 32

    static func registrationFields(appID: String, recipient: String, _ e: V2KeyList.Entry, kemID: Int64 = registrationKEMID, position: Int,
                                   listVersion: Int64) -> [RegistryRowField] {
        let fields: [RegistryRowField] = [.text(appID), .text(recipient), .text(e.keyID), .int(kemID), .bytes(e.publicKey), .int(e.createdAt), .int(e.retiredAt),
                                          .int(Int64(position)), .text(e.status.rawValue), .int(e.registeredAt), .int(listVersion)]
        // Schema 10 (issue 24): the reported pins, when there are any, after the fields of before
        // (a row without them keeps the tag it had; a row with them never verifies without them).
        guard let pins = e.pinnedSenderKeyIDs else { return fields }
        return fields + [.text(pinsColumn(pins)), .int(e.pinsReportedAt ?? 0)]
    }

    static func senderKeyFields(appID: String, _ e: V2KeyList.Entry, wrapped: [UInt8]?, position: Int, listVersion: Int64) -> [RegistryRowField] {
        [.text(appID), .text(e.keyID), .int(Int64(position)), .text(e.status.rawValue), .int(e.createdAt), .int(e.retiredAt), .int(e.notAfter),
         .bytes(e.publicKey), .bytes(wrapped), .int(listVersion)]
    }

    static func listFields(appID: String, owner: String, version: Int64, primaryKeyID: String?, entryCount: Int) -> [RegistryRowField] {
        [.text(appID), .text(owner), .int(version), .text(primaryKeyID), .int(Int64(entryCount))]
    }

    static func deviceTokenFields(_ t: DeviceToken) -> [RegistryRowField] {
        [.text(t.appID), .text(t.recipient), .text(t.token), .text(t.environment.rawValue), .int(t.registeredAtMs)]
    }

    /// The key id a list row names as its primary: the last primary entry (registrations have at most one).
    static func primaryKeyID(of entries: [V2KeyList.Entry]) -> String? { entries.last(where: { $0.status == .primary })?.keyID }

    /// A `pushseal_v2_lists` row as read.
    struct ListRow {
        var version: Int64
        var primaryKeyID: String?
        var entryCount: Int64?
        var mac: [UInt8]?
    }

    /// Checks a list row's tag.
    /// - Throws: `RegistryError` `.corrupt`, `.kekRequired`.
    func verifyListRow(_ l: ListRow, appID: String, owner: String) throws {
        try rowMAC(table: AuthenticatedTable.lists).verify(l.mac, Self.listFields(appID: appID, owner: owner, version: l.version, primaryKeyID: l.primaryKeyID,
                                                                                 entryCount: Int(l.entryCount ?? -1)), row: "\(appID)/\(owner)")
    }

    /// Checks a list as read: the list row's tag, its count and primary against the entries, each
    /// entry's tag (in position order, tied to the list's version), and for sender keys that each
    /// published public key is the one of its unwrapped private key (only a destroyed key has none).
    /// - Parameters:
    ///   - entries: the rows in position order, each with its stored position, tag and (sender
    ///     keys) wrapped private key.
    /// - Throws: `RegistryError` `.corrupt`, `.kekRequired`, `.wrongKEK`.
    func verifyList(_ kind: V2KeyList.Kind, appID: String, owner: String, list: ListRow?,
                    entries: [StoredEntry]) throws {
        let table = kind == .registrations ? AuthenticatedTable.registrations : AuthenticatedTable.senderKeys
        guard let list else {
            guard entries.isEmpty else {
                throw RegistryError(.corrupt, "the \(table) rows of \(appID)/\(owner) have no row in pushseal_v2_lists: refused (rows added without the KEK?)")
            }
            return
        }
        try verifyListRow(list, appID: appID, owner: owner)
        guard list.entryCount == Int64(entries.count), list.primaryKeyID == Self.primaryKeyID(of: entries.map(\.entry)) else {
            throw RegistryError(.corrupt,
                "the \(table) rows of \(appID)/\(owner) are not the ones its list row authenticates (\(entries.count) rows, \(list.entryCount ?? 0) expected): rows were added, deleted or changed without the KEK: refused")
        }
        let mac = try rowMAC(table: table)
        for (i, r) in entries.enumerated() {
            let fields = kind == .registrations
                ? r.fields(appID: appID, owner: owner, listVersion: list.version)
                : Self.senderKeyFields(appID: appID, r.entry, wrapped: r.wrapped, position: Int(r.position), listVersion: list.version)
            guard r.position == Int64(i) else {
                throw RegistryError(.corrupt, "the \(table) row \(appID)/\(owner)/\(r.entry.keyID) is at position \(r.position), not \(i): refused")
            }
            try mac.verify(r.mac, fields, row: "\(appID)/\(owner)/\(r.entry.keyID)")
            if kind == .senderKeys { try Self.checkSenderPublicKey(r.entry, wrapped: r.wrapped, appID: appID, kek: try requireKEK()) }
        }
    }

    /// A sender key is published only as derived from its unwrapped private key; only a destroyed one has none.
    /// - Throws: `RegistryError` `.corrupt`, `.wrongKEK`, `.kekRequired`.
    static func checkSenderPublicKey(_ e: V2KeyList.Entry, wrapped: [UInt8]?, appID: String, kek: KeyEncryptionKey) throws {
        guard let wrapped else {
            guard e.status == .destroyed else {
                throw RegistryError(.corrupt, "the \(AuthenticatedTable.senderKeys) row \(appID)/\(e.keyID) is \(e.status.rawValue) but has no private key: refused (only a destroyed sender key has none)")
            }
            return
        }
        let secret = try kek.unwrap(wrapped, appID: appID, recipient: senderOwner, keyID: e.keyID)
        let derived = try X25519.PrivateKey(rawRepresentation: secret).publicKey.rawRepresentation
        guard derived == e.publicKey else {
            throw RegistryError(.corrupt, "the \(AuthenticatedTable.senderKeys) row \(appID)/\(e.keyID) holds a public key that is not its private key's: refused")
        }
    }

    /// Checks a device token row's tag.
    /// - Throws: `RegistryError` `.corrupt`, `.kekRequired`.
    func verifyDeviceToken(_ t: DeviceToken, mac: [UInt8]?) throws {
        try rowMAC(table: AuthenticatedTable.deviceTokens).verify(mac, Self.deviceTokenFields(t), row: "\(t.appID)/\(t.recipient)/\(t.environment.rawValue)")
    }
}

/// How many rows ``PostgresKeyStore/migrate(connectionString:kek:reconnectWaitSeconds:)`` authenticated.
public struct RegistryRowAuthenticationCount: Sendable, Equatable {
    /// Rows of `pushseal_registrations`.
    public var registrations = 0
    /// Rows of `pushseal_sender_keys`.
    public var senderKeys = 0
    /// Rows of `pushseal_device_tokens`.
    public var deviceTokens = 0
    /// Rows of `pushseal_v2_lists` (one per recipient with registrations, one per app with sender keys).
    public var lists = 0
    /// Rows of `pushseal_gateway_api_keys` (schema 12).
    public var apiKeys = 0
    /// All of them.
    public var total: Int { registrations + senderKeys + deviceTokens + lists + apiKeys }
    /// Creates a zero count.
    public init() {}
}

extension PostgresKeyStore {
    /// Tags every row of the authenticated tables under `kek`, inside the caller's transaction:
    /// makes the list rows a registration or sender key lacks, numbers each list's rows 0, 1, …
    /// in their order, and refuses (nothing changed) a sender key whose public key is not its
    /// private key's, or that has none without being destroyed. Used once by `registry migrate`
    /// (rows from before schema 5) and by ``rewrap(to:)`` (every tag under the new KEK, after
    /// every row was verified under the old one).
    /// - Throws: `RegistryError` `.corrupt`, `.wrongKEK`, `.unavailable`, `.query`.
    static func tagAllRows(_ c: PGConnection, kek: KeyEncryptionKey, apiKeys: Bool) throws -> RegistryRowAuthenticationCount {
        var count = RegistryRowAuthenticationCount()
        let regMAC = try kek.rowMAC(table: AuthenticatedTable.registrations), senderMAC = try kek.rowMAC(table: AuthenticatedTable.senderKeys)
        let listMAC = try kek.rowMAC(table: AuthenticatedTable.lists), tokenMAC = try kek.rowMAC(table: AuthenticatedTable.deviceTokens)
        try c.exec("INSERT INTO pushseal_v2_lists (app_id, owner) SELECT DISTINCT app_id, recipient FROM pushseal_registrations ON CONFLICT DO NOTHING")
        try c.exec("INSERT INTO pushseal_v2_lists (app_id, owner) SELECT DISTINCT app_id, $1::text FROM pushseal_sender_keys ON CONFLICT DO NOTHING", [.text(senderOwner)])
        let lists = try c.exec("SELECT app_id, owner, version FROM pushseal_v2_lists ORDER BY app_id, owner FOR UPDATE")
        var regUpdates: [[String]] = [[], [], [], [], []], senderUpdates: [[String]] = [[], [], [], []], listUpdates: [[String]] = [[], [], [], [], []]
        for r in lists.rows.indices {
            guard let app = lists.rows[r][0], let owner = lists.rows[r][1], let version = try lists.int(r, 2) else {
                throw RegistryError(.corrupt, "a pushseal_v2_lists row does not decode")
            }
            let kind: V2KeyList.Kind = owner == senderOwner ? .senderKeys : .registrations
            var stored = try storedEntries(c, kind, appID: app, owner: owner, forUpdate: true)
            for i in stored.indices {
                stored[i].position = Int64(i)
                let s = stored[i]
                if kind == .registrations {
                    let tag = try regMAC.tag(s.fields(appID: app, owner: owner, listVersion: version))
                    for (k, v) in [app, owner, s.entry.keyID, String(i), byteaText(tag)].enumerated() { regUpdates[k].append(v) }
                } else {
                    try checkSenderPublicKey(s.entry, wrapped: s.wrapped, appID: app, kek: kek)
                    let tag = try senderMAC.tag(senderKeyFields(appID: app, s.entry, wrapped: s.wrapped, position: i, listVersion: version))
                    for (k, v) in [app, s.entry.keyID, String(i), byteaText(tag)].enumerated() { senderUpdates[k].append(v) }
                }
            }
            let primary = primaryKeyID(of: stored.map(\.entry))
            let tag = try listMAC.tag(listFields(appID: app, owner: owner, version: version, primaryKeyID: primary, entryCount: stored.count))
            for (k, v) in [app, owner, primary ?? "", String(stored.count), byteaText(tag)].enumerated() { listUpdates[k].append(v) }
            if kind == .registrations { count.registrations += stored.count } else { count.senderKeys += stored.count }
            count.lists += 1
        }
        try bulkUpdate(c, """
            UPDATE pushseal_registrations t SET position = u.position, row_mac = u.mac
            FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::bytea[]) AS u(app_id, recipient, key_id, position, mac)
            WHERE t.app_id = u.app_id AND t.recipient = u.recipient AND t.key_id = u.key_id
            """, regUpdates)
        try bulkUpdate(c, """
            UPDATE pushseal_sender_keys t SET position = u.position, row_mac = u.mac
            FROM unnest($1::text[], $2::text[], $3::integer[], $4::bytea[]) AS u(app_id, key_id, position, mac)
            WHERE t.app_id = u.app_id AND t.key_id = u.key_id
            """, senderUpdates)
        try bulkUpdate(c, """
            UPDATE pushseal_v2_lists t SET primary_key_id = NULLIF(u.primary_key_id, ''), entry_count = u.entry_count, row_mac = u.mac
            FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::bytea[]) AS u(app_id, owner, primary_key_id, entry_count, mac)
            WHERE t.app_id = u.app_id AND t.owner = u.owner
            """, listUpdates)
        let tokens = try c.exec("SELECT recipient, token, environment, registered_at, row_mac, app_id FROM pushseal_device_tokens ORDER BY app_id, token FOR UPDATE")
        var tokenUpdates: [[String]] = [[], [], []]
        for r in tokens.rows.indices {
            guard let recipient = tokens.rows[r][0], let token = tokens.rows[r][1], let env = tokens.rows[r][2].flatMap(DeviceTokenEnvironment.init(rawValue:)),
                  let at = try tokens.int(r, 3), let app = tokens.rows[r][5] else {
                throw RegistryError(.corrupt, "a pushseal_device_tokens row does not decode")
            }
            let t = DeviceToken(appID: app, recipient: recipient, token: token, environment: env, registeredAtMs: at)
            for (k, v) in [app, token, byteaText(try tokenMAC.tag(deviceTokenFields(t)))].enumerated() { tokenUpdates[k].append(v) }
        }
        try bulkUpdate(c, """
            UPDATE pushseal_device_tokens t SET row_mac = u.mac
            FROM unnest($1::text[], $2::text[], $3::bytea[]) AS u(app_id, token, mac)
            WHERE t.app_id = u.app_id AND t.token = u.token
            """, tokenUpdates)
        count.deviceTokens = tokens.rows.count
        if apiKeys { count.apiKeys = try tagAPIKeyRows(c, kek: kek) }
        return count
    }

    /// Tags every `pushseal_gateway_api_keys` row under `kek`, inside the caller's transaction
    /// (``tagAllRows(_:kek:apiKeys:)`` for `rewrap`, after every row was verified; and the
    /// `registry migrate` run that applies schema 12, for the keys of before).
    /// - Returns: the rows tagged.
    /// - Throws: `RegistryError` `.corrupt` (a row does not decode), `.unavailable`, `.query`.
    static func tagAPIKeyRows(_ c: PGConnection, kek: KeyEncryptionKey) throws -> Int {
        let keyMAC = try kek.rowMAC(table: AuthenticatedTable.apiKeys)
        let keys = try c.exec("SELECT \(apiKeyColumns) FROM pushseal_gateway_api_keys ORDER BY id FOR UPDATE")
        var keyUpdates: [[String]] = [[], []]
        for r in keys.rows.indices {
            let (record, sha256) = try decodeAPIKey(keys, r)
            for (k, v) in [record.id, byteaText(try keyMAC.tag(apiKeyFields(record, keySHA256: sha256)))].enumerated() { keyUpdates[k].append(v) }
        }
        try bulkUpdate(c, """
            UPDATE pushseal_gateway_api_keys t SET row_mac = u.mac
            FROM unnest($1::text[], $2::bytea[]) AS u(id, mac)
            WHERE t.id = u.id
            """, keyUpdates)
        return keys.rows.count
    }

    /// Verifies every row of the authenticated tables under this store's KEK (``rewrap(to:)``
    /// first proves the rows it is about to re-tag are the ones the old KEK wrote).
    /// - Throws: `RegistryError` `.corrupt`, `.wrongKEK`, `.kekRequired`.
    func verifyAllRows(_ c: PGConnection) throws {
        let lists = try c.exec("SELECT app_id, owner FROM pushseal_v2_lists ORDER BY app_id, owner")
        for row in lists.rows {
            guard let app = row[0], let owner = row[1] else { throw RegistryError(.corrupt, "a pushseal_v2_lists row does not decode") }
            _ = try loadList(c, owner == Self.senderOwner ? .senderKeys : .registrations, appID: app, owner: owner)
        }
        let orphans = try c.exec("""
            SELECT app_id, recipient FROM pushseal_registrations r WHERE NOT EXISTS
              (SELECT 1 FROM pushseal_v2_lists l WHERE l.app_id = r.app_id AND l.owner = r.recipient)
            UNION ALL SELECT app_id, $1 FROM pushseal_sender_keys s WHERE NOT EXISTS
              (SELECT 1 FROM pushseal_v2_lists l WHERE l.app_id = s.app_id AND l.owner = $1) LIMIT 1
            """, [.text(Self.senderOwner)])
        if let o = orphans.rows.first {
            throw RegistryError(.corrupt, "rows of \(o[0] ?? "?")/\(o[1] ?? "?") have no row in pushseal_v2_lists: refused (rows added without the KEK?)")
        }
        _ = try allDeviceTokens(c, appID: nil)
        _ = try gatewayAPIKeys(c, strict: true)
    }

    /// `\x…`: a `bytea` value in text form, for an array parameter.
    static func byteaText(_ b: [UInt8]) -> String { "\\x" + Hex.encode(b) }

    /// Runs `sql` with each column of `columns` as one array parameter, 4,096 rows a statement.
    static func bulkUpdate(_ c: PGConnection, _ sql: String, _ columns: [[String]]) throws {
        guard let n = columns.first?.count, n > 0 else { return }
        var start = 0
        while start < n {
            let end = min(n, start + bulkRecipientsPerStatement)
            try c.exec(sql, columns.map { .text(arrayLiteral($0[start..<end])) })
            start = end
        }
    }
}
