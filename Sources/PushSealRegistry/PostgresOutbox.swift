internal import CLibPQ
import PushSealCrypto
public import PushSealServerKeys
import PushSealSystem

/// The gateway's durable outbox in the registry database (issue 23 "The outbox"; schema
/// migration 6): one row per accepted notification holding its **sealed** payload and APNs
/// headers (never the text), idempotency keys, and the provider tokens all instances share.
/// The SQL side only: PushSealServer's `Outbox` seals, sends and decides; this type stores.
///
/// Row life: `queued` (``enqueue(_:idempotency:nowMs:)``, committed before it returns) →
/// `sending` (``claim(owner:limit:leaseMs:nowMs:)``: `FOR UPDATE SKIP LOCKED`, a lease with an
/// expiry held by one instance) → a final status (``complete(_:owner:nowMs:)``, in batches).
/// A lease that expires (its instance died) is returned by ``reap(nowMs:)``: to `queued` when the
/// row has a collapse id (a resend then replaces the first on the phone), else to `failed`
/// `mayHaveBeenDelivered` (never twice without a collapse id).
///
/// Sendable: the pool is Sendable; everything else is immutable.
public final class PostgresOutbox: Sendable {
    /// The `NOTIFY` channel ``enqueue(_:idempotency:nowMs:)`` signals on commit.
    public static let channel = "pushseal_outbox"
    /// Idempotency keys are kept this long: 24 h, in ms.
    public static let idempotencyLifetimeMs: Int64 = 24 * 3600 * 1000
    /// Longest idempotency key, in bytes.
    public static let maxIdempotencyKeyByteCount = 255

    let registry: PostgresKeyStore
    var pool: ConnectionPool { registry.pool }
    var kek: KeyEncryptionKey? { registry.kek }

    /// The outbox of an opened registry (its connections and KEK).
    public init(registry: PostgresKeyStore) {
        self.registry = registry
    }

    // MARK: Rows

    /// One notification to store, sealed already.
    public struct NewRow: Sendable {
        /// The notification id (a UUID, lower case), made by the caller.
        public var id: String
        /// App id (bundle id) and recipient it was sealed for.
        public var appID: String, recipient: String
        /// The token's environment.
        public var environment: DeviceTokenEnvironment
        /// The device token (hex).
        public var deviceToken: String
        /// The sealed payload (what APNs receives).
        public var payload: [UInt8]
        /// `apns-push-type`, `apns-topic` (with its suffix), `apns-priority`, `apns-expiration`,
        /// `apns-collapse-id`, `apns-id`.
        public var pushType: String, topic: String, priority: Int?, expiration: Int64?, collapseID: String?, apnsID: String
        /// Past this time (ms since 1970) the row ends `expired` unsent; `nil`: never.
        public var expiresAtMs: Int64?
        /// The message kind sealed in it: `display` (the default) or `retract` (never retracted itself).
        public var kind: String = "display"
        /// The notification id the device sees when the caller chose it (stored sealed under a
        /// KEK-derived key, column `device_id_sealed`); `nil`: the row's own ``id`` (the gateway's default).
        public var deviceVisibleID: String?
        /// When it was accepted (`created_at`, ms since 1970); `nil`: the `nowMs` it is stored with.
        public var acceptedAtMs: Int64?

        /// Creates a row (fields as above).
        public init(id: String, appID: String, recipient: String, environment: DeviceTokenEnvironment, deviceToken: String, payload: [UInt8],
                    pushType: String, topic: String, priority: Int?, expiration: Int64?, collapseID: String?, apnsID: String, expiresAtMs: Int64?) {
            self.id = id
            self.appID = appID
            self.recipient = recipient
            self.environment = environment
            self.deviceToken = deviceToken
            self.payload = payload
            self.pushType = pushType
            self.topic = topic
            self.priority = priority
            self.expiration = expiration
            self.collapseID = collapseID
            self.apnsID = apnsID
            self.expiresAtMs = expiresAtMs
        }
    }

    /// A row ended `cancelled` without being sent (``cancelQueued(appID:recipient:nowMs:)``,
    /// ``retract(targets:retracts:idempotency:nowMs:answer:)``): what its final outcome line names.
    public struct CancelledRow: Sendable, Hashable {
        /// The gateway id (lower-case UUID).
        public var id: String
        /// The recipient it was sealed for.
        public var recipient: String
        /// The `apns-id` it would have been sent with.
        public var apnsID: String
        /// APNs requests made for it (0 for a row never claimed).
        public var attempts: Int
    }

    /// The ``CancelledRow``s of an `UPDATE … RETURNING id, recipient, apns_id, attempts`.
    static func cancelledRows(_ result: PGRows) -> [CancelledRow] {
        result.rows.compactMap { v in
            guard v.count == 4, let id = v[0], let recipient = v[1], let apnsID = v[2] else { return nil }
            return CancelledRow(id: id, recipient: recipient, apnsID: apnsID, attempts: v[3].flatMap { Int($0) } ?? 0)
        }
    }

    /// A claimed row: what the worker sends.
    public struct Claimed: Sendable {
        /// The stored fields.
        public var row: NewRow
        /// APNs requests made for it so far (earlier instances included).
        public var attempts: Int
        /// Times it was claimed, this claim included (more than 1: a resend after an instance died).
        public var sends: Int
        /// `false` when the row's `row_mac` does not verify under the KEK (changed by someone
        /// without it): never send it (complete it `failed`, reason `rowAuthenticationFailed`).
        public var authentic: Bool
    }

    /// A final outcome to record.
    public struct Completion: Sendable {
        /// The notification id.
        public var id: String
        /// `accepted`, `unregistered`, `rejected`, `failed` or `expired`.
        public var status: String
        /// APNs' HTTP status, reason, `apns-unique-id`; requests made by this claim.
        public var httpStatus: Int?, reason: String?, apnsUniqueID: String?, attempts: Int
        /// For a 410: its timestamp (ms); the token is removed in the same transaction when it
        /// was registered before it.
        public var unregisteredAtMs: Int64?

