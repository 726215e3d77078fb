import Dispatch
import PushSealSystem

/// An APNs provider client: HTTP/2 (libnghttp2) over TLS 1.2+ (OpenSSL, ALPN `h2`, the peer
/// verified against the system's CA store or the endpoint's CA file, SNI and host name
/// checked), multiplexing every notification over a bounded pool of connections to one
/// endpoint with one provider key (the pool is per (environment, team, key): make one client
/// for each). One transfer thread runs the pool: one `poll` over its non-blocking sockets and a
/// wake-up pipe for new notifications.
///
/// - Streams: a connection submits nothing before the server's first SETTINGS, then keeps its
///   open streams under the `SETTINGS_MAX_CONCURRENT_STREAMS` APNs announces, followed live (1
///   until the first valid provider token, 1000 after, and 1 again after a rejected token),
///   capped by ``Configuration/maxConcurrentStreams``; the rest wait in the connection's local
///   queue. A burst never opens more than ``Configuration/maxConnections`` connections.
/// - Retries: ``APNsRetryPolicy`` (docs/apns.md has the table). A stream refused by APNs
///   (`REFUSED_STREAM`, or above a GOAWAY's last stream id) was not processed: it is resent
///   without counting an attempt (``Statistics/refusedStreamsResent``). A request whose
///   connection died after its last frame went out may have been delivered: it is resent only
///   when it has a collapse id.
/// - Connections: PING after ``Configuration/upkeepIntervalSeconds`` idle (closed when the PING
///   is not answered within the request timeout), closed after
///   ``Configuration/connectionIdleLimitSeconds`` idle, retired (no new streams) after
///   ``Configuration/connectionLifetimeSeconds``. Reconnects after a failed connection attempt
///   back off from ``Configuration/reconnectBaseDelaySeconds`` (1 s) doubling to
///   ``Configuration/reconnectMaxDelaySeconds`` (60 s). ``finish()`` ends each connection with
///   GOAWAY(NO_ERROR) once every notification has its outcome.
///
/// Outcomes arrive on the client's transfer thread, one per notification given to ``send(_:tag:)``,
/// through the handler passed to ``init(configuration:tokens:onOutcome:onInvalidation:afterOutcomes:)``.
/// ``send(_:tag:)`` blocks while ``Configuration/maxInFlight`` notifications have no outcome yet,
/// so memory stays bounded by the window.
public final class APNsClient: Sendable {
    /// How the client connects and retries.
    public struct Configuration: Sendable {
        /// Where to send.
        public var endpoint: APNsEndpoint
        /// Connections in the pool at most (1); one more may open for a retry on a new connection.
        public var maxConnections = 1
        /// Streams per connection at most, on top of what APNs announces (1000).
        public var maxConcurrentStreams = 1000
        /// Notifications without an outcome at most; ``APNsClient/send(_:tag:)`` waits above (1000).
        public var maxInFlight = 1000
        /// One attempt's limit, connection set-up included, in seconds (10).
        public var requestTimeoutSeconds = 10.0
        /// TCP + TLS set-up limit in seconds (10).
        public var connectTimeoutSeconds = 10.0
        /// The retry policy.
        public var retry = APNsRetryPolicy()
        /// First delay after a failed connection attempt, in seconds (1).
        public var reconnectBaseDelaySeconds = 1.0
        /// Longest delay between connection attempts, in seconds (60).
        public var reconnectMaxDelaySeconds = 60.0
        /// A connection without streams is closed after this many seconds (3600).
        public var connectionIdleLimitSeconds = 3600
        /// A connection takes no new streams after this many seconds (86400).
        public var connectionLifetimeSeconds = 86400
        /// An HTTP/2 PING goes on a connection without streams this many seconds idle (60).
        public var upkeepIntervalSeconds = 60
        /// When a connection is taken for wedged and retired (PING after a timeout, ACK within
        /// 2 s; 3 timeouts in a row): ``APNsConnectionHealth``.
        public var connectionHealth = APNsConnectionHealth()
        /// Stop sending (``APNsClient/stopSending()``) once the ``InvalidationGuard`` sees a
        /// `BadDeviceToken` burst (a development token sent to production, a wrong topic): the
        /// rest would fail the same way (`false`).
        public var stopOnBadDeviceTokenBurst = false
        /// The clocks (latency, delays; the token cache has its own).
        public var clock: any APNsClock = SystemAPNsClock()

        /// A configuration for `endpoint` with the defaults above.
        public init(endpoint: APNsEndpoint) { self.endpoint = endpoint }
    }

