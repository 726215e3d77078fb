import PushSealSystem

/// One push-gateway API key as the registry holds it: never the key, only its SHA-256.
public struct GatewayAPIKeyRecord: Sendable, Hashable {
    /// The key's public id (16 hex digits; the key itself begins `psk_<id>_`).
    public let id: String
    /// A name for people (who or what uses it), 1–128 characters.
    public let name: String
    /// The scopes: any of `send`, `register`, `admin`.
    public let scopes: [String]
    /// When it was made, seconds since 1970.
    public let createdAt: Int64
    /// When it was revoked, seconds since 1970; `nil` while it works.
    public let revokedAt: Int64?
    /// `false` for a row ``PostgresKeyStore/gatewayAPIKeys()`` lists although it fails its
    /// authentication under the KEK (written without it, or a key of before schema 12 that the
    /// migrate applying it did not tag): never accepted; `keys revoke` disables it.
    public let authentic: Bool

    /// Creates a record.
    public init(id: String, name: String, scopes: [String], createdAt: Int64, revokedAt: Int64?, authentic: Bool = true) {
        self.id = id
        self.name = name
        self.scopes = scopes
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.authentic = authentic
    }
}

/// push-gateway's API keys (`pushseal_gateway_api_keys`, migration 7): a row per key with its
/// SHA-256, name, scopes and revocation time. The key's bytes are never stored or logged. Since
/// schema 12 each row carries a ``RegistryRowMAC`` tag (`row_mac`) under a key derived from the
/// KEK over id, name, SHA-256, scopes, creation and revocation time: a key added, widened or
/// un-revoked by whoever can write the database without the KEK is refused (`.corrupt`), so the
/// role cannot give itself the `register` or `send` scope. Writing and reading keys needs the KEK.
extension PostgresKeyStore {
    /// What an API key row's tag covers, in order.
    static func apiKeyFields(_ r: GatewayAPIKeyRecord, keySHA256: [UInt8]) -> [RegistryRowField] {
        [.text(r.id), .text(r.name), .bytes(keySHA256), .text(r.scopes.joined(separator: ",")), .int(r.createdAt), .int(r.revokedAt)]
    }

    /// The columns every API key read selects (``apiKey(_:_:verified:)`` decodes and verifies them).
    static let apiKeyColumns = "id, name, scopes, created_at, revoked_at, key_sha256, row_mac"

    /// Stores a new key's record, tagged under the KEK.
    /// - Parameters:
    ///   - record: id, name, scopes, creation time (``GatewayAPIKeyRecord/revokedAt`` ignored).
    ///   - keySHA256: the SHA-256 of the key's secret bytes (32 bytes).
    /// - Throws: `RegistryError` `.kekRequired`, `.query` (a repeated id or hash, a name or scope out of range), `.unavailable`.
    public func insertGatewayAPIKey(_ record: GatewayAPIKeyRecord, keySHA256: [UInt8]) throws {
        let fresh = GatewayAPIKeyRecord(id: record.id, name: record.name, scopes: record.scopes, createdAt: record.createdAt, revokedAt: nil)
        let tag = try rowMAC(table: AuthenticatedTable.apiKeys).tag(Self.apiKeyFields(fresh, keySHA256: keySHA256))
        _ = try pool.run { c in
            try c.exec("INSERT INTO pushseal_gateway_api_keys (id, name, key_sha256, scopes, created_at, row_mac) VALUES ($1, $2, $3, $4, $5, $6)",
                       [.text(record.id), .text(record.name), .bytes(keySHA256), .text(record.scopes.joined(separator: ",")), .int(record.createdAt), .bytes(tag)])
        }
    }

    /// Every key's record, oldest first (revoked ones included), each row verified: one that
    /// fails is listed with ``GatewayAPIKeyRecord/authentic`` `false` (so an operator sees it and
    /// can revoke it), never accepted by ``gatewayAPIKey(sha256:)``.
    /// - Throws: `RegistryError` `.corrupt` (a row does not decode), `.kekRequired`, `.unavailable`.
    public func gatewayAPIKeys() throws -> [GatewayAPIKeyRecord] {
        _ = try rowMAC(table: AuthenticatedTable.apiKeys)  // no lookup without the KEK
        return try pool.run { c in try gatewayAPIKeys(c, strict: false) }
    }

