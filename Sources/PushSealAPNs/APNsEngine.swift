internal import CPushSealTLS
import PushSealJSON
import PushSealSystem

/// The transfer thread of an ``APNsClient``: the pool of HTTP/2 connections
/// (``APNsConnection``, libnghttp2 over OpenSSL), one `poll` over their sockets and a wake-up
/// pipe, the queue of new notifications, the retries waiting for their time, the per-request
/// timeouts, and the outcome bookkeeping (the retry table of ``APNsRetryPolicy``, provider
/// tokens, the ``InvalidationGuard``).
///
/// `@unchecked Sendable` is safe: everything but ``shared`` (behind its lock), ``wakeUp`` (a
/// `Sendable` pipe) and the immutable TLS context is touched by the transfer thread alone,
/// inside ``run()``.
final class APNsEngine: @unchecked Sendable {
    struct Shared {
        var queue: [(notification: APNsNotification, tag: Int, submittedAt: UInt64)] = []
        var closing = false
        /// ``APNsClient/stopSending()`` was called.
        var stopRequested = false
        var sleeping = false
        var statistics = APNsClient.Statistics()
    }

    let configuration: APNsClient.Configuration
    let tokens: ProviderTokenCache
    let onOutcome: @Sendable (APNsOutcome) -> Void
    let onInvalidation: @Sendable (APNsInvalidation) -> Void
    let afterOutcomes: @Sendable () -> Void
    let beforeSending: (@Sendable ([APNsIntent]) -> Bool)?
    let shared = Locked(Shared())
    /// Written by ``submit(_:tag:at:)`` and ``close()`` to wake the thread from its poll.
    private let wakeUp: WakeUpPipe
    /// The TLS client configuration (CA store, TLS 1.2+, ALPN h2), shared by the connections.
    private let tlsContext: OpaquePointer

    // Transfer thread only.
    private var connections: [APNsConnection] = []
    private var nextSerial = 1
    /// Requests ready to be bound to a connection, in order.
    private var ready = APNsQueue<APNsRequest>()
    /// Requests APNs did not process (refused streams, requests that never left): bound before
    /// ``ready`` and ahead of what waits on their new connection.
    private var resend: [APNsRequest] = []
    /// Retries waiting for their time, sorted by due time.
    private var delayed: [(due: UInt64, request: APNsRequest)] = []
    /// The earliest deadline of an attempt bound to a connection (monotonic ns), or `UInt64.max`:
    /// when the bound requests are next looked through for expired ones. (A queue of every
    /// attempt's deadline would keep each finished request alive for the whole timeout.)
    private var nextDeadline = UInt64.max
    /// Requests bound to a connection.
    private var bound = 0
    private var invalidationGuard = InvalidationGuard()
    private var random = SplitMix64()
    private var consecutiveConnectFailures = 0
    private var lastFailedConnection = 0
    private var connectBlockedUntil: UInt64 = 0
    private var authorization: (generation: Int, bytes: [UInt8]) = (0, [])
    private var counters = APNsClient.Statistics()
    private var delivered = false
    /// Sending stopped (``APNsClient/stopSending()``, a failed `beforeSending`, a
    /// `BadDeviceToken` burst with ``APNsClient/Configuration/stopOnBadDeviceTokenBurst``): nothing
    /// new goes out; what is in flight finishes without retries.
    private var stopping = false
    /// A stop decided inside the outcome bookkeeping, taken at the next round.
    private var stopPending = false
    private let pollSet = PollSet()
    private let timeoutNanoseconds: UInt64
    private let connectTimeoutNanoseconds: UInt64

    /// How many times in a row a refused stream is resent without counting an attempt (5);
    /// after that the refusal counts as a failed attempt, with back-off.
    static let maxRefusedResends = 5
    /// How long a closing connection waits for the server's close (1 s).
    static let closingWaitNanoseconds: UInt64 = 1_000_000_000

