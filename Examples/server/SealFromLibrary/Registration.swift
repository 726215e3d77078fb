// The server's half of "the app registers" (wire format v2, docs/keys.md): what the endpoint
// of your app's authenticated API does with an upload. The app sends its registration record
// (`pushseal-device-key`, made on the phone) with its APNs device token, as
// Examples/iOS/PushSealRegistration.swift does (`{"registration", "apnsDeviceToken",
// "apnsEnvironment"}`; a bare record is accepted too); your API has already authenticated the
// user and decided which app installation (recipient) the upload is for. Never take the
// recipient from the record: a registration is only as good as that mapping.
import PushSealServer

/// What the endpoint answers.
enum RegistrationOutcome {
    /// Stored: sealed to from the next notification on (`replaced`: the former key id).
    case registered(keyID: String, replaced: String?)
    /// The same record again (an app retrying its upload): nothing changed.
    case alreadyRegistered(keyID: String)
    /// Refused: answer 400 (malformed, another app, a low-order key, a key id reused with
    /// another key, a record older than the current one, a bad device token); `code` is the stable reason.
    case refused(code: String, reason: String)
}

/// Imports one upload for `recipient` into the server store: the key and, with the upload
/// body, the device token, in one call (PushSealServer's `importRegistration`).
/// - Parameters:
///   - body: the upload body or a bare record (JSON, a few hundred bytes).
///   - recipient: the app installation your API mapped the upload to.
///   - appID: your app's bundle identifier; records for another app are refused.
///   - store: the server store, opened once at start-up.
/// - Throws: the store's own failures (I/O, a locked keychain): answer 503 and let the app retry.
func importRegistration(_ body: [UInt8], recipient: String, appID: String, into store: ServerStore) throws -> RegistrationOutcome {
    do {
        let upload = try RegistrationUpload(body: body, expectedAppID: appID)
        let result = try store.importRegistration(upload, recipient: recipient, nowMilliseconds: KeyTime.now() * 1000)
        return result.added ? .registered(keyID: result.registration.keyID, replaced: result.replacedKeyID) : .alreadyRegistered(keyID: result.registration.keyID)
    } catch let e as KeysError where [.malformedRecord, .wrongAppID, .invalidName, .lowOrderPublicKey, .duplicateKeyID,
                                       .staleRegistration, .timeOutOfRange, .invalidDeviceToken].contains(e.code) {
        return .refused(code: String(describing: e.code), reason: e.reason)
    } catch let e as ServerError where e.code == .malformedUpload {
        return .refused(code: e.code.name, reason: e.reason)
    }
}
