import PushSealCrypto
public import PushSealWire
import PushSealSystem
import PushSealKeyRecords
public import PushSealServerKeys
/// The server key store in PostgreSQL (issue 15): the second ``ServerKeyStore``, shared by any
/// number of sender processes and machines. Lookup and lifecycle come from ``KeysetStateStore``
/// (the file keychain's rules and audit events); this type stores keysets in `pushseal_keysets`
/// and `pushseal_keys`, wraps key bytes under a ``KeyEncryptionKey``, and writes the audit lines
/// to `pushseal_audit` in the same transaction as the change.
///
/// **Consistency.** Every change of a keyset is one transaction that first locks the keyset's row
/// and its key rows (`SELECT … FOR UPDATE`), so concurrent rotations, promotes, revokes, prunes
/// and imports of one keyset are serialized, in every process. A seal reservation is one
/// `UPDATE … RETURNING` of the primary's key row (`seal_count = LEAST(seal_count + n, 2^32)`),
/// which waits for such a transaction and then sees its result: it never under-counts and never
/// reserves on a key that stopped being the primary.
///
/// **Caches.** A ``KeysetWatch`` compares the keyset's `version` (bumped by every lifecycle
/// change) with what this process last saw, in memory: no round trip per seal. What it saw is
/// refreshed by one query for every keyset changed since (by transaction id) at the first use of
/// a watch (or bulk read) after each ``batchChunkWillBegin()``, and whenever the last refresh is
/// older than ``changePollIntervalNanoseconds`` (250 ms). So a change by another process reaches a
/// sealer within 250 ms (and at the next batch chunk), and ``ServerKeyring`` re-reads every keyset
/// at least every second anyway. A chunk that seals nothing with a v1 key (every recipient has a
/// v2 registration) makes no refresh: the check is made where a v1 key is used, not at the
/// chunk's start (bench-gateway: it was a round trip and ~110 µs of PostgreSQL's CPU per single
/// v2 request). A reservation by another process does not invalidate a watch (it cannot change
/// the key to seal with); one by this process does.
///
/// Sendable (checked by hand): the pool is Sendable; `known`, `epochs`, `seenXmin`,
/// `lastRefresh`, `refreshFailed`, `chunkStarts` and `refreshedThrough` are guarded by `lock`;
/// everything else is immutable.
public final class PostgresKeyStore: KeysetStateStore, @unchecked Sendable {
    /// The environment variable holding the connection string when `--registry` is not given.
    public static let environmentVariable = "PUSHSEAL_REGISTRY"
    /// Longest time a sealer trusts its view of keyset versions without asking the database: 250 ms.
    public static let changePollIntervalNanoseconds: UInt64 = 250_000_000
    /// The location member of this store's audit lines (`"registry"`, where the keychain writes `"keychain"`).
    public static let auditLocationName = "registry"

    let pool: ConnectionPool
    let kek: KeyEncryptionKey?
    /// `postgresql database pushseal on /run/postgresql port 5432`: no password.
    public let storeDescription: String
    /// ``KeysetInfo/accessGroup`` of this store's keysets: `pushseal.server`, as in a server keychain.
    public var keysetLabel: String { "pushseal.server" }

    private let lock = PosixLock()
    private struct Slot: Hashable { var appID: String; var recipient: String }
    /// Latest version seen per watched keyset.
    private var known: [Slot: Int64] = [:]
    /// Bumped by this process's own reservations (their watches turn stale at once).
    private var epochs: [Slot: UInt64] = [:]
    /// `pg_snapshot_xmin` of the last refresh: every change committed later has a transaction id at or above it.
    private var seenXmin: String?
    private var lastRefresh: UInt64 = 0
    private var refreshFailed = false
    /// Chunk starts announced (``batchChunkWillBegin()``), and the most of them any completed
    /// refresh began after: a refresh is due while the two differ. A count, not a flag, so a
    /// refresh that began before a chunk started (on another thread) does not count for that chunk.
    private var chunkStarts: UInt64 = 0
    private var refreshedThrough: UInt64 = 0
    /// Held while a refresh runs: one refresh at a time, and a thread that waited for one finds
    /// it done (N sealing threads reaching their first watch of a chunk together ask once, not N
    /// times; and two first refreshes cannot overlap, where the later one, which reads no rows,
    /// would move `seenXmin` past a change the earlier one did not see).
    private let refreshLock = PosixLock()
    /// When ``mayHaveRegistrations(appID:)`` last found a registration, per app (monotonic ns).
    let registrationsSeen = Locked<[String: UInt64]>([:])
    /// How long a `true` from ``mayHaveRegistrations(appID:)`` is reused without asking: 1 s, in ns.
    public static let registrationsHintNanoseconds: UInt64 = 1_000_000_000

