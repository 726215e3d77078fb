public import PushSealJSON
public import PushSealCrypto
public import PushSealWire

/// The real payload opener: wire format v1 (docs/FORMAT.md) through PushSealWire's
/// `SealedPayload`.
///
/// ``keyID(in:)`` checks the whole envelope (fields, `enc_alg`, `key_id`, base64, box length)
/// before any key lookup, so a malformed payload is reported as such, never as an unknown key.
/// ``open(_:with:appID:)`` verifies the tag over `pushseal:v1|A256GCM|<key_id>|<app_id>` with
/// the app id it is given — the extension's configured one, never a payload field — then
/// decodes the plaintext.
public struct WireFormatOpener: NotificationPayloadOpener {
    /// Creates the opener (stateless).
    public init() {}

    /// The payload's `key_id`, after checking every envelope field.
    /// - Throws: `FormatError` `.missingField`, `.wrongFieldType`, `.emptyField`,
    ///   `.unknownAlgorithm`, `.invalidKeyID`, `.invalidBase64`, `.truncatedBox`.
    public func keyID(in payload: JSONValue) throws -> String {
        try SealedPayload(payload: payload).keyID
    }

    /// Authenticates, decrypts and decodes the payload.
    /// - Parameters:
    ///   - payload: the APNs payload.
    ///   - key: the 32-byte key for its key id.
    ///   - appID: the app's bundle identifier from the extension's configuration.
    /// - Returns: the plaintext, after the tag verified.
    /// - Throws: the envelope errors of ``keyID(in:)``; `FormatError` `.authenticationFailed`,
    ///   `.invalidKey`, `.invalidAppID`, `.invalidPlaintext`.
    public func open(_ payload: JSONValue, with key: SecretBytes, appID: String) throws -> NotificationPlaintext {
        try SealedPayload(payload: payload).open(with: key, appID: appID)
    }
}
