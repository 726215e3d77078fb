import PushSealKeyRecords
public import PushSealServerKeys
import PushSealJSON

/// A device's registration upload (issue 24 "Registration from the app"): the body the iOS
/// reference POSTs (`Examples/iOS/PushSealRegistration.swift`: `{"registration": record,
/// "apnsDeviceToken": hex, "apnsEnvironment": "production" | "development",
/// "pinnedSenderKeyIds"?: [ids]}`), or a bare registration record (FORMAT.md §V.6) without a token.
public struct RegistrationUpload: Sendable {
    /// Longest body read: 64 KiB (a record is a few hundred bytes).
    public static let maxByteCount = 64 << 10

    /// The checked registration record.
    public let registration: DeviceRegistration
    /// The APNs device token in hex, as uploaded; `nil` for a bare record.
    public let deviceToken: String?
    /// The token's APNs environment; `nil` for a bare record.
    public let environment: DeviceTokenEnvironment?
    /// The sender key ids the device has pinned, when it said (`pinnedSenderKeyIds`).
    public let pinnedSenderKeyIDs: [String]?

    /// Reads an upload body (either shape).
    /// - Parameters:
    ///   - body: the JSON bytes, at most ``maxByteCount``.
    ///   - expectedAppID: the app the server takes registrations for; `nil`: any.
    /// - Throws: ``ServerError`` `.malformedUpload` (not a JSON object, `apnsDeviceToken` or
    ///   `apnsEnvironment` missing or of the wrong type or value, `pinnedSenderKeyIds` not an
    ///   array of key ids, or more than ``V2KeyList/maxPinnedSenderKeyIDs``); `KeysError` from the record (`.malformedRecord`, `.wrongAppID`,
    ///   `.invalidName`, `.lowOrderPublicKey`, `.timeOutOfRange`) or the token (`.invalidDeviceToken`).
    public init(body: [UInt8], expectedAppID: String?) throws {
        guard body.count <= Self.maxByteCount else {
            throw ServerError(.malformedUpload, "the registration upload is \(body.count) bytes, over \(Self.maxByteCount)")
        }
        guard case .object(let o)? = try? JSONReader.parse(body) else {
            throw ServerError(.malformedUpload, "the registration upload is not a JSON object")
        }
        guard let inner = o["registration"] else {
            // A bare record (what push-keys device generate prints).
            registration = try DeviceRegistration(record: body, expectedAppID: expectedAppID)
            deviceToken = nil
            environment = nil
            pinnedSenderKeyIDs = nil
            return
        }
        guard case .object = inner else { throw ServerError(.malformedUpload, "the upload's registration is not a JSON object") }
        registration = try DeviceRegistration(record: try JSONWriter.serialize(inner), expectedAppID: expectedAppID)
        guard let token = o["apnsDeviceToken"]?.stringValue else {
            throw ServerError(.malformedUpload, "the upload's apnsDeviceToken is missing or not a string")
        }
        deviceToken = try DeviceToken.normalized(token)
        guard let name = o["apnsEnvironment"]?.stringValue, let env = DeviceTokenEnvironment(rawValue: name) else {
            throw ServerError(.malformedUpload, "the upload's apnsEnvironment must be \"production\" or \"development\"")
        }
        environment = env
        switch o["pinnedSenderKeyIds"] {
        case nil, .null?:
            pinnedSenderKeyIDs = nil
        case .array(let a)?:
            let ids = try a.map { v in
                guard let s = v.stringValue else { throw ServerError(.malformedUpload, "pinnedSenderKeyIds holds a member that is not a string") }
                return s
            }
            do {
                _ = try V2KeyList.canonicalPins(ids)
            } catch let e as KeysError {
                throw ServerError(.malformedUpload, "the upload's pinnedSenderKeyIds: \(e.reason)")
            }
            pinnedSenderKeyIDs = ids
        default:
            throw ServerError(.malformedUpload, "the upload's pinnedSenderKeyIds is not an array of key ids")
        }
    }
}

/// What importing an upload did.
public struct RegistrationImport: Sendable {
    /// The registration as stored.
    public let registration: RegistrationInfo
    /// `true` when stored just now; `false` when the same record was registered already (an app
    /// retrying its upload: nothing changed).
    public let added: Bool
    /// The key id of the registration it superseded, if any.
    public let replacedKeyID: String?
    /// The device token stored with it (`nil` for a bare record).
    public let deviceToken: DeviceToken?
    /// The tokens the new one replaced or took from another recipient (empty when none).
    public let replacedTokens: [DeviceToken]
    /// `true` when the upload's device token is not the one the recipient had stored for its
    /// environment before (none, or another): `POST /v1/devices` then answers `tokenUpdated`.
    public let tokenChanged: Bool
}

extension ServerStore {
    /// Imports an upload for `recipient`: registers the public key (with the sender key ids the
    /// device reported pinned, when it said: `sender status` counts them), then stores the device token
    /// (the recipient's former token of that environment replaced). Idempotent: the same upload
    /// again changes nothing but the token's `registeredAt`. The two changes are two atomic steps
    /// of the store; if the second fails the call throws and the app's retry completes it (the
    /// first is then a no-op).
    ///
    /// Never take `recipient` from the upload: it is the installation the caller's own
    /// authentication (or a registration token) mapped the request to.
    /// - Parameters:
    ///   - upload: the checked body.
    ///   - recipient: the app installation (``KeyID/validateRecipient(_:)``).
    ///   - nowMilliseconds: the time of the import, ms since 1970 (the token's `registeredAt`; the
    ///     registration's `registeredAt` is its seconds).
    /// - Throws: `KeysError` `.duplicateKeyID` (the key id with another key), `.staleRegistration`
    ///   (older than the current one), `.invalidName`, `.timeOutOfRange`, `.invalidDeviceToken`;
    ///   ``ServerError`` `.unsupportedStore`; the store's errors (I/O, a lost database: answer 503).
    public func importRegistration(_ upload: RegistrationUpload, recipient: String, nowMilliseconds: Int64) throws -> RegistrationImport {
        let registrations = try registrationStore()
        let appID = upload.registration.appID
        try KeyID.validateRecipient(recipient)
        let tokens = upload.deviceToken == nil ? nil : try deviceTokenStore()
        let previous = try? registrations.registrations(appID: appID, recipient: recipient).current?.keyID
        let (info, added) = try registrations.register(upload.registration, recipient: recipient, now: nowMilliseconds / 1000,
                                                       pinnedSenderKeyIDs: upload.pinnedSenderKeyIDs)
        var stored: DeviceToken?
        var replaced: [DeviceToken] = []
        var changed = false
        if let tokens, let token = upload.deviceToken, let environment = upload.environment {
            // What was stored before (one read): none, or another token, is a change even when
            // nothing was replaced (a 410 or `push-keys token remove` had taken the old one).
            let before = (try? tokens.deviceTokens(appID: appID, recipient: recipient))?.first { $0.environment == environment }?.token
            replaced = try tokens.addDeviceToken(token, appID: appID, recipient: recipient, environment: environment, registeredAtMs: nowMilliseconds)
            stored = DeviceToken(appID: appID, recipient: recipient, token: token, environment: environment, registeredAtMs: nowMilliseconds)
            changed = before?.lowercased() != token.lowercased()
        }
        return RegistrationImport(registration: info, added: added, replacedKeyID: previous == info.keyID ? nil : previous,
                                  deviceToken: stored, replacedTokens: replaced, tokenChanged: changed)
    }
}