    /// Opens the registry at `connectionString` and checks its schema (and the KEK, when given).
    /// - Parameters:
    ///   - connectionString: any libpq connection string or URI (`postgresql://user@host/db?sslmode=verify-full`,
    ///     `host=/run/postgresql dbname=pushseal`); empty: the `PG*` environment variables alone.
    ///   - kek: the key-encryption key; `nil` opens for v1 metadata only (`list`, `due`, `migrate`):
    ///     anything that reads or writes key bytes or an authenticated row (registrations, sender
    ///     keys, device tokens: ``rowMAC(table:)``) then throws `.kekRequired`.
    ///   - reconnectWaitSeconds: how long to wait for a restarting server, in all, per operation (default 30 s).
    /// - Throws: `RegistryError` `.unavailable`, `.invalidConnectionString`, `.schemaTooOld` (also
    ///   while rows from before schema 5 wait for `migrate --kek-file`), `.schemaTooNew`, `.wrongKEK`.
    public init(connectionString: String, kek: KeyEncryptionKey?, reconnectWaitSeconds: Double = 30) throws {
        pool = ConnectionPool(conninfo: connectionString, reconnectWaitSeconds: reconnectWaitSeconds)
        self.kek = kek
        // Opening fails at once when the server is unreachable (a clear error, exit 69); later
        // operations wait for a restarting server.
        storeDescription = try pool.run(maxWaitSeconds: 0) { c in
            try RegistrySchema.check(c)
            try RegistrySchema.checkRowsAuthenticated(c)
            if let kek { try Self.checkOrAdoptKEK(c, kek) }
            return c.target
        }
    }

    /// Applies the missing schema migrations (`push-keys registry migrate`). Idempotent; safe from
    /// two processes at once.
    /// - Returns: the versions applied now (empty: already current).
    /// - Throws: `RegistryError` `.schemaTooNew`, `.unavailable`, `.query`.
    public static func migrate(connectionString: String, reconnectWaitSeconds: Double = 30) throws -> [Int] {
        try RegistrySchema.migrate(ConnectionPool(conninfo: connectionString, reconnectWaitSeconds: reconnectWaitSeconds))
    }

    /// What ``migrate(connectionString:kek:reconnectWaitSeconds:)`` did.
    public struct MigrationResult: Sendable {
        /// The schema versions applied now (empty: already current).
        public var applied: [Int]
        /// Rows from before schema 5 authenticated now under the KEK (`nil`: none were waiting).
        public var authenticated: RegistryRowAuthenticationCount?
        /// Rows from before schema 5 still waiting for `migrate` with the KEK (0 once done).
        public var pendingRows: Int
    }

    /// Applies the missing schema migrations, then, with `kek`, authenticates once the rows
    /// written before schema 5 (security review G1): every registration, sender key, list and
    /// device token row gets its tag (``RegistryRowMAC``) under the KEK, in one transaction;
    /// in the run that applies schema 12, the API keys of before get theirs (a migrate without
    /// the KEK then leaves them untagged: refused, `keys revoke` disables them); a
    /// sender key whose public key is not its private key's refuses the whole step (`.corrupt`,
    /// nothing changed). Rows that appear later without a tag are never authenticated by this
    /// (they are refused as `corrupt` when read). Without `kek`, such rows are counted in
    /// ``MigrationResult/pendingRows`` and the registry cannot be opened until it runs with one.
    /// - Throws: `RegistryError` `.schemaTooNew`, `.wrongKEK` (not the registry's KEK), `.corrupt`, `.unavailable`, `.query`.
    public static func migrate(connectionString: String, kek: KeyEncryptionKey?, reconnectWaitSeconds: Double = 30) throws -> MigrationResult {
        let pool = ConnectionPool(conninfo: connectionString, reconnectWaitSeconds: reconnectWaitSeconds)
        let applied = try RegistrySchema.migrate(pool)
        guard let kek else {
            let pending = try pool.run { c in try RegistrySchema.pendingRowCount(c) }
            return MigrationResult(applied: applied, authenticated: nil, pendingRows: pending)
        }
        var done = try pool.transaction { c -> RegistryRowAuthenticationCount? in
            try c.exec("SELECT pg_advisory_xact_lock($1)", [.int(RegistrySchema.advisoryLockKey)])
            guard try c.exec("SELECT 1 FROM pushseal_row_auth_pending WHERE id = 1 FOR UPDATE").rows.count == 1 else { return nil }
            // While rows from before schema 5 wait, no row carries a tag (the registry opens for
            // nothing else). A tagged row beside the marker means the marker was put back by a
            // writer without the KEK, to have its own rows tagged: refused, nothing tagged.
            let tagged = try c.exec("""
                SELECT EXISTS (SELECT 1 FROM pushseal_registrations WHERE row_mac IS NOT NULL)
                    OR EXISTS (SELECT 1 FROM pushseal_sender_keys WHERE row_mac IS NOT NULL)
                    OR EXISTS (SELECT 1 FROM pushseal_v2_lists WHERE row_mac IS NOT NULL)
                    OR EXISTS (SELECT 1 FROM pushseal_device_tokens WHERE row_mac IS NOT NULL)
                """)
            if tagged.rows.first?.first == "t" {
                throw RegistryError(.corrupt,
                    "pushseal_row_auth_pending holds a row although the registry's rows are authenticated already: it was put back without the key-encryption key; nothing was tagged (delete that row)")
            }
            try checkOrAdoptKEK(c, kek)
            // Not the API keys: the marker is a row a writer could put back, and tagging keys it
            // inserted would give it one (review of 2026-12-04).
            let count = try tagAllRows(c, kek: kek, apiKeys: false)
            try c.exec("DELETE FROM pushseal_row_auth_pending WHERE id = 1")
            try c.exec("INSERT INTO pushseal_audit (time, event, app_id, recipient, key_id, line) VALUES ($1, 'authenticateRows', '', '', NULL, $2)",
                       [.int(KeyTime.now()), .text("{\"time\":\(KeyTime.now()),\"event\":\"authenticateRows\",\"registry\":\(KeysetChange.jsonString(c.target)),\"rowCount\":\(count.total)}")])
            return count
        }
        // The API keys of before schema 12, in the run that applies it only: what the table held
        // then was trusted as it was (untagged) before; a key row added later without a tag is
        // never tagged by a migrate (refused; `keys revoke` disables it).
        if applied.contains(12) {
            let keys = try pool.transaction { c -> Int in
                try c.exec("SELECT pg_advisory_xact_lock($1)", [.int(RegistrySchema.advisoryLockKey)])
                try checkOrAdoptKEK(c, kek)
                return try tagAPIKeyRows(c, kek: kek)
            }
            var count = done ?? RegistryRowAuthenticationCount()
            count.apiKeys = keys
            done = count
        }
        return MigrationResult(applied: applied, authenticated: done, pendingRows: 0)
    }

