import PushSealKeyRecords
public import PushSealServerKeys
/// The registry as a ``DeviceTokenStore`` (schema version 4): each token a row of
/// `pushseal_device_tokens` (app id, recipient, token, environment, `registered_at` in
/// milliseconds), unique per (app id, token) and per (app id, recipient, environment), so two
/// processes adding at once never leave a token with two owners. An add is one transaction
/// (delete what it replaces, insert), retried when a concurrent add of the same token or
/// recipient made it break a unique index (SQLSTATE 23505); a chunk's lookup is one query per
/// 4,096 recipients; a 410 is one `DELETE … WHERE registered_at < $timestamp`. Every change
/// inserts its audit rows (`addDeviceToken`, `removeDeviceToken`) in its transaction. Each row
/// carries its ``RegistryRowMAC`` tag (schema 5, security review G1): adding and looking up
/// tokens need the KEK (`.kekRequired` without), and a row that fails is refused (`.corrupt`);
/// a 410 deletes without it.
extension PostgresKeyStore: DeviceTokenStore {
    /// Attempts of an add that lost a race on a unique index.
    static let deviceTokenAddAttempts = 3

    /// Adds (or replaces) the token of (app id, recipient, environment) in one transaction.
    /// - Throws: `KeysError` `.invalidDeviceToken`, `.invalidName`, `.timeOutOfRange`; `RegistryError`.
    @discardableResult
    public func addDeviceToken(_ token: String, appID: String, recipient: String, environment: DeviceTokenEnvironment,
                               registeredAtMs: Int64) throws -> [DeviceToken] {
        let token = try DeviceToken.checkAdd(token, appID: appID, recipient: recipient, registeredAtMs: registeredAtMs)
        let added = DeviceToken(appID: appID, recipient: recipient, token: token, environment: environment, registeredAtMs: registeredAtMs)
        var attempt = 1
        while true {
            do {
                return try pool.transaction { c in try addDeviceToken(c, added) }
            } catch let e as RegistryError where e.sqlState == "23505" && attempt < Self.deviceTokenAddAttempts {
                attempt += 1
            }
        }
    }

    /// The body of an add on `c`, inside the caller's transaction: removes what `added`
    /// replaces, inserts it, audits both.
    /// - Returns: the tokens replaced (not `added`'s own earlier registration).
    func addDeviceToken(_ c: PGConnection, _ added: DeviceToken) throws -> [DeviceToken] {
        let rows = try c.exec("""
            DELETE FROM pushseal_device_tokens WHERE app_id = $1 AND (token = $2 OR (recipient = $3 AND environment = $4))
            RETURNING recipient, token, environment, registered_at
            """, [.text(added.appID), .text(added.token), .text(added.recipient), .text(added.environment.rawValue)])
        let tag = try rowMAC(table: AuthenticatedTable.deviceTokens).tag(Self.deviceTokenFields(added))
        try c.exec("INSERT INTO pushseal_device_tokens (app_id, recipient, token, environment, registered_at, row_mac) VALUES ($1, $2, $3, $4, $5, $6)",
                   [.text(added.appID), .text(added.recipient), .text(added.token), .text(added.environment.rawValue), .int(added.registeredAtMs), .bytes(tag)])
        // Rows being deleted are not authenticated: removing them is what the caller asked.
        let replaced = try deviceTokenRows(rows, appID: added.appID, verified: false).filter { !$0.isSameRegistration(as: added) }
        for (owner, change) in KeysetChange.deviceTokenAdd(added, removed: replaced, time: KeyTime.now()) {
            try insertAudit(c, change, appID: added.appID, recipient: owner)
        }
        return replaced
    }

    /// The tokens of (app id, recipient), production first.
    /// - Throws: `KeysError` `.invalidName`; `RegistryError`.
    public func deviceTokens(appID: String, recipient: String) throws -> [DeviceToken] {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        _ = try rowMAC(table: AuthenticatedTable.deviceTokens)  // no lookup without the KEK
        let rows = try pool.run { c in
            try c.exec("SELECT recipient, token, environment, registered_at, row_mac FROM pushseal_device_tokens WHERE app_id = $1 AND recipient = $2",
                       [.text(appID), .text(recipient)])
        }
        return try deviceTokenRows(rows, appID: appID).sorted { $0.environment < $1.environment }
    }

    /// Every token of `appID` (or of every app), sorted by app id, recipient, environment.
    /// - Throws: `KeysError` `.invalidName`; `RegistryError`.
    public func allDeviceTokens(appID: String?) throws -> [DeviceToken] {
        if let appID { try KeyID.validateAppID(appID) }
        _ = try rowMAC(table: AuthenticatedTable.deviceTokens)  // no lookup without the KEK
        return try pool.run { c in try allDeviceTokens(c, appID: appID) }
    }

    /// ``allDeviceTokens(appID:)`` on `c`.
    func allDeviceTokens(_ c: PGConnection, appID: String?) throws -> [DeviceToken] {
        let rows = try c.exec("""
            SELECT recipient, token, environment, registered_at, row_mac, app_id FROM pushseal_device_tokens
            WHERE $1::text IS NULL OR app_id = $1 ORDER BY app_id, recipient, environment
            """, [appID.map { .text($0) }])
        return try rows.rows.indices.map { r in
            guard let app = rows.rows[r][5] else { throw RegistryError(.corrupt, "a device token row does not decode") }
            return try token(rows, r, appID: app)
        }.sorted { ($0.appID, $0.recipient, $0.environment.rawValue) < ($1.appID, $1.recipient, $1.environment.rawValue) }
    }

