public import PushSealJSON
public import PushSealCrypto
public import PushSealWire

/// Opens an APNs payload: the seam where the wire-format codec plugs in. The real one is
/// ``WireFormatOpener`` (the default); tests may inject another.
public protocol NotificationPayloadOpener: Sendable {
    /// The key id the payload names (`key_id`), read before any key lookup.
    /// - Throws: when the envelope fields are malformed (missing, wrong type, unknown `enc_alg`);
    ///   mapped to a token by ``FallbackReason/envelope(_:payload:)``, described in the detail.
    func keyID(in payload: JSONValue) throws -> String

    /// Authenticates and decrypts the payload's `encrypted_data` with `key` and the app id
    /// (part of the AAD), then decodes the plaintext object.
    /// - Parameters:
    ///   - payload: the APNs payload.
    ///   - key: the 32-byte key for the payload's key id.
    ///   - appID: the app's bundle identifier from the extension's configuration (never the payload's).
    /// - Returns: the decoded plaintext (FORMAT.md §5).
    /// - Throws: when the box does not authenticate or the plaintext is not a valid object;
    ///   mapped to a token by ``FallbackReason/open(_:)``; the description (no plaintext in it)
    ///   goes to the detail.
    func open(_ payload: JSONValue, with key: SecretBytes, appID: String) throws -> NotificationPlaintext
}
