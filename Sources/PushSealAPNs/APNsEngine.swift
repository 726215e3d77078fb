internal import CCurl
import PushSealJSON
import PushSealSystem

/// The transfer thread of an ``APNsClient``: one libcurl multi handle driven by
/// `curl_multi_socket_action` (the thread polls the sockets libcurl names, so a wake-up costs
/// one `poll` over them, not one per transfer as `curl_multi_perform`/`curl_multi_poll` do in
/// libcurl 7.88), the queue of new notifications, the retries waiting for their time, and the
/// outcome bookkeeping.
///
/// `@unchecked Sendable` is safe: everything but ``shared`` (behind its lock) and ``wakeUp`` (a
/// `Sendable` pipe) is touched by the transfer thread alone, inside ``run()`` and the libcurl
/// callbacks it runs.
final class APNsEngine: @unchecked Sendable {
    struct Shared {
        var queue: [(notification: APNsNotification, tag: Int, submittedAt: UInt64)] = []
        var closing = false
        var sleeping = false
        var statistics = APNsClient.Statistics()
    }

    let configuration: APNsClient.Configuration
    let tokens: ProviderTokenCache
    let onOutcome: @Sendable (APNsOutcome) -> Void
    let onInvalidation: @Sendable (APNsInvalidation) -> Void
    let afterOutcomes: @Sendable () -> Void
    let shared = Locked(Shared())
    let multi: UnsafeMutableRawPointer
    private let baseURL: String
    /// Written by ``submit(_:tag:at:)`` and ``close()`` to wake the thread from its poll.
    private let wakeUp: WakeUpPipe

    // Transfer thread only.
    private var free: [APNsTransfer] = []
    /// Every transfer made (they are reused; libcurl's private pointer to each is unretained).
    private var all: [APNsTransfer] = []
    private var active = 0
    private var delayed: [(due: UInt64, transfer: APNsTransfer)] = []
    /// Transfers ready to start, in order, waiting for room in ``admitted`` (from `readyHead` on).
    private var ready: [APNsTransfer] = []
    private var readyHead = 0
    /// Transfers the pool is known to take at once. APNs allows one stream on a new connection
    /// until a valid provider token (and again after a rejected one), so this is 1 at the start,
    /// after a token rejection and after a connection failed, and unbounded after any other
    /// answer (the server's SETTINGS with the larger limit come before that answer). Handing
    /// libcurl more would over-commit a new connection (refused streams) or make it open the
    /// spare connection for the overflow.
    private var admitted = 1
    private var invalidationGuard = InvalidationGuard()
    private var random = SplitMix64()
    private var consecutiveConnectFailures = 0
    private var connectBlockedUntil: UInt64 = 0
    private var authorization: (generation: Int, header: String) = (0, "")
    private var counters = APNsClient.Statistics()
    private var lastUpkeep: UInt64 = 0
    /// The sockets libcurl wants waited on (`CURLMOPT_SOCKETFUNCTION`): descriptor → `CURL_POLL_*`.
    private var sockets: [Int32: Int32] = [:]
    /// When libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` (`CURLMOPT_TIMERFUNCTION`;
    /// monotonic nanoseconds), or `nil`.
    private var timerDue: UInt64?
    private let pollSet = PollSet()

