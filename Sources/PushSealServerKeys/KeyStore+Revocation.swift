import PushSealJSON
public import PushSealKeyRecords

// Revocation records applied to the file keychain (moved from RevocationRecord.swift).
extension KeyStore {
    /// What ``importRevocation(_:expectedAppID:now:)`` changed.
    public struct RevocationResult: Sendable {
        /// `(recipient, key id)` of every key now disabled (it was not before), in keyset order.
        public var disabled: [(recipient: String, keyID: String)]
        /// Key ids of the record found in no keyset of the app. A key imported later is not
        /// revoked by an earlier record: import the record again after it.
        public var unknownKeyIDs: [String]
    }

    /// Applies a revocation record to every keyset of its app in this keychain: each listed key
    /// (pending, primary or decryptOnly) becomes `disabled` with `retiredAt` = the earlier of
    /// its own and `revokedAt`, and its bytes are dropped (a disabled key never opens).
    /// Idempotent; audited as `revoke` events with `"source":"revocationRecord"`.
    /// - Parameters:
    ///   - record: the record.
    ///   - expectedAppID: refuse a record for another app id (`push-keys import --app-id`).
    ///   - now: Unix seconds, for the audit.
    /// - Returns: what changed.
    /// - Throws: `KeysError` `.wrongAppID`, `.timeOutOfRange`; `KeychainError`.
    public func importRevocation(_ record: RevocationRecord, expectedAppID: String? = nil, now: Int64 = KeyTime.now()) throws -> RevocationResult {
        try KeyTime.checkTime(now)
        if let expectedAppID, expectedAppID != record.appID {
            throw KeysError(.wrongAppID, "the revocation record is for app id \(record.appID), not \(expectedAppID)")
        }
        var result = RevocationResult(disabled: [], unknownKeyIDs: [])
        var seen = Set<String>()
        for info in try keysets() where info.appID == record.appID {
            _ = try mutate(appID: info.appID, recipient: info.recipient) { ks, _ in
                var events: [AuditEvent] = []
                for i in ks.keys.indices where record.keyIDs.contains(ks.keys[i].info.keyID) {
                    let id = ks.keys[i].info.keyID
                    seen.insert(id)
                    let s = ks.keys[i].info.status
                    guard s != .disabled, s != .destroyed else { continue }
                    ks.keys[i].info.status = .disabled
                    ks.keys[i].info.retiredAt = min(ks.keys[i].info.retiredAt ?? record.revokedAt, record.revokedAt)
                    ks.keys[i].info.notAfter = nil
                    ks.keys[i].secret = nil
                    if ks.rotation?.keyID == id { ks.rotation = nil }
                    result.disabled.append((info.recipient, id))
                    events.append(AuditEvent(event: "revoke", time: now, members: [("keyId", .string(id)), ("previousStatus", .string(s.rawValue)),
                                                                                  ("source", .string("revocationRecord"))]))
                }
                return events
            }
        }
        result.unknownKeyIDs = record.keyIDs.filter { !seen.contains($0) }
        return result
    }
}
