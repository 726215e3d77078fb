import PushSealKeyRecords

/// Reading the audit trail (`pushseal_audit`) back: `push-keys audit` (issue 24), so an operator
/// answers "why did this user stop getting notifications" without SQL.
extension PostgresKeyStore {
    /// The audit lines (JSON, as written) of `recipient`, oldest first; of one app with `appID`.
    /// Every key, registration, sender key and device token change of the recipient is one line.
    /// - Parameters:
    ///   - recipient: the recipient (one app installation); `-` names the app's sender keys.
    ///   - appID: only this app's lines; `nil` for every app.
    /// - Returns: the lines.
    /// - Throws: `KeysError` `.invalidName`; `RegistryError` `.unavailable`, `.query`.
    public func auditLines(recipient: String, appID: String?) throws -> [String] {
        if recipient != "-" { try KeyID.validateRecipient(recipient) }
        if let appID { try KeyID.validateAppID(appID) }
        let rows = try pool.run { c in
            if let appID {
                return try c.exec("SELECT line FROM pushseal_audit WHERE recipient = $1 AND app_id = $2 ORDER BY id", [.text(recipient), .text(appID)])
            }
            return try c.exec("SELECT line FROM pushseal_audit WHERE recipient = $1 ORDER BY id", [.text(recipient)])
        }
        return rows.rows.compactMap { $0.first ?? nil }
    }
}
