public import PushSealJSON
public import PushSealWire

/// The alert APNs and the lock screen see when the extension does not run or cannot open the
/// payload. It must be harmless (it travels in clear) and non-empty: without a title and body
/// iOS never runs the Notification Service Extension.
///
/// Plain (`title`, `subtitle`, `body`) or localized (Apple's `title-loc-key`,
/// `title-loc-args`, `subtitle-loc-key`, `subtitle-loc-args`, `loc-key`, `loc-args`: the
/// device looks the keys up in the app's `Localizable.strings` and puts the arguments into the
/// `%@` and `%1$@` of the string it finds). A title is `title` or `title-loc-key`, a body `body`
/// or `loc-key`; both must be non-empty (checked by ``ClearPart``).
public struct FallbackAlert: Sendable, Hashable {
    /// The default fallback title, `New message`.
    public static let defaultTitle = "New message"
    /// The default fallback body, `Open the app to read it`.
    public static let defaultBody = "Open the app to read it"
    /// The default alert: "New message" / "Open the app to read it".
    public static let standard = FallbackAlert(title: defaultTitle, body: defaultBody)

    /// The clear-text title; empty for none (then ``titleLocKey`` names it).
    public var title: String
    /// The clear-text body; empty for none (then ``locKey`` names it).
    public var body: String
    /// `subtitle`, in clear; `nil` for none.
    public var subtitle: String?
    /// `title-loc-key`: the key of the title in the app's `Localizable.strings`; `nil` for none.
    public var titleLocKey: String?
    /// `title-loc-args`: the strings for the `%@` / `%n$@` of the title's format; `nil` for none.
    public var titleLocArgs: [String]?
    /// `subtitle-loc-key`: the key of the subtitle; `nil` for none.
    public var subtitleLocKey: String?
    /// `subtitle-loc-args`: the strings for the subtitle's format; `nil` for none.
    public var subtitleLocArgs: [String]?
    /// `loc-key`: the key of the body; `nil` for none.
    public var locKey: String?
    /// `loc-args`: the strings for the body's format; `nil` for none.
    public var locArgs: [String]?

    /// Creates a fallback alert; checked by ``ClearPart`` (and so by
    /// ``NotificationSealer/init(appID:keys:options:clock:registry:)``).
    public init(title: String = FallbackAlert.defaultTitle, body: String = FallbackAlert.defaultBody, subtitle: String? = nil,
                titleLocKey: String? = nil, titleLocArgs: [String]? = nil, subtitleLocKey: String? = nil,
                subtitleLocArgs: [String]? = nil, locKey: String? = nil, locArgs: [String]? = nil) {
        self.title = title
        self.body = body
        self.subtitle = subtitle
        self.titleLocKey = titleLocKey
        self.titleLocArgs = titleLocArgs
        self.subtitleLocKey = subtitleLocKey
        self.subtitleLocArgs = subtitleLocArgs
        self.locKey = locKey
        self.locArgs = locArgs
    }
}

/// The `aps` members passed through in clear (Apple, "Generating a remote notification",
/// table of `aps` keys). All optional; checked by ``ClearPart``.
public struct APSFields: Sendable, Hashable {
    /// The interruption levels iOS knows.
    public static let interruptionLevels = ["passive", "active", "time-sensitive", "critical"]

    /// `sound` as a name: a sound file name in the app bundle, or `default` (`nil` for none,
    /// or when ``soundValue`` is a critical alert sound).
    public var sound: String? {
        get { if case .named(let name)? = soundValue { name } else { nil } }
        set { soundValue = newValue.map(PresentationFields.Sound.named) }
    }
    /// `sound`: a name, or a critical alert sound (`{"critical": 1, "name", "volume"}`, the
    /// sealed `aps`'s shape: PushSealWire's `PresentationFields.Sound`); `nil` for none.
    public var soundValue: PresentationFields.Sound?
    /// `badge`: the number on the app icon, >= 0 (0 removes the badge).
    public var badge: Int64?
    /// `thread-id`: groups notifications.
    public var threadID: String?
    /// `category`: the notification category (actions).
    public var category: String?
    /// `interruption-level`: one of ``interruptionLevels``.
    public var interruptionLevel: String?
    /// `relevance-score`: 0...1, for the notification summary.
    public var relevanceScore: Double?
    /// `target-content-id`: the window or content the notification brings forward.
    public var targetContentID: String?
    /// `filter-criteria`: the Focus filter the notification matches.
    public var filterCriteria: String?

    /// Creates the fields.
    public init(sound: String? = nil, badge: Int64? = nil, threadID: String? = nil, category: String? = nil,
                interruptionLevel: String? = nil, relevanceScore: Double? = nil, targetContentID: String? = nil,
                filterCriteria: String? = nil) {
        self.soundValue = sound.map(PresentationFields.Sound.named)
        self.badge = badge
        self.threadID = threadID
        self.category = category
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.targetContentID = targetContentID
        self.filterCriteria = filterCriteria
    }
}

/// Everything about a payload that is the same for every recipient of a send.
public struct SealOptions: Sendable, Hashable {
    /// The APNs payload budget for an alert, in bytes (Apple: 4 KB for regular pushes).
    public static let maxPayloadByteCount = 4096
    /// The longest `apns-collapse-id`, in bytes (Apple: 64 bytes).
    public static let maxCollapseIDByteCount = 64

