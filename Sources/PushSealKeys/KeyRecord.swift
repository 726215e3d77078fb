import Foundation
import PushSealCrypto
import PushSealKeychain

/// The JSON key record exchanged when provisioning (server → device or device → server).
///
/// ```json
/// {"format":"pushseal-key-record","version":1,"appId":"com.example.app","recipient":"alice-iphone",
///  "keys":[{"keyId":"q3Zk_9Ab","status":"primary","createdAt":1767225600,"promotedAt":1767225600,
///           "sealCount":0,"key":"<standard base64 of 32 bytes>"}]}
/// ```
/// `promotedAt`, `retiredAt` and `notAfter` (Unix seconds) appear when set. `key` is present
/// for `pending`, `primary` and `decryptOnly` keys and absent for `disabled` and `destroyed`
/// ones (which travel as tombstones). The record holds key bytes: store it only in a 0600 file.
public struct KeyRecord: Sendable {
    /// `pushseal-key-record`.
    public static let format = "pushseal-key-record"
    /// The app id.
    public var appID: String
    /// The recipient.
    public var recipient: String
    var keys: [ManagedKey]

    /// The keys' metadata (never bytes).
    public var keyInfos: [KeyInfo] { keys.map(\.info) }

    init(appID: String, recipient: String, keys: [ManagedKey]) {
        self.appID = appID
        self.recipient = recipient
        self.keys = keys
    }

    /// The record as UTF-8 JSON plus a newline. It contains key bytes: the caller wipes it
    /// (`SecretBytes.wipe`) after writing it to a 0600 file or a pipe.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        func raw(_ s: String) { out += Array(s.utf8) }
        raw("{\"format\":\"\(Self.format)\",\"version\":1,\"appId\":\(KeyAudit.jsonString(appID)),\"recipient\":\(KeyAudit.jsonString(recipient)),\"keys\":[")
        for (n, k) in keys.enumerated() {
            if n > 0 { raw(",") }
            raw("{\"keyId\":\(KeyAudit.jsonString(k.info.keyID)),\"status\":\"\(k.info.status.rawValue)\",\"createdAt\":\(k.info.createdAt)")
            if let v = k.info.promotedAt { raw(",\"promotedAt\":\(v)") }
            if let v = k.info.retiredAt { raw(",\"retiredAt\":\(v)") }
            if let v = k.info.notAfter { raw(",\"notAfter\":\(v)") }
            raw(",\"sealCount\":\(k.info.sealCount)")
            if let s = k.secret {
                raw(",\"key\":\"")
                s.withUnsafeBytes { Base64.encode($0, into: &out) }
                raw("\"")
            }
            raw("}")
        }
        raw("]}\n")
        return out
    }

    /// Decodes and validates a record.
    /// - Parameter bytes: the JSON (at most 1 MiB).
    /// - Throws: `KeysError` `.malformedRecord` (not JSON, truncated, wrong format or version,
    ///   missing or mistyped field, key not 32 bytes of base64, key on a destroyed key or missing
    ///   on a usable one, more than one primary), `.invalidName` (bad key id, app id or recipient),
    ///   `.duplicateKeyID` (one key id twice).
    public init(decoding bytes: [UInt8]) throws {
        func bad(_ what: String) -> KeysError { KeysError(.malformedRecord, "key record: \(what)") }
        guard bytes.count <= 1 << 20 else { throw bad("larger than 1 MiB") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)), let top = object as? [String: Any] else {
            throw bad("not a JSON object (malformed or truncated)")
        }
        guard top["format"] as? String == Self.format else { throw bad("format is not \"\(Self.format)\"") }
        guard let v = Self.integer(top["version"]), v == 1 else { throw bad("unsupported version (expected 1)") }
        guard let appID = top["appId"] as? String else { throw bad("appId missing or not a string") }
        guard let recipient = top["recipient"] as? String else { throw bad("recipient missing or not a string") }
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        guard let list = top["keys"] as? [Any], !list.isEmpty else { throw bad("keys missing or empty") }
        var keys: [ManagedKey] = []
        var seen = Set<String>()
        for (n, any) in list.enumerated() {
            guard let k = any as? [String: Any] else { throw bad("keys[\(n)] is not an object") }
            guard let id = k["keyId"] as? String else { throw bad("keys[\(n)].keyId missing") }
            try KeyID.validate(id)
            guard seen.insert(id).inserted else { throw KeysError(.duplicateKeyID, "key record: key id \(id) appears twice") }
            guard let st = k["status"] as? String, let status = KeyStatus(rawValue: st) else { throw bad("keys[\(n)].status missing or unknown") }
            guard let created = Self.integer(k["createdAt"]), created >= 0 else { throw bad("keys[\(n)].createdAt missing or not an integer") }
            func opt(_ name: String) throws -> Int64? {
                guard let v = k[name] else { return nil }
                guard let i = Self.integer(v), i >= 0 else { throw bad("keys[\(n)].\(name) is not a non-negative integer") }
                return i
            }
            let seals = try opt("sealCount") ?? 0
            var secret: SecretBytes?
            if let b64 = k["key"] {
                guard status != .destroyed && status != .disabled else { throw bad("keys[\(n)] is \(status) and must not carry key bytes") }
                guard let s = b64 as? String, var data = Data(base64Encoded: s) else { throw bad("keys[\(n)].key is not base64") }
                defer { data.withUnsafeMutableBytes { p in if let base = p.baseAddress { memset(base, 0, p.count) } } }
                guard data.count == AES256GCM.keyByteCount else { throw bad("keys[\(n)].key is \(data.count) bytes, expected 32") }
                secret = data.withUnsafeBytes { SecretBytes(copying: $0) }
            } else if status.canOpen {
                throw bad("keys[\(n)] is \(status) but has no key")
            }
            keys.append(ManagedKey(info: KeyInfo(keyID: id, status: status, createdAt: created, promotedAt: try opt("promotedAt"),
                                                 retiredAt: try opt("retiredAt"), notAfter: try opt("notAfter"), sealCount: UInt64(seals)),
                                   secret: secret))
        }
        guard keys.filter({ $0.info.status == .primary }).count <= 1 else { throw bad("more than one primary key") }
        self.init(appID: appID, recipient: recipient, keys: keys)
    }

    /// An integer JSON value (not a boolean, not a fraction).
    static func integer(_ any: Any?) -> Int64? {
        // Foundation on Linux boxes `true` as `__NSCFBoolean`, which also casts to Int: refuse it by type.
        guard let any, !String(describing: type(of: any)).contains("Boolean"), let i = any as? Int else { return nil }
        return Int64(i)
    }
}

