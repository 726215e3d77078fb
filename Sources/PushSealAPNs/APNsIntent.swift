/// A record that a request is about to go out: the client hands these to its `beforeSending`
/// handler before any byte of the requests is written to a socket (their HEADERS, DATA and
/// END_STREAM), one group per round of the transfer thread, so the caller can record them
/// durably together with the outcomes of that round. If the caller cannot record them, the
/// client sends none of them and stops sending (``APNsClient/stopSending()``).
///
/// After a crash, a notification with an intent and no final outcome may have reached APNs:
/// ``APNsResumeRule`` says what to do with it. That keeps the live rule ("a request that may
/// have reached APNs is sent again only with a collapse id") across a crash. The gateway's
/// outbox records the same intent in its own rows.
public struct APNsIntent: Sendable, Hashable {
    /// The caller's tag given to ``APNsClient/send(_:tag:)``.
    public let tag: Int
    /// `apns-id`, the same on every attempt.
    public let apnsID: String
    /// The notification has an `apns-collapse-id` (a resend is safe: one notification shows).
    public let hasCollapseID: Bool

    /// Creates an intent.
    public init(tag: Int, apnsID: String, hasCollapseID: Bool) {
        self.tag = tag
        self.apnsID = apnsID
        self.hasCollapseID = hasCollapseID
    }
}

/// What a resumed run does with a notification an earlier run recorded: the one rule for
/// `push-send --resume` and the gateway's outbox (docs/apns.md, "Resuming").
public enum APNsResumeRule {
    /// What to do with one notification.
    public enum Decision: Sendable, Hashable {
        /// It has a final outcome: not sent again. `success` when that outcome is `accepted`.
        case skip(success: Bool)
        /// Send it (again): nothing of it reached APNs, or it has a collapse id.
        case send
        /// It may have reached APNs and has no collapse id: record `failed`
        /// `mayHaveBeenDelivered` without sending.
        case failMayHaveBeenDelivered
    }

    /// `failed` reasons that guarantee APNs did not take the notification: the connection or
    /// TLS never opened, the stream was refused or never sent, the run stopped before sending
    /// it, no provider token, or APNs answered 429/500/503 to every attempt. (`timeout` and
    /// `connectionLost` are final `failed` reasons only when nothing was written, or with a
    /// collapse id: a resend is safe either way.)
    public static let resendableFailures: Set<APNsReason> = [
        .client(.connectionFailed), .client(.connectionLost), .client(.timeout), .client(.tlsVerificationFailed),
        .client(.refusedStream), .client(.notSent), .client(.providerTokenFailed),
        .apns(.tooManyRequests), .apns(.tooManyProviderTokenUpdates), .apns(.internalServerError), .apns(.serviceUnavailable), .apns(.shutdown),
    ]

    /// `true` when an outcome of `kind` (with HTTP `status` and `reason`) lets the notification be
    /// sent again: a `failed` outcome that never reached APNs.
    public static func isResendable(kind: APNsOutcome.Kind, status: Int?, reason: String?) -> Bool {
        guard kind == .failed else { return false }
        if let status, status == 429 || status == 500 || status == 503 { return true }
        return reason.map { resendableFailures.contains(APNsReason($0)) } ?? false
    }

    /// The decision for a notification from what the earlier runs recorded.
    /// - Parameters:
    ///   - finalOutcome: the kind of its last outcome when that one is final (not
    ///     ``isResendable(kind:status:reason:)``), `nil` if it has none or a resendable one.
    ///   - intentAfterOutcome: an intent was recorded after its last outcome (or with none).
    ///   - hasCollapseID: the notification has an `apns-collapse-id`.
    public static func decide(finalOutcome: APNsOutcome.Kind?, intentAfterOutcome: Bool, hasCollapseID: Bool) -> Decision {
        if intentAfterOutcome { return hasCollapseID ? .send : .failMayHaveBeenDelivered }
        guard let finalOutcome else { return .send }
        return .skip(success: finalOutcome == .accepted)
    }
}