        /// Creates a completion (fields as above).
        public init(id: String, status: String, httpStatus: Int? = nil, reason: String? = nil, apnsUniqueID: String? = nil, attempts: Int = 0,
                    unregisteredAtMs: Int64? = nil) {
            self.id = id
            self.status = status
            self.httpStatus = httpStatus
            self.reason = reason
            self.apnsUniqueID = apnsUniqueID
            self.attempts = attempts
            self.unregisteredAtMs = unregisteredAtMs
        }
    }

    /// What a status lookup returns.
    public struct Status: Sendable, Hashable {
        /// id, app id, recipient, status (`queued | sending | accepted | unregistered | rejected | failed | expired`).
        public var id: String, appID: String, recipient: String, status: String
        /// `apns-id` sent, `apns-unique-id` answered (development), HTTP status, reason.
        public var apnsID: String, apnsUniqueID: String?, httpStatus: Int?, reason: String?
        /// APNs requests made; claims (sends) made.
        public var attempts: Int, sends: Int
        /// Accepted, last changed and finished, ms since 1970.
        public var createdAtMs: Int64, updatedAtMs: Int64, finishedAtMs: Int64?
    }

    /// An idempotency key and the answer to keep for it.
    public struct Idempotency: Sendable {
        /// Whose key (the API key's id): keys of different callers never meet.
        public var scope: String
        /// The key (1 … 255 bytes).
        public var key: String
        /// SHA-256 of the request body.
        public var requestHash: [UInt8]
        /// The answer to give again (the first request's body).
        public var response: [UInt8]

        /// Creates one (fields as above).
        public init(scope: String, key: String, requestHash: [UInt8], response: [UInt8]) {
            self.scope = scope
            self.key = key
            self.requestHash = requestHash
            self.response = response
        }
    }

    /// What an idempotency key says about a request.
    public enum Replay: Sendable, Hashable {
        /// First use (or older than 24 h): go on.
        case none
        /// Used with the same body: answer this again, store nothing.
        case same(response: [UInt8])
        /// Used with another body: refuse (HTTP 422).
        case differentBody
    }

    // MARK: Enqueue

    /// Looks an idempotency key up (before sealing anything).
    /// - Throws: `RegistryError` `.unavailable`, `.query`.
    public func replay(scope: String, key: String, requestHash: [UInt8], nowMs: Int64) throws -> Replay {
        try lookUp(try keyed(Idempotency(scope: scope, key: key, requestHash: requestHash, response: [])), nowMs: nowMs)
    }

    /// ``replay(scope:key:requestHash:nowMs:)`` of an idempotency key already ``keyed(_:)``.
    private func lookUp(_ i: Idempotency, nowMs: Int64) throws -> Replay {
        let rows = try pool.run { c in
            try c.exec("SELECT request_hash, response FROM pushseal_idempotency WHERE scope = $1 AND key = $2 AND created_at > $3",
                       [.text(i.scope), .text(i.key), .int(nowMs - Self.idempotencyLifetimeMs)])
        }
        guard !rows.rows.isEmpty, let hash = try rows.bytes(0, 0), let response = try rows.bytes(0, 1) else { return .none }
        return ConstantTime.equals(hash, i.requestHash) ? .same(response: response) : .differentBody
    }

    /// The label of the key idempotency keys and request hashes are stored under (HKDF info,
    /// as a ``RegistryRowMAC`` table label).
    static let idempotencyLabel = "pushseal_idempotency/keyed-v1"

    /// `i` as the table stores it: the key as the hex HMAC-SHA256 of (scope, key) and the
    /// request hash as the HMAC-SHA256 of (scope, hash), both under a key derived from the KEK
    /// (``idempotencyLabel``). A dump then holds neither the caller's key text (which may name
    /// an order or a person) nor an unkeyed hash of the request body, against which guesses of
    /// a short text (a six-digit code) could be tested offline. Deterministic, so lookups still
    /// find the row.
    /// - Throws: `RegistryError` `.kekRequired`; `CryptoError` (OpenSSL).
    func keyed(_ i: Idempotency) throws -> Idempotency {
        let mac = try registry.rowMAC(table: Self.idempotencyLabel)
        var out = i
        out.key = Hex.encode(try mac.tag([.text("key"), .text(i.scope), .text(i.key)]))
        out.requestHash = try mac.tag([.text("request"), .text(i.scope), .bytes(i.requestHash)])
        return out
    }

    /// Stores `rows` (and the idempotency key with its answer) in one transaction and signals
    /// the workers (`NOTIFY`, delivered at commit). Returns after the commit.
    /// - Returns: ``Replay/none`` when stored; when another request with the same key committed
    ///   first, what ``replay(scope:key:requestHash:nowMs:)`` says (nothing stored).
    /// - Throws: `RegistryError` `.unavailable`, `.outcomeUnknown` (lost while committing), `.query`.
    public func enqueue(_ rows: [NewRow], idempotency: Idempotency?, nowMs: Int64) throws -> Replay {
        let mac = try registry.rowMAC(table: Self.table)
        let idempotency = try idempotency.map(keyed)
        // PostgreSQL prints uuids in lower case: tag them as they will be read.
        let rows = rows.map { r -> NewRow in
            var r = r
            r.id = r.id.lowercased()
            r.apnsID = r.apnsID.lowercased()
            return r
        }
        if idempotency == nil {
            // Without a key: nothing to store for no row, and up to ``rowsPerStatement`` rows are
            // ONE statement (insert and notify) committed on its own: one round trip and one
            // commit instead of BEGIN, INSERT, NOTIFY, COMMIT (bench-gateway, single requests).
            // It inserts with ON CONFLICT (id) DO NOTHING, so when the connection is lost while it
            // runs it is simply run again on a new one: rows the first run committed are found
            // by their (random, this request's own) ids and kept, the others are inserted.
            guard !rows.isEmpty else { return .none }
            if rows.count <= Self.rowsPerStatement {
                try pool.run(retryUnknownOutcome: true) { c in try insert(rows, on: c, mac: mac, nowMs: nowMs, alone: true) }
                return .none
            }
        }
        let stored: Bool = try pool.transaction { c in
            guard try Self.keep(idempotency, on: c, nowMs: nowMs) else { return false }
            try insert(rows, on: c, mac: mac, nowMs: nowMs)
            return true
        }
        if stored { return .none }
        guard let i = idempotency else { return .none }
        return try lookUp(i, nowMs: nowMs)
    }

