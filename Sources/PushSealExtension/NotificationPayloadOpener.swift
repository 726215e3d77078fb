public import PushSealJSON
public import PushSealCrypto
public import PushSealWire

/// Opens an APNs payload: the seam where the wire-format codec plugs in. The real one is
/// ``WireFormatOpener`` (the default, over an `EnvelopeRegistry`); tests may inject another.
/// The payload is read once: ``envelope(in:)`` parses and base64-decodes it, ``open(_:with:appID:)``
/// opens that result.
public protocol NotificationPayloadOpener: Sendable {
    /// The payload's sealed part (`encrypted_data` decoded, `key_id`, `enc_alg` and the
    /// algorithm's header fields), read and checked before any key lookup.
    /// - Throws: when the envelope fields are malformed (missing, wrong type, unknown `enc_alg`);
    ///   mapped to a token by ``FallbackReason/envelope(_:)`` (a `FormatError` names its field
    ///   in `field`), described in the detail.
    func envelope(in payload: JSONValue) throws -> SealedPayload

    /// Authenticates and decrypts `envelope` with `key` and the app id (bound into the AAD or
    /// `info`), then decodes the plaintext object.
    /// - Parameters:
    ///   - envelope: what ``envelope(in:)`` returned.
    ///   - key: the key for the envelope's key id.
    ///   - appID: the app's bundle identifier from the extension's configuration (never the payload's).
    /// - Returns: the decoded plaintext (FORMAT.md §5).
    /// - Throws: when the box does not authenticate or the plaintext is not a valid object;
    ///   mapped to a token by ``FallbackReason/open(_:)``; the description (no plaintext in it)
    ///   goes to the detail.
    func open(_ envelope: SealedPayload, with key: SecretBytes, appID: String) throws -> PushSealWire.PushNotification
}
