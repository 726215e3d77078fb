/// One notification request: `POST /3/device/<deviceToken>` with its headers and payload.
/// Checked by ``validate()`` before anything is sent, as APNs would check it.
public struct APNsNotification: Sendable {
    /// The device token in hex (any even length; never assumed to be 64 digits).
    public var deviceToken: String
    /// The payload bytes (JSON), at most ``APNsPushType/maxPayloadByteCount``.
    public var payload: [UInt8]
    /// `apns-push-type`.
    public var pushType: APNsPushType
    /// `apns-topic`: the bundle id, with the push type's suffix (see ``APNsPushType/topic(forBundleID:)``).
    public var topic: String
    /// `apns-priority`: 10 (immediately), 5 (power considerations), 1 (prioritize power);
    /// background notifications only 5. `nil` omits the header (APNs' default, 10).
    public var priority: Int?
    /// `apns-expiration`: seconds since 1970, UTC; 0 means "once, now or never" and is sent
    /// as 0. `nil` omits the header.
    public var expiration: Int64?
    /// `apns-collapse-id`, at most 64 bytes. With one, a resend after a transport failure is
    /// safe (the device shows one notification), so the client may resend; without, never.
    public var collapseID: String?
    /// `apns-id`: a UUID, the same for every attempt; `nil` lets the client make one.
    public var apnsID: String?

    /// Longest `apns-collapse-id`, in bytes.
    public static let maxCollapseIDByteCount = 64
    /// Longest device token, in hex digits (256: APNs' are 64 today; the key stores cap tokens
    /// at the same length). A longer one is refused before sending: it could not be framed.
    public static let maxDeviceTokenLength = 256
    /// Longest `apns-topic`, in bytes (255, like a bundle id and its push-type suffix).
    public static let maxTopicByteCount = 255

    /// Creates a notification (see the properties for the meaning of each field).
    public init(deviceToken: String, payload: [UInt8], pushType: APNsPushType = .alert, topic: String,
                priority: Int? = nil, expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil) {
        self.deviceToken = deviceToken
        self.payload = payload
        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Checks what APNs would refuse, so a bad request is never sent.
    /// - Throws: `APNsError` `.badDeviceToken` (not hex, odd length, empty, or over
    ///   ``maxDeviceTokenLength`` digits), `.payloadEmpty`,
    ///   `.payloadTooLarge`, `.badPriority`, `.badExpiration` (negative), `.badCollapseID`
    ///   (over 64 bytes), `.badTopic` (empty, over ``maxTopicByteCount`` bytes, wrong suffix
    ///   for the push type, or a control character in a header value).
    public func validate() throws {
        guard deviceToken.utf8.count <= Self.maxDeviceTokenLength else {
            throw APNsError(.badDeviceToken, "the device token is \(deviceToken.utf8.count) characters, over the \(Self.maxDeviceTokenLength) allowed")
        }
        guard topic.utf8.count <= Self.maxTopicByteCount else {
            throw APNsError(.badTopic, "the topic (apns-topic) is \(topic.utf8.count) bytes, over the \(Self.maxTopicByteCount) allowed")
        }
        guard APNsText.isHex(deviceToken) else {
            throw APNsError(.badDeviceToken, "the device token is not hex digits of even length (\(deviceToken.utf8.count) characters)")
        }
        guard !payload.isEmpty else { throw APNsError(.payloadEmpty, "the payload is empty") }
        guard payload.count <= pushType.maxPayloadByteCount else {
            throw APNsError(.payloadTooLarge, "the payload is \(payload.count) bytes, over the \(pushType.maxPayloadByteCount)-byte limit of \(pushType.rawValue) notifications")
        }
        if let priority {
            guard priority == 10 || priority == 5 || priority == 1 else { throw APNsError(.badPriority, "apns-priority must be 10, 5 or 1, not \(priority)") }
            guard pushType != .background || priority == 5 else {
                throw APNsError(.badPriority, "background notifications must have apns-priority 5, not \(priority)")
            }
        }
        if let expiration, expiration < 0 { throw APNsError(.badExpiration, "apns-expiration must be 0 or seconds since 1970, not \(expiration)") }
        if let collapseID, collapseID.utf8.count > Self.maxCollapseIDByteCount {
            throw APNsError(.badCollapseID, "apns-collapse-id is \(collapseID.utf8.count) bytes, over 64")
        }
        guard !topic.isEmpty, topic.hasSuffix(pushType.topicSuffix) else {
            throw APNsError(.badTopic, topic.isEmpty ? "the topic (apns-topic) is empty"
                            : "a \(pushType.rawValue) notification's topic must end with '\(pushType.topicSuffix)'")
        }
        func hasControl(_ value: String?) -> Bool {
            guard var v = value else { return false }
            return v.withUTF8 { $0.contains { $0 < 0x20 || $0 == 0x7F } }
        }
        if hasControl(topic) || hasControl(collapseID) || hasControl(apnsID) {
            throw APNsError(.badTopic, "a header value holds a control character")
        }
        if let apnsID, !APNsNotification.isUUID(apnsID) {
            throw APNsError(.badTopic, "apns-id must be a UUID (8-4-4-4-12 hex digits)")
        }
    }

    /// `true` for `8-4-4-4-12` hex digits.
    static func isUUID(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.count == 36 else { return false }
        for (i, c) in u.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if c != UInt8(ascii: "-") { return false }
            } else if !APNsText.isHex(String(decoding: [c, c], as: UTF8.self)) {
                return false
            }
        }
        return true
    }
}