    /// Stores `kek`'s check value when the registry has none yet (the first KEK to open a
    /// migrated registry is its KEK from then on), then checks that `kek` is the registry's.
    /// - Throws: `RegistryError` `.wrongKEK`.
    static func checkOrAdoptKEK(_ c: PGConnection, _ kek: KeyEncryptionKey) throws {
        try c.exec("INSERT INTO pushseal_kek (id, check_box, created_at) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING",
                   [.bytes(try kek.checkBox()), .int(KeyTime.now())])
        guard let box = try c.exec("SELECT check_box FROM pushseal_kek WHERE id = 1").bytes(0, 0), kek.opensCheck(box) else {
            throw RegistryError(.wrongKEK,
                "the key-encryption key from \(kek.source) is not the one the registry \(c.target) is wrapped under: refused (wrong --kek-file?)")
        }
    }

    /// Row keys derived so far, by table label.
    private let rowMACs = Locked<[String: RegistryRowMAC]>([:])

    /// The row authentication of `table` under this store's KEK (security review G1): every
    /// table whose rows decide where text goes or whom a phone trusts stores a
    /// ``RegistryRowMAC`` tag in its `row_mac` column (the registry's registrations, sender keys,
    /// device tokens and list versions; the gateway's tables the same way). Derived once per
    /// table and kept.
    /// - Parameter table: the table's label (its name).
    /// - Throws: `RegistryError` `.kekRequired` (opened without a KEK); `CryptoError`.
    public func rowMAC(table: String) throws -> RegistryRowMAC {
        if let m = rowMACs.withLock({ $0[table] }) { return m }
        let m = try requireKEK().rowMAC(table: table)
        rowMACs.withLock { $0[table] = m }
        return m
    }

    func requireKEK() throws -> KeyEncryptionKey {
        guard let kek else {
            throw RegistryError(.kekRequired, "reading or writing key bytes in the registry needs the key-encryption key: give --kek-file F or \(KeyEncryptionKey.environmentVariable)")
        }
        return kek
    }

    // MARK: Reading

    static let keyColumns = "k.key_id, k.status, k.created_at, k.promoted_at, k.retired_at, k.not_after, k.seal_count, k.wrapped_key"

    /// Decodes key columns starting at `c` (the order of ``keyColumns``).
    func key(_ rows: PGRows, _ r: Int, from c: Int, appID: String, recipient: String, withBytes: Bool) throws -> (info: KeyInfo, key: SecretBytes?) {
        guard let id = rows.rows[r][c], let st = rows.rows[r][c + 1], let status = KeyStatus(rawValue: st),
              let created = try rows.int(r, c + 2), let seals = try rows.int(r, c + 6), seals >= 0 else {
            throw RegistryError(.corrupt, "a key row of \(appID)/\(recipient) does not decode")
        }
        let info = KeyInfo(keyID: id, status: status, createdAt: created, promotedAt: try rows.int(r, c + 3), retiredAt: try rows.int(r, c + 4),
                           notAfter: try rows.int(r, c + 5), sealCount: UInt64(seals))
        guard withBytes, let wrapped = try rows.bytes(r, c + 7) else { return (info, nil) }
        return (info, try requireKEK().unwrap(wrapped, appID: appID, recipient: recipient, keyID: id))
    }

