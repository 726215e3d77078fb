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

    /// Creates a record.
    public init(id: String, name: String, scopes: [String], createdAt: Int64, revokedAt: Int64?) {
        self.id = id
        self.name = name
        self.scopes = scopes
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}

/// push-gateway's API keys (`pushseal_gateway_api_keys`, migration 7): a row per key with its
/// SHA-256, name, scopes and revocation time. The key's bytes are never stored or logged.
extension PostgresKeyStore {
    /// Stores a new key's record.
    /// - Parameters:
    ///   - record: id, name, scopes, creation time (``GatewayAPIKeyRecord/revokedAt`` ignored).
    ///   - keySHA256: the SHA-256 of the key's secret bytes (32 bytes).
    /// - Throws: `RegistryError` `.query` (a repeated id or hash, a name or scope out of range), `.unavailable`.
    public func insertGatewayAPIKey(_ record: GatewayAPIKeyRecord, keySHA256: [UInt8]) throws {
        _ = try pool.run { c in
            try c.exec("INSERT INTO pushseal_gateway_api_keys (id, name, key_sha256, scopes, created_at) VALUES ($1, $2, $3, $4, $5)",
                       [.text(record.id), .text(record.name), .bytes(keySHA256), .text(record.scopes.joined(separator: ",")), .int(record.createdAt)])
        }
    }

    /// Every key's record, oldest first (revoked ones included).
    /// - Throws: `RegistryError`.
    public func gatewayAPIKeys() throws -> [GatewayAPIKeyRecord] {
        let rows = try pool.run { c in
            try c.exec("SELECT id, name, scopes, created_at, revoked_at FROM pushseal_gateway_api_keys ORDER BY created_at, id")
        }
        return try rows.rows.indices.map { try Self.apiKey(rows, $0) }
    }

    /// The record of the key whose SHA-256 is `keySHA256`, if it exists and is not revoked.
    /// - Throws: `RegistryError`.
    public func gatewayAPIKey(sha256 keySHA256: [UInt8]) throws -> GatewayAPIKeyRecord? {
        let rows = try pool.run { c in
            try c.exec("SELECT id, name, scopes, created_at, revoked_at FROM pushseal_gateway_api_keys WHERE key_sha256 = $1 AND revoked_at IS NULL",
                       [.bytes(keySHA256)])
        }
        return try rows.rows.isEmpty ? nil : Self.apiKey(rows, 0)
    }

    /// Revokes key `id` (from then on no instance accepts it).
    /// - Returns: `false` when there is no such key or it was already revoked.
    /// - Throws: `RegistryError`.
    public func revokeGatewayAPIKey(id: String, at time: Int64) throws -> Bool {
        let rows = try pool.run { c in
            try c.exec("UPDATE pushseal_gateway_api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL", [.text(id), .int(time)])
        }
        return rows.affected == 1
    }

    /// Runs `SELECT 1` (a readiness probe): the database answers and the schema is this build's.
    /// - Throws: `RegistryError` `.unavailable`, `.schemaTooOld`, `.schemaTooNew`.
    public func checkReachable() throws {
        try pool.run(maxWaitSeconds: 0) { c in try RegistrySchema.check(c) }
    }

    private static func apiKey(_ rows: PGRows, _ r: Int) throws -> GatewayAPIKeyRecord {
        guard let id = rows.rows[r][0], let name = rows.rows[r][1], let scopes = rows.rows[r][2], let created = try rows.int(r, 3) else {
            throw RegistryError(.corrupt, "an API key row does not decode")
        }
        return GatewayAPIKeyRecord(id: id, name: name, scopes: scopes.split(separator: ",").map(String.init), createdAt: created,
                                   revokedAt: try rows.int(r, 4))
    }
}
