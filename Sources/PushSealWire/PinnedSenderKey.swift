public import PushSealCrypto
import PushSealJSON

/// A sender public key an app pinned (FORMAT.md §V.6, `pushseal-sender-key`): the key an
/// auth-mode payload with this `sender_key_id` must be authenticated by. Public data.
public struct PinnedSenderKey: Sendable, Hashable {
    /// The status a sender key record publishes (its optional `status` member, security review
    /// G15): absent in records of older servers, which means `primary`.
    public enum Status: String, Sendable, Hashable {
        /// Published ahead of a staged rotation (`push-keys sender add`): pin it, not sealing yet.
        case pending
        /// The key the server seals with.
        case primary
        /// Retired at ``PinnedSenderKey/retiredAt``: verifies only messages sealed before it,
        /// until ``PinnedSenderKey/notAfter``.
        case decryptOnly
    }

    /// The sender key id, 1–64 of `A-Z a-z 0-9 _ -` (an opaque label).
    public let keyID: String
    /// The sender's 32-byte X25519 public key.
    public let publicKey: X25519.PublicKey
    /// The record's `status` (``Status/primary`` when absent or when made from a key alone).
    public var status: Status = .primary
    /// The record's `retiredAt` (Unix seconds, UTC), for a ``Status/decryptOnly`` key.
    public var retiredAt: Int64?
    /// The record's `notAfter` (Unix seconds, UTC): the end of a retired key's grace window.
    public var notAfter: Int64?

    /// Pins `publicKey` under `keyID`. The key is not checked here (a key side that imports
    /// sender key records refuses low-order points with `X25519.PublicKey.validate()`); a
    /// low-order pinned key makes every open fail with `.zeroSharedSecret`.
    /// - Throws: `FormatError` `.invalidKeyID`.
    public init(keyID: String, publicKey: X25519.PublicKey) throws {
        guard WireFormat.isValidKeyID(keyID) else {
            throw FormatError(.invalidKeyID, "a sender key id is 1-64 characters of A-Z a-z 0-9 _ -, got \(WireFormat.describe(keyID))")
        }
        self.keyID = keyID
        self.publicKey = publicKey
    }

    /// Reads a sender key record (FORMAT.md §V.6):
    /// `{"format":"pushseal-sender-key","version":2,"appId":…,"senderKeyId":…,"publicKey":<padded base64 of 32 bytes>}`,
    /// with the optional `status` (`pending`, `primary`, `decryptOnly`), `retiredAt` and
    /// `notAfter` (integers, Unix seconds); other unknown members are ignored. The reader of `push-keys device pin-sender`, which stores the key
    /// as a kind 3 device key item (docs/keychain.md "Device key items").
    /// - Parameters:
    ///   - record: the record's JSON text, UTF-8.
    ///   - appID: the app pinning it; the record's `appId` must equal it.
    /// - Throws: `FormatError` `.invalidJSON` and the reader's codes; `.missingField` /
    ///   `.wrongFieldType` (a member absent or of another type, in `field`); `.invalidKey` (wrong
    ///   `format`, `version`, `appId`, a `publicKey` that is not base64 of 32 bytes, a `status`
    ///   of another value, a `retiredAt` or `notAfter` that is not an integer); `.invalidKeyID`.
    public init(record: [UInt8], appID: String) throws {
        let parsed: JSONValue
        do {
            parsed = try JSONReader.parse(record)
        } catch let e as JSONError {
            throw FormatError(e)
        }
        guard case .object(let o) = parsed else {
            throw FormatError(.invalidKey, "a sender key record is a JSON object")
        }
        func string(_ name: String) throws -> String {
            guard let v = o[name] else { throw FormatError(.missingField, "the sender key record has no \(name)", field: name) }
            guard case .string(let s) = v else { throw FormatError(.wrongFieldType, "\(name) must be a string", field: name) }
            return s
        }
        guard try string("format") == "pushseal-sender-key" else {
            throw FormatError(.invalidKey, "format is not pushseal-sender-key")
        }
        guard o["version"]?.integerValue == 2 else { throw FormatError(.invalidKey, "version is not 2") }
        guard try string("appId") == appID else {
            throw FormatError(.invalidKey, "the sender key record is for another app id (expected \(WireFormat.describe(appID)))")
        }
        let id = try string("senderKeyId")
        let raw: [UInt8]
        do {
            raw = try WireBase64.decode(try string("publicKey"))
        } catch let e as FormatError where e.code == .invalidBase64 {
            throw FormatError(.invalidKey, "publicKey is not base64: \(e.reason)")
        }
        guard raw.count == X25519.publicKeyByteCount else {
            throw FormatError(.invalidKey, "publicKey is \(raw.count) bytes, not 32")
        }
        try self.init(keyID: id, publicKey: try X25519.PublicKey(rawRepresentation: raw))
        if let v = o["status"] {
            guard let name = v.stringValue, let parsed = Status(rawValue: name) else {
                throw FormatError(.invalidKey, "status must be pending, primary or decryptOnly")
            }
            status = parsed
        }
        for (name, value) in [("retiredAt", o["retiredAt"]), ("notAfter", o["notAfter"])] {
            guard let value else { continue }
            guard let time = value.integerValue else { throw FormatError(.invalidKey, "\(name) must be an integer (Unix seconds)") }
            if name == "retiredAt" { retiredAt = time } else { notAfter = time }
        }
    }
}