    static func rotation(_ rows: PGRows, _ r: Int, from c: Int) throws -> KeysetState.Rotation? {
        guard let id = rows.rows[r][c] else { return nil }
        return KeysetState.Rotation(keyID: id, graceSeconds: try rows.int(r, c + 1) ?? 0, promoted: rows.rows[r][c + 2] == "t")
    }

    /// States from rows of (app id, recipient, rotation ×3, key columns or NULLs), ordered by keyset then position.
    func states(_ rows: PGRows, withBytes: Bool) throws -> [KeysetState] {
        var out: [KeysetState] = []
        var r = 0
        while r < rows.rows.count {
            guard let appID = rows.rows[r][0], let recipient = rows.rows[r][1] else { throw RegistryError(.corrupt, "a keyset row without names") }
            let rotation = try Self.rotation(rows, r, from: 2)
            var keys: [(info: KeyInfo, key: SecretBytes?)] = []
            while r < rows.rows.count, rows.rows[r][0] == appID, rows.rows[r][1] == recipient {
                if rows.rows[r][5] != nil { keys.append(try key(rows, r, from: 5, appID: appID, recipient: recipient, withBytes: withBytes)) }
                r += 1
            }
            out.append(KeysetState(appID: appID, recipient: recipient, keys: keys, rotation: rotation))
        }
        return out
    }

    static let stateQuery = """
        SELECT s.app_id, s.recipient, s.rotation_key_id, s.rotation_grace_seconds, s.rotation_promoted, \(keyColumns)
        FROM pushseal_keysets s LEFT JOIN pushseal_keys k ON k.app_id = s.app_id AND k.recipient = s.recipient
        """

    /// One keyset with its key bytes unwrapped; `nil` when absent.
    /// - Throws: `KeysError` `.invalidName`; `RegistryError` `.wrongKEK`, `.kekRequired`, `.corrupt`, `.unavailable`.
    public func loadState(appID: String, recipient: String) throws -> KeysetState? {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        let rows = try pool.run { c in
            try c.exec(Self.stateQuery + " WHERE s.app_id = $1 AND s.recipient = $2 ORDER BY k.position", [.text(appID), .text(recipient)])
        }
        return try states(rows, withBytes: true).first
    }

    /// Every keyset, metadata only (no key bytes are unwrapped), sorted by app id then recipient.
    public func loadAllStates() throws -> [KeysetState] {
        let rows = try pool.run { c in try c.exec(Self.stateQuery + " ORDER BY s.app_id, s.recipient, k.position") }
        return try states(rows, withBytes: false).sorted { ($0.appID, $0.recipient) < ($1.appID, $1.recipient) }
    }

    /// The keysets with a `decryptOnly` key whose `notAfter` is at or before `now`, or a
    /// `disabled` key whose wrapped bytes are still stored (what ``prune(now:)`` changes),
    /// metadata only, sorted: one query, so a prune of a large registry touches only those.
    public func loadStatesToPrune(now: Int64) throws -> [KeysetState] {
        let rows = try pool.run { c in
            try c.exec(Self.stateQuery + """
                 WHERE EXISTS (SELECT 1 FROM pushseal_keys p WHERE p.app_id = s.app_id AND p.recipient = s.recipient
                   AND ((p.status = 'decryptOnly' AND p.not_after <= $1) OR (p.status = 'disabled' AND p.wrapped_key IS NOT NULL)))
                ORDER BY s.app_id, s.recipient, k.position
                """, [.int(now)])
        }
        return try states(rows, withBytes: false).sorted { ($0.appID, $0.recipient) < ($1.appID, $1.recipient) }
    }

    /// Every keyset with its key bytes (`push-keys registry export`).
    /// - Throws: `RegistryError` `.kekRequired`, `.wrongKEK`, `.corrupt`, `.unavailable`.
    public func loadAllStatesWithKeyBytes() throws -> [KeysetState] {
        let rows = try pool.run { c in try c.exec(Self.stateQuery + " ORDER BY s.app_id, s.recipient, k.position") }
        return try states(rows, withBytes: true).sorted { ($0.appID, $0.recipient) < ($1.appID, $1.recipient) }
    }

    // MARK: Changing