    /// ``gatewayAPIKeys()`` on `c`; `strict`: a row failing its tag throws `.corrupt` (``rewrap(to:)``'s proof).
    func gatewayAPIKeys(_ c: PGConnection, strict: Bool) throws -> [GatewayAPIKeyRecord] {
        let rows = try c.exec("SELECT \(Self.apiKeyColumns) FROM pushseal_gateway_api_keys ORDER BY created_at, id")
        return try rows.rows.indices.map { r in
            if strict { return try apiKey(rows, r) }
            do {
                return try apiKey(rows, r)
            } catch let e as RegistryError where e.code == .corrupt {
                let k = try apiKey(rows, r, verified: false)
                return GatewayAPIKeyRecord(id: k.id, name: k.name, scopes: k.scopes, createdAt: k.createdAt, revokedAt: k.revokedAt, authentic: false)
            }
        }
    }

    /// The record of the key whose SHA-256 is `keySHA256`, if it exists and is not revoked.
    /// - Throws: `RegistryError` `.corrupt` (the row fails its tag: written without the KEK),
    ///   `.kekRequired`, `.unavailable`.
    public func gatewayAPIKey(sha256 keySHA256: [UInt8]) throws -> GatewayAPIKeyRecord? {
        _ = try rowMAC(table: AuthenticatedTable.apiKeys)
        let rows = try pool.run { c in
            try c.exec("SELECT \(Self.apiKeyColumns) FROM pushseal_gateway_api_keys WHERE key_sha256 = $1 AND revoked_at IS NULL",
                       [.bytes(keySHA256)])
        }
        return try rows.rows.isEmpty ? nil : apiKey(rows, 0)
    }

    /// Revokes key `id` (from then on no instance accepts it): the row gets its revocation time
    /// and a new tag in one transaction. A row failing its tag is revoked too (a revoked row is
    /// never accepted, and its new tag covers the revocation, so it cannot be undone without the
    /// KEK): the way to disable a key written without the KEK.
    /// - Returns: `false` when there is no such key or it was already revoked.
    /// - Throws: `RegistryError` `.corrupt` (the row does not decode), `.kekRequired`, `.unavailable`.
    public func revokeGatewayAPIKey(id: String, at time: Int64) throws -> Bool {
        let mac = try rowMAC(table: AuthenticatedTable.apiKeys)
        return try pool.transaction { c in
            let rows = try c.exec("SELECT \(Self.apiKeyColumns) FROM pushseal_gateway_api_keys WHERE id = $1 AND revoked_at IS NULL FOR UPDATE", [.text(id)])
            guard !rows.rows.isEmpty else { return false }
            let current = try apiKey(rows, 0, verified: false)
            guard let sha256 = try rows.bytes(0, 5) else { throw RegistryError(.corrupt, "an API key row does not decode") }
            let revoked = GatewayAPIKeyRecord(id: current.id, name: current.name, scopes: current.scopes, createdAt: current.createdAt, revokedAt: time)
            try c.exec("UPDATE pushseal_gateway_api_keys SET revoked_at = $2, row_mac = $3 WHERE id = $1",
                       [.text(id), .int(time), .bytes(try mac.tag(Self.apiKeyFields(revoked, keySHA256: sha256)))])
            return true
        }
    }

    /// Runs `SELECT 1` (a readiness probe): the database answers and the schema is this build's.
    /// - Throws: `RegistryError` `.unavailable`, `.schemaTooOld`, `.schemaTooNew`.
    public func checkReachable() throws {
        try pool.run(maxWaitSeconds: 0) { c in try RegistrySchema.check(c) }
    }

    /// Row `r` of a read of ``apiKeyColumns``, its tag verified (unless `verified` is `false`).
    /// - Throws: `RegistryError` `.corrupt`, `.kekRequired`.
    func apiKey(_ rows: PGRows, _ r: Int, verified: Bool = true) throws -> GatewayAPIKeyRecord {
        let (record, sha256) = try Self.decodeAPIKey(rows, r)
        if verified {
            try rowMAC(table: AuthenticatedTable.apiKeys).verify(try rows.bytes(r, 6), Self.apiKeyFields(record, keySHA256: sha256), row: record.id)
        }
        return record
    }

    /// Row `r` of a read of ``apiKeyColumns`` and its key's SHA-256, unverified.
    /// - Throws: `RegistryError` `.corrupt` (the row does not decode).
    static func decodeAPIKey(_ rows: PGRows, _ r: Int) throws -> (record: GatewayAPIKeyRecord, sha256: [UInt8]) {
        guard let id = rows.rows[r][0], let name = rows.rows[r][1], let scopes = rows.rows[r][2], let created = try rows.int(r, 3),
              let sha256 = try rows.bytes(r, 5) else {
            throw RegistryError(.corrupt, "a pushseal_gateway_api_keys row does not decode")
        }
        return (GatewayAPIKeyRecord(id: id, name: name, scopes: scopes.split(separator: ",").map(String.init), createdAt: created,
                                    revokedAt: try rows.int(r, 4)), sha256)
    }
}