    /// Stores an idempotency key (``keyed(_:)``) with its answer on `c` (inside a transaction);
    /// `false` when another request with the key committed first (store nothing then).
    static func keep(_ idempotency: Idempotency?, on c: PGConnection, nowMs: Int64) throws -> Bool {
        guard let i = idempotency else { return true }
        try c.exec("DELETE FROM pushseal_idempotency WHERE scope = $1 AND key = $2 AND created_at <= $3",
                   [.text(i.scope), .text(i.key), .int(nowMs - idempotencyLifetimeMs)])
        let inserted = try c.exec("INSERT INTO pushseal_idempotency (scope, key, request_hash, response, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                                  [.text(i.scope), .text(i.key), .bytes(i.requestHash), .bytes(i.response), .int(nowMs)])
        return inserted.affected > 0
    }

    /// Inserts `rows` `queued` on `c` (inside a transaction) and signals the workers at commit:
    /// one multi-row `INSERT` per ``rowsPerStatement`` rows (a statement per row was a round trip
    /// per row and most of a request's time: bench-gateway).
    /// - Parameter alone: `rows` fit one statement that runs outside a transaction (autocommit):
    ///   the `NOTIFY` is made in that statement (`pg_notify` after the insert), not another, and
    ///   rows already stored under their ids are left as they are (`ON CONFLICT (id) DO
    ///   NOTHING`: the statement may be run again after a lost connection).
    func insert(_ rows: [NewRow], on c: PGConnection, mac: RegistryRowMAC, nowMs: Int64, alone: Bool = false) throws {
        for start in stride(from: 0, to: rows.count, by: Self.rowsPerStatement) {
            var params: [PGValue?] = []
            var tuples: [String] = []
            for r in rows[start..<min(start + Self.rowsPerStatement, rows.count)] {
                let b = params.count
                let sealedID = try r.deviceVisibleID.map { try sealDeviceID($0, row: r) }
                tuples.append("(" + (1...13).map { "$\(b + $0)" }.joined(separator: ", ")
                              + ", 'queued', $\(b + 14), $\(b + 14), $\(b + 15), $\(b + 16), $\(b + 17))")
                params += [.text(r.id), .text(r.appID), .text(r.recipient), .text(r.environment.rawValue), .text(r.deviceToken), .bytes(r.payload),
                           .text(r.pushType), .text(r.topic), r.priority.map { .int(Int64($0)) }, r.expiration.map { .int($0) },
                           r.collapseID.map { .text($0) }, .text(r.apnsID), r.expiresAtMs.map { .int($0) }, .int(r.acceptedAtMs ?? nowMs), .bytes(try mac.tag(Self.macFields(r))),
                           .text(r.kind), sealedID.map { .bytes($0) }]
            }
            let insert = """
                INSERT INTO pushseal_outbox (id, app_id, recipient, environment, device_token, payload, push_type, topic, priority,
                  expiration, collapse_id, apns_id, expires_at, status, created_at, updated_at, row_mac, kind, device_id_sealed)
                VALUES \(tuples.joined(separator: ", "))
                """
            // A data-modifying WITH runs to completion whether the outer query reads it or not.
            try c.exec(alone ? "WITH stored AS (\(insert) ON CONFLICT (id) DO NOTHING) SELECT pg_notify('\(Self.channel)', '')" : insert, params)
        }
        if !rows.isEmpty, !alone { try c.exec("NOTIFY \(Self.channel)") }
    }

    // MARK: Device-visible ids

    /// HKDF salt of the key a caller's own notification id is sealed under.
    static let deviceIDSalt = Array("pushseal-outbox-device-id-v1".utf8)

    /// The key and AAD of a row's sealed device id: HKDF-SHA256 of the KEK (salt
    /// ``deviceIDSalt``, info the row id: one key per row, so random nonces never meet), the AAD
    /// naming app and recipient (a sealed id moved to another row or recipient does not open).
    func deviceIDKey(row id: String, appID: String, recipient: String) throws -> (key: SecretBytes, aad: [UInt8]) {
        guard let kek else {
            throw RegistryError(.kekRequired, "the outbox seals a caller's notification id under the key-encryption key: give --kek-file F")
        }
        let key = try HKDFSHA256.deriveKey(inputKeyMaterial: kek.key, salt: Self.deviceIDSalt, info: Array(id.lowercased().utf8), outputByteCount: 32)
        return (key, Self.deviceIDSalt + [0] + Array(appID.utf8) + [0] + Array(recipient.utf8))
    }

    /// `id` sealed for `row` (AES-256-GCM, nonce ‖ ciphertext ‖ tag).
    func sealDeviceID(_ id: String, row: NewRow) throws -> [UInt8] {
        let (key, aad) = try deviceIDKey(row: row.id, appID: row.appID, recipient: row.recipient)
        return try AES256GCM.seal(Array(id.utf8), with: key, authenticating: aad).combined
    }

    // MARK: Retract

    /// A notification a retract names, as its row says.
    public struct RetractTarget: Sendable, Hashable {
        /// The gateway's id (the row's), app id, recipient, status and kind (`display` or `retract`).
        public var id: String, appID: String, recipient: String, status: String, kind: String
        /// The id the device recorded (the caller's own, opened; else the row's id); `nil` when a
        /// sealed one does not open (changed without the KEK): it cannot be retracted.
        public var deviceVisibleID: String?
    }

    /// The rows with these ids (unknown ids and ids that are not UUIDs are left out).
    /// - Throws: `RegistryError` (`.kekRequired` for a sealed device id without the KEK).
    public func retractTargets(_ ids: [String]) throws -> [RetractTarget] {
        let uuids = ids.map { $0.lowercased() }.filter(Self.isUUID)
        guard !uuids.isEmpty else { return [] }
        let rows = try pool.run { c in
            try c.exec("SELECT id, app_id, recipient, status, kind, device_id_sealed FROM pushseal_outbox WHERE id = ANY($1::uuid[])",
                       [.text("{" + Set(uuids).sorted().joined(separator: ",") + "}")])
        }
        return try (0..<rows.rows.count).map { r in
            let v = rows.rows[r]
            guard let id = v[0], let app = v[1], let recipient = v[2], let status = v[3], let kind = v[4] else {
                throw RegistryError(.corrupt, "an outbox row does not decode")
            }
            var visible: String? = id
            if let sealed = try rows.bytes(r, 5) {
                let (key, aad) = try deviceIDKey(row: id, appID: app, recipient: recipient)
                visible = (try? SealedBox(combined: sealed)).flatMap { try? AES256GCM.open($0, with: key, authenticating: aad) }
                    .map { String(decoding: $0, as: UTF8.self) }
            }
            return RetractTarget(id: id, appID: app, recipient: recipient, status: status, kind: kind, deviceVisibleID: visible)
        }
    }

    /// `true` for a UUID in its text form (8-4-4-4-12 hex digits).
    static func isUUID(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.count == 36 else { return false }
        for (i, c) in u.enumerated() {
            if [8, 13, 18, 23].contains(i) { guard c == UInt8(ascii: "-") else { return false }; continue }
            guard (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70) else { return false }
        }
        return true
    }

    /// One retract message to store, and the notifications it retracts.
    public struct RetractRow: Sendable {
        /// The sealed retract (kind `retract`).
        public var row: NewRow
        /// The gateway ids of the notifications it names.
        public var targets: [String]

        /// Creates one (fields as above).
        public init(row: NewRow, targets: [String]) {
            self.row = row
            self.targets = targets
        }
    }

    /// Retracts in one transaction: the rows of `targets` still `queued` are ended `cancelled`
    /// (reason `retracted`: never sent, so never shown); each of `retracts` is stored unless
    /// every notification it names was just cancelled (a retract naming a cancelled one besides
    /// others is harmless: the device finds nothing for it); the idempotency key is kept with
    /// `answer(cancelled)`'s bytes. Returns after the commit.
    /// - Parameters:
    ///   - targets: gateway ids of the notifications to retract (rows locked `FOR UPDATE`).
    ///   - retracts: the sealed retract messages, per recipient.
    ///   - idempotency: scope, key and request hash (its `response` is replaced by `answer`'s), or `nil`.
    ///   - answer: the answer body, from the ids cancelled now.
    /// - Returns: the rows cancelled now (their ids as `cancelled`), the retract ids stored and
    ///   the answer; or the replay.
    /// - Throws: `RegistryError` `.unavailable`, `.outcomeUnknown`, `.query`; `answer`'s errors.
    public func retract(targets: [String], retracts: [RetractRow], idempotency: Idempotency?, nowMs: Int64,
                        answer: (_ cancelled: Set<String>, _ stored: Set<String>) throws -> [UInt8])
        throws -> (cancelled: Set<String>, cancelledRows: [CancelledRow], stored: Set<String>, body: [UInt8], replay: Replay) {
        let mac = try registry.rowMAC(table: Self.table)
        let idempotency = try idempotency.map(keyed)
        let retracts = retracts.map { r -> RetractRow in
            var r = r
            r.row.id = r.row.id.lowercased()
            r.row.apnsID = r.row.apnsID.lowercased()
            r.targets = r.targets.map { $0.lowercased() }
            return r
        }
        let done: ([CancelledRow], Set<String>, [UInt8])? = try pool.transaction { c in
            // The key first (its answer is written below): a request that loses the race changes nothing.
            var claim = idempotency
            claim?.response = []
            guard try Self.keep(claim, on: c, nowMs: nowMs) else { return nil }
            var cancelledRows: [CancelledRow] = []
            let uuids = Set(targets.map { $0.lowercased() }.filter(Self.isUUID)).sorted()
            if !uuids.isEmpty {
                let rows = try c.exec("""
                    UPDATE pushseal_outbox SET status = 'cancelled', reason = 'retracted', updated_at = $2, finished_at = $2
                    WHERE id IN (SELECT id FROM pushseal_outbox WHERE id = ANY($1::uuid[]) AND status = 'queued' AND kind = 'display' FOR UPDATE)
                    RETURNING id, recipient, apns_id, attempts
                    """, [.text("{" + uuids.joined(separator: ",") + "}"), .int(nowMs)])
                cancelledRows = Self.cancelledRows(rows)
            }
            let cancelled = Set(cancelledRows.map(\.id))
            let kept = retracts.filter { !$0.targets.allSatisfy(cancelled.contains) }
            let body = try answer(cancelled, Set(kept.map(\.row.id)))
            if let i = idempotency {
                try c.exec("UPDATE pushseal_idempotency SET response = $3 WHERE scope = $1 AND key = $2", [.text(i.scope), .text(i.key), .bytes(body)])
            }
            try insert(kept.map(\.row), on: c, mac: mac, nowMs: nowMs)
            return (cancelledRows, Set(kept.map(\.row.id)), body)
        }
        if let done { return (Set(done.0.map(\.id)), done.0, done.1, done.2, .none) }
        guard let i = idempotency else { return ([], [], [], [], .none) }
        return ([], [], [], [], try lookUp(i, nowMs: nowMs))
    }

    // MARK: Claim, complete, reap

    static let rowColumns = "id, app_id, recipient, environment, device_token, payload, push_type, topic, priority, expiration, collapse_id, apns_id, expires_at, attempts, sends, row_mac"
    /// The table (and the row MAC's key label).
    static let table = "pushseal_outbox"

    /// What a row's `row_mac` authenticates (security review G1, ``RegistryRowMAC``): every
    /// field that decides what goes where (id, recipient, token, payload, headers, expiry).
    static func macFields(_ r: NewRow) -> [RegistryRowField] {
        [.text(r.id), .text(r.appID), .text(r.recipient), .text(r.environment.rawValue), .text(r.deviceToken), .bytes(r.payload),
         .text(r.pushType), .text(r.topic), .int(r.priority.map(Int64.init)), .int(r.expiration), .text(r.collapseID), .text(r.apnsID),
         .int(r.expiresAtMs)]
    }

    /// The claim: up to `$4` queued rows of app `$5` and environment `$6`, oldest first, leased
    /// to `$1` until `$2` at `$3`.
    static let claimStatement = """
        UPDATE pushseal_outbox o SET status = 'sending', lease_owner = $1, lease_until = $2, sends = o.sends + 1, updated_at = $3
        FROM (SELECT id FROM pushseal_outbox WHERE status = 'queued' AND app_id = $5 AND environment = $6
              ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED) q
        WHERE o.id = q.id
        RETURNING \(rowColumns.split(separator: ",").map { "o." + $0.trimmingCharacters() }.joined(separator: ", "))
        """

    /// Claims up to `limit` queued rows of `appID` addressed to device tokens of `environment`,
    /// oldest first, for `owner` until `nowMs + leaseMs` (`SELECT … FOR UPDATE SKIP LOCKED`: two
    /// instances never claim one row). Only the rows of the claiming instance's own app and
    /// environment: gateways of other apps or of the other environment on the same database
    /// (a staging and a production gateway) never send each other's rows through the wrong
    /// provider key or endpoint, nor act on APNs' answers to them (a `BadDeviceToken` would
    /// remove the other's token).
    ///
    /// The queued rows are walked with a plain index scan of `pushseal_outbox_queued`
    /// (`enable_bitmapscan` off for this transaction): every claimed row leaves a dead entry at
    /// the front of that index until a vacuum, and only a plain index scan marks such entries
    /// dead for the next scan; the bitmap scan the planner picked visited all of them again on
    /// every claim (5 ms for a claim that found nothing at 500 single requests/s: bench-gateway's
    /// pg_stat_statements and auto_explain).
    /// - Throws: `RegistryError` `.unavailable`, `.query`, `.corrupt`.
    public func claim(appID: String, environment: DeviceTokenEnvironment, owner: String, limit: Int, leaseMs: Int64, nowMs: Int64) throws -> [Claimed] {
        let mac = try registry.rowMAC(table: Self.table)
        // One round trip: the setting (for this transaction only; SET LOCAL would warn in the
        // server's log outside an explicit transaction block) and the claim, in one pipelined
        // implicit transaction.
        let rows = try pool.run { c in
            try c.pipeline([
                ("SELECT set_config('enable_bitmapscan', 'off', true)", []),
                (Self.claimStatement, [.text(owner), .int(nowMs + leaseMs), .int(nowMs), .int(Int64(limit)), .text(appID), .text(environment.rawValue)]),
            ])[1]
        }
        return try (0..<rows.rows.count).map { r in
            func text(_ c: Int) throws -> String {
                guard let v = rows.rows[r][c] else { throw RegistryError(.corrupt, "an outbox row has a NULL column \(c)") }
                return v
            }
            guard let environment = DeviceTokenEnvironment(rawValue: try text(3)), let payload = try rows.bytes(r, 5) else {
                throw RegistryError(.corrupt, "an outbox row does not decode")
            }
            let row = NewRow(id: try text(0), appID: try text(1), recipient: try text(2), environment: environment, deviceToken: try text(4),
                             payload: payload, pushType: try text(6), topic: try text(7), priority: try rows.int(r, 8).map { Int($0) },
                             expiration: try rows.int(r, 9), collapseID: rows.rows[r][10], apnsID: try text(11), expiresAtMs: try rows.int(r, 12))
            let authentic = (try? mac.verify(try rows.bytes(r, 15), Self.macFields(row), row: row.id)) != nil
            return Claimed(row: row, attempts: Int(try rows.int(r, 13) ?? 0), sends: Int(try rows.int(r, 14) ?? 0), authentic: authentic)
        }
    }

    /// Extends the leases `owner` holds (a heartbeat while requests are in flight).
    /// - Returns: rows extended.
    /// - Throws: `RegistryError`.
    @discardableResult
    public func renewLeases(owner: String, leaseMs: Int64, nowMs: Int64) throws -> Int {
        try pool.run { c in
            try c.exec("UPDATE pushseal_outbox SET lease_until = $2 WHERE status = 'sending' AND lease_owner = $1",
                       [.text(owner), .int(nowMs + leaseMs)]).affected
        }
    }

    /// Records final outcomes in one transaction; a 410's token is removed in it too when it was
    /// registered before the 410's timestamp (with its audit row). A row `owner` no longer holds
    /// (its lease was reaped) is left alone.
    /// - Returns: the ids whose outcome was written now (rows `owner` still held) and, per 410
    ///   completion, what it did to the token (by notification id).
    /// - Throws: `RegistryError` `.unavailable`, `.outcomeUnknown`, `.query`.
    @discardableResult
    public func complete(_ items: [Completion], owner: String, nowMs: Int64) throws -> (written: Set<String>, invalidations: [String: DeviceTokenInvalidation]) {
        guard !items.isEmpty else { return ([], [:]) }
        // Groups of distinct ids, each one multi-row UPDATE (a statement per row was a round trip
        // per row): a second completion of one id lands in a later group and, as before, finds
        // the row no longer `sending`.
        var groups: [[Completion]] = [[]]
        var seen = Set<String>()
        for i in items {
            if groups[groups.count - 1].count == Self.rowsPerStatement || !seen.insert(i.id.lowercased()).inserted {
                groups.append([])
                seen = [i.id.lowercased()]
            }
            groups[groups.count - 1].append(i)
        }
        // One statement per group: every row found by its primary key or by hashing, never a
        // nested loop that compares every `sending` row with every completion: the planner,
        // misled by few `sending` rows in its statistics, chose that loop (quadratic: 100-250 ms
        // for 500 completions, the largest share of PostgreSQL's time in bench-gateway's batch
        // rows). The rows are also named by `id = ANY(…)`, so they are found through the primary
        // key: without it the hash join read the whole table (or every `sending` entry of the
        // leases index, dead ones included) for each write, 5-9 ms for a few outcomes once the
        // table held 10,000 rows (bench-gateway's latency row, pg_stat_statements).
        let statements: [(sql: String, params: [PGValue?])] = groups.filter { !$0.isEmpty }.map { group in
            var params: [PGValue?] = [.text(owner), .int(nowMs)]
            var tuples: [String] = []
            for i in group {
                let b = params.count
                tuples.append("($\(b + 1)::uuid, $\(b + 2)::text, $\(b + 3)::integer, $\(b + 4)::text, $\(b + 5)::text, $\(b + 6)::integer)")
                params += [.text(i.id), .text(i.status), i.httpStatus.map { .int(Int64($0)) }, i.reason.map { .text($0) },
                           i.apnsUniqueID.map { .text($0) }, .int(Int64(i.attempts))]
            }
            return ("""
                UPDATE pushseal_outbox o SET status = v.status, http_status = v.http_status, reason = v.reason, apns_unique_id = v.apns_unique_id,
                  attempts = o.attempts + v.attempts, lease_owner = NULL, lease_until = NULL, updated_at = $2, finished_at = $2
                FROM (VALUES \(tuples.joined(separator: ", "))) AS v(id, status, http_status, reason, apns_unique_id, attempts)
                WHERE o.id = v.id AND o.id = ANY($\(params.count + 1)::uuid[]) AND o.status = 'sending' AND o.lease_owner = $1
                RETURNING o.id, o.app_id, o.device_token
                """, params + [.text("{" + group.map(\.id).joined(separator: ",") + "}")])
        }
        // `set_config(…, true)`: for this transaction only, like SET LOCAL, which PostgreSQL
        // refuses with a warning (in its log) outside an explicit transaction block.
        let setting: (sql: String, params: [PGValue?]) = ("SELECT set_config('enable_nestloop', 'off', true)", [])
        /// The written rows of one statement's answer: app and device token by lower-case id.
        func written(_ updated: PGRows) -> [String: (app: String, token: String)] {
            var rowsByID: [String: (app: String, token: String)] = [:]
            for row in updated.rows {
                if let id = row[0], let app = row[1], let token = row[2] { rowsByID[id.lowercased()] = (app, token) }
            }
            return rowsByID
        }
        let nonEmpty = groups.filter { !$0.isEmpty }
        guard items.contains(where: { $0.unregisteredAtMs != nil }) else {
            // No 410 to apply: the setting and every group's statement in one round trip.
            let answers = try pool.run { c in try c.pipeline([setting] + statements) }.dropFirst()
            var done = Set<String>()
            for (group, updated) in zip(nonEmpty, answers) {
                let rowsByID = written(updated)
                for i in group where rowsByID[i.id.lowercased()] != nil { done.insert(i.id) }
            }
            return (done, [:])
        }
        return try pool.transaction { c in
            try c.exec(setting.sql)
            var out: [String: DeviceTokenInvalidation] = [:]
            var done = Set<String>()
            for (group, statement) in zip(nonEmpty, statements) {
                let rowsByID = written(try c.exec(statement.sql, statement.params))
                for i in group {
                    guard let r = rowsByID[i.id.lowercased()] else { continue }
                    done.insert(i.id)
                    guard let ts = i.unregisteredAtMs else { continue }
                    out[i.id] = try invalidate(c, token: r.token, unregisteredAtMs: ts, appID: r.app, nowMs: nowMs)
                }
            }
            return (done, out)
        }
    }

    /// Rows per multi-row INSERT or UPDATE (15 parameters a row for an INSERT: 15,000 of
    /// PostgreSQL's 65,535 at most).
    static let rowsPerStatement = 1000

    /// The 410 rule on `c` (the registry's own, with its audit row).
    func invalidate(_ c: PGConnection, token: String, unregisteredAtMs: Int64, appID: String, nowMs: Int64) throws -> DeviceTokenInvalidation {
        try registry.invalidateDeviceToken(c, token, unregisteredAtMs: unregisteredAtMs, appID: appID, time: nowMs / 1000)
    }

    /// Gives back what `owner` still holds (a drained instance: rows it claimed but did not
    /// send go back to `queued`).
    /// - Parameter ids: the rows to give back (not sent).
    /// - Throws: `RegistryError`.
    @discardableResult
    public func release(_ ids: [String], owner: String, nowMs: Int64) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try pool.transaction { c in
            var n = 0
            for id in ids {
                n += try c.exec("""
                    UPDATE pushseal_outbox SET status = 'queued', lease_owner = NULL, lease_until = NULL, sends = sends - 1, updated_at = $3
                    WHERE id = $1 AND status = 'sending' AND lease_owner = $2
                    """, [.text(id), .text(owner), .int(nowMs)]).affected
            }
            if n > 0 { try c.exec("NOTIFY \(Self.channel)") }
            return n
        }
    }

