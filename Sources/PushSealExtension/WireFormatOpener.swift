import PushSealCrypto
import PushSealFormat

/// The real payload opener: wire format v1 (docs/FORMAT.md) through PushSealFormat's
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
    public func open(_ payload: JSONValue, with key: SecretBytes, appID: String) throws -> DecryptedNotification {
        DecryptedNotification(try SealedPayload(payload: payload).open(with: key, appID: appID))
    }
}

extension DecryptedNotification {
    /// The service's view of a decoded wire-format plaintext (media `sha256` as lower-case hex).
    /// - Parameter plaintext: the decoded plaintext.
    public init(_ plaintext: NotificationPlaintext) {
        self.init(title: plaintext.title, subtitle: plaintext.subtitle, body: plaintext.body,
                  media: plaintext.media.map { m in
                      MediaDescriptor(url: m.url, type: m.type, sha256Hex: m.sha256.map(Self.hex), key: m.key)
                  },
                  localizations: plaintext.localizations.map {
                      Localization(locale: $0.locale, title: $0.content.title, subtitle: $0.content.subtitle, body: $0.content.body)
                  },
                  data: plaintext.data, issuedAt: plaintext.iat, expiresAt: plaintext.exp, id: plaintext.id)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
