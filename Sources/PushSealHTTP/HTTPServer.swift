#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
internal import CMicroHTTPD
internal import CPushSealHTTPD
import Dispatch
import PushSealSystem

/// An HTTP/1.1 server on libmicrohttpd: keep-alive connections, a pool of threads each polling
/// its own epoll set, optional HTTPS, and strict request checks before any handler runs.
///
/// Checks, in order, each answered with `{"error":{"code","message"}}` (the handler never runs):
/// draining (503 `draining`, `Connection: close`); path or query not UTF-8, or holding an
/// encoded NUL `%00` (400 `invalidURL`); a header not UTF-8 (400 `invalidHeader`);
/// too long (414 `urlTooLong`); too many or too large headers (431 `headersTooLarge`); a repeated
/// header of ``Limits/singleHeaders`` (400 `duplicateHeader`) or query argument (400
/// `duplicateQueryParameter`); `Transfer-Encoding` with `Content-Length` (400
/// `conflictingFraming`) or without it (411 `lengthRequired`); a malformed `Content-Length`
/// (400 `invalidContentLength`); over ``Limits/maxBodyByteCount`` (413 `bodyTooLarge`, the body
/// never stored); `POST`/`PUT`/`PATCH` without `Content-Length` (411); a body on
/// `GET`/`HEAD`/`DELETE` (400 `unexpectedBody`); a body whose type is not `application/json`
/// (415 `unsupportedMediaType`); a body that is not UTF-8 (400 `invalidUTF8`). A refused
/// request's body is read and dropped before the answer (``Limits/maxDrainedByteCount``), so a
/// client that writes all of it before reading gets the answer, not a reset connection.
///
/// A response gets `X-Request-Id` (the request's id) and, unless the handler set one,
/// `Cache-Control: no-store`.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked Sendable: the daemon pointer is set once in init and cleared only by stop()
    // under `lock`; the mutable counters are guarded by `lock` (with `drained` signalled under it).

    /// One answered request, for logs and metrics (``init(configuration:handler:observer:)``).
    public struct Exchange: Sendable {
        /// The method.
        public let method: String
        /// The path (decoded; empty when it was not UTF-8).
        public let path: String
        /// The route that answered, or `nil` when the server's checks refused the request.
        public let routeName: String?
        /// The status sent.
        public let status: Int
        /// The request's id (`X-Request-Id`).
        public let requestID: String
        /// Nanoseconds from the headers' arrival to the response's last byte.
        public let durationNanoseconds: UInt64
        /// The error code of a JSON error answer the server itself made (checks), else `nil`.
        public let refusal: String?
        /// The error code of any JSON error answer (the checks' or a handler's: `unauthorized`,
        /// `invalidRequest`, `unavailable`, …), else `nil`.
        public let errorCode: String?
        /// `true` when the whole response was sent (`false`: the client went away, a time-out).
        public let completed: Bool
    }

    /// Handles a checked request.
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse
    /// Sees every request the server answered, after the answer was sent.
    public typealias Observer = @Sendable (Exchange) -> Void

    /// The port the server listens on (the one chosen when the configuration gave 0).
    public private(set) var port: UInt16 = 0
    /// The configuration it runs with.
    public let configuration: Configuration

    private let handler: Handler
    private let observer: Observer?
    private let lock = PosixLock()
    private var daemon: OpaquePointer?
    private var inFlight = 0
    private var draining = false
    /// The listening socket ``stopAccepting()`` took back from libmicrohttpd (shut down, not yet
    /// closed), or -1. Closed only after `MHD_stop_daemon`: libmicrohttpd's pool threads may still
    /// touch it until then, and a number closed early could be reused by another open.
    private var quiescedSocket: Int32 = -1
    /// Signalled when the last request in flight ends while draining.
    private let drained = DispatchSemaphore(value: 0)
    /// The sockaddr bytes libmicrohttpd binds (kept alive for the daemon's life).
    private let addressStorage: UnsafeMutableRawPointer
    /// The TLS PEM strings (libmicrohttpd keeps pointers to them).
    private let tlsKey: UnsafeMutablePointer<CChar>?
    private let tlsCert: UnsafeMutablePointer<CChar>?

    /// Starts listening.
    /// - Parameters:
    ///   - configuration: address, threads, limits and TLS.
    ///   - handler: answers each request that passed the checks; runs on a pool thread and may
    ///     block it.
    ///   - observer: called once per request after its answer was sent or abandoned.
    /// - Throws: ``HTTPServerError`` `.invalidAddress`, `.startFailed`, `.tlsUnsupported`.
    public init(configuration: Configuration, handler: @escaping Handler, observer: Observer? = nil) throws {
        self.configuration = configuration
        self.handler = handler
        self.observer = observer
        addressStorage = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<sockaddr_in6>.size, alignment: 8)
        addressStorage.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<sockaddr_in6>.size)
        var flags = UInt32(MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_USE_ITC.rawValue)
        if let v4 = IPAddress.v4(configuration.host) {
            let sin = addressStorage.assumingMemoryBound(to: sockaddr_in.self)
            sin.pointee.sin_family = sa_family_t(AF_INET)
            sin.pointee.sin_port = configuration.port.bigEndian
            withUnsafeMutableBytes(of: &sin.pointee.sin_addr) { $0.copyBytes(from: v4) }
        } else if let v6 = IPAddress.v6(configuration.host) {
            let sin6 = addressStorage.assumingMemoryBound(to: sockaddr_in6.self)
            sin6.pointee.sin6_family = sa_family_t(AF_INET6)
            sin6.pointee.sin6_port = configuration.port.bigEndian
            withUnsafeMutableBytes(of: &sin6.pointee.sin6_addr) { $0.copyBytes(from: v6) }
            flags |= UInt32(MHD_USE_IPv6.rawValue)
        } else {
            addressStorage.deallocate()
            throw HTTPServerError(.invalidAddress, "listen host \(configuration.host.debugDescription) is not an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1)")
        }
        if let tls = configuration.tls {
            guard let tlsFeature = MHD_FEATURE(rawValue: 2), MHD_is_feature_supported(tlsFeature) == .YES else { // 2: MHD_FEATURE_TLS
                addressStorage.deallocate()
                throw HTTPServerError(.tlsUnsupported, "this libmicrohttpd has no TLS; run behind a TLS-terminating proxy instead")
            }
            flags |= UInt32(MHD_USE_TLS.rawValue)
            tlsKey = strdup(tls.privateKeyPEM)
            tlsCert = strdup(tls.certificatePEM)
        } else {
            tlsKey = nil
            tlsCert = nil
        }
        let threads = UInt32(max(1, configuration.threadCount))
        var options = pushseal_mhd_options(
            flags: flags, address: UnsafePointer(addressStorage.assumingMemoryBound(to: sockaddr.self)),
            thread_pool_size: threads, connection_limit: UInt32(max(1, configuration.connectionLimit)),
            per_ip_connection_limit: UInt32(clamping: max(0, configuration.perIPConnectionLimit)),
            connection_timeout_seconds: UInt32(max(1, configuration.idleTimeoutSeconds)),
            connection_memory_limit: max(32 << 10, configuration.limits.maxHeaderByteCount * 4 + configuration.limits.maxURLByteCount),
            tls_key_pem: UnsafePointer(tlsKey), tls_cert_pem: UnsafePointer(tlsCert))
        // The context knows the server before the first connection can arrive.
        let context = ContextBox()
        context.server.withLock { $0.value = self }
        let box = Unmanaged.passRetained(context)
        contextBox = box
        guard let started = pushseal_mhd_start(&options, httpAccessHandler, box.toOpaque(), httpCompletedHandler, box.toOpaque()) else {
            box.release()
            contextBox = nil
            // deinit frees the address and the TLS strings.
            throw HTTPServerError(.startFailed, "cannot listen on \(configuration.host) port \(configuration.port): the port is in use, the address is not this machine's, or the TLS key or certificate was refused")
        }
        port = pushseal_mhd_bound_port(started)
        lock.withLock { daemon = started }
    }

    private var contextBox: Unmanaged<ContextBox>?

    deinit {
        stop(drainingUpToSeconds: 0)
        addressStorage.deallocate()
        Self.wipeAndFree(tlsKey)
        free(tlsCert)
    }

    private static func wipeAndFree(_ p: UnsafeMutablePointer<CChar>?) {
        guard let p else { return }
        let n = strlen(p)
        UnsafeMutableRawPointer(p).initializeMemory(as: UInt8.self, repeating: 0, count: n)
        free(p)
    }

    /// `true` once ``stopAccepting()`` or ``stop(drainingUpToSeconds:)`` was called.
    public var isDraining: Bool { lock.withLock { draining } }

    /// Requests being handled or sent now.
    public var inFlightCount: Int { lock.withLock { inFlight } }

    /// Open connections now.
    public var connectionCount: Int {
        lock.withLock { daemon.map { Int(pushseal_mhd_connection_count($0)) } ?? 0 }
    }

    /// Stops accepting connections (the listening socket stops listening: new connections are
    /// refused) and answers new requests on open keep-alive connections with 503 `draining` and
    /// `Connection: close`; requests already being handled finish.
    ///
    /// The socket is shut down here and closed by ``stop(drainingUpToSeconds:)`` after
    /// `MHD_stop_daemon`, as libmicrohttpd's `MHD_quiesce_daemon` asks of threaded daemons: a pool
    /// thread may still be about to `accept()` on it, and closing it at once let that descriptor
    /// number be reused by another open in the process while libmicrohttpd still held it.
    public func stopAccepting() {
        lock.withLock {
            guard !draining, let daemon else { return }
            draining = true
            let fd = MHD_quiesce_daemon(daemon)
            if fd >= 0 {
                // Linux: shutdown(2) of a listening TCP socket ends the listen (queued and new
                // connections are reset), without giving the descriptor number back.
                _ = shutdown(fd, Int32(SHUT_RDWR))
                quiescedSocket = fd
            }
        }
    }

    /// Stops accepting, waits until the requests in flight were answered (at most `seconds`),
    /// then closes every connection and stops the threads. Idempotent.
    /// - Parameter seconds: the longest wait for in-flight requests.
    public func stop(drainingUpToSeconds seconds: Double) {
        stopAccepting()
        let deadline = DispatchTime.now() + .nanoseconds(Int(max(0, min(seconds, 3600)) * 1e9))
        while seconds > 0, lock.withLock({ inFlight > 0 && daemon != nil }) {
            if drained.wait(timeout: deadline) == .timedOut { break }
        }
        guard let d = lock.withLock({ () -> OpaquePointer? in defer { daemon = nil }; return daemon }) else { return }
        MHD_stop_daemon(d)
        let quiesced = lock.withLock { () -> Int32 in defer { quiescedSocket = -1 }; return quiescedSocket }
        if quiesced >= 0 { _ = close(quiesced) }
        contextBox?.release()
        contextBox = nil
    }

    // MARK: - Called from libmicrohttpd's threads

    fileprivate func begin() -> Bool {
        lock.withLock {
            inFlight += 1
            return draining
        }
    }

    fileprivate func end(_ state: RequestState, completed: Bool) {
        lock.withLock {
            inFlight -= 1
            if inFlight == 0 && draining { drained.signal() }
        }
        guard let observer else { return }
        let response = state.response
        observer(Exchange(method: state.method, path: state.path, routeName: response?.routeName, status: response?.status ?? 0,
                          requestID: state.requestID, durationNanoseconds: monotonicNanoseconds() &- state.startNanoseconds,
                          refusal: state.refusal, errorCode: response?.errorCode ?? state.refusal, completed: completed))
    }

    fileprivate func handle(_ request: HTTPRequest) -> HTTPResponse { handler(request) }
}