    /// Counters for a summary; read at any time.
    public struct Statistics: Sendable, Hashable {
        /// Notifications given to ``APNsClient/send(_:tag:)``.
        public var submitted = 0
        /// Outcomes delivered.
        public var finished = 0
        /// Requests sent (attempts), retries included.
        public var requests = 0
        /// Requests resent because APNs refused their stream (`REFUSED_STREAM`, or above a
        /// GOAWAY's last stream id): not processed by APNs, so not in ``requests`` nor in an
        /// outcome's attempts.
        public var refusedStreamsResent = 0
        /// Connections opened (TLS handshake done, HTTP/2 agreed).
        public var connectionsOpened = 0
        /// Connections open now (opened and not yet closed): a gauge, where
        /// ``connectionsOpened`` only grows.
        public var connectionsOpen = 0
        /// `BadDeviceToken` answers the burst guard did not turn into invalidations.
        public var suppressedInvalidations = 0
        /// `true` once the guard saw a `BadDeviceToken` burst.
        public var badDeviceTokenBurst = false
        /// `true` once sending stopped (``APNsClient/stopSending()``, a failed `beforeSending`,
        /// or a burst with ``Configuration/stopOnBadDeviceTokenBurst``).
        public var sendingStopped = false
    }

    let configuration: Configuration
    let tokens: ProviderTokenCache
    let engine: APNsEngine
    let window: APNsWindow
    private let done = DispatchSemaphore(value: 0)

    /// Starts the client's transfer thread (connections open on the first send).
    /// - Parameters:
    ///   - onOutcome: called once per notification, on the transfer thread.
    ///   - onInvalidation: called for each token to delete (410, or a `BadDeviceToken` the
    ///     ``InvalidationGuard`` let through), on the transfer thread.
    ///   - afterOutcomes: called on the transfer thread after each group of outcomes (flush point).
    ///   - beforeSending: called on the transfer thread with the ``APNsIntent`` of each
    ///     notification about to be written to a socket for the first time, one group per round,
    ///     before any of its bytes go out. Return `false` when they could not be recorded: none
    ///     of them is sent (each ends `failed` `notSent`) and sending stops as by
    ///     ``stopSending()``. `nil` (the default): no intents.
    /// - Throws: `APNsError` `.transportUnavailable` when TLS or the thread cannot be set up;
    ///   `.badEndpoint` when the CA file cannot be read or holds no certificate.
    public init(configuration: Configuration, tokens: ProviderTokenCache,
                onOutcome: @escaping @Sendable (APNsOutcome) -> Void,
                onInvalidation: @escaping @Sendable (APNsInvalidation) -> Void = { _ in },
                afterOutcomes: @escaping @Sendable () -> Void = {},
                beforeSending: (@Sendable ([APNsIntent]) -> Bool)? = nil) throws {
        if let ca = configuration.endpoint.caFile {
            do {
                _ = try FileDescriptor.open(ca, .readOnly)
            } catch let e as SystemError {
                throw APNsError(.badEndpoint, "cannot read the CA file '\(ca.suffix(120))': \(errnoText(e.errno))")
            }
        }
        self.configuration = configuration
        self.tokens = tokens
        window = APNsWindow(capacity: configuration.maxInFlight)
        let window = self.window
        engine = try APNsEngine(configuration: configuration, tokens: tokens, onOutcome: { outcome in
            onOutcome(outcome)
            window.noteFinished()
        }, onInvalidation: onInvalidation, afterOutcomes: {
            // The places go back before the caller's flush, so the senders go on meanwhile.
            window.release()
            afterOutcomes()
        }, beforeSending: beforeSending)
        let engine = self.engine
        let done = self.done
        // The transfer thread takes no signals (they stay with the caller's threads).
        let started = withAllSignalsBlocked {
            startDetachedThread {
                engine.run()
                done.signal()
            }
        }
        guard started else {
            throw APNsError(.transportUnavailable, "cannot start the transfer thread")
        }
    }

    /// Queues a notification; its outcome comes later through `onOutcome`, tagged with `tag`.
    /// Waits while ``Configuration/maxInFlight`` notifications have no outcome yet (then until
    /// a batch of places is free: ``APNsWindow``).
    /// - Throws: `APNsError` from ``APNsNotification/validate()``: nothing is sent then.
    public func send(_ notification: APNsNotification, tag: Int) throws {
        try notification.validate()
        window.acquire()
        engine.submit(notification, tag: tag, at: configuration.clock.monotonicNanoseconds())
    }

    /// Sends nothing new, from any thread (a stop signal, an outcome that cannot be recorded):
    /// notifications not yet on a stream (queued, waiting for a retry or on a connection) end
    /// at once `failed` `notSent` (nothing of them reached APNs); those on a stream get their
    /// answer, up to ``Configuration/requestTimeoutSeconds``, without retries. Each connection
    /// with streams gets a PING and is closed without its ACK within
    /// ``APNsConnectionHealth/pingTimeoutSeconds`` (its streams end as may have been
    /// delivered), so a wedged connection does not hold the stop. ``finish()`` then returns
    /// within the request timeout, or the PING timeout when the connections are wedged.
    public func stopSending() { engine.stopSending() }

    /// Sends nothing more: waits until every queued notification has its outcome, then closes
    /// the connections and ends the transfer thread. Call once.
    public func finish() {
        engine.close()
        done.wait()
    }

    /// The counters so far.
    public var statistics: Statistics { engine.statistics }
}