    init(configuration: APNsClient.Configuration, tokens: ProviderTokenCache,
         onOutcome: @escaping @Sendable (APNsOutcome) -> Void, onInvalidation: @escaping @Sendable (APNsInvalidation) -> Void,
         afterOutcomes: @escaping @Sendable () -> Void) throws {
        do {
            wakeUp = try WakeUpPipe()
        } catch {
            throw APNsError(.transportUnavailable, "cannot make the transfer thread's wake-up pipe")
        }
        guard let multi = curl_multi_init() else { throw APNsError(.transportUnavailable, "curl_multi_init failed") }
        self.configuration = configuration
        self.tokens = tokens
        self.onOutcome = onOutcome
        self.onInvalidation = onInvalidation
        self.afterOutcomes = afterOutcomes
        self.multi = multi
        baseURL = configuration.endpoint.baseURL + "/3/device/"
        let pool = max(1, configuration.maxConnections)
        var ok = pushseal_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX) == CURLM_OK
        // One connection more than the pool for a retry on a new connection (FRESH_CONNECT).
        ok = ok && pushseal_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, pool + 1) == CURLM_OK
        ok = ok && pushseal_curl_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, pool + 1) == CURLM_OK
        ok = ok && pushseal_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, pool + 1) == CURLM_OK
        ok = ok && pushseal_curl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, configuration.maxConcurrentStreams)) == CURLM_OK
        let me = Unmanaged.passUnretained(self).toOpaque()
        ok = ok && pushseal_curl_multi_setopt_socket_function(multi) { _, socket, what, me, _ in
            guard let me else { return 0 }
            Unmanaged<APNsEngine>.fromOpaque(me).takeUnretainedValue().socketWanted(socket, what)
            return 0
        } == CURLM_OK
        ok = ok && pushseal_curl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, me) == CURLM_OK
        ok = ok && pushseal_curl_multi_setopt_timer_function(multi) { _, milliseconds, me in
            guard let me else { return 0 }
            Unmanaged<APNsEngine>.fromOpaque(me).takeUnretainedValue().timerWanted(milliseconds: milliseconds)
            return 0
        } == CURLM_OK
        ok = ok && pushseal_curl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, me) == CURLM_OK
        guard ok else {
            curl_multi_cleanup(multi)
            throw APNsError(.transportUnavailable, "libcurl refused the HTTP/2 multiplexing options")
        }
    }

    /// `CURLMOPT_SOCKETFUNCTION`: wait on `socket` for `what` (`CURL_POLL_IN`, `_OUT`, `_INOUT`), or no more (`CURL_POLL_REMOVE`).
    private func socketWanted(_ socket: Int32, _ what: Int32) {
        if what == CURL_POLL_REMOVE { sockets.removeValue(forKey: socket) } else { sockets[socket] = what }
    }

    /// `CURLMOPT_TIMERFUNCTION`: call `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` in
    /// `milliseconds` (0: at once), or never (-1).
    private func timerWanted(milliseconds: Int) {
        timerDue = milliseconds < 0 ? nil : configuration.clock.monotonicNanoseconds() + UInt64(milliseconds) * 1_000_000
    }

    /// Runs libcurl's timeouts when due, then takes the finished transfers. Returns `true` when
    /// an outcome was delivered.
    private func drive(_ now: UInt64) -> Bool {
        var running: Int32 = 0
        if let due = timerDue, due <= now {
            timerDue = nil
            curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running)
        }
        var delivered = false
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            if complete(easy, pushseal_curl_msg_result(message)) { delivered = true }
        }
        return delivered
    }

    /// Waits up to `timeout` ms for the sockets libcurl named or a wake-up, and hands libcurl
    /// what became ready.
    private func waitAndAct(timeout: Int32) {
        pollSet.removeAll()
        pollSet.add(wakeUp.readEnd, read: true, write: false)
        for (socket, what) in sockets {
            pollSet.add(socket, read: what == CURL_POLL_IN || what == CURL_POLL_INOUT, write: what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        }
        guard ((try? pollSet.wait(timeoutMilliseconds: timeout)) ?? 0) > 0 else { return }
        if pollSet.readiness(at: 0).readable || pollSet.readiness(at: 0).failed { wakeUp.drain() }
        var running: Int32 = 0
        for i in 1..<pollSet.count {
            let r = pollSet.readiness(at: i)
            let events = (r.readable ? CURL_CSELECT_IN : 0) | (r.writable ? CURL_CSELECT_OUT : 0) | (r.failed ? CURL_CSELECT_ERR : 0)
            if events != 0 { curl_multi_socket_action(multi, pollSet.descriptor(at: i), Int32(events), &running) }
        }
    }

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

    /// Asks the thread to end once everything queued has an outcome (any thread).
    func close() {
        shared.withLock { $0.closing = true }
        wakeUp.wake()
    }

    var statistics: APNsClient.Statistics { shared.withLock { $0.statistics } }

    /// The transfer loop (the transfer thread).
    func run() {
        while true {
            let (batch, closing) = shared.withLock { s -> ([(notification: APNsNotification, tag: Int, submittedAt: UInt64)], Bool) in
                let b = s.queue
                s.queue = []
                return (b, s.closing)
            }
            var now = configuration.clock.monotonicNanoseconds()
            for item in batch {
                guard let t = transfer() else {
                    failUnstarted(item.notification, tag: item.tag, submittedAt: item.submittedAt)
                    continue
                }
                t.load(item.notification, tag: item.tag, submittedAt: item.submittedAt, apnsID: item.notification.apnsID ?? APNsText.uuid(using: &random))
                if now < connectBlockedUntil { schedule(t, at: connectBlockedUntil) } else { ready.append(t) }
            }
            while let first = delayed.first, first.due <= now, now >= connectBlockedUntil {
                delayed.removeFirst()
                ready.append(first.transfer)
            }
            startReady()
            if drive(configuration.clock.monotonicNanoseconds()) { afterOutcomes() }
            now = configuration.clock.monotonicNanoseconds()
            upkeep(now)
            let snapshot = counters
            let idle = active == 0 && delayed.isEmpty && readyHead == ready.count
            let finished = shared.withLock { s -> Bool in
                s.statistics.finished = snapshot.finished
                s.statistics.requests = snapshot.requests
                s.statistics.refusedStreamsResent = snapshot.refusedStreamsResent
                s.statistics.connectionsOpened = snapshot.connectionsOpened
                s.statistics.suppressedInvalidations = snapshot.suppressedInvalidations
                s.statistics.badDeviceTokenBurst = snapshot.badDeviceTokenBurst
                return closing && idle && s.queue.isEmpty
            }
            if finished { break }
            startReady()
            var timeout: Int32 = 1000
            if let first = delayed.first {
                let due = max(first.due, connectBlockedUntil)
                timeout = due <= now ? 0 : Int32(min((due - now) / 1_000_000 + 1, 1000))
            }
            if let due = timerDue { timeout = min(timeout, due <= now ? 0 : Int32(min((due - now) / 1_000_000 + 1, 1000))) }
            let sleep = shared.withLock { s -> Bool in
                guard s.queue.isEmpty && !(s.closing && !closing) else { return false }
                s.sleeping = true
                return true
            }
            waitAndAct(timeout: sleep ? timeout : 0)
            if sleep { shared.withLock { $0.sleeping = false } }
        }
        invalidationGuard.finish()
        counters.suppressedInvalidations = invalidationGuard.suppressedCount
        let final = counters
        shared.withLock { $0.statistics.suppressedInvalidations = final.suppressedInvalidations }
        for t in all {
            APNsStreamCloses.unregister(t.easy)
            curl_easy_cleanup(t.easy)
        }
        free = []
        all = []
        curl_multi_cleanup(multi)
    }

    /// `curl_easy_upkeep` once per upkeep interval (HTTP/2 PING on idle connections).
    private func upkeep(_ now: UInt64) {
        let interval = UInt64(max(1, configuration.upkeepIntervalSeconds)) * 1_000_000_000
        guard now &- lastUpkeep >= interval, let t = free.first else { return }
        lastUpkeep = now
        curl_easy_upkeep(t.easy)
    }

    /// A transfer from the free list, or a new one with the fixed options set.
    private func transfer() -> APNsTransfer? {
        if let t = free.popLast() { return t }
        guard let t = APNsTransfer(configuration: configuration) else { return nil }
        all.append(t)
        return t
    }

    /// The outcome of a notification no easy handle could be made for (out of memory).
    private func failUnstarted(_ n: APNsNotification, tag: Int, submittedAt: UInt64) {
        counters.finished += 1
        onOutcome(APNsOutcome(tag: tag, deviceToken: n.deviceToken, kind: .failed, status: nil, reason: "transportUnavailable",
                              apnsID: n.apnsID ?? "", apnsUniqueID: nil, timestampMilliseconds: nil, attempts: 0, connection: nil,
                              latencyNanoseconds: configuration.clock.monotonicNanoseconds() &- submittedAt, invalidatesToken: false))
    }

    private func schedule(_ t: APNsTransfer, at due: UInt64) {
        var lo = 0, hi = delayed.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if delayed[mid].due <= due { lo = mid + 1 } else { hi = mid }
        }
        delayed.insert((due, t), at: lo)
    }

    /// Starts ready transfers while the pool has room for them (``admitted``).
    private func startReady() {
        while active < admitted, readyHead < ready.count {
            let t = ready[readyHead]
            readyHead += 1
            start(t)
        }
        if readyHead == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyHead = 0
        } else if readyHead > 4096 {
            ready.removeFirst(readyHead)
            readyHead = 0
        }
    }

    /// How many times a notification whose streams libcurl gave up on (all refused) is queued
    /// again without counting an attempt: 5.
    static let maxRefusedRequeues = 5

    /// Sends one attempt of `t`.
    private func start(_ t: APNsTransfer) {
        let token: ProviderToken
        do {
            token = try tokens.current()
        } catch {
            deliver(t, kind: .failed, status: nil, reason: "providerTokenFailed", timestamp: nil, connection: nil)
            return
        }
        if authorization.generation != token.generation { authorization = (token.generation, "authorization: bearer " + token.jwt) }
        t.attempt += 1
        t.tokenGeneration = token.generation
        guard t.prepare(url: baseURL + t.notification.deviceToken, authorization: authorization.header),
              curl_multi_add_handle(multi, t.easy) == CURLM_OK else {
            t.releaseHeaders()
            deliver(t, kind: .failed, status: nil, reason: "transportUnavailable", timestamp: nil, connection: nil)
            return
        }
        active += 1
        counters.requests += 1
    }

    /// One attempt ended: decide, then deliver or schedule. Returns `true` when an outcome was delivered.
    private func complete(_ easy: UnsafeMutableRawPointer, _ code: CURLcode) -> Bool {
        var raw: UnsafeMutablePointer<CChar>?
        guard pushseal_curl_getinfo_pointer(easy, CURLINFO_PRIVATE, &raw) == CURLE_OK, let raw else { return false }
        let t = Unmanaged<APNsTransfer>.fromOpaque(UnsafeMutableRawPointer(raw)).takeUnretainedValue()
        curl_multi_remove_handle(multi, easy)
        active -= 1
        t.releaseHeaders()
        var status = 0
        _ = pushseal_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var port = 0
        _ = pushseal_curl_getinfo_long(easy, CURLINFO_LOCAL_PORT, &port)
        var connects = 0
        _ = pushseal_curl_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        counters.connectionsOpened += connects
        // The body sent in full: APNs may have acted on it. A request still queued behind the
        // server's stream limit (nghttp2 holds it) has sent nothing and cannot have been delivered.
        var uploaded: curl_off_t = 0
        _ = pushseal_curl_getinfo_off_t(easy, CURLINFO_SIZE_UPLOAD_T, &uploaded)
        let connection = port > 0 ? port : nil
        // Resends libcurl made by itself (of refused streams only, see APNsTransfer) are not
        // attempts: APNs did not process the refused stream. Counted on their own.
        counters.refusedStreamsResent += t.silentResends

        let result: APNsRetryPolicy.Result
        var reason: String?
        var timestamp: Int64?
        if code == CURLE_OK && status > 0 {
            consecutiveConnectFailures = 0
            if status != 200, !t.body.isEmpty, case .object(let o)? = try? JSONReader.parse(t.body) {
                reason = o["reason"]?.stringValue
                timestamp = o["timestamp"]?.integerValue
            }
            // A rejected provider token puts the connection back to one stream.
            let tokenRejected = status == 403 || (status == 429 && reason == "TooManyProviderTokenUpdates")
            admitted = tokenRejected ? 1 : Int.max
            result = .answered(status: status, reason: reason, retryAfterSeconds: t.retryAfter)
        } else {
            let (why, retryable, connectFailure) = APNsEngine.classify(code)
            // A refused rewind: the request went out on a connection that then died
            // (CURLINFO_SIZE_UPLOAD_T restarts at 0 for libcurl's resend, so it cannot say).
            // Not when the last issue's stream was refused (libcurl gave up after its own resends
            // of a refused stream, "tried 5 times"): APNs processed none of them.
            let lastRefused = t.rewind == .none && APNsStreamCloses.refused(t.easy)
            let maybeSent = (uploaded >= t.notification.payload.count || t.rewind == .refused) && !connectFailure && !lastRefused
            // The next connection starts at one stream.
            admitted = 1
            if connectFailure {
                consecutiveConnectFailures += 1
                let exponent = min(consecutiveConnectFailures - 1, 16)
                let delay = min(configuration.reconnectBaseDelaySeconds * Double(1 << exponent), configuration.reconnectMaxDelaySeconds)
                let jittered = delay * (0.5 + 0.5 * random.unit())
                connectBlockedUntil = configuration.clock.monotonicNanoseconds() + UInt64(jittered * 1e9)
            }
            result = .transportFailed(reason: why, maybeSent: maybeSent, retryable: retryable)
            reason = why
        }
        // libcurl gave up on a stream the server kept refusing (its own resends, "tried 5
        // times"): APNs processed none of them, so this is not an attempt (docs/apns.md, the
        // retry table): queue it again on a new connection, a bounded number of times.
        if code != CURLE_OK, APNsStreamCloses.refused(t.easy), t.rewind == .none, t.refusedRequeues < Self.maxRefusedRequeues {
            t.refusedRequeues += 1
            t.attempt -= 1
            counters.requests -= 1
            counters.refusedStreamsResent += 1
            t.newConnection = true
            let now = configuration.clock.monotonicNanoseconds()
            schedule(t, at: max(now + UInt64(configuration.retry.backoff(t.refusedRequeues, random.unit()) * 1e9), connectBlockedUntil))
            return false
        }
        let decision = configuration.retry.decide(after: result, attempt: t.attempt, hasCollapseID: t.notification.collapseID != nil,
                                                  tokenRefreshed: t.tokenRefreshed, jitter: random.unit())
        let answeredStatus = status > 0 && code == CURLE_OK ? status : nil
        switch decision {
        case .accept:
            deliver(t, kind: .accepted, status: 200, reason: nil, timestamp: nil, connection: connection)
        case .reject:
            deliver(t, kind: .rejected, status: answeredStatus, reason: reason, timestamp: nil, connection: connection)
        case .unregister:
            deliver(t, kind: .unregistered, status: answeredStatus, reason: reason, timestamp: timestamp, connection: connection)
        case .fail(let why):
            deliver(t, kind: .failed, status: answeredStatus, reason: why, timestamp: nil, connection: connection)
        case .retry(let delay, let newConnection, let refreshToken):
            if refreshToken {
                t.tokenRefreshed = true
                guard (try? tokens.refresh(afterRejecting: t.tokenGeneration)) ?? nil != nil else {
                    deliver(t, kind: .rejected, status: answeredStatus, reason: reason, timestamp: nil, connection: connection)
                    return true
                }
            }
            t.newConnection = newConnection
            let now = configuration.clock.monotonicNanoseconds()
            schedule(t, at: max(now + UInt64(delay * 1e9), connectBlockedUntil))
            return false
        }
        return true
    }

    /// A libcurl error's outcome reason, whether another attempt may help, and whether it was
    /// a failure to connect (nothing sent; reconnect back-off).
    static func classify(_ code: CURLcode) -> (reason: String, retryable: Bool, connectFailure: Bool) {
        switch code {
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM:
            return ("tlsVerificationFailed", false, true)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR:
            return ("connectionFailed", true, true)
        case CURLE_OPERATION_TIMEDOUT:
            return ("timeout", true, false)
        case CURLE_SEND_FAIL_REWIND, CURLE_ABORTED_BY_CALLBACK:
            // A resend libcurl wanted to make by itself and the transfer refused (APNsTransfer).
            return ("connectionLost", true, false)
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_OUT_OF_MEMORY, CURLE_FAILED_INIT:
            return ("transportUnavailable", false, false)
        default:
            return ("connectionLost", true, false)
        }
    }

    private func deliver(_ t: APNsTransfer, kind: APNsOutcome.Kind, status: Int?, reason: String?, timestamp: Int64?, connection: Int?) {
        let now = configuration.clock.monotonicNanoseconds()
        let invalidates = kind == .unregistered
        let outcome = APNsOutcome(tag: t.tag, deviceToken: t.notification.deviceToken, kind: kind, status: status, reason: reason,
                                  apnsID: t.apnsID, apnsUniqueID: kind == .accepted ? t.apnsUniqueID : nil,
                                  timestampMilliseconds: timestamp, attempts: t.attempt, connection: connection,
                                  latencyNanoseconds: now &- t.submittedAt, invalidatesToken: invalidates)
        var candidate: APNsInvalidation?
        if kind == .unregistered || (status == 400 && reason == "BadDeviceToken") {
            candidate = APNsInvalidation(tag: t.tag, deviceToken: t.notification.deviceToken, reason: reason ?? "Unregistered",
                                         timestampMilliseconds: timestamp)
        }
        let released = invalidationGuard.record(kind: kind, status: status, reason: reason, invalidation: candidate)
        counters.suppressedInvalidations = invalidationGuard.suppressedCount
        counters.badDeviceTokenBurst = invalidationGuard.burstDetected
        counters.finished += 1
        onOutcome(outcome)
        for i in released { onInvalidation(i) }
        t.notification.payload = []
        free.append(t)
    }
}
