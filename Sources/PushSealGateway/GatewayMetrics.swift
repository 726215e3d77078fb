import PushSealServer
import PushSealSystem

/// The Prometheus text lines of `histogram` (zeros for `nil`) under `name`: cumulative
/// `_bucket` lines over ``OutboxMetrics/bucketBoundsSeconds``, `_sum` and `_count`.
func renderHistogram(_ histogram: OutboxMetrics.Histogram?, _ name: String, into out: inout String) {
    let bounds = OutboxMetrics.bucketBoundsSeconds
    let buckets = histogram?.buckets ?? [Int](repeating: 0, count: bounds.count + 1)
    var cumulative = 0
    for (i, bound) in bounds.enumerated() {
        cumulative += i < buckets.count ? buckets[i] : 0
        out += "\(name)_bucket{le=\"\(bound)\"} \(cumulative)\n"
    }
    cumulative += buckets.count > bounds.count ? buckets[bounds.count] : 0
    out += "\(name)_bucket{le=\"+Inf\"} \(cumulative)\n\(name)_sum \(histogram?.sumSeconds ?? 0)\n\(name)_count \(cumulative)\n"
}

/// The gateway's own counters and the Prometheus text of `GET /metrics`
/// (names `pushseal_gateway_*`, units in the name).
public final class GatewayMetrics: Sendable {
    /// Reasons shown as label values: APNs' documented reasons and the APNs client's own
    /// (``APNsReason``), and the gateway's own outbox reasons below; any other reason is counted
    /// as `other` (a label value never carries text a client or server chose freely).
    public static func isKnownReason(_ reason: String) -> Bool { APNsReason.isKnown(reason) || gatewayReasons.contains(reason) }

    /// The outbox's own final reasons (docs/outbox.md: `ttlPassed` for `expired`,
    /// `invalidNotification` for a row APNs' client refused before sending, …), and `""` for none.
    public static let gatewayReasons: Set<String> = ["", "cancelled", "retracted", "forgotten", "expired", "ttlPassed", "invalidNotification",
                                                     "rowAuthenticationFailed", "connection"]

    private struct RequestKey: Hashable { var route: String; var status: Int }
    private let requests = Locked<[RequestKey: UInt64]>([:])
    private let rateLimited = Locked<UInt64>(0)

    /// Empty counters.
    public init() {}

    /// Counts one answered request.
    /// - Parameters:
    ///   - route: the route's name (`POST /v1/notifications`), `unrouted` or `refused`.
    ///   - status: the status sent.
    public func countRequest(route: String, status: Int) {
        requests.withLock { $0[RequestKey(route: route, status: status), default: 0] += 1 }
    }

    /// Counts one 429.
    public func countRateLimited() { rateLimited.withLock { $0 += 1 } }

