public import PushSealJSON
public import PushSealWire

/// What the server wants the user to see: the notification before sealing.
///
/// Everything here goes inside `encrypted_data`; APNs sees none of it. At least one of
/// `title`, `subtitle`, `body` must be non-empty. Strings are kept byte for byte (no Unicode
/// normalization, no trimming); `media` is PushSealWire's `MediaDescriptor`, so its `sha256`
/// and `key` are sealed in their canonical spelling (lower-case hex, standard padded base64).
///
/// A value built in code is checked by the same rules as the JSON form when it is sealed
/// (``validate()``): the sender never seals a plaintext a receiver rejects.
public struct OutgoingNotification: Sendable, Equatable {
    /// The title shown instead of the fallback title.
    public var title: String?
    /// The subtitle.
    public var subtitle: String?
    /// The body; the fit ladder shortens it at a Character boundary when asked to.
    public var body: String?
    /// An attachment, dropped by the fit ladder before the body is shortened.
    public var media: MediaDescriptor?
    /// Per-locale variants: `{"fr": {"title": …, "subtitle": …, "body": …}}`.
    public var localizations: JSONObject?
    /// App data merged into the notification's `userInfo`.
    public var data: JSONObject?
    /// Issued at, seconds since 1970 UTC, 0 to ``maxTimeSeconds``; the sender fills in the
    /// current time when `nil`.
    public var iat: Int64?
    /// Expiry, seconds since 1970 UTC, from `iat` to ``maxTimeSeconds``; also sent as
    /// `apns-expiration`. Exclusive with `ttlSeconds`.
    public var exp: Int64?
    /// Time to live in seconds from the seal (0 or more); the sender turns it into `exp`, which
    /// must stay at most ``maxTimeSeconds``. Not sealed itself.
    public var ttlSeconds: Int64?
    /// An identifier the app can use to replace or deduplicate notifications.
    public var id: String?

    /// Creates a notification.
    public init(title: String? = nil, subtitle: String? = nil, body: String? = nil, media: MediaDescriptor? = nil,
                localizations: JSONObject? = nil, data: JSONObject? = nil, iat: Int64? = nil, exp: Int64? = nil,
                ttlSeconds: Int64? = nil, id: String? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.media = media
        self.localizations = localizations
        self.data = data
        self.iat = iat
        self.exp = exp
        self.ttlSeconds = ttlSeconds
        self.id = id
    }

    /// The members accepted in the JSON form.
    public static let memberNames = ["title", "subtitle", "body", "media", "localizations", "data", "iat", "exp", "ttl", "id"]

    /// Reads the JSON form: an object with `title`, `subtitle`, `body` (strings), `media`
    /// (`{url, type?, sha256?, key?}`), `localizations` (object of locale → `{title?,
    /// subtitle?, body?}`), `data` (object), `iat`, `exp`, `ttl` (integers, seconds), `id` (string).
    /// Every member is read by the same functions ``validate()`` runs on a value built in code.
    /// - Throws: `SenderError` `.invalidNotification` naming the member for a wrong JSON type,
    ///   an unknown member, a time out of range (negative, after ``maxTimeSeconds``, `exp`
    ///   before `iat`, both `exp` and `ttl`), or a `media`, `localizations` or `data` a
    ///   receiver would reject.
    public init(json: JSONValue) throws {
        guard case .object(let o) = json else {
            throw SenderError(.invalidNotification, "the notification must be a JSON object, got \(json.typeName)")
        }
        for m in o {
            switch m.key {
            case "title": title = try Self.string(m.value, "title")
            case "subtitle": subtitle = try Self.string(m.value, "subtitle")
            case "body": body = try Self.string(m.value, "body")
            case "id": id = try Self.string(m.value, "id")
            case "iat": iat = try Self.time(m.value, "iat")
            case "exp": exp = try Self.time(m.value, "exp")
            case "ttl": ttlSeconds = try Self.time(m.value, "ttl")
            case "data": data = try Self.data(m.value)
            case "media": media = try Self.media(m.value)
            case "localizations": localizations = try Self.localizations(m.value)
            default:
                throw SenderError(.invalidNotification, "unknown member \(Self.excerpt(m.key)) (known: \(Self.memberNames.joined(separator: ", ")))")
            }
        }
        try Self.checkTimes(iat: iat, exp: exp, ttlSeconds: ttlSeconds)
    }

    /// Parses and reads the JSON text of a notification (see ``init(json:)``).
    /// - Parameter jsonBytes: UTF-8 JSON text of one object.
    /// - Throws: `SenderError` `.invalidJSON` (not UTF-8, not JSON), `.invalidNotification`.
    public init(jsonBytes: [UInt8]) throws {
        let value: JSONValue
        do {
            value = try JSONReader.parse(jsonBytes)
        } catch let e as JSONError {
            throw SenderError(.invalidJSON, "the notification is not valid JSON: \(e.reason)")
        }
        try self.init(json: value)
    }

    static func excerpt(_ s: String) -> String {
        let shown = s.count > 40 ? String(s.prefix(37)) + "..." : s
        return "'\(shown)'"
    }

    static func wrongType(_ name: String, _ expected: String, _ got: JSONValue) -> SenderError {
        SenderError(.invalidNotification, "\(name) must be \(expected), got \(got.typeName)")
    }

    static func string(_ v: JSONValue, _ name: String) throws -> String {
        guard case .string(let s) = v else { throw wrongType(name, "a string", v) }
        return s
    }

    /// `true` when title, subtitle or body is a non-empty string.
    public var hasVisibleText: Bool {
        !(title ?? "").isEmpty || !(subtitle ?? "").isEmpty || !(body ?? "").isEmpty
    }
}
