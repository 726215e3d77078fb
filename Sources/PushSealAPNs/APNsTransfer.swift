internal import CCurl

/// One notification in flight: its libcurl easy handle (kept and reused for the next
/// notification), the request and what came back. Used on the transfer thread only (libcurl
/// calls the callbacks below from `curl_multi_perform`, on that thread).
///
/// **No silent resends.** libcurl 7.88 resends a request by itself when the connection it was
/// multiplexed on dies before any byte of the answer (`Curl_retry_request`: every HTTP/2 stream
/// on a shared connection counts as "reused"), and when a stream is refused (`REFUSED_STREAM`,
/// or above a GOAWAY's last stream id). Only the second is safe: APNs did not process a refused
/// stream, but may have delivered one whose connection died. So the body is given through
/// `CURLOPT_READFUNCTION`, and the rewind libcurl needs before its resend
/// (`CURLOPT_SEEKFUNCTION`) is allowed only when nghttp2 closed this issue's stream with
/// `REFUSED_STREAM` (``APNsStreamCloses``, from CNghttp2Hooks; no text of libcurl's is read).
/// Refused, the transfer ends in `CURLE_SEND_FAIL_REWIND` and the engine applies the retry
/// policy (``RewindOutcome/refused``: may have been delivered). The resends libcurl does make
/// are counted (``silentResends``).
final class APNsTransfer {
    /// Longest response body kept, in bytes (APNs' error bodies are well under).
    static let maxBodyByteCount = 4096

    let easy: UnsafeMutableRawPointer
    var notification = APNsNotification(deviceToken: "", payload: [], topic: "")
    var tag = 0
    var apnsID = ""
    var submittedAt: UInt64 = 0
    var attempt = 0
    var tokenGeneration = 0
    var tokenRefreshed = false
    var newConnection = false
    private var headers: UnsafeMutablePointer<curl_slist>?
    // The body as libcurl takes it, and how this attempt's issues went.
    /// Bytes of the payload given to libcurl so far in this issue of the request.
    private var readOffset = 0
    /// Times libcurl is about to send this attempt (`CURLOPT_PREREQFUNCTION`).
    private var issues = 0
    /// The body was rewound for a resend of a refused stream.
    private var rewoundForResend = false
    /// Resends libcurl made by itself in this attempt (refused streams): not attempts, APNs did not process them.
    private(set) var silentResends = 0
    /// Times this notification was queued again because libcurl gave up on refused streams
    /// (every issue refused: APNs processed none); not attempts, at most
    /// ``APNsEngine/maxRefusedRequeues``.
    var refusedRequeues = 0
    /// How this attempt's rewind requests ended.
    private(set) var rewind = RewindOutcome.none

    /// What became of libcurl's wish to resend the request by itself.
    enum RewindOutcome {
        /// No resend needed a rewind.
        case none
        /// Refused: the request was sent on a connection that died; APNs may have it.
        case refused
        /// libcurl wanted to resend a body it had taken without rewinding it, and the stream was
        /// not refused: stopped before sending (CURL_PREREQFUNC_ABORT); libcurl had written none
        /// of the body (else it would have asked for the rewind), so APNs cannot have processed it.
        case abortedUnrewound
    }
    // The answer.
    var body: [UInt8] = []
    var apnsUniqueID: String?
    var retryAfter: Double?

