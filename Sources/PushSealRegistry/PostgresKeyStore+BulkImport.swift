import PushSealCrypto
import PushSealKeyRecords
public import PushSealServerKeys
import PushSealSystem

extension PostgresKeyStore {
    /// What ``bulkCopyIn(records:now:batchSize:)`` did.
    public struct BulkImportResult: Sendable {
        /// Records (recipients) read from the source.
        public var recipients = 0
        /// Of those, records with a v1 keyset.
        public var keysets = 0
        /// Keysets created by a bulk insert (they were not in the registry).
        public var created = 0
        /// Recipients already in the registry (or without a keyset) whose keyset, registrations
        /// or device tokens changed.
        public var merged = 0
        /// The (app id, recipient) of every recipient created or changed, in source order.
        public var changed: [(appID: String, recipient: String)] = []
    }

    /// The default recipients per transaction: 500 (each batch is a few statements;
    /// 500 keysets of up to 5 keys stay far below PostgreSQL's 65,535 parameters a statement).
    public static let defaultBulkBatchSize = 500
    /// The most key rows one INSERT statement carries (11 parameters a row).
    static let keyRowsPerStatement = 4_000

    /// ``bulkCopyIn(records:now:batchSize:)`` of keysets alone (no registrations, no tokens).
    public func bulkCopyIn<S: Sequence>(_ states: S, now: Int64, batchSize: Int = defaultBulkBatchSize) throws -> BulkImportResult
    where S.Element == KeysetState {
        try bulkCopyIn(records: states.lazy.map { RecipientRecord(appID: $0.appID, recipient: $0.recipient, keyset: $0, registrations: nil, deviceTokens: []) },
                       now: now, batchSize: batchSize)
    }

    /// Copies what a file keychain holds per recipient into the registry (`push-keys registry
    /// import`), `batchSize` recipients a transaction. In each batch's one transaction: the
    /// keysets the registry lacks go in with one multi-row `INSERT … ON CONFLICT DO NOTHING
    /// RETURNING`, their keys (wrapped under the KEK) and audit lines (`import`, one per key)
    /// with multi-row inserts; a keyset already there is merged (locked `FOR UPDATE`, as
    /// ``copyIn(_:now:)``: a counter is never lowered); each recipient's registrations are merged
    /// into its list (``V2KeyList/merge(from:now:)``, audited `importRegistration`); each device
    /// token is added when it supersedes the registry's (``DeviceToken/supersedes(_:)``, audited
    /// `addDeviceToken`). So every recipient is all in or all out.
    ///
    /// **Resumable, idempotent**: an interrupted import (a lost connection, SIGKILL) leaves the
    /// committed batches, and running it again changes nothing there (no audit line) and carries on.
    /// - Parameters:
    ///   - records: the recipients, key bytes included (read lazily, one batch at a time).
    ///   - now: Unix seconds for the audit lines.
    ///   - batchSize: recipients a transaction, at least 1 (default ``defaultBulkBatchSize``).
    /// - Throws: `KeysError` `.invalidName`, `.duplicateKeyID`, `.invalidState` (that batch
    ///   stored nothing); `RegistryError` `.kekRequired`, `.unavailable`, `.outcomeUnknown` (a
    ///   commit whose outcome is unknown: run it again), `.query`.
    public func bulkCopyIn<S: Sequence>(records: S, now: Int64, batchSize: Int = defaultBulkBatchSize) throws -> BulkImportResult
    where S.Element == RecipientRecord {
        try KeyTime.checkTime(now)
        let kek = try requireKEK()
        var result = BulkImportResult()
        var batch: [RecipientRecord] = []
        batch.reserveCapacity(max(1, batchSize))
        func flush() throws {
            guard !batch.isEmpty else { return }
            let keysets = batch.compactMap(\.keyset)
            // The audit changes first: a state that cannot be copied fails before anything is sent.
            let changes = try keysets.map { try $0.changesOfCopyingIntoEmptyStore(now: now) }
            var versions: [(Names, Int64)] = []
            let (created, changed) = try pool.transaction { c -> (Set<Names>, [Names]) in
                versions = []
                let created = try insertNew(c, keysets, changes: changes, kek: kek, now: now)
                var changed: [Names] = []
                for r in batch {
                    let n = Names(appID: r.appID, recipient: r.recipient)
                    var did = created.contains(n)
                    if let ks = r.keyset, !did {
                        let (_, version, merged) = try transact(c, appID: r.appID, recipient: r.recipient, allowCreate: true) { state, _ in
                            try state.copy(from: ks, now: now)
                        }
                        if merged { did = true; versions.append((n, version)) }
                    }
                    if let regs = r.registrations, !regs.entries.isEmpty {
                        _ = try changeV2List(c, .registrations, appID: r.appID, owner: r.recipient, allowCreate: true) { list in
                            let changes = try list.merge(from: regs, now: now)
                            did = did || !changes.isEmpty
                            return changes
                        }
                    }
                    for t in r.deviceTokens {
                        let rows = try c.exec("""
                            SELECT recipient, token, environment, registered_at, row_mac FROM pushseal_device_tokens
                            WHERE app_id = $1 AND recipient = $2 AND environment = $3 FOR UPDATE
                            """, [.text(t.appID), .text(t.recipient), .text(t.environment.rawValue)])
                        guard t.supersedes(try deviceTokenRows(rows, appID: t.appID).first) else { continue }
                        _ = try addDeviceToken(c, t)
                        did = true
                    }
                    if did { changed.append(n) }
                }
                return (created, changed)
            }
            for (n, v) in versions { noteOwnChange(appID: n.appID, recipient: n.recipient, version: v) }
            result.created += created.count
            result.merged += changed.filter { !created.contains($0) }.count
            result.changed += changed.map { ($0.appID, $0.recipient) }
            batch.removeAll(keepingCapacity: true)
        }
        for r in records {
            try KeyID.validateAppID(r.appID)
            try KeyID.validateRecipient(r.recipient)
            if let ks = r.keyset, ks.appID != r.appID || ks.recipient != r.recipient {
                throw KeysError(.invalidState, "the keyset of \(ks.appID)/\(ks.recipient) came as the record of \(r.appID)/\(r.recipient)")
            }
            result.recipients += 1
            if r.keyset != nil { result.keysets += 1 }
            batch.append(r)
            if batch.count >= max(1, batchSize) { try flush() }
        }
        try flush()
        return result
    }

