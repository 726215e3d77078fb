/// What the client does after one attempt: the retry table of docs/apns.md, as one function.
public struct APNsRetryPolicy: Sendable, Hashable {
    /// Attempts per notification at most (first send included): 5 by default.
    public var maxAttempts: Int
    /// The first back-off delay in seconds (then doubled each attempt, with jitter).
    public var baseDelaySeconds: Double
    /// The longest back-off delay, in seconds (60).
    public var maxDelaySeconds: Double

    /// Creates a policy.
    public init(maxAttempts: Int = 5, baseDelaySeconds: Double = 1, maxDelaySeconds: Double = 60) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelaySeconds = max(0, baseDelaySeconds)
        self.maxDelaySeconds = max(self.baseDelaySeconds, maxDelaySeconds)
    }

    /// What one attempt ended with.
    public enum Result: Sendable, Hashable {
        /// An HTTP answer: status, APNs' reason, and `Retry-After` in seconds if sent (any
        /// value: the decision bounds it to 0…``maxDelaySeconds``).
        case answered(status: Int, reason: APNsReason?, retryAfterSeconds: Double?)
        /// No answer; `maybeSent` is `true` when the request may have reached APNs.
        case transportFailed(reason: APNsReason.Client, maybeSent: Bool, retryable: Bool)
    }

    /// What to do next.
    public enum Decision: Sendable, Hashable {
        /// Final: accepted.
        case accept
        /// Final: rejected with APNs' reason.
        case reject
        /// Final: unregistered (410).
        case unregister
        /// Final: failed (reason for the outcome).
        case fail(reason: APNsReason)
        /// Send again after `delaySeconds`; on a new connection when `newConnection`; with a
        /// refreshed provider token when `refreshToken`.
        case retry(delaySeconds: Double, newConnection: Bool, refreshToken: Bool)
    }

    /// The decision after attempt number `attempt` (from 1) ended with `result`.
    /// - Parameters:
    ///   - hasCollapseID: a resend of a request that may have reached APNs is allowed only with one.
    ///   - tokenRefreshed: `true` when this notification was already resent with a fresh token.
    ///   - jitter: a number in 0..<1 (random in use; fixed in tests).
    public func decide(after result: Result, attempt: Int, hasCollapseID: Bool, tokenRefreshed: Bool, jitter: Double) -> Decision {
        let attemptsLeft = attempt < maxAttempts
        switch result {
        case .answered(let status, let reason, let retryAfterValue):
            // Bounded by the longest back-off (APNsRetryAfter): a server asking for longer gets
            // the notification back after maxDelaySeconds, within the attempts.
            let retryAfter = retryAfterValue.map { min(max($0.isNaN ? 0 : $0, 0), maxDelaySeconds) }
            switch (status, reason) {
            case (200, _): return .accept
            case (410, _): return .unregister
            case (403, .apns(.expiredProviderToken)?):
                guard !tokenRefreshed && attemptsLeft else { return .reject }
                return .retry(delaySeconds: 0, newConnection: true, refreshToken: true)
            case (429, .apns(.tooManyProviderTokenUpdates)?):
                guard attemptsLeft else { return .fail(reason: .apns(.tooManyProviderTokenUpdates)) }
                return .retry(delaySeconds: max(backoff(attempt, jitter), retryAfter ?? 0), newConnection: false, refreshToken: false)
            case (429, _):
                guard attemptsLeft else { return .fail(reason: reason ?? .apns(.tooManyRequests)) }
                return .retry(delaySeconds: max(backoff(attempt, jitter), retryAfter ?? 0), newConnection: false, refreshToken: false)
            case (500, _), (503, _):
                guard attemptsLeft else { return .fail(reason: reason ?? .apns(.internalServerError)) }
                return .retry(delaySeconds: max(backoff(attempt, jitter), retryAfter ?? 0), newConnection: true, refreshToken: false)
            default:
                return .reject
            }
        case .transportFailed(let reason, let maybeSent, let retryable):
            guard retryable else { return .fail(reason: .client(reason)) }
            guard !maybeSent || hasCollapseID else { return .fail(reason: .client(.mayHaveBeenDelivered)) }
            guard attemptsLeft else { return .fail(reason: .client(reason)) }
            // A timeout is not by itself a broken connection: the client probes it with a PING
            // (APNsConnectionHealth) and takes no new request there until the ACK comes.
            return .retry(delaySeconds: backoff(attempt, jitter), newConnection: reason != .timeout, refreshToken: false)
        }
    }

    /// `base · 2^(attempt-1)`, capped at the maximum, scaled into [0.5, 1) by `jitter`.
    func backoff(_ attempt: Int, _ jitter: Double) -> Double {
        let exponent = Double(min(max(attempt - 1, 0), 30))
        let raw = min(baseDelaySeconds * pow2(exponent), maxDelaySeconds)
        return raw * (0.5 + 0.5 * min(max(jitter, 0), 0.999_999))
    }

    private func pow2(_ e: Double) -> Double {
        var r = 1.0
        var i = 0.0
        while i < e { r *= 2; i += 1 }
        return r
    }
}
