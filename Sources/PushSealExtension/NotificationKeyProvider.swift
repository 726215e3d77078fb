import PushSealCrypto
import PushSealFormat

/// Gives the decrypting service the key for a key id, as the extension's own identity would
/// read it from the keychain (its entitlements, the device lock state).
///
/// The service turns a thrown error into a stable reason token (``FallbackReason/key(_:)``):
/// a `KeychainError` becomes `keychain:<statusName>(<OSStatus>)`, e.g.
/// `keychain:errSecInteractionNotAllowed(-25308)`; an error conforming to
/// ``FallbackReasonProviding`` gives its own token; anything else is `keyUnavailable`. The
/// error's description goes to the detail and the log: it must never contain key bytes.
public protocol NotificationKeyProvider: Sendable {
    /// The 32-byte key stored under `keyID`.
    /// - Parameter keyID: 1–64 characters of `A-Z a-z 0-9 _ -`, from the payload's `key_id`.
    /// - Returns: the key; the service drops it when done (it wipes itself).
    /// - Throws: any error whose description explains why (no key bytes in it); see above.
    func key(for keyID: String) throws -> SecretBytes
}

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
    /// - Returns: the decoded plaintext.
    /// - Throws: when the box does not authenticate or the plaintext is not a valid object;
    ///   mapped to a token by ``FallbackReason/open(_:)``; the description (no plaintext in it)
    ///   goes to the detail.
    func open(_ payload: JSONValue, with key: SecretBytes, appID: String) throws -> DecryptedNotification
}

/// The decoded plaintext of a notification, as the service needs it.
public struct DecryptedNotification: Sendable {
    /// One locale's variant (`localizations.<tag>`); a missing field falls back to the default's.
    public struct Localization: Sendable, Hashable {
        /// A BCP 47 language tag as written, e.g. `pt-BR`, `fr`.
        public let locale: String
        /// Localized title, or `nil`.
        public let title: String?
        /// Localized subtitle, or `nil`.
        public let subtitle: String?
        /// Localized body, or `nil`.
        public let body: String?

        /// Creates a variant.
        public init(locale: String, title: String? = nil, subtitle: String? = nil, body: String? = nil) {
            self.locale = locale
            self.title = title
            self.subtitle = subtitle
            self.body = body
        }
    }

    /// The default title, or `nil`.
    public var title: String?
    /// The default subtitle, or `nil`.
    public var subtitle: String?
    /// The default body, or `nil`.
    public var body: String?
    /// The media to attach, or `nil`.
    public var media: MediaDescriptor?
    /// Per-locale variants, in plaintext order.
    public var localizations: [Localization]
    /// Members merged into `userInfo` (`data`), or `nil`.
    public var data: JSONObject?
    /// Issued at, seconds since 1970 UTC (`iat`), or `nil`.
    public var issuedAt: Int64?
    /// Expires at, seconds since 1970 UTC (`exp`), or `nil` for never.
    public var expiresAt: Int64?
    /// The notification id for the replay guard (`id`), or `nil`.
    public var id: String?

    /// Creates a plaintext.
    public init(title: String? = nil, subtitle: String? = nil, body: String? = nil, media: MediaDescriptor? = nil,
                localizations: [Localization] = [], data: JSONObject? = nil, issuedAt: Int64? = nil,
                expiresAt: Int64? = nil, id: String? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.media = media
        self.localizations = localizations
        self.data = data
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.id = id
    }

    /// Title, subtitle and body for `locale`: the variant whose tag matches the locale, else
    /// the locale with its last subtag removed, and so on (`pt-BR` → `pt`), else the default.
    /// Tags compare case-insensitively with `_` read as `-`. A variant's missing field falls
    /// back to the default's field.
    /// - Parameter locale: the device locale, e.g. `pt-BR`; `nil` picks the default.
    /// - Returns: the texts and the tag used (`nil` for the default).
    public func localized(for locale: String?) -> (title: String?, subtitle: String?, body: String?, locale: String?) {
        func normalize(_ tag: String) -> String { tag.replacing("_", with: "-").lowercased() }
        if var wanted = locale.map(normalize), !wanted.isEmpty {
            while true {
                if let variant = localizations.first(where: { normalize($0.locale) == wanted }) {
                    return (variant.title ?? title, variant.subtitle ?? subtitle, variant.body ?? body, variant.locale)
                }
                guard let cut = wanted.lastIndex(of: "-") else { break }
                wanted = String(wanted[..<cut])
            }
        }
        return (title, subtitle, body, nil)
    }
}