/// What the C callbacks get as their context: the server (weak: the server owns the daemon),
/// set once it started.
private final class ContextBox: Sendable {
    let server = Locked<WeakServer>(WeakServer())
}

/// A weak reference to the server, read and written under ``Locked``.
private struct WeakServer: @unchecked Sendable {
    // @unchecked Sendable: only ever read or written inside Locked.withLock.
    weak var value: HTTPServer?
}

/// One request's state between libmicrohttpd's calls (held in `*con_cls`).
final class RequestState: @unchecked Sendable {
    // Touched only by the pool thread that owns the connection, one call at a time.
    let startNanoseconds = monotonicNanoseconds()
    let requestID: String
    var method = ""
    var path = ""
    var query: [String: String] = [:]
    var headers: [String: [String]] = [:]
    var body: [UInt8] = []
    var response: HTTPResponse?
    var refusal: String?
    /// A refusal answered once the body has been read and dropped (``Limits/maxDrainedByteCount``).
    var pendingRefusal: HTTPError?

    init() {
        var rng = SystemRandomNumberGenerator()
        requestID = Hex.encode(withUnsafeBytes(of: rng.next() as UInt64) { Array($0) })
    }
}

// MARK: - The C callbacks

private func server(_ cls: UnsafeMutableRawPointer?) -> HTTPServer? {
    guard let cls else { return nil }
    return Unmanaged<ContextBox>.fromOpaque(cls).takeUnretainedValue().server.withLock { $0.value }
}