    /// Returns the rows of expired leases (their instance died or stalled): with a collapse id
    /// to `queued` (resent; the phone shows it once), without to `failed` `mayHaveBeenDelivered`;
    /// a retract always to `queued` (it shows nothing; the device's replay guard drops a second copy).
    /// A dead instance's requests were never recorded: each of its claims counts as one attempt
    /// (`attempts` becomes at least `sends`), so a row that may have been delivered never reads
    /// 0 attempts. Also drops idempotency keys older than 24 h.
    /// - Returns: how many were requeued, and the rows ended `failed` `mayHaveBeenDelivered`
    ///   (id, recipient, `apns-id`, attempts) for the log.
    /// - Throws: `RegistryError`.
    @discardableResult
    public func reap(nowMs: Int64) throws -> (requeued: Int, failed: [(id: String, recipient: String, apnsID: String, attempts: Int)]) {
        try pool.transaction { c in
            let requeued = try c.exec("""
                UPDATE pushseal_outbox SET status = 'queued', lease_owner = NULL, lease_until = NULL, updated_at = $1,
                  attempts = greatest(attempts, sends)
                WHERE status = 'sending' AND lease_until < $1 AND (collapse_id IS NOT NULL OR kind = 'retract')
                """, [.int(nowMs)]).affected
            let failed = try c.exec("""
                UPDATE pushseal_outbox SET status = 'failed', reason = 'mayHaveBeenDelivered', lease_owner = NULL, lease_until = NULL,
                  updated_at = $1, finished_at = $1, attempts = greatest(attempts, sends)
                WHERE status = 'sending' AND lease_until < $1 AND collapse_id IS NULL AND kind <> 'retract'
                RETURNING id, recipient, apns_id, attempts
                """, [.int(nowMs)])
            try c.exec("DELETE FROM pushseal_idempotency WHERE created_at <= $1", [.int(nowMs - Self.idempotencyLifetimeMs)])
            if requeued > 0 { try c.exec("NOTIFY \(Self.channel)") }
            let ended = try failed.rows.indices.map { r in
                (id: failed.rows[r][0] ?? "", recipient: failed.rows[r][1] ?? "", apnsID: failed.rows[r][2] ?? "", attempts: Int(try failed.int(r, 3) ?? 0))
            }
            return (requeued, ended)
        }
    }

