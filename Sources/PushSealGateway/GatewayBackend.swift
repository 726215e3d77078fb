public import PushSealJSON
public import PushSealServer

/// One notification of a `POST /v1/notifications` request, checked for shape (types, ranges,
/// no unknown member) by the gateway; its content is checked when it is sealed.
public struct NotificationSubmission: Sendable, Hashable {
    /// The recipient (an installation's id in the registry).
    public var recipient: String
    /// The notification JSON `push-seal` takes (title, body, media, data, …); never logged.
    public var notification: JSONObject
    /// Seconds it may wait in the outbox and at APNs before it ends `expired` (`nil`: APNs' default).
    public var ttlSeconds: Int64?
    /// `apns-collapse-id` (≤ 64 bytes); `nil`: the gateway gives a random one.
    public var collapseID: String?
    /// `apns-priority`: 10, 5 or 1.
    public var priority: Int?
    /// `apns-push-type` (`alert` by default).
    public var pushType: String?
    /// The per-line `aps` members push-seal batch takes (sound, badge, thread-id, category, …).
    public var aps: JSONObject?
    /// The item as sent (what the outbox seals from).
    public var item: JSONValue = .null

    /// Creates a submission.
    public init(recipient: String, notification: JSONObject, ttlSeconds: Int64? = nil, collapseID: String? = nil,
                priority: Int? = nil, pushType: String? = nil, aps: JSONObject? = nil) {
        self.recipient = recipient
        self.notification = notification
        self.ttlSeconds = ttlSeconds
        self.collapseID = collapseID
        self.priority = priority
        self.pushType = pushType
        self.aps = aps
    }
}

/// The answer for one submission: queued with its id, or refused with an error.
public enum SubmissionResult: Sendable, Hashable {
    /// Committed to the outbox.
    case queued(id: String)
    /// Not stored: `code` is one of `unknownRecipient`, `noDeviceToken`, `tooLarge`,
    /// `invalidNotification`, `cancelled`.
    case refused(code: String, message: String)
}

/// A notification's state as `GET /v1/notifications/{id}` shows it.
public struct NotificationState: Sendable, Hashable {
    /// The notification's id.
    public var id: String
    /// The recipient.
    public var recipient: String
    /// `queued`, `sending`, `accepted`, `unregistered`, `rejected`, `failed`, `expired` or `cancelled`.
    public var status: String
    /// APNs' `apns-id`, once sent.
    public var apnsID: String?
    /// APNs' `apns-unique-id` (development environment), once sent.
    public var apnsUniqueID: String?
    /// The last HTTP status from APNs.
    public var httpStatus: Int?
    /// APNs' reason (e.g. `BadDeviceToken`), when it gave one.
    public var reason: String?
    /// Sending attempts so far.
    public var attempts: Int
    /// When it was accepted by the gateway, ms since 1970.
    public var createdAtMs: Int64
    /// When it reached its final status, ms since 1970.
    public var finishedAtMs: Int64?

    /// Creates a state.
    public init(id: String, recipient: String, status: String, apnsID: String? = nil, apnsUniqueID: String? = nil, httpStatus: Int? = nil,
                reason: String? = nil, attempts: Int = 0, createdAtMs: Int64, finishedAtMs: Int64? = nil) {
        self.id = id
        self.recipient = recipient
        self.status = status
        self.apnsID = apnsID
        self.apnsUniqueID = apnsUniqueID
        self.httpStatus = httpStatus
        self.reason = reason
        self.attempts = attempts
        self.createdAtMs = createdAtMs
        self.finishedAtMs = finishedAtMs
    }
}

/// What an enqueue answered.
public struct EnqueueAnswer: Sendable {
    /// One result per submission, in order (for the log).
    public var results: [SubmissionResult]
    /// The 202 answer's body (`{"notifications":[…]}`), the first one's bytes for a replay.
    public var body: [UInt8]
    /// `true`: the idempotency key was seen with the same body; nothing was stored now.
    public var replayed: Bool

    /// Creates an answer.
    public init(results: [SubmissionResult], body: [UInt8], replayed: Bool) {
        self.results = results
        self.body = body
        self.replayed = replayed
    }
}

/// What a retract answered.
public struct RetractAnswer: Sendable {
    /// One result per requested id, in order (empty for a replay).
    public var results: [Outbox.RetractResult]
    /// The 202 answer's body (a replay: the first one's bytes).
    public var body: [UInt8]
    /// `true`: the idempotency key was seen with the same request; nothing was done now.
    public var replayed: Bool

    /// Creates an answer.
    public init(results: [Outbox.RetractResult], body: [UInt8], replayed: Bool) {
        self.results = results
        self.body = body
        self.replayed = replayed
    }
}

/// What readiness found.
public struct Readiness: Sendable {
    /// `true` when the gateway can take work.
    public var ready: Bool
    /// Each check's name and finding (`ok`, or why not).
    public var checks: [(name: String, finding: String)]

    /// Creates a finding.
    public init(ready: Bool, checks: [(name: String, finding: String)]) {
        self.ready = ready
        self.checks = checks
    }
}