    init(configuration: APNsClient.Configuration, tokens: ProviderTokenCache,
         onOutcome: @escaping @Sendable (APNsOutcome) -> Void, onInvalidation: @escaping @Sendable (APNsInvalidation) -> Void,
         afterOutcomes: @escaping @Sendable () -> Void, beforeSending: (@Sendable ([APNsIntent]) -> Bool)? = nil) throws {
        do {
            wakeUp = try WakeUpPipe()
        } catch {
            throw APNsError(.transportUnavailable, "cannot make the transfer thread's wake-up pipe")
        }
        var error = [CChar](repeating: 0, count: 256)
        guard let context = pushseal_tls_context_new(configuration.endpoint.caFile, &error, error.count) else {
            let text = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let ca = configuration.endpoint.caFile {
                throw APNsError(.badEndpoint, "cannot use the CA file '\(ca.suffix(120))': \(text)")
            }
            throw APNsError(.transportUnavailable, "cannot set up TLS: \(text)")
        }
        tlsContext = context
        self.configuration = configuration
        self.tokens = tokens
        self.onOutcome = onOutcome
        self.onInvalidation = onInvalidation
        self.afterOutcomes = afterOutcomes
        self.beforeSending = beforeSending
        timeoutNanoseconds = UInt64(max(0.001, configuration.requestTimeoutSeconds) * 1e9)
        connectTimeoutNanoseconds = UInt64(max(0.001, configuration.connectTimeoutSeconds) * 1e9)
    }

    deinit { pushseal_tls_context_free(tlsContext) }

    /// Queues a notification (any thread) and wakes the transfer thread if it sleeps.
    func submit(_ notification: APNsNotification, tag: Int, at now: UInt64) {
        let wake = shared.withLock { s -> Bool in
            s.queue.append((notification, tag, now))
            s.statistics.submitted += 1
            let wake = s.sleeping
            s.sleeping = false
            return wake
        }
        if wake { wakeUp.wake() }
    }

    /// Sends nothing new from now on (any thread): see ``APNsClient/stopSending()``.
    func stopSending() {
        shared.withLock { $0.stopRequested = true }
        wakeUp.wake()
    }

    /// Asks the thread to end once everything queued has an outcome (any thread).
    func close() {
        shared.withLock { $0.closing = true }
        wakeUp.wake()
    }

    var statistics: APNsClient.Statistics { shared.withLock { $0.statistics } }

    private var now: UInt64 { configuration.clock.monotonicNanoseconds() }

    /// The transfer loop (the transfer thread).
    func run() {
        while true {
            let (batch, closing, stopRequested) = shared.withLock { s -> ([(notification: APNsNotification, tag: Int, submittedAt: UInt64)], Bool, Bool) in
                let b = s.queue
                s.queue = []
                return (b, s.closing, s.stopRequested)
            }
            if (stopRequested || stopPending) && !stopping { stop() }
            var t = now
            for item in batch {
                let r = APNsRequest(item.notification, tag: item.tag, apnsID: item.notification.apnsID ?? APNsText.uuid(using: &random),
                                    submittedAt: item.submittedAt)
                if stopping {
                    deliver(r, kind: .failed, status: nil, reason: .client(.notSent), timestamp: nil)
                } else if t < connectBlockedUntil {
                    schedule(r, at: connectBlockedUntil)
                } else {
                    ready.append(r)
                }
            }
            while let first = delayed.first, first.due <= t, t >= connectBlockedUntil {
                delayed.removeFirst()
                ready.append(first.request)
            }
            if !stopping {
                assignReady(t)
                submitBound()
            }
            for c in connections { c.flush(t) }
            takeEnded()
            t = now
            expireTimeouts(t)
            upkeep(t)
            if delivered {
                delivered = false
                afterOutcomes()
            }
            publishStatistics()
            let idle = bound == 0 && delayed.isEmpty && ready.isEmpty && resend.isEmpty
            let finished = shared.withLock { s in closing && idle && s.queue.isEmpty }
            if finished { break }
            let timeout = pollTimeout(t)
            let sleep = shared.withLock { s -> Bool in
                guard s.queue.isEmpty && !(s.closing && !closing) else { return false }
                s.sleeping = true
                return true
            }
            waitAndHandle(timeout: sleep ? timeout : 0)
            if sleep { shared.withLock { $0.sleeping = false } }
            takeEnded()
        }
        // Ordered shutdown: GOAWAY on every connection, then up to a second for the server to close.
        let t0 = now
        for c in connections { c.shutdown(t0) }
        while connections.contains(where: { $0.state != .closed }), now < t0 + Self.closingWaitNanoseconds {
            waitAndHandle(timeout: 50)
        }
        for c in connections {
            c.close()
            for (r, _) in c.ended { r.connection = nil }  // none are left once idle; no cycle either way
            c.ended = []
        }
        connections = []
        counters.connectionsOpen = 0
        invalidationGuard.finish()
        counters.suppressedInvalidations = invalidationGuard.suppressedCount
        publishStatistics()
    }