    /// Deletes up to `limit` finished rows (any final status) whose `finished_at` is before
    /// `cutoffMs`, oldest first; rows another instance is deleting at the same moment are
    /// skipped (`FOR UPDATE SKIP LOCKED`), so instances never wait for each other. Queued and
    /// sending rows are never deleted. Their idempotency answers (24 h) and a device's copy are
    /// not affected; `GET /v1/notifications/{id}` and retracts answer `notFound` afterwards.
    /// - Returns: the rows deleted.
    /// - Throws: `RegistryError`.
    public func deleteFinished(before cutoffMs: Int64, limit: Int) throws -> Int {
        guard limit > 0 else { return 0 }
        return try pool.run { c in
            try c.exec("""
                DELETE FROM pushseal_outbox WHERE id IN (
                  SELECT id FROM pushseal_outbox WHERE finished_at IS NOT NULL AND finished_at < $1
                  ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED)
                """, [.int(cutoffMs), .int(Int64(limit))]).affected
        }
    }

    // MARK: Lookups

    /// The status of one notification, `nil` when unknown.
    /// - Throws: `RegistryError`.
    public func status(id: String) throws -> Status? {
        let rows: PGRows
        do {
            rows = try pool.run { c in
                try c.exec("""
                    SELECT id, app_id, recipient, status, apns_id, apns_unique_id, http_status, reason, attempts, sends, created_at, updated_at, finished_at
                    FROM pushseal_outbox WHERE id = $1
                    """, [.text(id)])
            }
        } catch let e as RegistryError where e.sqlState == "22P02" {
            return nil // not a UUID: no such notification
        }
        guard !rows.rows.isEmpty else { return nil }
        let v = rows.rows[0]
        guard let i = v[0], let app = v[1], let r = v[2], let s = v[3], let apns = v[4] else { throw RegistryError(.corrupt, "an outbox row does not decode") }
        return Status(id: i, appID: app, recipient: r, status: s, apnsID: apns, apnsUniqueID: v[5], httpStatus: try rows.int(0, 6).map { Int($0) },
                      reason: v[7], attempts: Int(try rows.int(0, 8) ?? 0), sends: Int(try rows.int(0, 9) ?? 0),
                      createdAtMs: try rows.int(0, 10) ?? 0, updatedAtMs: try rows.int(0, 11) ?? 0, finishedAtMs: try rows.int(0, 12))
    }