    /// The Prometheus text exposition (format 0.0.4) of the gateway's counters and `backend`'s values.
    public func render(backend: BackendMetrics, draining: Bool) -> String {
        var out = ""
        out += "# HELP pushseal_gateway_requests_total HTTP requests answered, by route and status.\n"
        out += "# TYPE pushseal_gateway_requests_total counter\n"
        for (key, n) in requests.withLock({ $0 }).sorted(by: { ($0.key.route, $0.key.status) < ($1.key.route, $1.key.status) }) {
            out += "pushseal_gateway_requests_total{route=\"\(Self.escape(key.route))\",status=\"\(key.status)\"} \(n)\n"
        }
        out += "# HELP pushseal_gateway_rate_limited_total Requests answered 429 by a rate limit: per API key, or per recipient for registration tokens at POST /v1/devices.\n"
        out += "# TYPE pushseal_gateway_rate_limited_total counter\n"
        out += "pushseal_gateway_rate_limited_total \(rateLimited.withLock { $0 })\n"
        out += "# HELP pushseal_gateway_notifications_total Notifications that reached a final status, by outcome and reason (APNs' or the gateway's).\n"
        out += "# TYPE pushseal_gateway_notifications_total counter\n"
        var folded: [BackendMetrics.OutcomeKey: Int] = [:]
        for (key, n) in backend.outcomes {
            let reason = Self.isKnownReason(key.reason) ? key.reason : "other"
            folded[BackendMetrics.OutcomeKey(outcome: key.outcome, reason: reason), default: 0] += n
        }
        for (key, n) in folded.sorted(by: { ($0.key.outcome, $0.key.reason) < ($1.key.outcome, $1.key.reason) }) {
            out += "pushseal_gateway_notifications_total{outcome=\"\(Self.escape(key.outcome))\",reason=\"\(Self.escape(key.reason))\"} \(n)\n"
        }
        out += "# HELP pushseal_gateway_retracts_total Notifications named by a retract request, by result: queued (a retract is queued for it), cancelled (it was still queued: never sent), refused.\n"
        out += "# TYPE pushseal_gateway_retracts_total counter\n"
        for result in ["queued", "cancelled", "refused"] {
            out += "pushseal_gateway_retracts_total{result=\"\(result)\"} \(backend.retracts[result] ?? 0)\n"
        }
        out += "# HELP pushseal_gateway_outbox_deleted_total Finished notifications this instance deleted from the outbox after the retention time (--keep-finished).\n"
        out += "# TYPE pushseal_gateway_outbox_deleted_total counter\n"
        out += "pushseal_gateway_outbox_deleted_total \(backend.outboxDeleted)\n"
        out += "# HELP pushseal_gateway_database_up Whether PostgreSQL answered this scrape's queue query (1) or not (0: the queue gauges below are left out).\n"
        out += "# TYPE pushseal_gateway_database_up gauge\n"
        out += "pushseal_gateway_database_up \(backend.databaseUp ? 1 : 0)\n"
        out += "# HELP pushseal_gateway_queue_depth_notifications Notifications queued (accepted, not yet claimed by a worker) of this instance's app and environment.\n"
        out += "# TYPE pushseal_gateway_queue_depth_notifications gauge\n"
        if let depth = backend.queueDepth { out += "pushseal_gateway_queue_depth_notifications \(depth)\n" }
        out += "# HELP pushseal_gateway_sending_notifications Notifications being sent (claimed by a worker of any instance, no final status yet) of this instance's app and environment.\n"
        out += "# TYPE pushseal_gateway_sending_notifications gauge\n"
        if let sending = backend.sending { out += "pushseal_gateway_sending_notifications \(sending)\n" }
        out += "# HELP pushseal_gateway_oldest_queued_age_seconds Age of the oldest queued notification.\n"
        out += "# TYPE pushseal_gateway_oldest_queued_age_seconds gauge\n"
        if let age = backend.oldestQueuedAgeSeconds { out += "pushseal_gateway_oldest_queued_age_seconds \(age)\n" }
        out += "# HELP pushseal_gateway_seal_duration_seconds Time to seal one batch: the items of a request, or of the small requests stored together in one commit, or the retract messages of one retract request.\n"
        out += "# TYPE pushseal_gateway_seal_duration_seconds histogram\n"
        renderHistogram(backend.sealLatency, "pushseal_gateway_seal_duration_seconds", into: &out)
        out += "# HELP pushseal_gateway_apns_request_duration_seconds Time from sending a request to APNs to its answer.\n"
        out += "# TYPE pushseal_gateway_apns_request_duration_seconds histogram\n"
        renderHistogram(backend.apnsLatency, "pushseal_gateway_apns_request_duration_seconds", into: &out)
        out += "# HELP pushseal_gateway_apns_connections_opened_total HTTP/2 connections to APNs this instance opened.\n"
        out += "# TYPE pushseal_gateway_apns_connections_opened_total counter\n"
        out += "pushseal_gateway_apns_connections_opened_total \(backend.apnsConnectionsOpened)\n"
        out += "# HELP pushseal_gateway_apns_connections_open HTTP/2 connections to APNs this instance has open now.\n"
        out += "# TYPE pushseal_gateway_apns_connections_open gauge\n"
        out += "pushseal_gateway_apns_connections_open \(backend.apnsConnectionsOpen)\n"
        out += "# HELP pushseal_gateway_provider_token_mints_total Provider tokens (ES256 JWT) minted by this instance.\n"
        out += "# TYPE pushseal_gateway_provider_token_mints_total counter\n"
        out += "pushseal_gateway_provider_token_mints_total \(backend.providerTokenMints)\n"
        out += "# HELP pushseal_gateway_draining 1 while this instance is shutting down.\n"
        out += "# TYPE pushseal_gateway_draining gauge\n"
        out += "pushseal_gateway_draining \(draining ? 1 : 0)\n"
        return out
    }

    /// A label value escaped for the Prometheus text format: backslash, double quote and line
    /// feed, the three escapes that format has. Not JSON's escaping (no `\u`, no other control
    /// character escaped): JSON is written by PushSealJSON's writer alone.
    public static func escape(_ value: String) -> String {
        var out = ""
        for c in value.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