    private func publishStatistics() {
        let snapshot = counters
        shared.withLock { s in
            s.statistics.finished = snapshot.finished
            s.statistics.requests = snapshot.requests
            s.statistics.refusedStreamsResent = snapshot.refusedStreamsResent
            s.statistics.connectionsOpened = snapshot.connectionsOpened
            s.statistics.connectionsOpen = snapshot.connectionsOpen
            s.statistics.suppressedInvalidations = snapshot.suppressedInvalidations
            s.statistics.badDeviceTokenBurst = snapshot.badDeviceTokenBurst
            s.statistics.sendingStopped = snapshot.sendingStopped
        }
    }

    /// Milliseconds until the next thing due (a retry, a timeout, a connect limit; at most 1 s).
    private func pollTimeout(_ t: UInt64) -> Int32 {
        var due = t + 1_000_000_000
        if let first = delayed.first { due = min(due, max(first.due, connectBlockedUntil)) }
        if (!resend.isEmpty || !ready.isEmpty) && connectBlockedUntil > t { due = min(due, connectBlockedUntil) }
        due = min(due, nextDeadline)
        for c in connections where c.state == .connecting || c.state == .handshaking || (c.state == .open && !c.settingsReceived) {
            due = min(due, c.openedAt + connectTimeoutNanoseconds)
        }
        return due <= t ? 0 : Int32(min((due - t) / 1_000_000 + 1, 1000))
    }

    /// Waits up to `timeout` ms for the connections' sockets or a wake-up, and lets the
    /// connections read and write what became ready.
    private func waitAndHandle(timeout: Int32) {
        pollSet.removeAll()
        pollSet.add(wakeUp.readEnd, read: true, write: false)
        var polled: [APNsConnection] = []
        for c in connections {
            guard let i = c.interest else { continue }
            pollSet.add(i.fd, read: i.read, write: i.write)
            polled.append(c)
        }
        guard ((try? pollSet.wait(timeoutMilliseconds: timeout)) ?? 0) > 0 else { return }
        if pollSet.readiness(at: 0).readable || pollSet.readiness(at: 0).failed { wakeUp.drain() }
        let t = now
        for (i, c) in polled.enumerated() {
            let r = pollSet.readiness(at: i + 1)
            if r.readable || r.writable || r.failed {
                c.handle(readable: r.readable, writable: r.writable, failed: r.failed, now: t, tlsContext: tlsContext)
            }
        }
    }

    // MARK: Stopping and intents

