/// The one final outcome of a notification.
public struct APNsOutcome: Sendable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable {
        /// APNs answered 200: it took the notification (``apnsID``, ``apnsUniqueID``).
        case accepted
        /// APNs refused it (``status``, ``reason``), or a retry would not help.
        case rejected
        /// 410 `Unregistered` or `ExpiredToken`: the token is no longer valid since
        /// ``timestampMilliseconds``.
        case unregistered
        /// No answer after the retries allowed (``reason`` says why, e.g. `timeout`), or not
        /// resent because it may have reached APNs.
        case failed
    }

    /// The caller's tag given to ``APNsClient/send(_:tag:)`` (e.g. the input line number).
    public let tag: Int
    /// The notification's device token.
    public let deviceToken: String
    /// The kind of outcome.
    public let kind: Kind
    /// The HTTP status of the last answer (200, 400, 403, 410, 429, 500, 503 …), `nil` if none.
    public let status: Int?
    /// APNs' reason (`BadDeviceToken`, `Unregistered`, …), or the client's for a failure
    /// (`timeout`, `connectionFailed`, `mayHaveBeenDelivered`, `tooManyAttempts`); `nil` when accepted.
    public let reason: String?
    /// `apns-id`, the same on every attempt.
    public let apnsID: String
    /// `apns-unique-id` from APNs (development environment), if given.
    public let apnsUniqueID: String?
    /// For 410: when APNs last knew the token valid, milliseconds since 1970, UTC.
    public let timestampMilliseconds: Int64?
    /// Requests sent (1 when the first answer was final).
    public let attempts: Int
    /// The connection of the last attempt (its local TCP port), `nil` if none was made.
    public let connection: Int?
    /// From ``APNsClient/send(_:tag:)`` to this outcome, in nanoseconds (retry delays included).
    public let latencyNanoseconds: UInt64
    /// `true` for a 410: the caller should delete ``deviceToken`` if it was registered before
    /// ``timestampMilliseconds`` (a `BadDeviceToken` invalidates only through the client's
    /// invalidation handler, after the ``InvalidationGuard``).
    public let invalidatesToken: Bool
}

/// A device token APNs says is dead, for the caller's registry.
public struct APNsInvalidation: Sendable, Hashable {
    /// The caller's tag.
    public let tag: Int
    /// The token.
    public let deviceToken: String
    /// `Unregistered`, `ExpiredToken` (410) or `BadDeviceToken` (400).
    public let reason: String
    /// For 410: milliseconds since 1970, UTC, when the token stopped being valid.
    public let timestampMilliseconds: Int64?

    /// `true` when a registration made at `registeredAtMilliseconds` (ms since 1970) should
    /// be deleted: it is older than the 410's timestamp (a token re-registered after it is
    /// valid again), or the reason is `BadDeviceToken`.
    public func shouldDelete(registeredAtMilliseconds: Int64) -> Bool {
        guard let timestampMilliseconds else { return true }
        return registeredAtMilliseconds < timestampMilliseconds
    }
}

/// The `reason` texts an outcome may carry that are known: APNs' documented error reasons
/// (the `reason` of an error body) and the client's own failure reasons. A server can put any
/// text in its `reason`; metrics and summaries use a reason as a label or a word only when it
/// is one of these (``labelValue(_:)``), and escape it otherwise.
public enum APNsReason {
    /// APNs' documented reasons (Apple, "Handling notification responses from APNs").
    public static let apns: Set<String> = [
        "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
        "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken", "MissingTopic",
        "PayloadEmpty", "TopicDisallowed", "BadCertificate", "BadCertificateEnvironment", "ExpiredProviderToken", "Forbidden",
        "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken", "BadEnvironmentKeyInToken", "BadPath",
        "MethodNotAllowed", "ExpiredToken", "Unregistered", "PayloadTooLarge", "TooManyProviderTokenUpdates", "TooManyRequests",
        "InternalServerError", "ServiceUnavailable", "Shutdown",
    ]
    /// The client's own `failed` reasons.
    public static let client: Set<String> = [
        "timeout", "connectionFailed", "connectionLost", "mayHaveBeenDelivered", "tlsVerificationFailed", "refusedStream",
        "notSent", "providerTokenFailed", "requestTooLarge", "transportUnavailable",
    ]

    /// `true` for a reason in ``apns`` or ``client``.
    public static func isKnown(_ reason: String) -> Bool { apns.contains(reason) || client.contains(reason) }

    /// `reason` when known (or a plain identifier of at most 64 ASCII letters and digits, as the
    /// callers' own error codes are), else `other`: the value for a metrics label.
    public static func labelValue(_ reason: String) -> String {
        if isKnown(reason) { return reason }
        let u = reason.utf8
        let plain = !u.isEmpty && u.count <= 64 && u.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) }
        return plain ? reason : "other"
    }
}
