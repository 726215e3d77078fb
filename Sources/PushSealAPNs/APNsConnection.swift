internal import CNghttp2
internal import CPushSealTLS

/// One HTTP/2 connection to APNs: a non-blocking TCP socket with OpenSSL TLS (CPushSealTLS:
/// TLS 1.2+, ALPN `h2`, the peer verified, SNI and host name checked) and an nghttp2 client
/// session over it, driven by the ``APNsEngine`` on the client's transfer thread.
///
/// The engine binds requests to a connection (``bind(_:)``); they wait in its local queue and
/// are submitted while the streams open stay under the server's live
/// `SETTINGS_MAX_CONCURRENT_STREAMS` (nothing before the server's first SETTINGS, so a new
/// connection that allows one stream gets one), capped by the configured limit. How each
/// request ended is collected in ``ended`` for the engine to decide:
/// - ``End/answered``: a complete answer (``APNsRequest/status``, body, headers);
/// - ``End/refused``: `RST_STREAM(REFUSED_STREAM)`, or above a GOAWAY's last stream id (nghttp2
///   closes those with the same code): not processed (RFC 9113 §8.7);
/// - ``End/unsent``: never submitted, or its HEADERS never left (the connection closed or
///   went away first): nothing reached APNs;
/// - ``End/lost(sent:)``: the stream was open when the connection died or was reset;
///   `sent` when its END_STREAM went out (APNs may have delivered it);
/// - ``End/connectFailed(reason:retryable:)``: the connection never opened.
/// Not `Sendable`: one thread (the engine's) owns it.
final class APNsConnection {
    enum End {
        case answered
        case refused
        case unsent
        case lost(sent: Bool)
        case connectFailed(reason: APNsReason.Client, retryable: Bool)
        /// Not from the connection: the engine's per-request timeout passed (``cancel(_:)``);
        /// `sent` when its END_STREAM had gone out.
        case timedOut(sent: Bool)
        /// nghttp2 cannot frame the request (a header block over its limits): nothing was
        /// sent, and a resend would fail the same way.
        case notSendable(reason: APNsReason.Client)
    }

    enum State: Equatable {
        /// TCP connect in progress.
        case connecting
        /// TLS handshake in progress.
        case handshaking
        /// HTTP/2 open; requests are submitted once the server's SETTINGS arrived.
        case open
        /// GOAWAY received, or retired by the engine: no new streams; closed when the last ends.
        case draining
        /// GOAWAY(NO_ERROR), TLS close_notify and a TCP FIN sent: waiting for the server to
        /// close its side (an abrupt close with unread bytes would be a TCP reset).
        case closing
        case closed
    }

    /// Increasing per client (1, 2, …): "a connection opened after that one".
    let serial: Int
    private(set) var state = State.connecting
    /// Local TCP port once connected (an outcome's `connection`), else `nil`.
    private(set) var localPort: Int?
    /// Requests that ended since the engine last looked, with how.
    var ended: [(request: APNsRequest, end: End)] = []
    /// The server's SETTINGS arrived (its stream limit is known).
    private(set) var settingsReceived = false
    /// When the connection started (monotonic ns); when a stream last ended or began.
    let openedAt: UInt64
    private(set) var lastActivity: UInt64
    /// A PING without its ACK yet: when it was sent.
    private(set) var pingSentAt: UInt64?
    /// The TLS handshake completed (HTTP/2 agreed) at some point.
    private(set) var wasOpened = false
    /// The engine counted this connection in its statistics.
    var counted = false
    /// An attempt timed out here and the PING sent then has no ACK yet: no new requests
    /// (``APNsConnectionHealth``).
    var suspect = false
    /// Attempts that timed out here since the last answer on this connection.
    var consecutiveTimeouts = 0

