import PushSealJSON
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCrypto
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
    /// `sodium_bin2base64` (``SecretBytes/base64Text()``) in a scratch array that is wiped.
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
                    var text = secret.base64Text()
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

    /// Decodes and validates a record, then wipes `bytes` (zeroes every byte, on success and on
    /// error): the import path, where the record text holds key bytes.
    /// - Parameter bytes: the JSON (at most 1 MiB).
    /// - Throws: as ``init(decoding:)``.
    public init(wiping bytes: inout [UInt8]) throws {
        defer { SecretBytes.wipe(&bytes) }
        self = try Self.parse(bytes)
    }

    /// Decodes and validates a record (the caller wipes `bytes`; see ``init(wiping:)``).
    ///
    /// Read with `JSONReader.Scanner` (strict RFC 8259: malformed UTF-8, duplicate members and
    /// trailing bytes are refused); each key's base64 is decoded in place, from a span of the input
    /// bytes, by libsodium's constant-time `sodium_base642bin` (standard alphabet, padded, no JSON
    /// escapes) straight into the key's `SecretBytes` (``SecretBytes/init(decodingBase64:maxByteCount:)``):
    /// no `String`, array or scratch buffer ever holds key text or key bytes, so the only copies
    /// are `bytes` (the caller's to wipe) and the secret (zeroed when released). Unknown members
    /// are ignored.
    /// - Parameter bytes: the JSON (at most 1 MiB).
    /// - Throws: `KeysError` `.malformedRecord` (not JSON, truncated, wrong format or version,
    ///   missing, duplicate or mistyped field, a time after ``KeyTime/maxTimeSeconds``, key not 32
    ///   bytes of base64, key on a destroyed key or missing on a usable one, more than one primary), `.invalidName` (bad key id, app id or
    ///   recipient), `.duplicateKeyID` (one key id twice).
    public init(decoding bytes: [UInt8]) throws {
        self = try Self.parse(bytes)
    }

    package static func bad(_ what: String) -> KeysError { KeysError(.malformedRecord, "key record: \(what)") }

    package static func parse(_ bytes: [UInt8]) throws -> KeyRecord {
        guard bytes.count <= 1 << 20 else { throw bad("larger than 1 MiB") }
        do {
            // The scanner reads `bytes` in place (no copy of the record text).
            return try JSONReader.Scanner.scanning(bytes, limits: JSONReader.Limits(maxByteCount: 1 << 20, maxDepth: 16)) {
                try parseJSON(&$0, bytes)
            }
        } catch let e as JSONError {
            throw bad("not a JSON object (malformed or truncated): \(e.reason)")
        }
    }

    /// The record scanned by `s` from `source`, the bytes it reads (key text is decoded from them).
    private static func parseJSON(_ s: inout JSONReader.Scanner, _ source: [UInt8]) throws -> KeyRecord {
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
                    let k = try parseKey(&s, source, list.count)
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

    private static func parseKey(_ s: inout JSONReader.Scanner, _ source: [UInt8], _ n: Int) throws -> ManagedKey {
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
                secret = try decodeKey(source.span.extracting(text.start..<text.end), n)
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

    /// 32 key bytes from the standard padded base64 `text`, a span of the record's bytes,
    /// decoded by libsodium (constant-time) straight into the secret: no scratch copy to wipe.
    /// Room for a few bytes more than a key, so a near miss is reported with its length.
    private static func decodeKey(_ text: Span<UInt8>, _ n: Int) throws -> SecretBytes {
        guard let secret = SecretBytes(decodingBase64: text, maxByteCount: AES256GCM.keyByteCount + 3) else {
            throw bad("keys[\(n)].key is not base64")
        }
        guard secret.byteCount == AES256GCM.keyByteCount else { throw bad("keys[\(n)].key is \(secret.byteCount) bytes, expected 32") }
        return secret
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
