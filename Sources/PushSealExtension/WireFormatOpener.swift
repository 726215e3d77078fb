public import PushSealJSON
public import PushSealCrypto
public import PushSealWire

/// The real payload opener: the wire format (docs/FORMAT.md) through PushSealWire's
/// `SealedPayload`, with the algorithms of an `EnvelopeRegistry`.
///
/// ``envelope(in:)`` checks the whole envelope (fields, `enc_alg`, header fields, `key_id`,
/// base64, box length) before any key lookup, so a malformed payload is reported as such, never
/// as an unknown key. ``open(_:with:appID:)`` lets the algorithm verify the box over its AAD
/// (v1: `pushseal:v1|A256GCM|<key_id>|<app_id>`) with the app id it is given — the extension's
/// configured one, never a payload field — then decodes the plaintext.
public struct WireFormatOpener: NotificationPayloadOpener {
    /// The algorithms accepted by `enc_alg`.
    public let registry: EnvelopeRegistry

    /// Creates the opener (stateless).
    /// - Parameter registry: the algorithms accepted (default `EnvelopeRegistry.standard`: `A256GCM`).
    public init(registry: EnvelopeRegistry = .standard) {
        self.registry = registry
    }

    /// The payload's sealed part, after checking every envelope field.
    /// - Throws: `FormatError` `.missingField`, `.wrongFieldType`, `.emptyField` (with
    ///   `field`), `.unknownAlgorithm`, `.invalidKeyID`, `.invalidBase64`, `.truncatedBox`.
    public func envelope(in payload: JSONValue) throws -> SealedPayload {
        try SealedPayload(payload: payload, registry: registry)
    }

    /// Authenticates, decrypts and decodes the envelope.
    /// - Parameters:
    ///   - envelope: from ``envelope(in:)``.
    ///   - key: the key for its key id (32 bytes for `A256GCM`).
    ///   - appID: the app's bundle identifier from the extension's configuration.
    /// - Returns: the plaintext, after the box authenticated.
    /// - Throws: `FormatError` `.authenticationFailed`, `.invalidKey`, `.invalidAppID`, `.invalidPlaintext`.
    public func open(_ envelope: SealedPayload, with key: SecretBytes, appID: String) throws -> PushSealWire.Notification {
        try envelope.open(with: key, appID: appID)
    }
}