    private let host: String
    private let authority: [UInt8]
    private let maxStreams: Int
    private var fd: Int32 = -1
    private var tls: OpaquePointer?
    private var session: OpaquePointer?
    /// Bound, not yet submitted.
    private var pending = APNsQueue<APNsRequest>()
    /// Submitted and not closed, by stream id.
    private var streams: [Int32: APNsRequest] = [:]
    private var handshakeWants = PUSHSEAL_TLS_WANT_WRITE
    // Output: bytes from nghttp2 not yet taken by TLS.
    private var output: [UInt8] = []
    private var outputOffset = 0
    private var writeBlocked = false
    /// Bytes nghttp2 produced so far, and bytes TLS took (written to the socket) so far.
    private var producedBytes: UInt64 = 0
    private var writtenBytes: UInt64 = 0
    /// Requests whose END_STREAM nghttp2 produced in the current `mem_send` call.
    private var endStreamsInChunk: [APNsRequest] = []
    /// Requests whose END_STREAM is produced but not yet written to the socket, with the byte
    /// count after which it is (in production order).
    private var endStreamsUnwritten = APNsQueue<(request: APNsRequest, streamID: Int32, at: UInt64)>()
    private let input: UnsafeMutableRawBufferPointer
    // Reused for building a request's header block.
    private var headers = APNsHeaderBlock()

    static let inputByteCount = 64 * 1024
    static let outputByteCount = 64 * 1024

    /// Starts connecting to `host`:`port`.
    /// - Throws: `APNsConnection.Failure` when the socket cannot be made or the address is unknown.
    init(serial: Int, host: String, port: Int, maxStreams: Int, now: UInt64) throws(Failure) {
        self.serial = serial
        self.host = host
        authority = Array((host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)").utf8)
        self.maxStreams = max(1, maxStreams)
        openedAt = now
        lastActivity = now
        input = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.inputByteCount, alignment: 16)
        let r = pushseal_tcp_connect(host, Int32(port))
        guard r >= 0 else { throw Failure(reason: .connectionFailed, retryable: true) }
        fd = r
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        if let tls { pushseal_tls_connection_free(tls) } else if fd >= 0 { pushseal_tcp_close(fd) }
        input.deallocate()
    }

    /// Why a connection could not be made.
    struct Failure: Error {
        let reason: APNsReason.Client
        let retryable: Bool
    }

    /// The descriptor to poll, and for what; `nil` once closed.
    var interest: (fd: Int32, read: Bool, write: Bool)? {
        switch state {
        case .closed: return nil
        case .connecting: return (fd, false, true)
        case .handshaking: return (fd, handshakeWants == PUSHSEAL_TLS_WANT_READ, handshakeWants == PUSHSEAL_TLS_WANT_WRITE)
        case .open, .draining: return (fd, true, writeBlocked)
        case .closing: return (fd, true, false)
        }
    }

    /// Bound requests: waiting here or on a stream.
    var load: Int { pending.count + streams.count }
    /// Streams open.
    var openStreams: Int { streams.count }
    /// Takes new requests (not draining or closed, not ``suspect``).
    var usable: Bool { (state == .connecting || state == .handshaking || state == .open) && !suspect }

    /// Takes `request` for this connection; it is submitted when the stream limit allows, after
    /// those waiting (before them when `first`: a resend of a stream that was not processed).
    func bind(_ request: APNsRequest, first: Bool = false) {
        if first { pending.prepend(request) } else { pending.append(request) }
    }

    /// Handles what `poll` found, then submits and writes what it can.
    func handle(readable: Bool, writable: Bool, failed: Bool, now: UInt64, tlsContext: OpaquePointer) {
        switch state {
        case .closed:
            return
        case .connecting:
            guard writable || failed else { return }
            guard pushseal_tcp_connect_result(fd) == 0 else {
                fail(.connectFailed(reason: .connectionFailed, retryable: true))
                return
            }
            localPort = Int(pushseal_tcp_local_port(fd))
            guard let t = pushseal_tls_connection_new(tlsContext, fd, host) else {
                fd = -1  // closed by pushseal_tls_connection_new
                fail(.connectFailed(reason: .connectionFailed, retryable: true))
                return
            }
            tls = t
            state = .handshaking
            handshake(now)
        case .handshaking:
            handshake(now)
        case .open, .draining:
            if readable || failed { read(now) }
            if state != .closed { flush(now) }
        case .closing:
            if readable || failed { discardUntilClosed() }
        }
    }