/// Standard base64 with padding, written into a caller's buffer (so key bytes can be wiped).
enum Base64 {
    static let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [table[Int(v >> 18 & 63)], table[Int(v >> 12 & 63)], table[Int(v >> 6 & 63)], table[Int(v & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out += [table[Int(v >> 18 & 63)], table[Int(v >> 12 & 63)], 61, 61]
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [table[Int(v >> 18 & 63)], table[Int(v >> 12 & 63)], table[Int(v >> 6 & 63)], 61]
        }
    }
}

extension KeyStore {
    /// Exports a keyset (or one key of it) as a key record for the other side.
    /// - Parameters:
    ///   - keyID: one key, or `nil` for every key (disabled and destroyed ones as tombstones,
    ///     without bytes).
    /// - Throws: `KeysError` `.unknownKeyset`, `.unknownKey`, `.invalidName`; `KeychainError`.
    public func exportRecord(appID: String, recipient: String, keyID: String? = nil) throws -> KeyRecord {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        if let keyID { try KeyID.validate(keyID) }
        guard let ks = try load(appID: appID, recipient: recipient) else { throw unknownKeyset(appID, recipient) }
        var keys = ks.keys
        if let keyID {
            keys = keys.filter { $0.info.keyID == keyID }
            guard !keys.isEmpty else { throw KeysError(.unknownKey, "keyset \(appID)/\(recipient) has no key \(keyID)") }
        }
        for i in keys.indices where !keys[i].info.status.canOpen { keys[i].secret = nil }
        return KeyRecord(appID: appID, recipient: recipient, keys: keys)
    }

    /// What ``importRecord(_:expectedAppID:graceSeconds:now:)`` did.
    public struct ImportResult: Sendable {
        /// The keyset after the import.
        public var keyset: KeysetInfo
        /// `true` when the keyset was created by this import.
        public var created: Bool
        /// Key ids added or whose status moved forward; empty when the record was already known.
        public var changedKeyIDs: [String]
    }

    /// Imports a key record into this keychain (creating the keyset if needed). Idempotent:
    /// importing the same record twice changes nothing the second time. All-or-nothing: any
    /// error leaves the keyset exactly as it was.
    /// - Parameters:
    ///   - record: the decoded record.
    ///   - expectedAppID: if given, the record must be for this app id. Independently, when the
    ///     keychain identity has an `application-identifier` (`TEAMID.bundle.id`), the record's app
    ///     id must be that bundle id (or its prefix, for an extension `bundle.id.Extension`).
    ///   - graceSeconds: grace of a local primary superseded by the record's newer primary.
    ///   - now: Unix seconds.
    /// - Throws: `KeysError` `.wrongAppID`, `.duplicateKeyID` (a key id already present with other
    ///   bytes); `KeychainError`.
    @discardableResult
    public func importRecord(_ record: KeyRecord, expectedAppID: String? = nil, graceSeconds: Int64 = KeyStore.defaultGraceSeconds,
                             now: Int64 = KeyStore.now()) throws -> ImportResult {
        if let expectedAppID, expectedAppID != record.appID {
            throw KeysError(.wrongAppID, "the record is for app id \(record.appID), not \(expectedAppID)")
        }
        if let appIdentifier = keychain.entitlements.applicationIdentifier, let dot = appIdentifier.firstIndex(of: ".") {
            let bundle = String(appIdentifier[appIdentifier.index(after: dot)...])
            guard bundle == record.appID || bundle.hasPrefix(record.appID + ".") else {
                throw KeysError(.wrongAppID, "the record is for app id \(record.appID), but this keychain identity is \(appIdentifier)")
            }
        }
        var created = false
        var changed: [String] = []
        let ks = try mutate(appID: record.appID, recipient: record.recipient, allowCreate: true) { ks, isNew in
            created = isNew
            let events = try Self.merge(&ks, incoming: record.keys, now: now, graceSeconds: graceSeconds, event: "import")
            for e in events { for m in e.members where m.0 == "keyId" { if case .string(let id) = m.1 { changed.append(id) } } }
            return events
        }
        return ImportResult(keyset: ks.info(accessGroup: accessGroup), created: created, changedKeyIDs: changed)
    }
}
