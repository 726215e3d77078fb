import PushSealJSON
internal import CSodium
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
package import PushSealCrypto
import PushSealWire
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
    package var keys: [ManagedKey]

    /// The keys' metadata (never bytes).
    public var keyInfos: [KeyInfo] { keys.map(\.info) }

    package init(appID: String, recipient: String, keys: [ManagedKey]) {
        self.appID = appID
        self.recipient = recipient
        self.keys = keys
    }

    /// The record as UTF-8 JSON plus a newline. It contains key bytes: the caller wipes it
    /// (`SecretBytes.wipe`) after writing it to a 0600 file or a pipe.
    ///
    /// Written with `JSONWriter` into one buffer reserved up front (so no partial copy is left
    /// behind by a reallocation); each key's base64 is made by libsodium's constant-time
    /// `sodium_bin2base64` in a scratch buffer that is wiped.
    public func encoded() -> [UInt8] {
        var out: [UInt8]
        do {
            var capacity = 256 + 6 * (appID.utf8.count + recipient.utf8.count)
            for k in keys { capacity += 320 + k.info.keyID.utf8.count }
            var w = JSONWriter(reservingCapacity: capacity)
            w.beginObject()
            w.key("format"); w.string(Self.format)
            w.key("version"); w.integer(1)
            w.key("appId"); w.string(appID)
            w.key("recipient"); w.string(recipient)
            w.key("keys"); w.beginArray()
            for k in keys {
                w.beginObject()
                w.key("keyId"); w.string(k.info.keyID)
                w.key("status"); w.string(k.info.status.rawValue)
                w.key("createdAt"); w.integer(k.info.createdAt)
                if let v = k.info.promotedAt { w.key("promotedAt"); w.integer(v) }
                if let v = k.info.retiredAt { w.key("retiredAt"); w.integer(v) }
                if let v = k.info.notAfter { w.key("notAfter"); w.integer(v) }
                w.key("sealCount"); w.integer(Int64(clamping: k.info.sealCount))
                if let secret = k.secret {
                    w.key("key")
                    var text = Self.base64(secret)
                    defer { SecretBytes.wipe(&text) }
                    // Base64 is ASCII, so this never throws.
                    try? w.string(utf8: text)
                }
                w.endObject()
            }
            w.endArray()
            w.endObject()
            out = w.bytes
        }
        // The writer is gone: `out` is the only reference and has room for the newline.
        out.append(0x0A)
        return out
    }

    /// Standard padded base64 (RFC 4648 §4) of `secret`, constant-time (libsodium).
    package static func base64(_ secret: SecretBytes) -> [UInt8] {
        let length = (secret.byteCount + 2) / 3 * 4
        var text = [UInt8](repeating: 0, count: length + 1)
        secret.withUnsafeBytes { raw in
            text.withUnsafeMutableBufferPointer { out in
                out.baseAddress?.withMemoryRebound(to: CChar.self, capacity: length + 1) { c in
                    _ = sodium_bin2base64(c, length + 1, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count,
                                          sodium_base64_VARIANT_ORIGINAL)
                }
            }
        }
        text[length] = 0
        text.removeLast()  // the NUL; capacity (and the bytes) stay in this buffer
        return text
    }

    /// Decodes and validates a record, then wipes `bytes` (zeroes every byte, on success and on
    /// error): the import path, where the record text holds key bytes.
    /// - Parameter bytes: the JSON (at most 1 MiB).
    /// - Throws: as ``init(decoding:)``.
    public init(wiping bytes: inout [UInt8]) throws {
        defer { SecretBytes.wipe(&bytes) }
        self = try bytes.withUnsafeBytes { try Self.parse($0) }
    }

    /// Decodes and validates a record (the caller wipes `bytes`; see ``init(wiping:)``).
    ///
    /// Read with `JSONReader.Scanner` (strict RFC 8259: malformed UTF-8, duplicate members and
    /// trailing bytes are refused); each key's base64 is decoded straight from the input bytes by
    /// libsodium's constant-time `sodium_base642bin` (standard alphabet, padded, no JSON escapes)
    /// into a buffer that is wiped, so no `String` ever holds key text. Unknown members are ignored.
    /// - Parameter bytes: the JSON (at most 1 MiB).
    /// - Throws: `KeysError` `.malformedRecord` (not JSON, truncated, wrong format or version,
    ///   missing, duplicate or mistyped field, a time after ``KeyTime/maxTimeSeconds``, key not 32
    ///   bytes of base64, key on a destroyed key or missing on a usable one, more than one primary), `.invalidName` (bad key id, app id or
    ///   recipient), `.duplicateKeyID` (one key id twice).
    public init(decoding bytes: [UInt8]) throws {
        self = try bytes.withUnsafeBytes { try Self.parse($0) }
    }

    package static func bad(_ what: String) -> KeysError { KeysError(.malformedRecord, "key record: \(what)") }

    package static func parse(_ raw: UnsafeRawBufferPointer) throws -> KeyRecord {
        guard raw.count <= 1 << 20 else { throw bad("larger than 1 MiB") }
        do {
            return try parseJSON(raw)
        } catch let e as JSONError {
            throw bad("not a JSON object (malformed or truncated): \(e.reason)")
        }
    }

    private static func parseJSON(_ raw: UnsafeRawBufferPointer) throws -> KeyRecord {
        var s = try JSONReader.Scanner(raw, limits: JSONReader.Limits(maxByteCount: 1 << 20, maxDepth: 16))
        guard try s.peekKind() == .object else { throw bad("not a JSON object (malformed or truncated)") }
        try s.beginObject()
        var seen = Set<String>()
        var format: String?, version: Int64?, appID: String?, recipient: String?
        var keys: [ManagedKey]?
        while let span = try s.nextKey() {
            let name = s.string(span)
            guard seen.insert(name).inserted else { throw bad("member \"\(name.prefix(64))\" appears twice") }
            switch name {
            case "format": format = try string(&s)
            case "version": version = try integer(&s)
            case "appId": appID = try string(&s)
            case "recipient": recipient = try string(&s)
            case "keys":
                guard try s.peekKind() == .array else { throw bad("keys missing or empty") }
                try s.beginArray()
                var list: [ManagedKey] = []
                var ids = Set<String>()
                while try s.nextElement() {
                    let k = try parseKey(&s, list.count)
                    guard ids.insert(k.info.keyID).inserted else { throw KeysError(.duplicateKeyID, "key record: key id \(k.info.keyID) appears twice") }
                    list.append(k)
                }
                keys = list
            default:
                _ = try s.readValue()
            }
        }
        try s.finish()
        guard format == Self.format else { throw bad("format is not \"\(Self.format)\"") }
        guard version == 1 else { throw bad("unsupported version (expected 1)") }
        guard let appID else { throw bad("appId missing or not a string") }
        guard let recipient else { throw bad("recipient missing or not a string") }
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        guard let keys, !keys.isEmpty else { throw bad("keys missing or empty") }
        guard keys.filter({ $0.info.status == .primary }).count <= 1 else { throw bad("more than one primary key") }
        return KeyRecord(appID: appID, recipient: recipient, keys: keys)
    }

    /// A string member's value, or `nil` when it is not a string (reported by the caller).
    private static func string(_ s: inout JSONReader.Scanner) throws -> String? {
        guard try s.peekKind() == .string else { _ = try s.readValue(); return nil }
        return s.string(try s.readString())
    }

    /// An integer member's value (not a boolean, not a fraction), or `nil`.
    private static func integer(_ s: inout JSONReader.Scanner) throws -> Int64? {
        guard try s.peekKind() == .number else { _ = try s.readValue(); return nil }
        guard case .integer(let v) = try s.readNumber() else { return nil }
        return v
    }

    private static func parseKey(_ s: inout JSONReader.Scanner, _ n: Int) throws -> ManagedKey {
        guard try s.peekKind() == .object else { throw bad("keys[\(n)] is not an object") }
        try s.beginObject()
        var seen = Set<String>()
        var id: String?, status: String?, created: Int64?
        var optional: [String: Int64] = [:]
        var secret: SecretBytes?
        var hasKey = false
        while let span = try s.nextKey() {
            let name = s.string(span)
            guard seen.insert(name).inserted else { throw bad("keys[\(n)] has member \"\(name.prefix(64))\" twice") }
            switch name {
            case "keyId": id = try string(&s)
            case "status": status = try string(&s)
            case "createdAt":
                guard let v = try integer(&s), v >= 0 else { throw bad("keys[\(n)].createdAt missing or not an integer") }
                guard v <= KeyTime.maxTimeSeconds else { throw bad("keys[\(n)].createdAt \(v) is after \(KeyTime.maxTimeText)") }
                created = v
            case "promotedAt", "retiredAt", "notAfter", "sealCount":
                guard let v = try integer(&s), v >= 0 else { throw bad("keys[\(n)].\(name) is not a non-negative integer") }
                guard name == "sealCount" || v <= KeyTime.maxTimeSeconds else {
                    throw bad("keys[\(n)].\(name) \(v) is after \(KeyTime.maxTimeText)")
                }
                optional[name] = v
            case "key":
                hasKey = true
                guard try s.peekKind() == .string else { throw bad("keys[\(n)].key is not base64") }
                let text = try s.readString()
                guard !text.hasEscapes else { throw bad("keys[\(n)].key is not plain base64 (it has JSON escapes)") }
                secret = try decodeKey(s.rawBytes(text), n)
            default:
                _ = try s.readValue()
            }
        }
        guard let id else { throw bad("keys[\(n)].keyId missing") }
        try KeyID.validate(id)
        guard let st = status, let keyStatus = KeyStatus(rawValue: st) else { throw bad("keys[\(n)].status missing or unknown") }
        guard let created else { throw bad("keys[\(n)].createdAt missing or not an integer") }
        if hasKey {
            guard keyStatus != .destroyed && keyStatus != .disabled else { throw bad("keys[\(n)] is \(keyStatus) and must not carry key bytes") }
        } else if keyStatus.canOpen {
            throw bad("keys[\(n)] is \(keyStatus) but has no key")
        }
        return ManagedKey(info: KeyInfo(keyID: id, status: keyStatus, createdAt: created, promotedAt: optional["promotedAt"],
                                        retiredAt: optional["retiredAt"], notAfter: optional["notAfter"],
                                        sealCount: UInt64(optional["sealCount"] ?? 0)),
                          secret: secret)
    }

    /// 32 key bytes from standard padded base64 at `text` (libsodium, constant-time), via a
    /// wiped scratch buffer.
    private static func decodeKey(_ text: UnsafeRawBufferPointer, _ n: Int) throws -> SecretBytes {
        let capacity = AES256GCM.keyByteCount + 3
        var bytes = [UInt8](repeating: 0, count: capacity)
        defer { SecretBytes.wipe(&bytes) }
        var decoded = 0
        let status: Int32 = bytes.withUnsafeMutableBufferPointer { out in
            guard let t = text.baseAddress, let o = out.baseAddress else { return -1 }
            return sodium_base642bin(o, capacity, t.assumingMemoryBound(to: CChar.self), text.count, nil, &decoded, nil,
                                     sodium_base64_VARIANT_ORIGINAL)
        }
        guard status == 0 else { throw bad("keys[\(n)].key is not base64") }
        guard decoded == AES256GCM.keyByteCount else { throw bad("keys[\(n)].key is \(decoded) bytes, expected 32") }
        return SecretBytes(copying: bytes.prefix(decoded))
    }
}

