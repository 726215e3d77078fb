import PushSealCrypto
public import PushSealKeys
import PushSealSystem

extension PostgresKeyStore {
    /// What ``bulkCopyIn(_:now:batchSize:)`` did.
    public struct BulkImportResult: Sendable {
        /// Keysets read from the source.
        public var keysets = 0
        /// Keysets created by a bulk insert (they were not in the registry).
        public var created = 0
        /// Keysets already in the registry that changed (merged one by one, as ``copyIn(_:now:)``).
        public var merged = 0
        /// The (app id, recipient) of every keyset created or changed, in source order.
        public var changed: [(appID: String, recipient: String)] = []
    }

    /// The default keysets per bulk-insert transaction: 500 (each batch is a few statements;
    /// 500 keysets of up to 5 keys stay far below PostgreSQL's 65,535 parameters a statement).
    public static let defaultBulkBatchSize = 500
    /// The most key rows one INSERT statement carries (11 parameters a row).
    static let keyRowsPerStatement = 4_000

    /// Copies many keysets into the registry (`push-keys registry import`), `batchSize` keysets a
    /// transaction: each batch inserts the keysets the registry lacks with one multi-row
    /// `INSERT … ON CONFLICT DO NOTHING RETURNING`, their keys (wrapped under the KEK) and audit
    /// lines (`import`, one per key, as ``copyIn(_:now:)``) with multi-row inserts, and commits;
    /// a keyset already there is then merged as ``copyIn(_:now:)`` does (its own transaction).
    ///
    /// **Resumable, atomic per batch**: a batch is all in or all out; an interrupted import (a
    /// lost connection, SIGKILL) leaves the committed batches, and running it again skips them
    /// (their keysets exist and equal the source: no change, no audit line) and carries on.
    /// - Parameters:
    ///   - states: the keysets, key bytes included (read lazily, one batch at a time).
    ///   - now: Unix seconds for the audit lines.
    ///   - batchSize: keysets a transaction, at least 1 (default ``defaultBulkBatchSize``).
    /// - Throws: `KeysError` `.invalidName`, `.duplicateKeyID`; `RegistryError` `.kekRequired`,
    ///   `.unavailable`, `.outcomeUnknown` (a commit whose outcome is unknown: run it again), `.query`.
    public func bulkCopyIn<S: Sequence>(_ states: S, now: Int64, batchSize: Int = PostgresKeyStore.defaultBulkBatchSize) throws -> BulkImportResult
    where S.Element == KeysetState {
        try KeyStore.checkTime(now)
        let kek = try requireKEK()
        var result = BulkImportResult()
        var batch: [KeysetState] = []
        batch.reserveCapacity(max(1, batchSize))
        func flush() throws {
            guard !batch.isEmpty else { return }
            let created = try insertNew(batch, kek: kek, now: now)
            for s in batch {
                if created.contains(Names(appID: s.appID, recipient: s.recipient)) {
                    result.created += 1
                    result.changed.append((s.appID, s.recipient))
                } else if try copyIn(s, now: now) {
                    result.merged += 1
                    result.changed.append((s.appID, s.recipient))
                }
            }
            batch.removeAll(keepingCapacity: true)
        }
        for s in states {
            try KeyID.validateAppID(s.appID)
            try KeyID.validateRecipient(s.recipient)
            result.keysets += 1
            batch.append(s)
            if batch.count >= max(1, batchSize) { try flush() }
        }
        try flush()
        return result
    }

    private struct Names: Hashable { var appID: String; var recipient: String }

    /// One transaction: inserts the keysets of `batch` the registry lacks, their keys and audit
    /// lines; returns the names of those inserted.
    private func insertNew(_ batch: [KeysetState], kek: KeyEncryptionKey, now: Int64) throws -> Set<Names> {
        // The audit changes first: a state that cannot be copied fails before anything is sent.
        let changes = try batch.map { try $0.changesOfCopyingIntoEmptyStore(now: now) }
        return try pool.transaction { c in
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