    /// Stops sending: the requests not yet on a stream (queued, waiting for a retry, waiting on
    /// a connection) end `failed` `notSent`; those on a stream finish (up to their deadline, or
    /// until their connection fails the PING sent now) without a retry.
    private func stop() {
        stopping = true
        stopPending = false
        shared.withLock { $0.statistics.sendingStopped = true }
        counters.sendingStopped = true
        while let r = ready.popFirst() { deliver(r, kind: .failed, status: nil, reason: .client(.notSent), timestamp: nil) }
        for r in resend { deliver(r, kind: .failed, status: nil, reason: .client(.notSent), timestamp: nil) }
        resend = []
        for (_, r) in delayed { deliver(r, kind: .failed, status: nil, reason: .client(.notSent), timestamp: nil) }
        delayed = []
        // The streams in flight finish, but a wedged connection must not hold the stop for a
        // whole request timeout: each connection with streams gets a PING, and is retired
        // without its ACK in time (APNsConnectionHealth).
        let t = now
        for c in connections {
            c.returnPending()
            if c.state == .open && c.openStreams > 0 {
                c.suspect = true
                c.ping(t)
            }
        }
        takeEnded()
    }

    /// Moves the requests each connection can start now onto streams, after handing their
    /// intents to `beforeSending` (one call for the round). When that fails, none of them is
    /// sent and sending stops.
    private func submitBound() {
        var groups: [(APNsConnection, [APNsRequest])] = []
        var intents: [APNsIntent] = []
        for c in connections {
            let taken = c.takeSubmittable()
            guard !taken.isEmpty else { continue }
            groups.append((c, taken))
            if beforeSending != nil {
                for r in taken where !r.intentRecorded {
                    intents.append(APNsIntent(tag: r.tag, apnsID: r.apnsID, hasCollapseID: r.notification.collapseID != nil))
                }
            }
        }
        guard !groups.isEmpty else { return }
        if let beforeSending, !intents.isEmpty, !beforeSending(intents) {
            for (c, taken) in groups { for r in taken { c.ended.append((r, .unsent)) } }
            stop()
            return
        }
        for (c, taken) in groups {
            for r in taken { r.intentRecorded = true }
            c.submit(taken)
        }
    }

    // MARK: Connections

    /// Binds ready requests to connections, in order, while there is room (opening connections
    /// as the pool allows).
    private func assignReady(_ t: UInt64) {
        if !resend.isEmpty {
            // In order: each goes before those waiting on its connection, so insert the last first.
            var left: [APNsRequest] = []
            for r in resend.reversed() where !assign(r, t, first: true) { left.append(r) }
            resend = left.reversed()
            guard resend.isEmpty else { return }
        }
        while let r = ready.first, assign(r, t) { _ = ready.popFirst() }
    }

    /// Binds `r` to the first usable connection with room (one opened after its last attempt's
    /// when it must go on a new connection), opening one if the pool allows: ``Configuration/maxConnections``,
    /// plus one for a retry on a new connection (the oldest is retired when that one is taken too).
    /// `false` when it must wait (no room, or reconnect back-off).
    private func assign(_ r: APNsRequest, _ t: UInt64, first: Bool = false) -> Bool {
        let avoid = r.newConnection ? r.lastConnectionSerial : 0
        let perConnection = max(1, configuration.maxConcurrentStreams)
        var chosen = connections.first { $0.usable && $0.serial > avoid && $0.load < perConnection }
        if chosen == nil {
            guard t >= connectBlockedUntil else { return false }
            let pool = max(1, configuration.maxConnections)
            let usable = connections.filter(\.usable)
            if usable.count >= pool + (avoid > 0 ? 1 : 0) {
                guard avoid > 0, let oldest = usable.first(where: { $0.serial <= avoid }) ?? usable.first else { return false }
                oldest.startDraining()
            }
            chosen = open(t)
            guard chosen != nil else {
                // The socket could not even be made: a failed connection attempt for this request.
                if bindAttempt(r, t) {
                    complete(r, .connectFailed(reason: .connectionFailed, retryable: true), connectionSerial: nextSerial - 1, port: nil)
                }
                return true
            }
        }
        guard let c = chosen else { return false }
        guard bindAttempt(r, t) else { return true }
        r.connection = c
        c.bind(r, first: first)
        return true
    }

