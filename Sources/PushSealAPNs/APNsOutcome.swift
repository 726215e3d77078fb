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

