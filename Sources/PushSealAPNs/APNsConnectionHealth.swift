/// When a connection to APNs is taken for broken rather than busy (the rule the client's pool
/// and the gateway's outbox share).
///
/// A connection whose TCP session is up but moves no bytes (a black hole, a stalled peer, a
/// zero window) looks like a busy one: requests just time out. So after an attempt times out on
/// a connection, it takes no new request and gets an HTTP/2 PING; if the PING's ACK does not
/// come within ``pingTimeoutSeconds`` the connection is retired (closed): requests still waiting
/// on it, never sent, go to another connection without counting an attempt, and those whose
/// last frame had been written to its socket end as "may have been delivered" (resent only with
/// a collapse id). An ACK in time makes it usable again. ``maxConsecutiveTimeouts`` attempts
/// timing out on one connection with no answer in between retire it at once.
public struct APNsConnectionHealth: Sendable, Hashable {
    /// How long a PING sent after a timeout may wait for its ACK, in seconds (2).
    public var pingTimeoutSeconds: Double
    /// Timeouts in a row (no answer on the connection in between) that retire it (3).
    public var maxConsecutiveTimeouts: Int

    /// What to do with a connection after one of its attempts timed out.
    public enum Action: Sendable, Hashable {
        /// Take no new request, send a PING, retire it unless the ACK comes in time.
        case probe
        /// Retire it now.
        case retire
    }

    /// Creates the rule (the defaults above).
    public init(pingTimeoutSeconds: Double = 2, maxConsecutiveTimeouts: Int = 3) {
        self.pingTimeoutSeconds = max(0.001, pingTimeoutSeconds)
        self.maxConsecutiveTimeouts = max(1, maxConsecutiveTimeouts)
    }

    /// The action after the connection's `consecutiveTimeouts`-th timeout in a row (from 1).
    public func afterTimeout(consecutiveTimeouts: Int) -> Action {
        consecutiveTimeouts >= maxConsecutiveTimeouts ? .retire : .probe
    }

    /// The PING's deadline in monotonic nanoseconds, for a PING sent at `sentAt`.
    public func pingDeadline(sentAt: UInt64) -> UInt64 {
        APNsRetryAfter.dueTime(after: sentAt, seconds: pingTimeoutSeconds)
    }
}
