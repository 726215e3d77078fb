/// A `reason` an outcome may carry, typed: one of APNs' documented error reasons (the `reason`
/// of an error body: Apple, "Handling notification responses from APNs"), one of the client's own
/// `failed` reasons, or any other text a server sent (kept as it came). The retry policy switches
/// over it; outcome lines, metrics and summaries use ``text``, and a reason becomes a metrics
/// label or a summary word only when known (``labelValue(_:)``): a server can put any text in its
/// `reason`.
public enum APNsReason: Hashable, Sendable {
    /// A documented APNs reason.
    case apns(Server)
    /// One of the client's own `failed` reasons.
    case client(Client)
    /// Any other text (from a server; never produced by this client).
    case other(String)

    /// APNs' documented error reasons; the raw value is the text APNs sends.
    public enum Server: String, CaseIterable, Sendable {
        /// `BadCollapseId`.
        case badCollapseId = "BadCollapseId"
        /// `BadDeviceToken`.
        case badDeviceToken = "BadDeviceToken"
        /// `BadExpirationDate`.
        case badExpirationDate = "BadExpirationDate"
        /// `BadMessageId`.
        case badMessageId = "BadMessageId"
        /// `BadPriority`.
        case badPriority = "BadPriority"
        /// `BadTopic`.
        case badTopic = "BadTopic"
        /// `DeviceTokenNotForTopic`.
        case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
        /// `DuplicateHeaders`.
        case duplicateHeaders = "DuplicateHeaders"
        /// `IdleTimeout`.
        case idleTimeout = "IdleTimeout"
        /// `InvalidPushType`.
        case invalidPushType = "InvalidPushType"
        /// `MissingDeviceToken`.
        case missingDeviceToken = "MissingDeviceToken"
        /// `MissingTopic`.
        case missingTopic = "MissingTopic"
        /// `PayloadEmpty`.
        case payloadEmpty = "PayloadEmpty"
        /// `TopicDisallowed`.
        case topicDisallowed = "TopicDisallowed"
        /// `BadCertificate`.
        case badCertificate = "BadCertificate"
        /// `BadCertificateEnvironment`.
        case badCertificateEnvironment = "BadCertificateEnvironment"
        /// `ExpiredProviderToken`.
        case expiredProviderToken = "ExpiredProviderToken"
        /// `Forbidden`.
        case forbidden = "Forbidden"
        /// `InvalidProviderToken`.
        case invalidProviderToken = "InvalidProviderToken"
        /// `MissingProviderToken`.
        case missingProviderToken = "MissingProviderToken"
        /// `UnrelatedKeyIdInToken`.
        case unrelatedKeyIdInToken = "UnrelatedKeyIdInToken"
        /// `BadEnvironmentKeyInToken`.
        case badEnvironmentKeyInToken = "BadEnvironmentKeyInToken"
        /// `BadPath`.
        case badPath = "BadPath"
        /// `MethodNotAllowed`.
        case methodNotAllowed = "MethodNotAllowed"
        /// `ExpiredToken`.
        case expiredToken = "ExpiredToken"
        /// `Unregistered`.
        case unregistered = "Unregistered"
        /// `PayloadTooLarge`.
        case payloadTooLarge = "PayloadTooLarge"
        /// `TooManyProviderTokenUpdates`.
        case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
        /// `TooManyRequests`.
        case tooManyRequests = "TooManyRequests"
        /// `InternalServerError`.
        case internalServerError = "InternalServerError"
        /// `ServiceUnavailable`.
        case serviceUnavailable = "ServiceUnavailable"
        /// `Shutdown`.
        case shutdown = "Shutdown"
    }

    /// The client's own `failed` reasons (docs/apns.md, "Outcomes"); the raw value is the text
    /// outcome lines carry.
    public enum Client: String, CaseIterable, Sendable {
        /// `timeout`: no answer within the request timeout.
        case timeout
        /// `connectionFailed`: the connection (TCP or TLS) could not be opened.
        case connectionFailed
        /// `connectionLost`: the connection closed before the answer.
        case connectionLost
        /// `mayHaveBeenDelivered`: it may have reached APNs and has no collapse id, so it is not sent again.
        case mayHaveBeenDelivered
        /// `tlsVerificationFailed`: the server's certificate did not verify (final: not retried).
        case tlsVerificationFailed
        /// `refusedStream`: the server refused the stream (RFC 9113 §8.7) too many times in a row.
        case refusedStream
        /// `notSent`: never sent: the run stopped, or every attempt to send was refused before APNs took it.
        case notSent
        /// `providerTokenFailed`: no provider token could be made (the .p8 key).
        case providerTokenFailed
        /// `requestTooLarge`: the request exceeds the connection's frame or header limits (final).
        case requestTooLarge
        /// `transportUnavailable`: no TLS/HTTP/2 transport in this build or process (final).
        case transportUnavailable
    }

    /// The typed reason of `text`: a known APNs or client reason, else ``other(_:)``.
    public init(_ text: String) {
        if let s = Server(rawValue: text) {
            self = .apns(s)
        } else if let c = Client(rawValue: text) {
            self = .client(c)
        } else {
            self = .other(text)
        }
    }

    /// The reason as text: APNs' own spelling, the client's reason name, or the other text.
    public var text: String {
        switch self {
        case .apns(let s): s.rawValue
        case .client(let c): c.rawValue
        case .other(let t): t
        }
    }

    /// `false` for ``other(_:)``.
    public var isKnown: Bool {
        if case .other = self { return false }
        return true
    }

    /// `true` when `text` is a known APNs or client reason.
    public static func isKnown(_ text: String) -> Bool { APNsReason(text).isKnown }

    /// `reason` when known (or a plain identifier of at most 64 ASCII letters and digits, as the
    /// callers' own error codes are), else `other`: the value for a metrics label.
    public static func labelValue(_ reason: String) -> String {
        if isKnown(reason) { return reason }
        let u = reason.utf8
        let plain = !u.isEmpty && u.count <= 64 && u.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) }
        return plain ? reason : "other"
    }
}