    private func handshake(_ now: UInt64) {
        guard let tls else { return }
        let r = Int(pushseal_tls_handshake(tls))
        switch r {
        case PUSHSEAL_TLS_OK:
            guard startSession() else {
                fail(.connectFailed(reason: .transportUnavailable, retryable: false))
                return
            }
            state = .open
            wasOpened = true
            lastActivity = now
            flush(now)
        case PUSHSEAL_TLS_WANT_READ, PUSHSEAL_TLS_WANT_WRITE:
            handshakeWants = r
        case PUSHSEAL_TLS_VERIFY_FAILED:
            fail(.connectFailed(reason: .tlsVerificationFailed, retryable: false))
        default:
            // Includes a server without h2 (PUSHSEAL_TLS_NO_H2): APNs always speaks it.
            fail(.connectFailed(reason: .connectionFailed, retryable: true))
        }
    }

    /// The nghttp2 client session with the callbacks below; sends the preface and SETTINGS.
    private func startSession() -> Bool {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return false }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameCount, value, valueCount, _, me in
            guard let frame, let name, let value, let me else { return 0 }
            Unmanaged<APNsConnection>.fromOpaque(me).takeUnretainedValue().header(
                frame.pointee.hd.stream_id, UnsafeBufferPointer(start: name, count: nameCount), UnsafeBufferPointer(start: value, count: valueCount))
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, count, me in
            guard let data, let me else { return 0 }
            Unmanaged<APNsConnection>.fromOpaque(me).takeUnretainedValue().bodyChunk(streamID, UnsafeBufferPointer(start: data, count: count))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, me in
            guard let frame, let me else { return 0 }
            Unmanaged<APNsConnection>.fromOpaque(me).takeUnretainedValue().frameReceived(frame.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, me in
            guard let frame, let me else { return 0 }
            Unmanaged<APNsConnection>.fromOpaque(me).takeUnretainedValue().frameSent(frame.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks) { _, frame, code, me in
            guard let frame, let me else { return 0 }
            Unmanaged<APNsConnection>.fromOpaque(me).takeUnretainedValue().frameNotSent(frame.pointee, code)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, code, me in
            guard let me else { return 0 }
            Unmanaged<APNsConnection>.fromOpaque(me).takeUnretainedValue().streamClosed(streamID, code)
            return 0
        }
        var s: OpaquePointer?
        // Unretained: the session is deleted in deinit, before this object is gone.
        guard nghttp2_session_client_new(&s, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0, let s else { return false }
        session = s
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        guard nghttp2_submit_settings(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count) == 0 else { return false }
        _ = nghttp2_session_set_local_window_size(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 16 << 20)
        return true
    }

    // MARK: nghttp2 callbacks (inside nghttp2_session_mem_recv / mem_send, on this thread)

    /// A response header: `:status`, `apns-unique-id` and `retry-after` are kept (the stream
    /// is looked up only for those).
    private func header(_ streamID: Int32, _ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) {
        if Self.equals(name, ":status") {
            guard let r = streams[streamID] else { return }
            var n = 0
            for b in value where b >= 0x30 && b <= 0x39 { n = n * 10 + Int(b - 0x30) }
            r.status = n
        } else if Self.equals(name, "apns-unique-id") {
            guard let r = streams[streamID] else { return }
            r.apnsUniqueID = String(decoding: value, as: UTF8.self)
        } else if Self.equals(name, "retry-after") {
            guard let r = streams[streamID], value.count <= 64 else { return }
            r.retryAfterValue = Array(value)
        }
    }

    private func bodyChunk(_ streamID: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        guard let r = streams[streamID], r.body.count < APNsRequest.maxBodyByteCount else { return }
        r.body.append(contentsOf: data.prefix(APNsRequest.maxBodyByteCount - r.body.count))
    }

    private func frameReceived(_ frame: nghttp2_frame) {
        let type = UInt32(frame.hd.type)
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch type {
        case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
            if endStream, let r = streams[frame.hd.stream_id] { r.responseEnded = true }
        case NGHTTP2_SETTINGS.rawValue:
            if frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 { settingsReceived = true }
        case NGHTTP2_PING.rawValue:
            if frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 {
                pingSentAt = nil
                suspect = false
            }
        case NGHTTP2_GOAWAY.rawValue:
            // nghttp2 closes the streams above last_stream_id with REFUSED_STREAM itself.
            startDraining()
        default:
            break
        }
    }

    private func frameSent(_ frame: nghttp2_frame) {
        let type = UInt32(frame.hd.type)
        guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue,
              frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0, let r = streams[frame.hd.stream_id] else { return }
        // Sent once TLS has written the bytes up to it (``write()``), not when serialized.
        endStreamsInChunk.append(r)
    }

    /// A request's HEADERS that nghttp2 could not send: the connection went away first
    /// (``End/unsent``), or the request itself cannot be framed (a header block over the
    /// limits: ``End/notSendable(reason:)``, final).
    private func frameNotSent(_ frame: nghttp2_frame, _ code: Int32) {
        guard UInt32(frame.hd.type) == NGHTTP2_HEADERS.rawValue, let r = streams.removeValue(forKey: frame.hd.stream_id) else { return }
        if code == NGHTTP2_ERR_FRAME_SIZE_ERROR.rawValue || code == NGHTTP2_ERR_HEADER_COMP.rawValue {
            ended.append((r, .notSendable(reason: .requestTooLarge)))
        } else {
            ended.append((r, .unsent))
        }
    }

    private func streamClosed(_ streamID: Int32, _ code: UInt32) {
        guard let r = streams.removeValue(forKey: streamID) else { return }
        if code == NGHTTP2_REFUSED_STREAM.rawValue && r.status == 0 {
            ended.append((r, .refused))
        } else if r.responseEnded && r.status > 0 {
            consecutiveTimeouts = 0
            ended.append((r, .answered))
        } else {
            ended.append((r, .lost(sent: r.endStreamSent)))
        }
    }

    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        let t = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        for i in 0..<bytes.count where bytes[i] != t[i] { return false }
        return true
    }

