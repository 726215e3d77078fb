import PushSealCrypto
import PushSealSystem
public import PushSealWire
import PushSealKeyRecords
public import PushSealServerKeys
/// The batch path of the registry (issue 15, "loaded in bulk for a batch"): a chunk's
/// recipients' primaries in one query and their seal blocks in one statement, so `push-seal
/// batch --registry` makes a few round trips per chunk of 2,048 lines, not a few per recipient.
extension PostgresKeyStore: BulkSealingKeyStore {
    /// Recipients per statement: 4,096 (a batch chunk has at most 2,048 lines).
    static let bulkRecipientsPerStatement = 4_096

    /// The primaries of the keysets of `appID` named in `recipients`, with their versions (the
    /// watches), from one query per 4,096 recipients; each key unwrapped under the KEK.
    /// Malformed names, unknown keysets and keysets without a primary are left out.
    /// - Throws: `RegistryError` `.kekRequired`, `.wrongKEK`, `.corrupt`, `.unavailable`.
    public func sealingPrimaries(appID: String, recipients: [String]) throws -> [String: (watch: any KeysetWatch, key: SealingKey)] {
        try KeyID.validateAppID(appID)
        let kek = try requireKEK()
        try refreshIfDue()
        let names = recipients.filter { (try? KeyID.validateRecipient($0)) != nil }
        var out: [String: (watch: any KeysetWatch, key: SealingKey)] = [:]
        try Self.inStatementParts(names) { part in
            let rows = try pool.run { c in
                try c.exec("""
                    SELECT s.recipient, s.version, k.key_id, k.wrapped_key FROM pushseal_keysets s
                    JOIN pushseal_keys k ON k.app_id = s.app_id AND k.recipient = s.recipient AND k.status = 'primary'
                    WHERE s.app_id = $1 AND s.recipient = ANY($2::text[]) AND k.wrapped_key IS NOT NULL
                    """, [.text(appID), .text(Self.arrayLiteral(part))])
            }
            for r in rows.rows.indices {
                guard let recipient = rows.rows[r][0], let version = try rows.int(r, 1), let id = rows.rows[r][2], let wrapped = try rows.bytes(r, 3) else {
                    throw RegistryError(.corrupt, "a primary key row of app \(appID) does not decode")
                }
                let key = try kek.unwrap(wrapped, appID: appID, recipient: recipient, keyID: id)
                out[recipient] = (watch(appID: appID, recipient: recipient, version: version), SealingKey(keyID: id, key: key))
            }
        }
        return out
    }

    /// Reserves every block with one `UPDATE … FROM unnest(…) RETURNING` per 4,096 requests
    /// (rows locked in recipient order, so two sealers reserving for the same recipients wait for
    /// each other rather than deadlock), writing each `reserveSeals` audit line in the same
    /// statement, as ``reserveSeals(appID:recipient:keyID:count:)`` does for one key. Retried on
    /// a new connection when the connection is lost, even mid-statement (a repetition only
    /// over-counts). Leaves this process's watches current.
    /// - Throws: `KeysError` `.invalidName`; `RegistryError` `.unavailable`.
    public func reserveSeals(appID: String, blocks: [(recipient: String, keyID: String, count: UInt64)]) throws -> [String: SealReservation] {
        try KeyID.validateAppID(appID)
        let time = KeyTime.now()
        let valid = blocks.filter { (try? KeyID.validateRecipient($0.recipient)) != nil && KeyID.isValid($0.keyID) }
            .sorted { $0.recipient < $1.recipient }
        var out: [String: SealReservation] = [:]
        try Self.inStatementParts(valid) { part in
            let prefixes = part.map {
                String(decoding: KeysetChange.reserveSealsLinePrefix(time: time, locationName: Self.auditLocationName, locationValue: storeDescription,
                                                                     appID: appID, recipient: $0.recipient, keyID: $0.keyID), as: UTF8.self)
            }
            let params: [PGValue?] = [.text(appID), .text(Self.arrayLiteral(part.map(\.recipient))), .text(Self.arrayLiteral(part.map(\.keyID))),
                                      .text(Self.arrayLiteral(part.map { String(min(max($0.count, 1), KeyInfo.sealLimit)) })),
                                      .text(Self.arrayLiteral(prefixes)), .int(time)]
            let rows = try pool.run(retryUnknownOutcome: true) { c in
                try c.exec("""
                    WITH q AS (SELECT * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[]) AS t(recipient, key_id, n, prefix)),
                    l AS (
                      SELECT k.recipient, k.key_id FROM pushseal_keys k JOIN q ON k.recipient = q.recipient AND k.key_id = q.key_id
                      WHERE k.app_id = $1 AND k.status = 'primary' AND k.seal_count < 4294967296
                      ORDER BY k.recipient FOR UPDATE OF k),
                    r AS (
                      UPDATE pushseal_keys k SET seal_reserved_from = k.seal_count, seal_count = LEAST(k.seal_count + q.n, 4294967296)
                      FROM q, l WHERE k.app_id = $1 AND k.recipient = q.recipient AND k.key_id = q.key_id
                        AND l.recipient = q.recipient AND l.key_id = q.key_id AND k.status = 'primary' AND k.seal_count < 4294967296
                      RETURNING k.recipient, k.key_id, k.seal_reserved_from, k.seal_count, q.prefix),
                    a AS (
                      INSERT INTO pushseal_audit (time, event, app_id, recipient, key_id, line)
                      SELECT $6::bigint, 'reserveSeals', $1, r.recipient, r.key_id, r.prefix || r.seal_count::text || '}' FROM r)
                    SELECT recipient, seal_reserved_from, seal_count FROM r
                    """, params)
            }
            for r in rows.rows.indices {
                guard let recipient = rows.rows[r][0], let before = try rows.int(r, 1), let after = try rows.int(r, 2) else { continue }
                out[recipient] = SealReservation(previousCount: UInt64(before), reservedCount: UInt64(after))
            }
        }
        return out
    }

    /// A PostgreSQL array literal of `items` (`{"a","b\"c"}`), each element quoted with `\` and `"` escaped.
    /// Runs `body` on consecutive parts of `items` of at most ``bulkRecipientsPerStatement``.
    static func inStatementParts<T>(_ items: [T], _ body: (ArraySlice<T>) throws -> Void) rethrows {
        var start = 0
        while start < items.count {
            let part = items[start..<min(start + bulkRecipientsPerStatement, items.count)]
            start += part.count
            try body(part)
        }
    }

    static func arrayLiteral<C: Collection>(_ items: C) -> String where C.Element == String {
        var s = "{"
        for (i, item) in items.enumerated() {
            if i > 0 { s += "," }
            s += "\""
            for ch in item {
                if ch == "\\" || ch == "\"" { s.append("\\") }
                s.append(ch)
            }
            s += "\""
        }
        return s + "}"
    }

    /// How many times the connection pool has run a body of statements (tests).
    var poolBodyRuns: Int { pool.bodyRuns.withLock { $0 } }
}
