import PushSealJSON
import PushSealWire
import PushSealSystem

/// A revocation record (security review F4): tells a device that key ids of an app are revoked,
/// so a stolen key stops opening (and forging) on the device too, not only on the server.
///
/// JSON (the iOS reference's `PushSealDeviceKeys.importRevocation(recordJSON:appID:)` reads the
/// same): `{"format":"pushseal-revocation","version":1,"appId":"com.example.app",
/// "keyIds":["…"],"revokedAt":1796000000}` — `appId` a bundle identifier, `keyIds` 1 to 1,000
/// key ids (A-Z a-z 0-9 _ -, 1-64 characters), `revokedAt` Unix seconds (UTC). Unknown members
/// are refused. It holds no key bytes, so it may travel over any authenticated channel that
/// does not depend on the revoked key.
public struct RevocationRecord: Sendable, Hashable {
    /// The record's `format` value.
    public static let format = "pushseal-revocation"
    /// Most key ids one record lists.
    public static let maxKeyIDCount = 1000

    /// The app's bundle identifier.
    public var appID: String
    /// The revoked key ids, in record order, without repeats.
    public var keyIDs: [String]
    /// When they were revoked, seconds since 1970 UTC.
    public var revokedAt: Int64

    /// The revocation list of `appID` (FORMAT.md §V.12, what `push-keys revocations export`
    /// writes and `GET /v1/revocations` serves) from its revoked key ids: one record per
    /// revocation time (oldest first, ids in the order given), at most ``maxKeyIDCount`` ids
    /// each; `[]` when nothing is revoked.
    /// - Parameter revoked: each revoked key id (registrations and sender keys) and when, Unix seconds.
    public static func list(appID: String, revoked: [(keyID: String, revokedAt: Int64)]) -> [RevocationRecord] {
        var byTime: [Int64: [String]] = [:]
        for r in revoked { byTime[r.revokedAt, default: []].append(r.keyID) }
        var out: [RevocationRecord] = []
        for time in byTime.keys.sorted() {
            let ids = byTime[time] ?? []
            var start = 0
            while start < ids.count {
                let end = min(start + maxKeyIDCount, ids.count)
                out.append(RevocationRecord(appID: appID, keyIDs: Array(ids[start..<end]), revokedAt: time))
                start = end
            }
        }
        return out
    }

    /// Creates a record.
    public init(appID: String, keyIDs: [String], revokedAt: Int64) {
        self.appID = appID
        self.keyIDs = keyIDs
        self.revokedAt = revokedAt
    }

    /// The record as compact JSON, members in the order of FORMAT.md §V.12 (`format`,
    /// `version`, `appId`, `keyIds`, `revokedAt`): what `push-keys revocations export` writes.
    /// - Throws: `JSONError` from the writer (not for these members, which hold no numbers that can fail).
    public func encoded() throws -> [UInt8] {
        let value = JSONValue.object(JSONObject([
            ("format", .string(Self.format)), ("version", .integer(1)), ("appId", .string(appID)),
            ("keyIds", .array(keyIDs.map { .string($0) })), ("revokedAt", .integer(revokedAt)),
        ]))
        return try JSONWriter.serialize(value)
    }

    /// Whether `bytes` look like a revocation record (a JSON object whose `format` is
    /// `pushseal-revocation`), so `push-keys import` can tell it from a key record.
    public static func isRevocationRecord(_ bytes: [UInt8]) -> Bool {
        guard case .object(let o)? = try? JSONReader.parse(bytes) else { return false }
        return o["format"]?.stringValue == format
    }

    /// Reads a record.
    /// - Throws: `KeysError` `.malformedRecord` naming the member (wrong type, unknown member,
    ///   wrong format or version, no key ids or more than ``maxKeyIDCount``), `.invalidName`
    ///   (an app id or key id that breaks the naming rules), `.timeOutOfRange` (`revokedAt`).
    public init(json bytes: [UInt8]) throws {
        let value: JSONValue
        do {
            value = try JSONReader.parse(bytes, limits: JSONReader.Limits(maxByteCount: 1 << 20, maxDepth: 4))
        } catch let e as JSONError {
            throw KeysError(.malformedRecord, "revocation record: not valid JSON (\(e.code.name))")
        }
        guard case .object(let o) = value else { throw KeysError(.malformedRecord, "revocation record: not a JSON object") }
        for m in o where !["format", "version", "appId", "keyIds", "revokedAt"].contains(m.key) {
            throw KeysError(.malformedRecord, "revocation record: unknown member \(PushNotification.excerpt(m.key)) (known: format, version, appId, keyIds, revokedAt)")
        }
        guard o["format"]?.stringValue == Self.format else { throw KeysError(.malformedRecord, "revocation record: format must be \"\(Self.format)\"") }
        guard o["version"]?.integerValue == 1 else { throw KeysError(.malformedRecord, "revocation record: version must be 1") }
        guard let appID = o["appId"]?.stringValue else { throw KeysError(.malformedRecord, "revocation record: appId must be a string") }
        try KeyID.validateAppID(appID)
        guard case .array(let ids)? = o["keyIds"], !ids.isEmpty, ids.count <= Self.maxKeyIDCount else {
            throw KeysError(.malformedRecord, "revocation record: keyIds must be an array of 1 to \(Self.maxKeyIDCount) key ids")
        }
        var keyIDs: [String] = []
        for v in ids {
            guard let id = v.stringValue else { throw KeysError(.malformedRecord, "revocation record: keyIds must hold strings") }
            try KeyID.validate(id)
            if !keyIDs.contains(id) { keyIDs.append(id) }
        }
        guard let revokedAt = o["revokedAt"]?.integerValue else {
            throw KeysError(.malformedRecord, "revocation record: revokedAt must be an integer (seconds since 1970 UTC)")
        }
        try KeyTime.checkTime(revokedAt)
        self.init(appID: appID, keyIDs: keyIDs, revokedAt: revokedAt)
    }
}