    /// Counts the attempt and sets it up (token, deadline). `false` when no provider token
    /// could be had (the outcome is delivered).
    private func bindAttempt(_ r: APNsRequest, _ t: UInt64) -> Bool {
        let token: ProviderToken
        do {
            token = try tokens.current()
        } catch {
            deliver(r, kind: .failed, status: nil, reason: .client(.providerTokenFailed), timestamp: nil)
            return false
        }
        if authorization.generation != token.generation { authorization = (token.generation, Array(("bearer " + token.jwt).utf8)) }
        r.attempt += 1
        counters.requests += 1
        r.tokenGeneration = token.generation
        r.authorization = authorization.bytes
        r.resetAttempt()
        r.deadline = t + timeoutNanoseconds
        nextDeadline = min(nextDeadline, r.deadline)
        bound += 1
        return true
    }

    /// A new connection, or `nil` when its socket cannot be made (back-off starts).
    private func open(_ t: UInt64) -> APNsConnection? {
        let serial = nextSerial
        nextSerial += 1
        do {
            let c = try APNsConnection(serial: serial, host: configuration.endpoint.host, port: configuration.endpoint.port,
                                       maxStreams: configuration.maxConcurrentStreams, now: t)
            connections.append(c)
            return c
        } catch {
            connectionFailed(serial)
            return nil
        }
    }

    /// A connection attempt failed: new connections back off from the base delay, doubling to the maximum, jittered.
    private func connectionFailed(_ serial: Int) {
        guard serial > lastFailedConnection else { return }
        lastFailedConnection = serial
        consecutiveConnectFailures += 1
        let exponent = min(consecutiveConnectFailures - 1, 16)
        let delay = min(configuration.reconnectBaseDelaySeconds * Double(1 << exponent), configuration.reconnectMaxDelaySeconds)
        connectBlockedUntil = now + UInt64(delay * (0.5 + 0.5 * random.unit()) * 1e9)
    }

    /// Hands every request a connection ended to ``complete(_:_:connectionSerial:port:)``;
    /// counts opened connections and drops closed ones.
    private func takeEnded() {
        var closed = false
        for c in connections {
            if c.wasOpened && !c.counted {
                c.counted = true
                counters.connectionsOpened += 1
            }
            while !c.ended.isEmpty {
                let ended = c.ended
                c.ended = []
                for (r, end) in ended { complete(r, end, connectionSerial: c.serial, port: c.localPort) }
            }
            if c.state == .closed { closed = true }
        }
        if closed { connections.removeAll { $0.state == .closed && $0.ended.isEmpty } }
        counters.connectionsOpen = connections.reduce(0) { $0 + ($1.wasOpened && $1.state != .closed ? 1 : 0) }
    }

    /// Times out the attempts whose deadline passed.
    private func expireTimeouts(_ t: UInt64) {
        if t >= nextDeadline {
            // O(bound), once per deadline reached: every attempt has the same timeout.
            var expired: [(APNsRequest, APNsConnection)] = []
            nextDeadline = UInt64.max
            for c in connections {
                c.forEachBound { r in
                    if r.deadline <= t { expired.append((r, c)) } else { nextDeadline = min(nextDeadline, r.deadline) }
                }
            }
            var timedOutOn: [APNsConnection] = []
            for (r, c) in expired {
                guard let sent = c.cancel(r) else { continue }
                c.consecutiveTimeouts += 1
                if !timedOutOn.contains(where: { $0 === c }) { timedOutOn.append(c) }
                complete(r, .timedOut(sent: sent), connectionSerial: c.serial, port: c.localPort)
            }
            // A timeout may be a wedged connection (APNsConnectionHealth): probe it, or retire it.
            for c in timedOutOn where c.state == .open || c.state == .draining {
                switch configuration.connectionHealth.afterTimeout(consecutiveTimeouts: c.consecutiveTimeouts) {
                case .retire:
                    c.close()
                case .probe:
                    // A draining connection takes nothing new anyway: its streams finish or time out.
                    guard c.state == .open else { continue }
                    c.suspect = true
                    c.ping(t)
                }
            }
        }
        // Connections that did not open in time.
        for c in connections where (c.state == .connecting || c.state == .handshaking || (c.state == .open && !c.settingsReceived))
            && t >= c.openedAt + connectTimeoutNanoseconds {
            c.fail(.connectFailed(reason: .connectionFailed, retryable: true))
        }
        takeEnded()
    }