    /// The clear-text alert.
    public var fallback: FallbackAlert
    /// `aps` members passed through in clear.
    public var aps: APSFields
    /// `apns-priority`: 10 (immediately, the default) or 5 (power considerations).
    public var priority: Int
    /// `apns-collapse-id`, at most 64 bytes; `nil` for none.
    public var collapseID: String?
    /// The default ``defaultTTLSeconds``: 30 days (2,592,000 s), the keys' grace window, so a
    /// notification never outlives the key that opens it and the device's replay guard can
    /// forget its id (security review F2).
    public static let standardTTLSeconds: Int64 = 30 * 24 * 60 * 60
    /// The sealed lifetime of a notification sent with a TTL of 0 (`apns-expiration: 0`, APNs'
    /// "deliver now or never"): `exp` = `iat` + 60 seconds, so it is not born expired and still
    /// shows when APNs delivers it at once.
    public static let immediateTTLSeconds: Int64 = 60
    /// Bytes of randomness in a generated notification `id` (16, written as 22 characters of
    /// unpadded base64url).
    public static let generatedIDByteCount = 16

    /// A time to live in seconds for notifications that give neither `exp` nor `ttl`
    /// (default ``standardTTLSeconds``; `nil` seals no `exp` and sends no `apns-expiration`:
    /// `push-seal --no-expiry`). 0 means APNs' "now or never" (see ``immediateTTLSeconds``).
    public var defaultTTLSeconds: Int64?
    /// Give every notification without an `id` a random one (``generatedIDByteCount`` bytes,
    /// base64url), so the device's replay guard recognises a repeat. Default on.
    public var generatesIDs: Bool
    /// Pad the plaintext to its Padmé length (hides the length in buckets). Default on.
    public var padding: Bool
    /// Fit an over-budget payload: drop padding, then media, then shorten the body at a
    /// Character boundary with "…". Off by default: over budget is an error.
    public var fit: Bool

    /// Creates options; checked by ``NotificationSealer/init(appID:keys:options:clock:)``.
    public init(fallback: FallbackAlert = .standard, aps: APSFields = APSFields(), priority: Int = 10,
                collapseID: String? = nil, defaultTTLSeconds: Int64? = SealOptions.standardTTLSeconds, generatesIDs: Bool = true,
                padding: Bool = true, fit: Bool = false) {
        self.fallback = fallback
        self.aps = aps
        self.priority = priority
        self.collapseID = collapseID
        self.defaultTTLSeconds = defaultTTLSeconds
        self.generatesIDs = generatesIDs
        self.padding = padding
        self.fit = fit
    }
}

/// The HTTP/2 request headers APNs needs for one payload (Apple, "Sending notification
/// requests to APNs").
public struct APNsHeaders: Sendable, Hashable {
    /// `apns-push-type`: `alert` for a display message (shown by the extension), `background` for a retract (FORMAT.md §5.1, handed to the app).
    public let pushType: String
    /// `apns-topic`: the app id (bundle identifier).
    public let topic: String
    /// `apns-priority`: 10 or 5.
    public let priority: Int
    /// `apns-expiration`: seconds since 1970 UTC, or 0 (a TTL of 0: deliver now or never);
    /// `nil` omits the header (APNs' storage policy).
    public let expiration: Int64?
    /// `apns-collapse-id`, at most 64 bytes; `nil` omits the header.
    public let collapseID: String?

    /// The headers as name/value pairs in a stable order, absent ones left out.
    public var fields: [(name: String, value: String)] {
        var out: [(name: String, value: String)] = [("apns-push-type", pushType), ("apns-topic", topic), ("apns-priority", String(priority))]
        if let expiration { out.append(("apns-expiration", String(expiration))) }
        if let collapseID { out.append(("apns-collapse-id", collapseID)) }
        return out
    }

    /// Writes the headers as one JSON object of strings (`{"apns-push-type":"alert",…}`): the
    /// bytes of ``fields`` written in order, without building that array (`push-seal batch`
    /// writes this for every line).
    public func write<S: ByteSink>(to writer: inout JSONSinkWriter<S>) {
        writer.beginObject()
        writer.key(static: "apns-push-type")
        writer.string(pushType)
        writer.key(static: "apns-topic")
        writer.string(topic)
        writer.key(static: "apns-priority")
        writer.string(decimal: Int64(priority))
        if let expiration {
            writer.key(static: "apns-expiration")
            writer.string(decimal: expiration)
        }
        if let collapseID {
            writer.key(static: "apns-collapse-id")
            writer.string(collapseID)
        }
        writer.endObject()
    }
}

/// One change the fit ladder made to bring a payload within budget.
public enum FitChange: Sendable, Hashable, CustomStringConvertible {
    /// The Padmé padding was dropped (this many bytes of spaces).
    case droppedPadding(byteCount: Int)
    /// The media attachment was dropped.
    case droppedMedia
    /// The body was cut after `keptCharacters` of its `originalCharacters` Characters
    /// (grapheme clusters) and "…" appended.
    case shortenedBody(originalCharacters: Int, keptCharacters: Int)

    public var description: String {
        switch self {
        case .droppedPadding(let n): "dropped \(n) bytes of padding"
        case .droppedMedia: "dropped the media attachment"
        case .shortenedBody(let from, let to): "shortened the body from \(from) to \(to) characters plus an ellipsis"
        }
    }
}

/// A sealed notification ready for APNs.
public struct SealedNotification: Sendable {
    /// The exact payload bytes (compact JSON, at most 4096).
    public let payload: [UInt8]
    /// The request headers.
    public let headers: APNsHeaders
    /// The key id it was sealed under.
    public let keyID: String
    /// What the fit ladder changed, in order (empty when nothing was changed).
    public let changes: [FitChange]
}