    // MARK: I/O

    /// Reads what TLS has and hands it to nghttp2.
    private func read(_ now: UInt64) {
        guard let tls, let session, let base = input.baseAddress else { return }
        for _ in 0..<64 {
            let n = pushseal_tls_read(tls, base, input.count)
            if n > 0 {
                let used = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), n)
                guard used >= 0 else {
                    close()
                    return
                }
                lastActivity = now
                continue
            }
            if n == PUSHSEAL_TLS_WANT_READ || n == PUSHSEAL_TLS_WANT_WRITE { return }
            close()  // closed by the peer, or a TLS error
            return
        }
    }

    /// Reads and drops what the server still sends after our GOAWAY; closes at its end.
    private func discardUntilClosed() {
        guard let tls, let base = input.baseAddress else {
            close()
            return
        }
        for _ in 0..<64 {
            let n = pushseal_tls_read(tls, base, input.count)
            if n > 0 { continue }
            if n == PUSHSEAL_TLS_WANT_READ || n == PUSHSEAL_TLS_WANT_WRITE { return }
            break
        }
        close()
    }

    /// Takes the waiting requests the stream limit lets go out now (none before the server's
    /// SETTINGS or once draining). The engine records their intents, then gives them to
    /// ``submit(_:)`` (or ends them unsent): they are on neither list in between.
    func takeSubmittable() -> [APNsRequest] {
        guard let session, state == .open, settingsReceived, !pending.isEmpty else { return [] }
        let limit = min(Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)), maxStreams)
        var out: [APNsRequest] = []
        while streams.count + out.count < limit, let r = pending.popFirst() { out.append(r) }
        return out
    }

    /// Submits requests taken by ``takeSubmittable()`` (written by the next ``flush(_:)``).
    func submit(_ requests: [APNsRequest]) {
        for r in requests {
            guard let session, state == .open else {
                ended.append((r, .unsent))
                continue
            }
            submit(r, session)
        }
    }

    /// Writes what nghttp2 has; a draining connection with nothing left shuts down.
    func flush(_ now: UInt64) {
        guard session != nil, state == .open || state == .draining else { return }
        write()
        if state == .draining && streams.isEmpty && load == 0 && !writeBlocked { shutdown(now) }
    }

    private func write() {
        guard let tls, let session else { return }
        while true {
            if outputOffset == output.count {
                output.removeAll(keepingCapacity: true)
                outputOffset = 0
                while output.count < Self.outputByteCount {
                    var data: UnsafePointer<UInt8>?
                    let n = nghttp2_session_mem_send(session, &data)
                    guard n >= 0 else {
                        close()
                        return
                    }
                    guard n > 0, let data else { break }
                    // An END_STREAM produced in this call is at or after the chunk's start (nghttp2
                    // reports a frame sent in the call that returns its last bytes): counted as
                    // written once the bytes before the chunk are (the safe side).
                    for r in endStreamsInChunk { endStreamsUnwritten.append((r, r.streamID, producedBytes)) }
                    endStreamsInChunk.removeAll(keepingCapacity: true)
                    producedBytes += UInt64(n)
                    output.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
                }
                if output.isEmpty {
                    writeBlocked = false
                    return
                }
            }
            let n = output.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return pushseal_tls_write(tls, base + outputOffset, raw.count - outputOffset)
            }
            if n > 0 {
                outputOffset += n
                writtenBytes += UInt64(n)
                while let first = endStreamsUnwritten.first, first.at < writtenBytes {
                    // Only while that attempt's stream is open here (a later attempt elsewhere has its own).
                    if streams[first.streamID] === first.request { first.request.endStreamSent = true }
                    _ = endStreamsUnwritten.popFirst()
                }
                continue
            }
            if n == PUSHSEAL_TLS_WANT_WRITE || n == PUSHSEAL_TLS_WANT_READ {
                writeBlocked = true
                return
            }
            close()
            return
        }
    }

    /// `POST /3/device/<token>` with the APNs headers (``APNsHeaderBlock``; `:path` and
    /// `apns-id`, different on every request, not indexed) and the payload as DATA.
    private func submit(_ r: APNsRequest, _ session: OpaquePointer) {
        let n = r.notification
        var provider = nghttp2_data_provider()
        provider.source.ptr = Unmanaged.passUnretained(r).toOpaque()
        provider.read_callback = { _, _, buffer, capacity, flags, source, _ in
            guard let buffer, let flags, let me = source?.pointee.ptr else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            // Unretained: the request is in `streams` (retained) while its stream is open.
            let r = Unmanaged<APNsRequest>.fromOpaque(me).takeUnretainedValue()
            let count = r.notification.payload.withUnsafeBytes { payload -> Int in
                let count = min(capacity, payload.count - r.bodyOffset)
                if count > 0, let from = payload.baseAddress { buffer.update(from: from.assumingMemoryBound(to: UInt8.self) + r.bodyOffset, count: count) }
                return max(count, 0)
            }
            r.bodyOffset += count
            if r.bodyOffset >= r.notification.payload.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
            return count
        }
        let authority = authority
        let id = headers.fill { h in
            h.reset()
            h.field(":method"); h.append("POST")
            h.field(":scheme"); h.append("https")
            h.field(":authority"); h.append(authority)
            h.field(":path", index: false); h.append("/3/device/", n.deviceToken)
            h.field("authorization"); h.append(r.authorization)
            h.field("apns-push-type"); h.append(n.pushType.rawValue)
            h.field("apns-topic"); h.append(n.topic)
            h.field("apns-id", index: false); h.append(r.apnsID)
            if let p = n.priority { h.field("apns-priority"); h.append(Int64(p)) }
            if let e = n.expiration { h.field("apns-expiration"); h.append(e) }
            if let c = n.collapseID { h.field("apns-collapse-id"); h.append(c) }
            h.field("content-type"); h.append("application/json")
            // nghttp2 copies the values here, so the block is reused for the next request.
            return h.withList { nghttp2_submit_request(session, nil, $0.baseAddress, $0.count, &provider, nil) }
        }
        guard id > 0 else {
            // No stream ids left, or the session is going away: nothing was sent.
            ended.append((r, .unsent))
            startDraining()
            return
        }
        r.streamID = id
        streams[id] = r
    }

    /// Sends a PING (the engine calls it on an idle connection, and on one where an attempt
    /// timed out: ``APNsConnectionHealth``).
    func ping(_ now: UInt64) {
        guard let session, state == .open, pingSentAt == nil else { return }
        guard nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) == 0 else { return }
        pingSentAt = now
        write()
    }

    /// No new streams: the pending requests go back to the engine (unsent), the open streams
    /// finish, then the connection closes.
    func startDraining() {
        guard state == .open || state == .connecting || state == .handshaking else { return }
        let wasOpen = state == .open
        state = .draining
        returnPending()
        if !wasOpen { close() }
    }

    /// Calls `body` with every request bound here (waiting, then on a stream).
    func forEachBound(_ body: (APNsRequest) -> Void) {
        for r in pending.elements { body(r) }
        for r in streams.values { body(r) }
    }

    /// Cancels `r`'s attempt (its timeout): a stream is reset (`CANCEL`), a request still
    /// waiting here is taken back. Returns whether its END_STREAM had gone out, or `nil` when
    /// it is not on this connection.
    func cancel(_ r: APNsRequest) -> Bool? {
        if r.streamID != 0, streams.removeValue(forKey: r.streamID) != nil {
            if let session { _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), r.streamID, NGHTTP2_CANCEL.rawValue) }
            return r.endStreamSent
        }
        return pending.removeFirst { $0 === r } ? false : nil
    }

    /// When ``shutdown(_:)`` sent the close (monotonic ns).
    private(set) var closingSince: UInt64 = 0

    /// Ends the session in order: GOAWAY(NO_ERROR), TLS close_notify, TCP FIN; then waits
    /// (``State/closing``) for the server to close. Open streams end ``End/lost(sent:)`` and
    /// waiting requests ``End/unsent`` (the engine calls it when none are left).
    func shutdown(_ now: UInt64) {
        guard state == .open || state == .draining, let session, let tls else {
            close()
            return
        }
        _ = nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
        write()
        guard state != .closed else { return }
        for (_, r) in streams.sorted(by: { $0.key < $1.key }) { ended.append((r, .lost(sent: r.endStreamSent))) }
        streams.removeAll()
        returnPending()
        pushseal_tls_shutdown(tls)
        state = .closing
        closingSince = now
    }

    /// Closes now: open streams end ``End/lost(sent:)``, waiting requests ``End/unsent``.
    func close() {
        guard state != .closed else { return }
        state = .closed
        for (_, r) in streams.sorted(by: { $0.key < $1.key }) { ended.append((r, .lost(sent: r.endStreamSent))) }
        streams.removeAll()
        returnPending()
        if let session { nghttp2_session_del(session) }
        session = nil
        endStreamsUnwritten.removeAll()
        endStreamsInChunk.removeAll()
        if let tls { pushseal_tls_connection_free(tls) } else if fd >= 0 { pushseal_tcp_close(fd) }
        tls = nil
        fd = -1
    }

    /// A connection that never opened (also when the engine's connect timeout passed): every
    /// bound request ends with `end`.
    func fail(_ end: End) {
        for r in pending.elements { ended.append((r, end)) }
        pending.removeAll()
        state = .draining
        close()
    }

    /// The requests waiting here (never submitted) go back to the engine as ``End/unsent``.
    func returnPending() {
        for r in pending.elements { ended.append((r, .unsent)) }
        pending.removeAll()
    }
}
