public import PushSealJSON
import PushSealWire

/// A notification sound, as `UNNotificationSound`: the default sound or a named sound file.
public struct UNNotificationSound: Sendable, Hashable {
    /// The sound file name, or `default` for the system sound.
    public let name: String
    /// True for a critical alert sound (`aps.sound` object with `critical: 1`).
    public let isCritical: Bool
    /// Critical alert volume, 0.0 … 1.0, when given.
    public let volume: Double?

    /// Creates a sound.
    /// - Parameters:
    ///   - name: a sound file name in the app bundle, or `default`.
    ///   - isCritical: a critical alert sound.
    ///   - volume: critical alert volume 0.0 … 1.0, or `nil`.
    public init(name: String, isCritical: Bool = false, volume: Double? = nil) {
        self.name = name
        self.isCritical = isCritical
        self.volume = volume
    }

    /// The system's default sound (`"sound": "default"`).
    public static let `default` = UNNotificationSound(name: "default")
}

/// As `UNNotificationInterruptionLevel`: how strongly a notification interrupts (iOS 15).
public enum UNNotificationInterruptionLevel: String, Sendable, Hashable {
    /// Added to the list without lighting the screen or a sound.
    case passive
    /// The default: shown, with sound, respecting Focus.
    case active
    /// Breaks through Focus (needs the time-sensitive capability).
    case timeSensitive = "time-sensitive"
    /// Always shown and heard, even muted (needs Apple's critical alerts entitlement).
    case critical
}

/// The fields shared by ``UNNotificationContent`` and ``UNMutableNotificationContent``.
struct ContentFields: Sendable, Hashable {
    var title = ""
    var subtitle = ""
    var body = ""
    var badge: Int? = nil
    var sound: UNNotificationSound? = nil
    var threadIdentifier = ""
    var categoryIdentifier = ""
    var interruptionLevel = UNNotificationInterruptionLevel.active
    var relevanceScore: Double? = nil
    var targetContentIdentifier: String? = nil
    var filterCriteria: String? = nil
    var userInfo = JSONObject()
    var attachments: [UNNotificationAttachment] = []

    /// Title, subtitle and body all empty or white space only (`Character.isWhitespace`: spaces,
    /// tabs, line breaks, no-break spaces): nothing readable. What the extension refuses to show
    /// from a decrypted or localized text; an alert as sent is shown as sent (iOS's own rule).
    var hasNoReadableText: Bool { [title, subtitle, body].allSatisfy { $0.allSatisfy(\.isWhitespace) } }
}

/// An emulated `UNNotificationContent`: what a notification shows. Immutable; take a
/// ``mutableCopy()`` to change it, as an extension does.
///
/// A value type (iOS uses a class): handing content to the content handler snapshots it, so
/// an extension that keeps editing its best attempt content cannot change what was delivered.
public struct UNNotificationContent: Sendable, Hashable {
    var fields: ContentFields

    init(fields: ContentFields) { self.fields = fields }

    /// Empty content (all strings empty, no badge, sound, attachments or userInfo).
    public init() { fields = ContentFields() }

    /// Freezes a mutable content.
    public init(_ content: UNMutableNotificationContent) { fields = content.fields }

    /// The title (first line, bold). Empty when absent.
    public var title: String { fields.title }
    /// The subtitle (second line). Empty when absent.
    public var subtitle: String { fields.subtitle }
    /// The body text. Empty when absent.
    public var body: String { fields.body }
    /// The app icon badge number, or `nil` to leave it unchanged.
    public var badge: Int? { fields.badge }
    /// The sound to play, or `nil` for none.
    public var sound: UNNotificationSound? { fields.sound }
    /// Groups notifications (`aps.thread-id`). Empty when absent.
    public var threadIdentifier: String { fields.threadIdentifier }
    /// The actionable category (`aps.category`). Empty when absent.
    public var categoryIdentifier: String { fields.categoryIdentifier }
    /// How strongly the notification interrupts (`aps.interruption-level`; `active` when absent).
    public var interruptionLevel: UNNotificationInterruptionLevel { fields.interruptionLevel }
    /// The summary's relevance, 0…1 (`aps.relevance-score`); `nil` when absent.
    public var relevanceScore: Double? { fields.relevanceScore }
    /// The content the notification brings forward (`aps.target-content-id`); `nil` when absent.
    public var targetContentIdentifier: String? { fields.targetContentIdentifier }
    /// The Focus filter it matches (`aps.filter-criteria`); `nil` when absent.
    public var filterCriteria: String? { fields.filterCriteria }
    /// Custom data: as delivered, the payload's top-level members other than `aps`, in payload
    /// order; after a successful open, `aps` and the sealed `data` under `pushseal` only.
    public var userInfo: JSONObject { fields.userInfo }
    /// Media shown with the notification.
    public var attachments: [UNNotificationAttachment] { fields.attachments }