    /// A new easy handle with the options that never change; `nil` when `curl_easy_init` fails
    /// (out of memory).
    init?(configuration: APNsClient.Configuration) {
        guard let e = curl_easy_init() else { return nil }
        easy = e
        APNsStreamCloses.register(e)
        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = pushseal_curl_setopt_long(e, CURLOPT_NOSIGNAL, 1)
        _ = pushseal_curl_setopt_pointer(e, CURLOPT_PROTOCOLS_STR, "https")
        _ = pushseal_curl_setopt_long(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        _ = pushseal_curl_setopt_long(e, CURLOPT_PIPEWAIT, 1)
        _ = pushseal_curl_setopt_long(e, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2)
        _ = pushseal_curl_setopt_long(e, CURLOPT_SSL_VERIFYPEER, 1)
        _ = pushseal_curl_setopt_long(e, CURLOPT_SSL_VERIFYHOST, 2)
        _ = pushseal_curl_setopt_pointer(e, CURLOPT_PROXY, "")
        if let ca = configuration.endpoint.caFile { _ = pushseal_curl_setopt_pointer(e, CURLOPT_CAINFO, ca) }
        _ = pushseal_curl_setopt_long(e, CURLOPT_TIMEOUT_MS, Int(configuration.requestTimeoutSeconds * 1000))
        _ = pushseal_curl_setopt_long(e, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeoutSeconds * 1000))
        _ = pushseal_curl_setopt_long(e, CURLOPT_UPKEEP_INTERVAL_MS, configuration.upkeepIntervalSeconds * 1000)
        _ = pushseal_curl_setopt_long(e, CURLOPT_MAXAGE_CONN, configuration.connectionIdleLimitSeconds)
        _ = pushseal_curl_setopt_long(e, CURLOPT_MAXLIFETIME_CONN, configuration.connectionLifetimeSeconds)
        _ = pushseal_curl_setopt_long(e, CURLOPT_TCP_KEEPALIVE, 1)
        _ = pushseal_curl_setopt_long(e, CURLOPT_TCP_NODELAY, 1)
        _ = pushseal_curl_setopt_long(e, CURLOPT_POST, 1)
        _ = pushseal_curl_setopt_pointer(e, CURLOPT_USERAGENT, "PushSeal/0.1")
        _ = pushseal_curl_setopt_pointer(e, CURLOPT_PRIVATE, me)
        _ = pushseal_curl_setopt_write_function(e, CURLOPT_HEADERFUNCTION) { buffer, size, count, me in
            guard let buffer, let me else { return 0 }
            Unmanaged<APNsTransfer>.fromOpaque(me).takeUnretainedValue().header(UnsafeRawBufferPointer(start: buffer, count: size * count))
            return size * count
        }
        _ = pushseal_curl_setopt_pointer(e, CURLOPT_HEADERDATA, me)
        _ = pushseal_curl_setopt_write_function(e, CURLOPT_WRITEFUNCTION) { buffer, size, count, me in
            guard let buffer, let me else { return 0 }
            let t = Unmanaged<APNsTransfer>.fromOpaque(me).takeUnretainedValue()
            let n = size * count
            if t.body.count < APNsTransfer.maxBodyByteCount {
                t.body.append(contentsOf: UnsafeRawBufferPointer(start: buffer, count: min(n, APNsTransfer.maxBodyByteCount - t.body.count)))
            }
            return n
        }
        _ = pushseal_curl_setopt_pointer(e, CURLOPT_WRITEDATA, me)
        _ = pushseal_curl_setopt_pointer(e, CURLOPT_POSTFIELDS, nil)
        _ = pushseal_curl_setopt_read_function(e) { buffer, size, count, me in
            guard let buffer, let me else { return Int(CURL_READFUNC_ABORT) }
            return Unmanaged<APNsTransfer>.fromOpaque(me).takeUnretainedValue().readBody(into: buffer, size * count)
        }
        _ = pushseal_curl_setopt_pointer(e, CURLOPT_READDATA, me)
        _ = pushseal_curl_setopt_seek_function(e) { me, offset, origin in
            guard let me else { return Int32(CURL_SEEKFUNC_CANTSEEK) }
            return Unmanaged<APNsTransfer>.fromOpaque(me).takeUnretainedValue().seekBody(offset: Int64(offset), origin: origin)
        }
        _ = pushseal_curl_setopt_pointer(e, CURLOPT_SEEKDATA, me)
        _ = pushseal_curl_setopt_prereq_function(e) { me, _, _, _, _ in
            guard let me else { return Int32(CURL_PREREQFUNC_ABORT) }
            return Unmanaged<APNsTransfer>.fromOpaque(me).takeUnretainedValue().aboutToSend()
        }
        _ = pushseal_curl_setopt_pointer(e, CURLOPT_PREREQDATA, me)
    }

    /// Takes a new notification (a reused transfer starts from scratch).
    func load(_ n: APNsNotification, tag: Int, submittedAt: UInt64, apnsID: String) {
        notification = n
        self.tag = tag
        self.submittedAt = submittedAt
        self.apnsID = apnsID
        attempt = 0
        tokenGeneration = 0
        tokenRefreshed = false
        newConnection = false
    }

    /// `CURLOPT_READFUNCTION`: the next bytes of the payload.
    private func readBody(into buffer: UnsafeMutablePointer<CChar>, _ capacity: Int) -> Int {
        let n = min(capacity, notification.payload.count - readOffset)
        guard n > 0 else { return 0 }
        let copied = notification.payload.withUnsafeBytes { raw -> Int in
            guard let base = raw.baseAddress else { return 0 }
            UnsafeMutableRawPointer(buffer).copyMemory(from: base + readOffset, byteCount: n)
            return n
        }
        readOffset += copied
        return copied
    }