    /// Ends the queued notifications of a recipient unsent (`cancelled`, reason `forgotten`):
    /// `DELETE /v1/devices/{recipient}`. Rows already being sent finish.
    /// - Returns: the rows cancelled (after the commit).
    /// - Throws: `RegistryError`.
    @discardableResult
    public func cancelQueued(appID: String, recipient: String, nowMs: Int64) throws -> [CancelledRow] {
        try pool.run { c in
            Self.cancelledRows(try c.exec("""
                UPDATE pushseal_outbox SET status = 'cancelled', reason = 'forgotten', updated_at = $3, finished_at = $3
                WHERE app_id = $1 AND recipient = $2 AND status = 'queued'
                RETURNING id, recipient, apns_id, attempts
                """, [.text(appID), .text(recipient), .int(nowMs)]))
        }
    }

    /// Queue depth (`queued` rows), rows being sent, and the age of the oldest queued row (ms; 0
    /// when none) of `appID` and `environment` (the rows the instance's worker claims), for metrics.
    /// - Throws: `RegistryError`.
    public func queueStatistics(appID: String, environment: DeviceTokenEnvironment, nowMs: Int64) throws -> (queued: Int, sending: Int, oldestQueuedAgeMs: Int64) {
        let rows = try pool.run { c in
            try c.exec("""
                SELECT count(*) FILTER (WHERE status = 'queued'), count(*) FILTER (WHERE status = 'sending'),
                       min(created_at) FILTER (WHERE status = 'queued')
                FROM pushseal_outbox WHERE status IN ('queued', 'sending') AND app_id = $1 AND environment = $2
                """, [.text(appID), .text(environment.rawValue)])
        }
        let oldest = try rows.int(0, 2)
        return (Int(try rows.int(0, 0) ?? 0), Int(try rows.int(0, 1) ?? 0), oldest.map { max(0, nowMs - $0) } ?? 0)
    }