    /// One keyset change in one transaction: locks the keyset row and its key rows, runs `body`,
    /// writes what changed (keys wrapped under the KEK), bumps the keyset's version, inserts the
    /// audit lines, commits. Retried when the connection is lost before the commit, and once when
    /// another process created the same keyset at the same moment.
    public func transact(appID: String, recipient: String, allowCreate: Bool,
                         _ body: (inout KeysetState, Bool) throws -> [KeysetChange]) throws -> KeysetState {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try transactOnce(appID: appID, recipient: recipient, allowCreate: allowCreate, body)
            } catch let e as RegistryError where e.sqlState == "23505" && attempt < 3 {
                continue  // a concurrent create of this keyset (or a concurrent new key id): read again
            }
        }
    }

    private func transactOnce(appID: String, recipient: String, allowCreate: Bool,
                              _ body: (inout KeysetState, Bool) throws -> [KeysetChange]) throws -> KeysetState {
        let (state, version, _) = try pool.transaction { c in try transact(c, appID: appID, recipient: recipient, allowCreate: allowCreate, body) }
        noteOwnChange(appID: appID, recipient: recipient, version: version)
        return state
    }

    /// The body of ``transact(appID:recipient:allowCreate:_:)`` on `c`, inside the caller's
    /// transaction (the caller notes the change with ``noteOwnChange(appID:recipient:version:)``
    /// after the commit).
    /// - Returns: the state after `body`, the keyset's version, and whether anything changed.
    func transact(_ c: PGConnection, appID: String, recipient: String, allowCreate: Bool,
                  _ body: (inout KeysetState, Bool) throws -> [KeysetChange]) throws -> (KeysetState, Int64, Bool) {
        let names: [PGValue?] = [.text(appID), .text(recipient)]
        let head = try c.exec("""
            SELECT app_id, recipient, rotation_key_id, rotation_grace_seconds, rotation_promoted, version
            FROM pushseal_keysets WHERE app_id = $1 AND recipient = $2 FOR UPDATE
            """, names)
        let isNew = head.rows.isEmpty
        var old = KeysetState(appID: appID, recipient: recipient, keys: [], rotation: nil)
        if !isNew {
            let keys = try c.exec("SELECT \(Self.keyColumns) FROM pushseal_keys k WHERE k.app_id = $1 AND k.recipient = $2 ORDER BY k.position FOR UPDATE", names)
            old = KeysetState(appID: appID, recipient: recipient,
                              keys: try keys.rows.indices.map { try key(keys, $0, from: 0, appID: appID, recipient: recipient, withBytes: true) },
                              rotation: try Self.rotation(head, 0, from: 2))
        } else if !allowCreate {
            throw unknown(appID, recipient)
        }
        var new = old
        let changes = try body(&new, isNew)
        guard !changes.isEmpty else { return (new, head.rows.isEmpty ? 0 : try head.int(0, 5) ?? 0, false) }
        let version = try save(c, old: old, new: new, isNew: isNew)
        for ch in changes { try insertAudit(c, ch, appID: appID, recipient: recipient) }
        return (new, version, true)
    }

    /// Inserts the audit row of `change` (its line as in `keys-audit.log`, with `"registry"`).
    func insertAudit(_ c: PGConnection, _ change: KeysetChange, appID: String, recipient: String) throws {
        let line = change.auditLine(locationName: Self.auditLocationName, locationValue: storeDescription, appID: appID, recipient: recipient)
        try c.exec("INSERT INTO pushseal_audit (time, event, app_id, recipient, key_id, line) VALUES ($1, $2, $3, $4, $5, $6)",
                   [.int(change.time), .text(change.name), .text(appID), .text(recipient), change.keyID.map { .text($0) },
                    .text(String(decoding: line.dropLast(), as: UTF8.self))])
    }

    /// Writes the difference between `old` and `new`; returns the keyset's new version.
    private func save(_ c: PGConnection, old: KeysetState, new: KeysetState, isNew: Bool) throws -> Int64 {
        let r = new.rotation
        let rotation: [PGValue?] = [r.map { .text($0.keyID) }, r.map { .int($0.graceSeconds) }, r.map { .text($0.promoted ? "true" : "false") }]
        let names: [PGValue?] = [.text(new.appID), .text(new.recipient)]
        let version: Int64
        if isNew {
            version = try c.exec("""
                INSERT INTO pushseal_keysets (app_id, recipient, rotation_key_id, rotation_grace_seconds, rotation_promoted)
                VALUES ($1, $2, $3, $4, $5) RETURNING version
                """, names + rotation).int(0, 0) ?? 1
        } else {
            version = try c.exec("""
                UPDATE pushseal_keysets SET version = version + 1, changed_xid = pg_current_xact_id(),
                  rotation_key_id = $3, rotation_grace_seconds = $4, rotation_promoted = $5
                WHERE app_id = $1 AND recipient = $2 RETURNING version
                """, names + rotation).int(0, 0) ?? 0
        }
        let oldKeys = Dictionary(old.keys.map { ($0.info.keyID, $0) }, uniquingKeysWith: { a, _ in a })
        // The new primary is written last, so the one-primary index never sees two.
        let order = new.keys.indices.sorted { (new.keys[$0].info.status == .primary ? 1 : 0, $0) < (new.keys[$1].info.status == .primary ? 1 : 0, $1) }
        for i in order {
            let k = new.keys[i]
            let o = oldKeys[k.info.keyID]
            let bytesChanged = o.map { ($0.key == nil) != (k.key == nil) || ($0.key != nil && $0.key != k.key) } ?? true
            guard o == nil || o?.info != k.info || bytesChanged else { continue }
            var wrapped: PGValue?
            if let secret = k.key { wrapped = .bytes(try requireKEK().wrap(secret, appID: new.appID, recipient: new.recipient, keyID: k.info.keyID)) }
            let columns: [PGValue?] = names + [.text(k.info.keyID), .int(Int64(i)), .text(k.info.status.rawValue), .int(k.info.createdAt),
                                               k.info.promotedAt.map { .int($0) }, k.info.retiredAt.map { .int($0) }, k.info.notAfter.map { .int($0) },
                                               .uint(k.info.sealCount)]
            if o == nil {
                try c.exec("""
                    INSERT INTO pushseal_keys (app_id, recipient, key_id, position, status, created_at, promoted_at, retired_at, not_after, seal_count, wrapped_key)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                    """, columns + [wrapped])
            } else if bytesChanged {
                try c.exec("""
                    UPDATE pushseal_keys SET position = $4, status = $5, created_at = $6, promoted_at = $7, retired_at = $8, not_after = $9,
                      seal_count = $10, wrapped_key = $11
                    WHERE app_id = $1 AND recipient = $2 AND key_id = $3
                    """, columns + [wrapped])
            } else {
                try c.exec("""
                    UPDATE pushseal_keys SET position = $4, status = $5, created_at = $6, promoted_at = $7, retired_at = $8, not_after = $9, seal_count = $10
                    WHERE app_id = $1 AND recipient = $2 AND key_id = $3
                    """, columns)
            }
        }
        return version
    }

    // MARK: Sealing

    /// A watch over the keyset's version; `nil` when there is no keyset. One round trip.
    /// - Throws: `KeysError` `.invalidName`; `RegistryError` `.unavailable`.
    public func watchKeyset(appID: String, recipient: String) throws -> (any KeysetWatch)? {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        try refreshIfDue()
        let rows = try pool.run { c in
            try c.exec("SELECT version FROM pushseal_keysets WHERE app_id = $1 AND recipient = $2", [.text(appID), .text(recipient)])
        }
        guard !rows.rows.isEmpty, let version = try rows.int(0, 0) else { return nil }
        return watch(appID: appID, recipient: recipient, version: version)
    }

    /// A watch of a keyset read at `version` (noted as the latest seen when it is newer).
    func watch(appID: String, recipient: String, version: Int64) -> Watch {
        let slot = Slot(appID: appID, recipient: recipient)
        lock.lock()
        defer { lock.unlock() }
        if (known[slot] ?? Int64.min) < version { known[slot] = version }
        return Watch(store: self, appID: appID, recipient: recipient, version: version, epoch: epochs[slot] ?? 0)
    }

    struct Watch: KeysetWatch {
        let store: PostgresKeyStore
        let appID: String
        let recipient: String
        let version: Int64
        let epoch: UInt64
        func isCurrent() throws -> Bool { try store.isCurrent(self) }
    }

    func isCurrent(_ w: Watch) throws -> Bool {
        try refreshIfDue()
        let slot = Slot(appID: w.appID, recipient: w.recipient)
        lock.lock()
        defer { lock.unlock() }
        return known[slot] == w.version && (epochs[slot] ?? 0) == w.epoch
    }

    func noteOwnChange(appID: String, recipient: String, version: Int64) {
        let slot = Slot(appID: appID, recipient: recipient)
        lock.lock()
        if (known[slot] ?? Int64.min) < version { known[slot] = version }
        epochs[slot, default: 0] &+= 1
        lock.unlock()
    }

    /// Makes the versions of watched keysets due for a refresh from the database (one query for
    /// every keyset changed since the last refresh), made at the next use of a watch or bulk read
    /// (``refreshIfDue()``), not here: a chunk that uses no v1 key asks nothing.
    public func batchChunkWillBegin() {
        lock.lock()
        chunkStarts += 1
        lock.unlock()
    }

    /// Refreshes the versions of watched keysets when a chunk started since the last refresh,
    /// the last one failed or is older than ``changePollIntervalNanoseconds``.
    /// - Throws: `RegistryError` `.unavailable` (tried again at the next check).
    func refreshIfDue() throws {
        guard dueRefresh() != nil else { return }
        refreshLock.lock()
        defer { refreshLock.unlock() }
        // Asked again: the refresh this thread waited for may have covered it.
        guard let (since, asked, now) = dueRefresh() else { return }
        do {
            try refresh(since: since, now: now, asked: asked)
        } catch {
            lock.lock()
            refreshFailed = true
            lock.unlock()
            throw error
        }
    }

    /// What a refresh due now starts from (the last `seenXmin`, the chunk starts it covers, the
    /// time); `nil` when none is due.
    private func dueRefresh() -> (since: String?, asked: UInt64, now: UInt64)? {
        let now = monotonicNanoseconds()
        lock.lock()
        defer { lock.unlock() }
        let due = refreshFailed || seenXmin == nil || refreshedThrough != chunkStarts || now &- lastRefresh >= Self.changePollIntervalNanoseconds
        return due ? (seenXmin, chunkStarts, now) : nil
    }

    private func refresh(since: String?, now: UInt64, asked: UInt64) throws {
        let rows = try pool.run { c in
            // Planned per call: a generic plan cannot see how far back `$1` is, and for a range it
            // may prefer reading every keyset to the index (its estimate is a third of the rows).
            try c.exec("""
                WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin)
                SELECT s.xmin, k.app_id, k.recipient, k.version FROM s
                LEFT JOIN pushseal_keysets k ON $1::text IS NOT NULL AND k.changed_xid >= $1::xid8
                """, [since.map { .text($0) }])
        }
        lock.lock()
        defer { lock.unlock() }
        for r in rows.rows.indices {
            guard let a = rows.rows[r][1], let b = rows.rows[r][2], let v = try rows.int(r, 3) else { continue }
            let slot = Slot(appID: a, recipient: b)
            if let k = known[slot], k < v { known[slot] = v }
        }
        if let x = rows.rows.first?[0] { seenXmin = x }
        lastRefresh = now
        refreshFailed = false
        refreshedThrough = max(refreshedThrough, asked)
    }

    /// Reserves seals with one `UPDATE … RETURNING` on the primary's key row (which also writes
    /// the `reserveSeals` audit line, in the same statement). Retried on a new connection when the
    /// connection is lost, even mid-statement: a repeated reservation only over-counts.
    /// - Throws: `KeysError` `.noPrimaryKey`, `.sealLimitReached`, `.unknownKeyset`, `.invalidName`;
    ///   `RegistryError` `.unavailable`.
    public func reserveSeals(appID: String, recipient: String, keyID: String, count: UInt64) throws -> SealReservation {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        try KeyID.validate(keyID)
        let n = min(max(count, 1), KeyInfo.sealLimit)
        let time = KeyTime.now()
        let prefix = KeysetChange.reserveSealsLinePrefix(time: time, locationName: Self.auditLocationName, locationValue: storeDescription,
                                                         appID: appID, recipient: recipient, keyID: keyID)
        let params: [PGValue?] = [.text(appID), .text(recipient), .text(keyID), .uint(n), .int(time), .text(String(decoding: prefix, as: UTF8.self))]
        let rows = try pool.run(retryUnknownOutcome: true) { c in
            try c.exec("""
                WITH r AS (
                  UPDATE pushseal_keys SET seal_reserved_from = seal_count, seal_count = LEAST(seal_count + $4::bigint, 4294967296)
                  WHERE app_id = $1 AND recipient = $2 AND key_id = $3 AND status = 'primary' AND seal_count < 4294967296
                  RETURNING seal_reserved_from, seal_count),
                a AS (
                  INSERT INTO pushseal_audit (time, event, app_id, recipient, key_id, line)
                  SELECT $5::bigint, 'reserveSeals', $1, $2, $3, $6::text || r.seal_count::text || '}' FROM r)
                SELECT seal_reserved_from, seal_count FROM r
                """, params)
        }
        if let before = try rows.rows.isEmpty ? nil : rows.int(0, 0), let after = try rows.int(0, 1) {
            noteOwnChange(appID: appID, recipient: recipient, version: Int64.min)
            return SealReservation(previousCount: UInt64(before), reservedCount: UInt64(after))
        }
        // Nothing reserved: say why.
        let why = try pool.run { c in
            try c.exec("""
                SELECT (SELECT count(*) FROM pushseal_keysets WHERE app_id = $1 AND recipient = $2),
                       (SELECT seal_count FROM pushseal_keys WHERE app_id = $1 AND recipient = $2 AND key_id = $3 AND status = 'primary')
                """, [.text(appID), .text(recipient), .text(keyID)])
        }
        guard try why.int(0, 0) ?? 0 > 0 else { throw unknown(appID, recipient) }
        if try why.int(0, 1) != nil {
            throw KeysError(.sealLimitReached,
                "key \(keyID) of \(appID)/\(recipient) reached 2^32 seals, the limit for random 96-bit nonces (NIST SP 800-38D 8.3): rotate the keyset")
        }
        throw KeysError(.noPrimaryKey, "keyset \(appID)/\(recipient) changed its primary while sealing; retry")
    }

    /// The primary's key id and bytes: one query reading only the primary's row, one unwrap.
    /// - Throws: `KeysError` `.unknownKeyset`, `.noPrimaryKey`, `.invalidName`; `RegistryError`.
    public func sealingPrimary(appID: String, recipient: String) throws -> SealingKey {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        let rows = try pool.run { c in
            try c.exec("""
                SELECT k.key_id, k.wrapped_key FROM pushseal_keysets s
                LEFT JOIN pushseal_keys k ON k.app_id = s.app_id AND k.recipient = s.recipient AND k.status = 'primary'
                WHERE s.app_id = $1 AND s.recipient = $2
                """, [.text(appID), .text(recipient)])
        }
        guard !rows.rows.isEmpty else { throw unknown(appID, recipient) }
        guard let id = rows.rows[0][0], let wrapped = try rows.bytes(0, 1) else {
            throw KeysError(.noPrimaryKey, "keyset \(appID)/\(recipient) has no primary key (revoked?): run push-keys rotate")
        }
        return SealingKey(keyID: id, key: try requireKEK().unwrap(wrapped, appID: appID, recipient: recipient, keyID: id))
    }

    func unknown(_ appID: String, _ recipient: String) -> KeysError {
        KeysError(.unknownKeyset, "no keyset for app id \(appID) and recipient \(recipient) in \(storeDescription)")
    }

    // MARK: Maintenance

    /// Rewraps every stored key (v1 keys and v2 sender keys) under `newKEK` in one transaction and makes it the registry's KEK
    /// (`push-keys registry rewrap`); every authenticated row (registrations, sender keys, lists,
    /// device tokens, API keys) is verified under the old KEK and tagged again under the new one. The key
    /// bytes themselves do not change, so caches stay valid.
    /// - Returns: the number of keys rewrapped.
    /// - Throws: `RegistryError` `.kekRequired`, `.wrongKEK` (a key does not open under the current KEK:
    ///   nothing changed), `.corrupt` (a row fails its authentication: nothing changed), `.unavailable`.
    @discardableResult
    public func rewrap(to newKEK: KeyEncryptionKey) throws -> Int {
        let old = try requireKEK()
        return try pool.transaction { c in
            // One snapshot for the proof and the tagging: under READ COMMITTED a row written
            // between them was tagged unproved (review of 2026-12-04); now it is not read at all
            // (it keeps its old tag and is refused), and a proved row changed meanwhile fails the
            // rewrap (serialization failure: nothing changed; run it again).
            try c.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            try c.exec("SELECT id FROM pushseal_kek WHERE id = 1 FOR UPDATE")
            // Every authenticated row is proved under the old KEK before it is tagged under the new one.
            try verifyAllRows(c)
            let rows = try c.exec("SELECT app_id, recipient, key_id, wrapped_key FROM pushseal_keys WHERE wrapped_key IS NOT NULL FOR UPDATE")
            for r in rows.rows.indices {
                guard let a = rows.rows[r][0], let b = rows.rows[r][1], let id = rows.rows[r][2], let w = try rows.bytes(r, 3) else { continue }
                let secret = try old.unwrap(w, appID: a, recipient: b, keyID: id)
                try c.exec("UPDATE pushseal_keys SET wrapped_key = $4 WHERE app_id = $1 AND recipient = $2 AND key_id = $3",
                           [.text(a), .text(b), .text(id), .bytes(try newKEK.wrap(secret, appID: a, recipient: b, keyID: id))])
            }
            let senderKeyCount = try rewrapSenderKeys(c, from: old, to: newKEK)
            _ = try Self.tagAllRows(c, kek: newKEK, apiKeys: true)
            try c.exec("UPDATE pushseal_kek SET check_box = $1, created_at = $2 WHERE id = 1", [.bytes(try newKEK.checkBox()), .int(KeyTime.now())])
            try c.exec("INSERT INTO pushseal_audit (time, event, app_id, recipient, key_id, line) VALUES ($1, 'rewrap', '', '', NULL, $2)",
                       [.int(KeyTime.now()), .text("{\"time\":\(KeyTime.now()),\"event\":\"rewrap\",\"registry\":\(KeysetChange.jsonString(storeDescription)),\"keyCount\":\(rows.rows.count + senderKeyCount)}")])
            return rows.rows.count + senderKeyCount
        }
    }

    /// The audit lines, oldest first (`push-keys registry audit`): the same JSON objects as
    /// `keys-audit.log`, with `"registry"` where the keychain writes `"keychain"`.
    /// - Parameter limit: at most this many of the latest lines, or `nil` for all.
    public func auditLines(limit: Int? = nil) throws -> [String] {
        let rows = try pool.run { c in
            if let limit {
                return try c.exec("SELECT line FROM (SELECT id, line FROM pushseal_audit ORDER BY id DESC LIMIT $1) t ORDER BY id", [.int(Int64(limit))])
            }
            return try c.exec("SELECT line FROM pushseal_audit ORDER BY id")
        }
        return rows.rows.compactMap { $0[0] }
    }

    /// Closes idle connections (tests).
    public func closeIdleConnections() { pool.closeIdle() }
}