    /// `CURLOPT_SEEKFUNCTION`: libcurl rewinds before it resends by itself. Allowed only when this
    /// issue's stream was refused (`REFUSED_STREAM`: not processed); anything else is
    /// `CURL_SEEKFUNC_CANTSEEK`, which ends the transfer with `CURLE_SEND_FAIL_REWIND`.
    private func seekBody(offset: Int64, origin: Int32) -> Int32 {
        // origin 0 is SEEK_SET.
        guard offset == 0, origin == 0 else { return Int32(CURL_SEEKFUNC_CANTSEEK) }
        if readOffset == 0 { return Int32(CURL_SEEKFUNC_OK) }
        guard APNsStreamCloses.refused(easy) else {
            rewind = .refused
            return Int32(CURL_SEEKFUNC_CANTSEEK)
        }
        readOffset = 0
        rewoundForResend = true
        return Int32(CURL_SEEKFUNC_OK)
    }

    /// `CURLOPT_PREREQFUNCTION`: libcurl is about to send the request (again).
    private func aboutToSend() -> Int32 {
        issues += 1
        if issues > 1 {
            // A resend libcurl does by itself. A body libcurl took but wrote none of (no rewind
            // was asked) is given again from its start when the stream was refused; otherwise
            // the resend is stopped and the engine decides.
            if readOffset > 0 && !rewoundForResend {
                guard APNsStreamCloses.refused(easy) else {
                    rewind = .abortedUnrewound
                    return Int32(CURL_PREREQFUNC_ABORT)
                }
                readOffset = 0
            }
            silentResends += 1
        }
        APNsStreamCloses.clear(easy)
        rewoundForResend = false
        return Int32(CURL_PREREQFUNC_OK)
    }

    /// Sets this attempt's URL, headers and body. `false` if libcurl refused an option.
    func prepare(url: String, authorization: String) -> Bool {
        body.removeAll(keepingCapacity: true)
        apnsUniqueID = nil
        retryAfter = nil
        readOffset = 0
        issues = 0
        rewoundForResend = false
        silentResends = 0
        rewind = .none
        let n = notification
        var list = curl_slist_append(nil, authorization)
        func add(_ line: String) { if list != nil { list = curl_slist_append(list, line) } }
        add("apns-push-type: " + n.pushType.rawValue)
        add("apns-topic: " + n.topic)
        add("apns-id: " + apnsID)
        if let p = n.priority { add("apns-priority: " + String(p)) }
        if let e = n.expiration { add("apns-expiration: " + String(e)) }
        if let c = n.collapseID { add("apns-collapse-id: " + c) }
        add("content-type: application/json")
        add("accept:")
        guard let list else { return false }
        headers = list
        var ok = pushseal_curl_setopt_pointer(easy, CURLOPT_URL, url) == CURLE_OK
        ok = ok && pushseal_curl_setopt_pointer(easy, CURLOPT_HTTPHEADER, UnsafeRawPointer(list)) == CURLE_OK
        ok = ok && pushseal_curl_setopt_long(easy, CURLOPT_POSTFIELDSIZE, n.payload.count) == CURLE_OK
        ok = ok && pushseal_curl_setopt_long(easy, CURLOPT_FRESH_CONNECT, newConnection ? 1 : 0) == CURLE_OK
        return ok
    }

    /// Frees this attempt's header list (after libcurl is done with the handle).
    func releaseHeaders() {
        if let headers { curl_slist_free_all(headers) }
        headers = nil
    }

    /// One response header line (`name: value\r\n`); keeps `apns-unique-id` and `retry-after`.
    private func header(_ line: UnsafeRawBufferPointer) {
        guard line.count > 12, let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        func value() -> String {
            var v = line[(colon + 1)...]
            while let f = v.first, f == 0x20 { v = v.dropFirst() }
            while let l = v.last, l == 0x0D || l == 0x0A || l == 0x20 { v = v.dropLast() }
            return String(decoding: v, as: UTF8.self)
        }
        let name = line[..<colon]
        if name.count == 14, APNsTransfer.equalsLowercased(name, "apns-unique-id") {
            apnsUniqueID = value()
        } else if name.count == 11, APNsTransfer.equalsLowercased(name, "retry-after") {
            retryAfter = Double(value())
        }
    }

    private static func equalsLowercased(_ bytes: Slice<UnsafeRawBufferPointer>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        let t = UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        for (a, b) in zip(bytes, t) where (a | 0x20) != b && a != b { return false }
        return true
    }
}