    // MARK: LISTEN

    /// A connection that `LISTEN`s on ``channel``: ``wait(timeoutMs:)`` returns when a
    /// notification arrives (an enqueue committed) or the time is up — the workers' wake-up, with
    /// polling as the fallback (a lost connection is made again at the next wait).
    public final class Listener: @unchecked Sendable {
        private let conninfo: String
        private var connection: PGConnection?
        private let lock = PosixLock()
        private let wakeUp: WakeUpPipe?
        private let interrupted = Locked(false)

        init(conninfo: String) {
            self.conninfo = conninfo
            wakeUp = try? WakeUpPipe()
        }

        /// Waits up to `timeoutMs` for a notification; `true` when one came (or the connection
        /// had to be made again, or ``interrupt()`` was called: the caller looks anyway); `false`
        /// at the time-out or after a ``wake()``.
        public func wait(timeoutMs: Int) -> Bool {
            lock.withLock {
                if interrupted.withLock({ $0 }) { return true }
                let wasListening = connection?.isOK == true
                guard let c = connectedOrNil() else {
                    pauseThread(seconds: Double(min(timeoutMs, 100)) / 1000)
                    return true
                }
                // A new LISTEN may have missed a NOTIFY sent before it: the caller looks again first.
                if !wasListening { return true }
                if Self.drain(c) { return true }
                let fd = PQsocket(c.conn)
                guard fd >= 0 else { connection = nil; return true }
                let set = PollSet()
                set.add(fd, read: true, write: false)
                if let w = wakeUp { set.add(w.readEnd, read: true, write: false) }
                _ = try? set.wait(timeoutMilliseconds: Int32(clamping: timeoutMs))
                wakeUp?.drain()
                if PQconsumeInput(c.conn) == 0 { connection = nil; return true }
                return Self.drain(c)
            }
        }

