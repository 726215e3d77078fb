public import PushSealCrypto
public import PushSealJSON
public import PushSealSystem
import PushSealWire
import PushSealDeviceKeys
public import PushSealKeyRecords

/// A version 2 device registration, read from the record the app uploads to its server
/// (FORMAT.md §V.6 `pushseal-device-key`,
/// `{"format":"pushseal-device-key","version":2,"appId","keyId","publicKey","createdAt"}`) and
/// checked as §V.5 asks before a server store imports it: the app id, the key id's charset, a
/// 32-byte public key that is not a low-order point, `createdAt` in range. Public data.
public struct DeviceRegistration: Sendable, Hashable {
    /// The app's bundle identifier (``KeyID/validateAppID(_:)``).
    public let appID: String
    /// The device key id: 1–64 of `A-Z a-z 0-9 _ -` (an opaque label).
    public let keyID: String
    /// The device's X25519 public key (32 bytes), checked not to be a low-order point.
    public let publicKey: X25519.PublicKey
    /// When the device made the key: Unix seconds (UTC), 0 ... ``KeyTime/maxTimeSeconds``.
    public let createdAt: Int64

    /// A registration from its parts, checked.
    /// - Throws: `KeysError` `.invalidName` (app id, key id), `.lowOrderPublicKey` (a public key
    ///   whose X25519 with any private key is all zero, RFC 7748 §6.1), `.timeOutOfRange`.
    public init(appID: String, keyID: String, publicKey: X25519.PublicKey, createdAt: Int64) throws {
        try KeyID.validateAppID(appID)
        try KeyID.validate(keyID)
        try KeyTime.checkTime(createdAt, named: "createdAt")
        try Self.checkNotLowOrder(publicKey, what: "the public key of registration \(keyID)")
        self.appID = appID
        self.keyID = keyID
        self.publicKey = publicKey
        self.createdAt = createdAt
    }

    /// Reads and checks a registration record (unknown members are ignored).
    /// - Parameters:
    ///   - record: the record's JSON text, UTF-8 (at most a few hundred bytes).
    ///   - expectedAppID: the app the server takes registrations for; `nil`: any.
    /// - Throws: `KeysError` `.malformedRecord` (not JSON, not an object, a member missing or of
    ///   the wrong type, a wrong `format` or `version`, a `publicKey` that is not base64 of 32
    ///   bytes), `.wrongAppID`, `.invalidName`, `.lowOrderPublicKey`, `.timeOutOfRange`.
    public init(record: [UInt8], expectedAppID: String?) throws {
        let o = try V2Record.object(record, format: "pushseal-device-key", what: "registration record")
        let appID = try V2Record.string(o, "appId")
        if let expectedAppID, appID != expectedAppID {
            throw KeysError(.wrongAppID, "the registration record is for app id '\(appID.prefix(64))', not \(expectedAppID)")
        }
        guard case .integer(let createdAt)? = o["createdAt"] else {
            throw KeysError(.malformedRecord, "the registration record's createdAt is missing or not an integer")
        }
        try self.init(appID: appID, keyID: try V2Record.string(o, "keyId"), publicKey: try V2Record.publicKey(o), createdAt: createdAt)
    }

    /// The record again (FORMAT.md §V.6 member order).
    public var record: JSONObject {
        DeviceKeyItem.registrationRecord(appID: appID, keyID: keyID, publicKey: publicKey, createdAt: createdAt)
    }

    /// Refuses a low-order point (`X25519.PublicKey.validate()`).
    /// - Throws: `KeysError` `.lowOrderPublicKey`; `CryptoError` `.internalFailure`.
    static func checkNotLowOrder(_ key: X25519.PublicKey, what: String) throws {
        do {
            try key.validate()
        } catch let e as CryptoError where e.code == .zeroSharedSecret {
            throw KeysError(.lowOrderPublicKey, "\(what) is a low-order point (X25519 with it gives all zero bytes, RFC 9180 §7.1.4): refused")
        }
    }
}

/// The reading rules both v2 records share (FORMAT.md §V.6): a JSON object, `format` and
/// `version` 2 matching, strings where strings are due, `publicKey` padded base64 of 32 bytes.
enum V2Record {
    static func object(_ bytes: [UInt8], format: String, what: String) throws -> JSONObject {
        let parsed: JSONValue
        do {
            parsed = try JSONReader.parse(bytes)
        } catch let e as JSONError {
            throw KeysError(.malformedRecord, "the \(what) is not JSON: \(e.reason)")
        }
        guard case .object(let o) = parsed else { throw KeysError(.malformedRecord, "the \(what) is not a JSON object") }
        guard o["format"]?.stringValue == format else { throw KeysError(.malformedRecord, "the \(what)'s format is not \(format)") }
        guard o["version"]?.integerValue == 2 else { throw KeysError(.malformedRecord, "the \(what)'s version is not 2") }
        return o
    }

    static func string(_ o: JSONObject, _ name: String) throws -> String {
        guard let s = o[name]?.stringValue else { throw KeysError(.malformedRecord, "the record's \(name) is missing or not a string") }
        return s
    }

    static func publicKey(_ o: JSONObject) throws -> X25519.PublicKey {
        let raw: [UInt8]
        do {
            raw = try WireBase64.decode(try string(o, "publicKey"))
        } catch let e as FormatError {
            throw KeysError(.malformedRecord, "the record's publicKey is not base64: \(e.reason)")
        }
        guard raw.count == X25519.publicKeyByteCount else {
            throw KeysError(.malformedRecord, "the record's publicKey is \(raw.count) bytes, not \(X25519.publicKeyByteCount)")
        }
        return try X25519.PublicKey(rawRepresentation: raw)
    }
}

extension ErrorCode<KeysError> {
    /// A registration or sender key record whose public key is a low-order X25519 point: every
    /// shared secret with it is zero (FORMAT.md §V.5, RFC 9180 §7.1.4). Refused on import.
    public static var lowOrderPublicKey: Self { Self("lowOrderPublicKey") }
    /// The recipient has no v2 registration (a v1 keyset perhaps, or nothing).
    public static var unknownRegistration: Self { Self("unknownRegistration") }
    /// A registration created before the recipient's current one (an old record replayed, or
    /// uploaded out of order): refused, the newest registration is the one sealed to.
    public static var staleRegistration: Self { Self("staleRegistration") }
    /// A registration whose `createdAt` is more than ``DeviceRegistration/maxFutureSeconds``
    /// after the server's clock (security review G8: it would become primary and refuse the
    /// real device's later uploads as stale): refused.
    public static var futureRegistration: Self { Self("futureRegistration") }
    /// The record of a registration that was revoked (`registration revoke`, `DELETE
    /// /v1/devices`): a revoked registration never becomes current again; the app makes a new
    /// device key.
    public static var registrationRevoked: Self { Self("registrationRevoked") }
}

extension DeviceRegistration {
    /// How far a registration's `createdAt` may be ahead of the server's `now`: 300 s (clock
    /// skew between a phone and the server). Later ones are refused (`futureRegistration`).
    public static let maxFutureSeconds: Int64 = 300

    /// Refuses a `createdAt` more than ``maxFutureSeconds`` after `now`.
    /// - Throws: `KeysError` `.futureRegistration`.
    public static func checkNotFuture(keyID: String, createdAt: Int64, now: Int64) throws {
        guard createdAt <= now &+ maxFutureSeconds else {
            throw KeysError(.futureRegistration,
                "registration \(keyID) was created at \(createdAt), more than \(maxFutureSeconds) s after the server's clock (\(now)): refused (check the device's clock)")
        }
    }
}