    private struct Names: Hashable { var appID: String; var recipient: String }

    /// Inserts the keysets of `batch` the registry lacks, their keys and audit lines (`changes`,
    /// one list per keyset), inside the caller's transaction; returns the names of those inserted.
    private func insertNew(_ c: PGConnection, _ batch: [KeysetState], changes: [[KeysetChange]], kek: KeyEncryptionKey, now: Int64) throws -> Set<Names> {
        guard !batch.isEmpty else { return [] }
        var params: [PGValue?] = []
        var rows: [String] = []
        for s in batch {
            let r = s.rotation
            let n = params.count
            rows.append("($\(n + 1), $\(n + 2), $\(n + 3), $\(n + 4)::bigint, $\(n + 5)::boolean)")
            params += [.text(s.appID), .text(s.recipient), r.map { .text($0.keyID) }, r.map { .int($0.graceSeconds) },
                       r.map { .text($0.promoted ? "true" : "false") }]
        }
        let inserted = try c.exec("""
            INSERT INTO pushseal_keysets (app_id, recipient, rotation_key_id, rotation_grace_seconds, rotation_promoted)
            VALUES \(rows.joined(separator: ", ")) ON CONFLICT (app_id, recipient) DO NOTHING RETURNING app_id, recipient
            """, params)
        var created = Set<Names>()
        for row in inserted.rows {
            if let a = row[0], let r = row[1] { created.insert(Names(appID: a, recipient: r)) }
        }
        var keyRows: [[PGValue?]] = []
        var auditRows: [[PGValue?]] = []
        for (s, ch) in zip(batch, changes) where created.contains(Names(appID: s.appID, recipient: s.recipient)) {
            for (i, k) in s.keys.enumerated() {
                let wrapped: PGValue? = try k.key.map { .bytes(try kek.wrap($0, appID: s.appID, recipient: s.recipient, keyID: k.info.keyID)) }
                keyRows.append([.text(s.appID), .text(s.recipient), .text(k.info.keyID), .int(Int64(i)), .text(k.info.status.rawValue),
                                .int(k.info.createdAt), k.info.promotedAt.map { .int($0) }, k.info.retiredAt.map { .int($0) },
                                k.info.notAfter.map { .int($0) }, .uint(k.info.sealCount), wrapped])
            }
            for change in ch {
                let line = change.auditLine(locationName: Self.auditLocationName, locationValue: storeDescription, appID: s.appID, recipient: s.recipient)
                auditRows.append([.int(change.time), .text(change.name), .text(s.appID), .text(s.recipient), change.keyID.map { .text($0) },
                                  .text(String(decoding: line.dropLast(), as: UTF8.self))])
            }
        }
        try Self.insertRows(c, "pushseal_keys (app_id, recipient, key_id, position, status, created_at, promoted_at, retired_at, not_after, seal_count, wrapped_key)",
                            casts: ["", "", "", "::integer", "", "::bigint", "::bigint", "::bigint", "::bigint", "::bigint", "::bytea"], keyRows)
        try Self.insertRows(c, "pushseal_audit (time, event, app_id, recipient, key_id, line)",
                            casts: ["::bigint", "", "", "", "", ""], auditRows)
        return created
    }

    /// Multi-row INSERTs of `rows` into `table` (``keyRowsPerStatement`` rows a statement).
    private static func insertRows(_ c: PGConnection, _ table: String, casts: [String], _ rows: [[PGValue?]]) throws {
        var start = 0
        while start < rows.count {
            let chunk = rows[start..<min(rows.count, start + keyRowsPerStatement)]
            var params: [PGValue?] = []
            params.reserveCapacity(chunk.count * casts.count)
            var values: [String] = []
            for row in chunk {
                let n = params.count
                values.append("(" + casts.indices.map { "$\(n + $0 + 1)\(casts[$0])" }.joined(separator: ", ") + ")")
                params += row
            }
            try c.exec("INSERT INTO \(table) VALUES \(values.joined(separator: ", "))", params)
            start += chunk.count
        }
    }
}