    /// PING on idle connections; idle and age limits; a PING unanswered within the request timeout closes.
    private func upkeep(_ t: UInt64) {
        let idleLimit = UInt64(max(1, configuration.connectionIdleLimitSeconds)) * 1_000_000_000
        let lifetime = UInt64(max(1, configuration.connectionLifetimeSeconds)) * 1_000_000_000
        let interval = UInt64(max(1, configuration.upkeepIntervalSeconds)) * 1_000_000_000
        for c in connections where c.state == .closing && t >= c.closingSince + Self.closingWaitNanoseconds { c.close() }
        for c in connections where c.state == .open {
            if let sent = c.pingSentAt, t >= (c.suspect ? configuration.connectionHealth.pingDeadline(sentAt: sent) : sent + timeoutNanoseconds) {
                c.close()
            } else if t >= c.openedAt + lifetime {
                c.startDraining()
            } else if c.load == 0 && t >= c.lastActivity + idleLimit {
                c.shutdown(t)
            } else if c.load == 0 && t >= c.lastActivity + interval {
                c.ping(t)
            }
        }
        takeEnded()
    }

    private func schedule(_ r: APNsRequest, at due: UInt64) {
        var lo = 0, hi = delayed.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if delayed[mid].due <= due { lo = mid + 1 } else { hi = mid }
        }
        delayed.insert((due, r), at: lo)
    }

    // MARK: Outcomes

    /// One attempt of `r` ended (on connection `connectionSerial`): decide, then deliver, resend or schedule.
    private func complete(_ r: APNsRequest, _ end: APNsConnection.End, connectionSerial: Int, port: Int?) {
        bound -= 1
        r.connection = nil
        r.lastConnectionSerial = connectionSerial
        if let port { r.lastConnectionPort = port }
        let result: APNsRetryPolicy.Result
        var reason: APNsReason?
        var timestamp: Int64?
        switch end {
        case .unsent where r.unsentResends < Self.maxRefusedResends:
            // Nothing reached APNs: not an attempt (a bounded number of times in a row).
            r.attempt -= 1
            counters.requests -= 1
            r.unsentResends += 1
            if stopping {
                deliver(r, kind: .failed, status: nil, reason: .client(.notSent), timestamp: nil)
            } else {
                resend.append(r)
            }
            return
        case .unsent:
            r.unsentResends = 0
            result = .transportFailed(reason: .notSent, maybeSent: false, retryable: true)
            reason = .client(.notSent)
        case .notSendable(let why):
            deliver(r, kind: .failed, status: nil, reason: .client(why), timestamp: nil)
            return
        case .refused:
            // Not processed by APNs (RFC 9113 §8.7): resent without counting an attempt, a bounded number of times in a row.
            counters.refusedStreamsResent += 1
            r.refusedResends += 1
            if r.refusedResends <= Self.maxRefusedResends {
                r.attempt -= 1
                counters.requests -= 1
                if stopping {
                    deliver(r, kind: .failed, status: nil, reason: .client(.notSent), timestamp: nil)
                } else {
                    resend.append(r)
                }
                return
            }
            r.refusedResends = 0
            r.newConnection = true
            result = .transportFailed(reason: .refusedStream, maybeSent: false, retryable: true)
            reason = .client(.refusedStream)
        case .answered:
            r.refusedResends = 0
            consecutiveConnectFailures = 0
            if r.status != 200, !r.body.isEmpty, case .object(let o)? = try? JSONReader.parse(r.body) {
                reason = o["reason"]?.stringValue.map(APNsReason.init)
                timestamp = o["timestamp"]?.integerValue
            }
            let retryAfter = r.retryAfterValue.flatMap { APNsRetryAfter.seconds($0, nowSeconds: configuration.clock.wallSeconds()) }
            result = .answered(status: r.status, reason: reason, retryAfterSeconds: retryAfter.map(Double.init))
        case .lost(let sent):
            result = .transportFailed(reason: .connectionLost, maybeSent: sent, retryable: true)
            reason = .client(.connectionLost)
        case .timedOut(let sent):
            result = .transportFailed(reason: .timeout, maybeSent: sent, retryable: true)
            reason = .client(.timeout)
        case .connectFailed(let why, let retryable):
            connectionFailed(connectionSerial)
            result = .transportFailed(reason: why, maybeSent: false, retryable: retryable)
            reason = .client(why)
        }
        let decision = configuration.retry.decide(after: result, attempt: r.attempt, hasCollapseID: r.notification.collapseID != nil,
                                                  tokenRefreshed: r.tokenRefreshed, jitter: random.unit())
        let answeredStatus: Int? = if case .answered = end { r.status } else { nil }
        switch decision {
        case .accept:
            deliver(r, kind: .accepted, status: 200, reason: nil, timestamp: nil)
        case .reject:
            deliver(r, kind: .rejected, status: answeredStatus, reason: reason, timestamp: nil)
        case .unregister:
            deliver(r, kind: .unregistered, status: answeredStatus, reason: reason, timestamp: timestamp)
        case .fail(let why):
            deliver(r, kind: .failed, status: answeredStatus, reason: why, timestamp: nil)
        case .retry where stopping:
            // Stopping: no retry; the outcome says why the last attempt failed.
            deliver(r, kind: .failed, status: answeredStatus, reason: reason ?? .client(.notSent), timestamp: nil)
        case .retry(let delay, let newConnection, let refreshToken):
            if refreshToken {
                r.tokenRefreshed = true
                guard (try? tokens.refresh(afterRejecting: r.tokenGeneration)) ?? nil != nil else {
                    deliver(r, kind: .rejected, status: answeredStatus, reason: reason, timestamp: nil)
                    return
                }
            }
            r.newConnection = newConnection
            schedule(r, at: max(APNsRetryAfter.dueTime(after: now, seconds: delay), connectBlockedUntil))
        }
    }

    private func deliver(_ r: APNsRequest, kind: APNsOutcome.Kind, status: Int?, reason typedReason: APNsReason?, timestamp: Int64?) {
        let reason = typedReason?.text
        let invalidates = kind == .unregistered
        let outcome = APNsOutcome(tag: r.tag, deviceToken: r.notification.deviceToken, kind: kind, status: status, reason: reason,
                                  apnsID: r.apnsID, apnsUniqueID: kind == .accepted ? r.apnsUniqueID : nil,
                                  timestampMilliseconds: timestamp, attempts: r.attempt, connection: r.lastConnectionPort,
                                  latencyNanoseconds: now &- r.submittedAt, invalidatesToken: invalidates)
        var candidate: APNsInvalidation?
        if kind == .unregistered || (status == 400 && typedReason == .apns(.badDeviceToken)) {
            candidate = APNsInvalidation(tag: r.tag, deviceToken: r.notification.deviceToken, reason: reason ?? "Unregistered",
                                         timestampMilliseconds: timestamp)
        }
        let released = invalidationGuard.record(kind: kind, status: status, reason: reason, invalidation: candidate)
        counters.suppressedInvalidations = invalidationGuard.suppressedCount
        counters.badDeviceTokenBurst = invalidationGuard.burstDetected
        if invalidationGuard.burstDetected && configuration.stopOnBadDeviceTokenBurst && !stopping { stopPending = true }
        counters.finished += 1
        onOutcome(outcome)
        for i in released { onInvalidation(i) }
        delivered = true
    }
}