extension KeyRecord {
    /// One key, one sealing store (F11): refuses a record whose `primary` key has already sealed
    /// (seal count > 0) and is not yet in `existing`, the keyset of the sealing (server) store it
    /// is about to be imported into. Two stores sealing with one key each count only their own
    /// seals, so neither counter bounds the key's real use (2^32, random 96-bit nonces).
    /// A device store imports used primaries as a matter of course: do not call it there.
    /// - Parameter existing: the target store's keyset for the record's app id and recipient,
    ///   or `nil` when it has none.
    /// - Throws: `KeysError` `.sealCountInUse`.
    public func checkOneSealingStore(existing: KeysetInfo?) throws {
        for k in keys where k.info.status == .primary && k.info.sealCount > 0 && existing?.keys.contains(where: { $0.keyID == k.info.keyID }) != true {
            throw KeysError(.sealCountInUse,
                "the record's primary key \(k.info.keyID) has already sealed \(k.info.sealCount) times in another store: each store counts only its own seals toward the 2^32 limit")
        }
    }
}

extension KeyRecord {
    /// Refuses a record for another app than the keychain identity's: the bundle id of
    /// `applicationIdentifier` (`TEAMID.bundle.id`) must be the record's app id or start with it
    /// and a dot (an extension, `bundle.id.Extension`).
    /// - Parameter applicationIdentifier: the identity's application-identifier; nil: nothing to check.
    /// - Throws: `KeysError` `.wrongAppID`.
    public func checkApplicationIdentifier(_ applicationIdentifier: String?) throws {
        guard let applicationIdentifier, let dot = applicationIdentifier.firstIndex(of: ".") else { return }
        let bundle = String(applicationIdentifier[applicationIdentifier.index(after: dot)...])
        guard bundle == appID || bundle.hasPrefix(appID + ".") else {
            throw KeysError(.wrongAppID, "the record is for app id \(appID), but this keychain identity is \(applicationIdentifier)")
        }
    }
}