    /// True when title, subtitle and body are all empty: iOS would show nothing readable.
    public var isBlank: Bool { fields.title.isEmpty && fields.subtitle.isEmpty && fields.body.isEmpty }

    /// A mutable copy, as `mutableCopy() as? UNMutableNotificationContent` on iOS.
    public func mutableCopy() -> UNMutableNotificationContent { UNMutableNotificationContent(fields: fields) }
}

/// An emulated `UNMutableNotificationContent`: content an extension edits before delivering.
public struct UNMutableNotificationContent: Sendable, Hashable {
    var fields: ContentFields

    init(fields: ContentFields) { self.fields = fields }

    /// Empty content.
    public init() { fields = ContentFields() }

    /// The title. Empty when absent.
    public var title: String { get { fields.title } set { fields.title = newValue } }
    /// The subtitle. Empty when absent.
    public var subtitle: String { get { fields.subtitle } set { fields.subtitle = newValue } }
    /// The body text. Empty when absent.
    public var body: String { get { fields.body } set { fields.body = newValue } }
    /// The app icon badge number, or `nil` to leave it unchanged.
    public var badge: Int? { get { fields.badge } set { fields.badge = newValue } }
    /// The sound to play, or `nil` for none.
    public var sound: UNNotificationSound? { get { fields.sound } set { fields.sound = newValue } }
    /// Groups notifications. Empty when absent.
    public var threadIdentifier: String { get { fields.threadIdentifier } set { fields.threadIdentifier = newValue } }
    /// The actionable category. Empty when absent.
    public var categoryIdentifier: String { get { fields.categoryIdentifier } set { fields.categoryIdentifier = newValue } }
    /// How strongly the notification interrupts.
    public var interruptionLevel: UNNotificationInterruptionLevel { get { fields.interruptionLevel } set { fields.interruptionLevel = newValue } }
    /// Custom data, in order.
    public var userInfo: JSONObject { get { fields.userInfo } set { fields.userInfo = newValue } }
    /// Media shown with the notification.
    public var attachments: [UNNotificationAttachment] { get { fields.attachments } set { fields.attachments = newValue } }

    /// True when title, subtitle and body are all empty.
    public var isBlank: Bool { fields.title.isEmpty && fields.subtitle.isEmpty && fields.body.isEmpty }
}

/// An emulated `UNNotificationRequest`: a notification's identifier and content, plus (an
/// emulation extra) the APNs payload it came from, which the system keeps in `userInfo` on iOS.
public struct UNNotificationRequest: Sendable, Hashable {
    /// The request identifier (on iOS the `apns-id`, or a UUID).
    public let identifier: String
    /// The content as delivered by APNs.
    public let content: UNNotificationContent
    /// The whole APNs payload, `aps` included.
    public let payload: JSONValue

    /// Creates a request.
    /// - Parameters:
    ///   - identifier: the request identifier.
    ///   - content: the content as delivered.
    ///   - payload: the APNs payload (a JSON object), or `.object([:])` when there is none.
    public init(identifier: String, content: UNNotificationContent, payload: JSONValue = .object(JSONObject())) {
        self.identifier = identifier
        self.content = content
        self.payload = payload
    }

    /// Creates a request from an APNs payload, with content built as iOS builds it
    /// (``UNNotificationContent/init(apnsPayload:)``).
    public init(identifier: String, apnsPayload: JSONValue) {
        self.init(identifier: identifier, content: UNNotificationContent(apnsPayload: apnsPayload), payload: apnsPayload)
    }
}