        /// Ends a ``wait(timeoutMs:)`` in progress (or the next one) once, returning `false`
        /// unless a notification came too: the worker has something else to do (outcomes to write).
        public func wake() {
            wakeUp?.wake()
        }

        /// Ends a ``wait(timeoutMs:)`` in progress, and every later one at once (a draining worker).
        public func interrupt() {
            interrupted.withLock { $0 = true }
            wakeUp?.wake()
        }

        /// Closes the connection.
        public func close() { lock.withLock { connection = nil } }

        private func connectedOrNil() -> PGConnection? {
            if let c = connection, c.isOK { return c }
            connection = nil
            guard let c = try? PGConnection(conninfo), (try? c.exec("LISTEN \(PostgresOutbox.channel)")) != nil else { return nil }
            connection = c
            return c
        }

        /// Takes every pending notification; `true` when there was one.
        private static func drain(_ c: PGConnection) -> Bool {
            var any = false
            while let n = PQnotifies(c.conn) {
                PQfreemem(n)
                any = true
            }
            return any
        }
    }

    /// A new listener on this registry's database.
    public func listener() -> Listener { Listener(conninfo: pool.conninfo) }

    // MARK: Provider tokens

    /// One provider token per (team, key) for every instance: returns the stored token while it
    /// is younger than `refreshAfterSeconds` (and not the `rejectedGeneration`); else mints one
    /// with `mint` under the row's lock (`SELECT … FOR UPDATE`), never sooner than 20 minutes
    /// after the last mint fleet-wide (then `nil` when the stored one was rejected). The JWT is
    /// stored sealed under the KEK (AES-256-GCM, AAD naming team and key).
    /// - Parameters:
    ///   - mint: makes a token: (`iat` seconds) → JWT; called at most once per call.
    /// - Returns: (JWT, `iat`, generation, whether this call minted it).
    /// - Throws: `RegistryError` (`.kekRequired` without a KEK); `mint`'s errors.
    public func providerToken(teamID: String, keyID: String, refreshAfterSeconds: Int64, rejectedGeneration: Int64?, nowSeconds: Int64,
                              mint: (Int64) throws -> String) throws -> (jwt: String, issuedAt: Int64, generation: Int64, minted: Bool)? {
        guard let kek else {
            throw RegistryError(.kekRequired, "sharing provider tokens needs the key-encryption key: give --kek-file F")
        }
        let aad = Array("pushseal-provider-token-v1".utf8) + [0] + Array(teamID.utf8) + [0] + Array(keyID.utf8)
        return try pool.transaction { c in
            try c.exec("INSERT INTO pushseal_provider_tokens (team_id, key_id) VALUES ($1, $2) ON CONFLICT DO NOTHING", [.text(teamID), .text(keyID)])
            let rows = try c.exec("SELECT jwt, issued_at, generation, minted_at FROM pushseal_provider_tokens WHERE team_id = $1 AND key_id = $2 FOR UPDATE",
                                  [.text(teamID), .text(keyID)])
            let generation = try rows.int(0, 2) ?? 0
            if let sealed = rows.rows[0][0], let issued = try rows.int(0, 1), let mintedAt = try rows.int(0, 3) {
                let age = nowSeconds - mintedAt
                if generation != rejectedGeneration, age < refreshAfterSeconds, let jwt = try Self.openJWT(sealed, kek: kek, aad: aad) {
                    return (jwt, issued, generation, false)
                }
                if age < 20 * 60 {
                    // The fleet minted less than 20 minutes ago: never again so soon.
                    guard generation != rejectedGeneration, let jwt = try Self.openJWT(sealed, kek: kek, aad: aad) else { return nil }
                    return (jwt, issued, generation, false)
                }
            }
            let jwt = try mint(nowSeconds)
            let box = try AES256GCM.seal(Array(jwt.utf8), with: kek.key, authenticating: aad).combined
            try c.exec("""
                UPDATE pushseal_provider_tokens SET jwt = $3, issued_at = $4, generation = generation + 1, minted_at = $4, mint_count = mint_count + 1
                WHERE team_id = $1 AND key_id = $2
                """, [.text(teamID), .text(keyID), .text(Hex.encode(box)), .int(nowSeconds)])
            return (jwt, nowSeconds, generation + 1, true)
        }
    }

    /// Provider tokens minted for (team, key) fleet-wide.
    /// - Throws: `RegistryError`.
    public func providerTokenMints(teamID: String, keyID: String) throws -> Int64 {
        let rows = try pool.run { c in
            try c.exec("SELECT mint_count FROM pushseal_provider_tokens WHERE team_id = $1 AND key_id = $2", [.text(teamID), .text(keyID)])
        }
        return rows.rows.isEmpty ? 0 : try rows.int(0, 0) ?? 0
    }

    static func openJWT(_ hex: String, kek: KeyEncryptionKey, aad: [UInt8]) throws -> String? {
        guard let bytes = Hex.decode(hex), let box = try? SealedBox(combined: bytes),
              let plain = try? AES256GCM.open(box, with: kek.key, authenticating: aad) else { return nil }
        return String(decoding: plain, as: UTF8.self)
    }
}