/// What the gateway's routes need from the store, the sealer and the outbox: the seam between
/// HTTP and `PushSealServer`. The production backend is ``ServerBackend``; tests may use
/// their own. Every method may block (database work); every failure it cannot name is thrown
/// and becomes 500 `internal` (logged, never shown).
public protocol GatewayBackend: Sendable {
    /// Seals and enqueues `submissions` in one transaction (the refused ones are not stored) and
    /// returns after the commit; with an idempotency key, keeps the answer under (scope, key,
    /// `bodySHA256`) for 24 h in the same transaction.
    /// - Parameters:
    ///   - submissions: the notifications, in request order (shape checked).
    ///   - idempotency: the API key's id and the `Idempotency-Key` header (1–255 bytes), or `nil`.
    ///   - bodySHA256: the SHA-256 of the request body.
    /// - Throws: `HTTPError` 422 `idempotencyKeyReused` (the key with another body in 24 h).
    func enqueue(_ submissions: [NotificationSubmission], idempotency: (scope: String, key: String)?,
                 bodySHA256: [UInt8]) throws -> EnqueueAnswer
    /// Retracts notifications this gateway accepted (`POST /v1/notifications/{id}/retract`,
    /// `POST /v1/notifications/retract`): the queued ones are cancelled, for the others a sealed
    /// retract per recipient is enqueued (a background push); returns after the commit.
    /// - Parameters:
    ///   - ids: the gateway's notification ids (1–100, shape checked).
    ///   - single: `true` for the one-notification route (its failure is an HTTP error, its
    ///     answer one result object).
    ///   - idempotency: the API key's id and the `Idempotency-Key` header, or `nil`.
    ///   - requestSHA256: the SHA-256 of the route and body.
    /// - Throws: `HTTPError` 404 `notFound`, 409 `notRetractable`, 422 (the sealer's code, e.g.
    ///   `noDeviceToken`) for `single`; 422 `idempotencyKeyReused`.
    func retract(_ ids: [String], single: Bool, idempotency: (scope: String, key: String)?, requestSHA256: [UInt8]) throws -> RetractAnswer
    /// The state of notification `id`, `nil` when unknown.
    func notificationState(id: String) throws -> NotificationState?
    /// Registers the iOS reference's upload (`{"registration", "apnsDeviceToken", "apnsEnvironment"}`)
    /// for `recipient`: the public key and the token; the same record again registers nothing,
    /// but a device token it has not stored yet replaces the installation's former one.
    /// - Parameters:
    ///   - body: the upload's JSON bytes (its shape already checked by the gateway).
    ///   - recipient: the installation the caller named (never read from the upload).
    /// - Returns: the recipient, whether the registration is new, and whether the device token
    ///   replaced another one (the app's token changed, or it was another installation's).
    /// - Throws: `HTTPError` 400 `invalidRegistration` for a record that does not check, 409 for
    ///   a conflicting or stale one.
    func registerDevice(_ body: [UInt8], recipient: String) throws -> (recipient: String, created: Bool, tokenReplaced: Bool)
    /// Forgets an installation: registration revoked, tokens removed, queued notifications cancelled.
    /// - Returns: `false` when the recipient is unknown.
    func forgetDevice(appID: String?, recipient: String) throws -> Bool
    /// The public sender-key records of `appID` (what the app pins) as a JSON array, `nil` when
    /// the app is not this gateway's; `appID` `nil`: the gateway's own app.
    func senderKeys(appID: String?) throws -> JSONValue?
    /// The public revocation records of `appID` as a JSON array, `nil` when the app is not this
    /// gateway's; `appID` `nil`: the gateway's own app.
    func revocations(appID: String?) throws -> JSONValue?
    /// Database reachable, schema current, APNs usable or retrying.
    func readiness() -> Readiness
    /// Values for `/metrics` that the backend owns (queue depth, oldest age, connections, …).
    func metricsSnapshot() -> BackendMetrics
}

/// The backend's numbers for `/metrics`.
public struct BackendMetrics: Sendable {
    /// Whether the database answered the queue's numbers just now (`false`: they are unknown).
    public var databaseUp = true
    /// Notifications queued (accepted, not yet claimed by a worker) of this instance's app and
    /// environment; `nil` when the database did not answer (the gauge is then left out of
    /// `/metrics`, never shown as 0).
    public var queueDepth: Int? = 0
    /// Notifications being sent (claimed by a worker of any instance, no final status yet) of
    /// this instance's app and environment; `nil` as ``queueDepth``.
    public var sending: Int? = 0
    /// Age of the oldest queued notification, seconds; `nil` as ``queueDepth``.
    public var oldestQueuedAgeSeconds: Double? = 0
    /// HTTP/2 connections to APNs opened by this instance (a counter).
    public var apnsConnectionsOpened: Int = 0
    /// HTTP/2 connections to APNs this instance has open now (a gauge).
    public var apnsConnectionsOpen: Int = 0
    /// Provider tokens minted by this instance.
    public var providerTokenMints: Int = 0
    /// Final outcomes by outcome and reason.
    public var outcomes: OutcomeCounts = [:]
    /// Notifications named by retract requests, by result (`queued`, `cancelled`, `refused`).
    public var retracts: [String: Int] = [:]
    /// Finished notifications this instance deleted after the retention time (`--keep-finished`).
    public var outboxDeleted: Int = 0
    /// Seconds per accept call (sealing every item); `nil`: no observation (all zero).
    public var sealLatency: OutboxMetrics.Histogram?
    /// Seconds per notification from the first send to APNs' final answer; `nil`: all zero.
    public var apnsLatency: OutboxMetrics.Histogram?

    /// Zeros.
    public init() {}
}

extension BackendMetrics {
    /// Final outcomes so far: (outcome, reason or `""`) → count. Reasons outside
    /// ``GatewayMetrics/isKnownReason(_:)`` are counted as `other`.
    public typealias OutcomeCounts = [OutcomeKey: Int]

    /// An outcome and its reason, a label pair of `pushseal_gateway_notifications_total`.
    public struct OutcomeKey: Sendable, Hashable {
        /// `accepted`, `unregistered`, `rejected`, `failed`, `expired`, `cancelled`.
        public var outcome: String
        /// APNs' reason or `""`.
        public var reason: String
        /// Creates a key.
        public init(outcome: String, reason: String) {
            self.outcome = outcome
            self.reason = reason
        }
    }
}