    /// Each named recipient's token for `environment`: one query per 4,096 recipients.
    /// - Throws: `KeysError` `.invalidName` (the app id); `RegistryError`.
    public func deviceTokens(appID: String, recipients: [String], environment: DeviceTokenEnvironment) throws -> [String: DeviceToken] {
        try KeyID.validateAppID(appID)
        _ = try rowMAC(table: AuthenticatedTable.deviceTokens)  // no lookup without the KEK
        let names = Array(Set(recipients.filter { (try? KeyID.validateRecipient($0)) != nil }))
        var out: [String: DeviceToken] = [:]
        try Self.inStatementParts(names) { part in
            let rows = try pool.run { c in
                try c.execOnGenericPlan("""
                    SELECT recipient, token, environment, registered_at, row_mac FROM pushseal_device_tokens
                    WHERE app_id = $1 AND environment = $2 AND recipient = ANY($3::text[])
                    """, [.text(appID), .text(environment.rawValue), .text(Self.arrayLiteral(part))])
            }
            for t in try deviceTokenRows(rows, appID: appID) { out[t.recipient] = t }
        }
        return out
    }

    /// Applies the 410s in one transaction: per token a `DELETE … WHERE registered_at < $ts`,
    /// and when it removed nothing, a look whether the token is there (kept) or not (unknown).
    /// - Throws: `KeysError` `.invalidName`, `.invalidDeviceToken`, `.timeOutOfRange`; `RegistryError`.
    public func invalidateDeviceTokens(_ unregistrations: [(token: String, unregisteredAtMs: Int64)], appID: String) throws -> [DeviceTokenInvalidation] {
        try KeyID.validateAppID(appID)
        let checked = try DeviceToken.checkUnregistrations(unregistrations)
        let time = KeyTime.now()
        return try pool.transaction { c in
            try checked.map { u in try invalidateDeviceToken(c, u.token, unregisteredAtMs: u.unregisteredAtMs, appID: appID, time: time) }
        }
    }

    /// One checked 410 on `c`, inside the caller's transaction (the outbox applies it in the
    /// transaction that records the notification's outcome): removes the token if registered
    /// before `unregisteredAtMs`, with its audit row.
    /// - Parameter time: Unix seconds of the change (the audit line's).
    func invalidateDeviceToken(_ c: PGConnection, _ token: String, unregisteredAtMs: Int64, appID: String, time: Int64) throws -> DeviceTokenInvalidation {
        let names: [PGValue?] = [.text(appID), .text(token)]
        let deleted = try c.exec("DELETE FROM pushseal_device_tokens WHERE app_id = $1 AND token = $2 AND registered_at < $3 RETURNING recipient, token, environment, registered_at",
                                 names + [.int(unregisteredAtMs)])
        if let t = try deviceTokenRows(deleted, appID: appID, verified: false).first {
            try insertAudit(c, KeysetChange.deviceTokenRemoved(t, reason: .unregistered(unregisteredAtMs), time: time), appID: appID, recipient: t.recipient)
            return .invalidated
        }
        let there = try c.exec("SELECT 1 FROM pushseal_device_tokens WHERE app_id = $1 AND token = $2", names)
        return there.rows.isEmpty ? .unknown : .keptReregistered
    }

    /// Removes the recipient's tokens (all, or `token`) in one transaction with their audit rows
    /// (`removeDeviceToken` `removed`).
    /// - Throws: `KeysError` `.invalidName`, `.invalidDeviceToken`, `.timeOutOfRange`; `RegistryError`.
    @discardableResult
    public func removeDeviceTokens(appID: String, recipient: String, token: String?, time: Int64) throws -> [DeviceToken] {
        let token = try DeviceToken.checkRemove(appID: appID, recipient: recipient, token: token, time: time)
        return try pool.transaction { c in
            let deleted = try c.exec("""
                DELETE FROM pushseal_device_tokens WHERE app_id = $1 AND recipient = $2 AND ($3::text IS NULL OR token = $3)
                RETURNING recipient, token, environment, registered_at
                """, [.text(appID), .text(recipient), token.map { .text($0) }])
            // Rows being deleted are not authenticated: removing them is what the caller asked.
            let removed = try deviceTokenRows(deleted, appID: appID, verified: false).sorted { $0.environment < $1.environment }
            for t in removed { try insertAudit(c, KeysetChange.deviceTokenRemoved(t, reason: .removed, time: time), appID: appID, recipient: recipient) }
            return removed
        }
    }

    // MARK: Rows

    /// Rows of (recipient, token, environment, registered_at, row_mac), each authenticated
    /// (``verifyDeviceToken(_:mac:)``) unless `verified` is `false` (rows being deleted: only
    /// the first four columns are read).
    /// - Throws: `RegistryError` `.corrupt`, `.kekRequired`.
    func deviceTokenRows(_ rows: PGRows, appID: String, verified: Bool = true) throws -> [DeviceToken] {
        try rows.rows.indices.map { try token(rows, $0, appID: appID, verified: verified) }
    }

    private func token(_ rows: PGRows, _ r: Int, appID: String, verified: Bool = true) throws -> DeviceToken {
        guard let recipient = rows.rows[r][0], let token = rows.rows[r][1], let env = rows.rows[r][2].flatMap(DeviceTokenEnvironment.init(rawValue:)),
              let at = try rows.int(r, 3) else {
            throw RegistryError(.corrupt, "a device token row of \(appID) does not decode")
        }
        let t = DeviceToken(appID: appID, recipient: recipient, token: token, environment: env, registeredAtMs: at)
        if verified { try verifyDeviceToken(t, mac: try rows.bytes(r, 4)) }
        return t
    }
}
