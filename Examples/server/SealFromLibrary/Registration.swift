// The server's half of "the app registers" (wire format v2, docs/keys.md): what the endpoint
// of your app's authenticated API does with an upload. The app sends its registration record
// (`pushseal-device-key`, made on the phone) with its APNs device token; your API has already
// authenticated the user and decided which app installation (recipient) the upload is for.
// Never take the recipient from the record: a registration is only as good as that mapping.
import PushSealKeyRecords
import PushSealServerKeys
/// What the endpoint answers.
enum RegistrationOutcome {
    /// Stored: sealed to from the next notification on (`replaced`: the former key id).
    case registered(keyID: String, replaced: String?)
    /// The same record again (an app retrying its upload): nothing changed.
    case alreadyRegistered(keyID: String)
    /// Refused: answer 400 (malformed, another app, a low-order key, a key id reused with
    /// another key, a record older than the current one); `code` is the stable reason.
    case refused(code: String, reason: String)
}

/// Imports one uploaded registration record for `recipient` into the server store.
/// - Parameters:
///   - body: the uploaded record (JSON, a few hundred bytes).
///   - recipient: the app installation your API mapped the upload to.
///   - appID: your app's bundle identifier; records for another app are refused.
///   - store: the server store, opened once at start-up (the file keychain's `KeyStore`).
/// - Throws: the store's own failures (I/O, a locked keychain): answer 503 and let the app retry.
func importRegistration(_ body: [UInt8], recipient: String, appID: String, into store: any RegistrationStore) throws -> RegistrationOutcome {
    do {
        let registration = try DeviceRegistration(record: body, expectedAppID: appID)
        let previous = try? store.registrations(appID: appID, recipient: recipient).current?.keyID
        let (info, added) = try store.register(registration, recipient: recipient, now: KeyTime.now())
        return added ? .registered(keyID: info.keyID, replaced: previous) : .alreadyRegistered(keyID: info.keyID)
    } catch let e as KeysError where [.malformedRecord, .wrongAppID, .invalidName, .lowOrderPublicKey, .duplicateKeyID,
                                       .staleRegistration, .timeOutOfRange].contains(e.code) {
        return .refused(code: String(describing: e.code), reason: e.reason)
    }
}