private let httpAccessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadDataSize, conCls in
    guard let conCls, let uploadDataSize, let server = server(cls) else { return .NO }
    if let existing = conCls.pointee {
        let state = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()
        if uploadDataSize.pointee > 0 {
            if state.response == nil, state.pendingRefusal == nil, let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: uploadDataSize.pointee) {
                    state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: uploadDataSize.pointee))
                }
            }
            uploadDataSize.pointee = 0
            return .YES
        }
        guard state.response == nil else { return .YES }
        if let refusal = state.pendingRefusal {
            var response = HTTPResponse.error(refusal)
            return queue(&response, state: state, connection: connection, server: server, close: true)
        }
        var response: HTTPResponse
        if String(validating: state.body, as: UTF8.self) == nil {
            state.refusal = "invalidUTF8"
            response = .error(HTTPError(400, "invalidUTF8", "the body is not valid UTF-8"))
        } else {
            response = server.handle(HTTPRequest(method: state.method, path: state.path, query: state.query,
                                                 headers: state.headers, body: state.body, requestID: state.requestID))
        }
        return queue(&response, state: state, connection: connection, server: server, close: false)
    }
    // First call: the headers have arrived.
    let state = RequestState()
    conCls.pointee = Unmanaged.passRetained(state).toOpaque()
    let draining = server.begin()
    if let refusal = check(state, server: server, connection: connection, url: url, method: method, draining: draining) {
        state.refusal = refusal.code
        if readsBodyFirst(state, limits: server.configuration.limits) {
            // Answered once the body is in (and dropped): see Limits.maxDrainedByteCount.
            state.pendingRefusal = refusal
            return .YES
        }
        var response = HTTPResponse.error(refusal)
        return queue(&response, state: state, connection: connection, server: server, close: true)
    }
    return .YES
}

private let httpCompletedHandler: MHD_RequestCompletedCallback = { cls, _, conCls, terminationCode in
    guard let conCls, let raw = conCls.pointee else { return }
    conCls.pointee = nil
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
    server(cls)?.end(state, completed: terminationCode.rawValue == 0) // 0: MHD_REQUEST_TERMINATED_COMPLETED_OK
}

private func queue(_ response: inout HTTPResponse, state: RequestState, connection: OpaquePointer?, server: HTTPServer, close: Bool) -> MHD_Result {
    if response.header("Cache-Control") == nil { response.headers.append(("Cache-Control", "no-store")) }
    response.headers.append(("X-Request-Id", state.requestID))
    if close || server.isDraining { response.headers.append(("Connection", "close")) }
    state.response = response
    let count = response.body.count
    guard let mustCopy = MHD_ResponseMemoryMode(rawValue: 2) else { return .NO } // 2: MHD_RESPMEM_MUST_COPY
    let made: OpaquePointer? = response.body.withUnsafeBytes { bytes in
        MHD_create_response_from_buffer(count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), mustCopy)
    }
    guard let made else { return .NO }
    defer { MHD_destroy_response(made) }
    for (name, value) in response.headers {
        // A header value with CR or LF is never sent (libmicrohttpd refuses it too).
        guard !value.utf8.contains(where: { $0 == 13 || $0 == 10 }) else { continue }
        _ = MHD_add_response_header(made, name, value)
    }
    return MHD_queue_response(connection, UInt32(response.status), made)
}

/// The path of a request target in absolute form (`http://host:8080/v1/…`, which a client sends to
/// a proxy and RFC 9112 §3.2.2 has servers accept): what follows the authority (`/` when nothing
/// does). Any other target is returned as it is.
func originPath(_ target: String) -> String {
    let u = target.utf8
    for scheme in ["http://", "https://"] where u.count >= scheme.utf8.count
        && u.prefix(scheme.utf8.count).elementsEqual(scheme.utf8, by: { ($0 | 0x20) == $1 }) {
        let rest = target.utf8.dropFirst(scheme.utf8.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return "/" }
        return String(target[slash...])
    }
    return target
}

/// Whether a refused request's body is read (and dropped) before its answer: one plain
/// Content-Length above 0 and at most ``HTTPServer/Limits/maxDrainedByteCount``, no
/// Transfer-Encoding, no `Expect: 100-continue`.
private func readsBodyFirst(_ state: RequestState, limits: HTTPServer.Limits) -> Bool {
    guard state.headers["transfer-encoding"] == nil, state.headers["expect"] == nil,
          let lengths = state.headers["content-length"], lengths.count == 1, let text = lengths.first,
          !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let length = Int(text) else { return false }
    return length > 0 && length <= limits.maxDrainedByteCount
}

/// The server's checks on a request's line and headers; the error answer, or `nil` to go on.
private func check(_ state: RequestState, server: HTTPServer, connection: OpaquePointer?, url: UnsafePointer<CChar>?,
                   method: UnsafePointer<CChar>?, draining: Bool) -> HTTPError? {
    let limits = server.configuration.limits
    state.method = method.flatMap { String(validatingCString: $0) } ?? ""
    if draining {
        return HTTPError(503, "draining", "this instance is shutting down; retry on another", headers: [("Retry-After", "1")])
    }
    guard let url, let path = String(validatingCString: url) else {
        return HTTPError(400, "invalidURL", "the path is not valid UTF-8")
    }
    state.path = originPath(path)
    // An encoded NUL is refused, never cut at: libmicrohttpd's decoding would end the path's C
    // string there (`/v1/devices/victim%00x` acting on `victim`); CPushSealHTTPD leaves a `%00`
    // undecoded so that it is seen here.
    if path.contains("%00") { return HTTPError(400, "invalidURL", "the path holds an encoded NUL (%00)") }
    // Headers, then query arguments (values may be NULL for a bare `?name`).
    final class Collected {
        var pairs: [(String, String?)] = []
        var invalid = false
    }
    func collect(_ kind: MHD_ValueKind) -> Collected {
        let collected = Collected()
        withExtendedLifetime(collected) {
            _ = MHD_get_connection_values(connection, kind, { cls, _, key, value in
                guard let cls else { return .NO }
                let c = Unmanaged<Collected>.fromOpaque(cls).takeUnretainedValue()
                guard let key, let k = String(validatingCString: key) else { c.invalid = true; return .YES }
                if let value {
                    guard let v = String(validatingCString: value) else { c.invalid = true; return .YES }
                    c.pairs.append((k, v))
                } else {
                    c.pairs.append((k, nil))
                }
                return .YES
            }, Unmanaged.passUnretained(collected).toOpaque())
        }
        return collected
    }
    let arguments = collect(.GET_ARGUMENT_KIND)
    if arguments.pairs.contains(where: { $0.0.contains("%00") || ($0.1?.contains("%00") ?? false) }) {
        return HTTPError(400, "invalidURL", "a query argument holds an encoded NUL (%00)")
    }
    if arguments.invalid { return HTTPError(400, "invalidURL", "a query argument is not valid UTF-8") }
    var urlBytes = path.utf8.count
    for (k, v) in arguments.pairs {
        urlBytes += k.utf8.count + (v?.utf8.count ?? 0) + 2
        guard state.query[k] == nil else {
            return HTTPError(400, "duplicateQueryParameter", "query argument \(k.debugDescription) is given more than once")
        }
        state.query[k] = v ?? ""
    }
    if urlBytes > limits.maxURLByteCount {
        return HTTPError(414, "urlTooLong", "the path and query are longer than \(limits.maxURLByteCount) bytes")
    }
    let headers = collect(.HEADER_KIND)
    if headers.invalid { return HTTPError(400, "invalidHeader", "a header is not valid UTF-8") }
    var headerBytes = 0
    for (k, v) in headers.pairs {
        headerBytes += k.utf8.count + (v?.utf8.count ?? 0)
        state.headers[k.lowercased(), default: []].append(v ?? "")
    }
    if headers.pairs.count > limits.maxHeaderCount || headerBytes > limits.maxHeaderByteCount {
        return HTTPError(431, "headersTooLarge", "more than \(limits.maxHeaderCount) headers or \(limits.maxHeaderByteCount) bytes of headers")
    }
    for name in limits.singleHeaders.sorted() where (state.headers[name]?.count ?? 0) > 1 {
        return HTTPError(400, "duplicateHeader", "header \(name) is given more than once")
    }
    let lengthText = state.headers["content-length"]?.first
    if state.headers["transfer-encoding"] != nil {
        if lengthText != nil {
            return HTTPError(400, "conflictingFraming", "Transfer-Encoding and Content-Length together are refused (request smuggling)")
        }
        return HTTPError(411, "lengthRequired", "send the body with one Content-Length, not Transfer-Encoding")
    }
    var length = 0
    if let lengthText {
        guard !lengthText.isEmpty, lengthText.utf8.count <= 18, lengthText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let n = Int(lengthText) else {
            return HTTPError(400, "invalidContentLength", "Content-Length is not a decimal number of bytes")
        }
        length = n
    }
    if length > limits.maxBodyByteCount {
        return HTTPError(413, "bodyTooLarge", "the body is \(length) bytes; at most \(limits.maxBodyByteCount) are accepted")
    }
    switch state.method {
    case "POST", "PUT", "PATCH":
        if lengthText == nil { return HTTPError(411, "lengthRequired", "send the body with a Content-Length") }
    case "GET", "HEAD", "DELETE", "OPTIONS":
        if length > 0 { return HTTPError(400, "unexpectedBody", "\(state.method) takes no body") }
    default: break
    }
    if length > 0 {
        guard let type = state.headers["content-type"]?.first, isJSONMediaType(type) else {
            return HTTPError(415, "unsupportedMediaType", "send the body as Content-Type: application/json (UTF-8)")
        }
        // Grown as the body arrives: a Content-Length alone (headers of a few hundred bytes,
        // before any handler checks who sends them) reserves at most 64 KiB, not the whole limit.
        state.body.reserveCapacity(min(length, 64 * 1024))
    }
    return nil
}

/// `true` for `application/json` with no parameter or `charset=utf-8` (any case, spaces allowed).
func isJSONMediaType(_ value: String) -> Bool {
    let parts = value.split(separator: ";", omittingEmptySubsequences: false).map { String($0).trimmingSpaces().lowercased() }
    guard parts.first == "application/json" else { return false }
    for parameter in parts.dropFirst() {
        let kv = parameter.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces() }
        guard kv.count == 2, kv[0] == "charset", kv[1] == "utf-8" || kv[1] == "\"utf-8\"" else { return false }
    }
    return true
}
