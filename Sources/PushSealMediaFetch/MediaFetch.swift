// PushSealMediaFetch: the network half of the extension's media download, in its own dynamic
// library (libPushSealMediaFetch.so) that PushSealExtension loads with dlopen only when a
// notification has media (`DynamicMediaFetcher`), in the same process, so the download's memory
// counts as it would on iOS.
//
// Built on libcurl's C API directly, with no Foundation: dlopen of a URLSession-based fetcher
// pulled in libFoundation, ICU, FoundationNetworking and ~30 libraries (~17 MB of RSS); this one
// adds libcurl and its TLS/HTTP/2 libraries only.
//
// The boundary is a C ABI (no Swift types cross it): the library may carry its own copies of
// whatever it links, and a Swift protocol or type would not be the same type on both sides.
// The caller's policy (App Transport Security per hop, redirect limit, size limits, sniffing,
// hashing, writing the file) stays in PushSealExtension and runs inside the callbacks below.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
internal import CCurl
import PushSealSystem

/// The ABI version of the entry points below (2: `start` takes the connect callback); the
/// loader refuses any other.
@_cdecl("pushseal_media_fetch_abi_version")
public func pushsealMediaFetchABIVersion() -> Int32 { 2 }

/// A redirect is about to be followed to the NUL-terminated absolute URL: return 1 to follow,
/// 0 to stop (the redirect response is then delivered as the final response).
public typealias PushSealFetchRedirect = @convention(c) (UnsafeMutableRawPointer, UnsafePointer<CChar>) -> Int32
/// The response head: HTTP status, `Content-Type` (NUL-terminated, or nil), `Content-Length`
/// in bytes (-1 if absent or not a number). Return 1 to receive the body, 0 to cancel.
public typealias PushSealFetchResponse = @convention(c) (UnsafeMutableRawPointer, Int32, UnsafePointer<CChar>?, Int64) -> Int32
/// A body chunk (pointer, byte count, at most 16 KiB). Return 1 to go on, 0 to stop (the
/// transfer is then cancelled).
public typealias PushSealFetchData = @convention(c) (UnsafeMutableRawPointer, UnsafeRawPointer?, Int) -> Int32
/// Completion, exactly once: kind 0 finished, 1 timed out, 2 cancelled, 3 other failure (with
/// an error code in NSURLError numbering: -1003 host not found, -1004 cannot connect, -1005
/// connection lost, -1007 too many redirects, -1200 TLS failed, -1202 untrusted certificate,
/// -1 other), then the final HTTP status (0 if none).
public typealias PushSealFetchComplete = @convention(c) (UnsafeMutableRawPointer, Int32, Int64, Int32) -> Void
/// A connection is about to be opened to an IP address (after name resolution, for every hop
/// and every address tried): IP version (4 or 6), the address bytes (4 or 16, network order),
/// their count, the TCP port. Return 1 to connect, 0 to refuse (no socket is opened; libcurl
/// tries the next address, and the hop fails with "cannot connect" when none is left).
public typealias PushSealFetchConnect = @convention(c) (UnsafeMutableRawPointer, Int32, UnsafePointer<UInt8>, Int, Int32) -> Int32
/// The library will make no more calls with this context: the caller may free it.
public typealias PushSealFetchRelease = @convention(c) (UnsafeMutableRawPointer) -> Void

/// Starts a GET of the NUL-terminated http(s) `url` on a transfer thread of its own, with one
/// timeout for the whole request in seconds (redirects included), no cache, no cookies, no
/// proxy (the `http_proxy` family of environment variables is ignored), TLS peer and host
/// verification on, `Accept-Encoding: identity`, and redirects not followed by libcurl: each
/// hop goes through the redirect callback (at most ``FetchLimits/maxRedirectHops`` hops), and
/// every socket through the connect callback with the address actually connected
/// (`CURLOPT_OPENSOCKETFUNCTION`), so a name that resolves to a refused address (DNS rebinding
/// included) is caught where it matters.
///
/// Backpressure: every callback runs synchronously on the transfer thread, so libcurl reads
/// nothing more from the socket until the data callback returned; at most one chunk
/// (16 KiB, libcurl's receive buffer) is in memory. `maxPendingCallbacks` is accepted for ABI
/// compatibility and has nothing left to bound (no callback is ever queued).
/// - Returns: a handle for `pushseal_media_fetch_cancel` and `pushseal_media_fetch_finish`,
///   or nil when `url` does not parse as an http(s) URL (no callback is then made, release
///   included).
@_cdecl("pushseal_media_fetch_start")
public func pushsealMediaFetchStart(_ url: UnsafePointer<CChar>, _ timeoutSeconds: Double, _ maxPendingCallbacks: Int,
                                    _ context: UnsafeMutableRawPointer,
                                    _ redirect: PushSealFetchRedirect, _ response: PushSealFetchResponse,
                                    _ data: PushSealFetchData, _ complete: PushSealFetchComplete,
                                    _ connect: PushSealFetchConnect,
                                    _ release: PushSealFetchRelease) -> UnsafeMutableRawPointer? {
    let text = String(cString: url)
    guard let absolute = resolveURL(text, against: nil), hasHTTPScheme(absolute) else { return nil }
    let callbacks = Callbacks(context: context, redirect: redirect, response: response, data: data, complete: complete,
                              connect: connect, release: release)
    let fetch = Fetch(url: absolute, timeoutSeconds: timeoutSeconds, callbacks: callbacks)
    // The transfer thread's closure holds its own reference until `run` has called `release`.
    if !startDetachedThread({ fetch.run() }) {
        callbacks.complete(context, 3, -1, 0)
        callbacks.release(context)
    }
    return Unmanaged.passRetained(fetch).toOpaque()
}

/// Cancels the transfer (later calls do nothing); wakes the transfer thread at once, never
/// waits for it. The completion callback follows with kind 2 unless it came already.
@_cdecl("pushseal_media_fetch_cancel")
public func pushsealMediaFetchCancel(_ handle: UnsafeMutableRawPointer) {
    Unmanaged<Fetch>.fromOpaque(handle).takeUnretainedValue().cancel()
}

/// Ends the caller's use of the handle (no `cancel` may follow). The transfer thread keeps
/// running until the completion callback, then calls `release` and frees its libcurl handles.
@_cdecl("pushseal_media_fetch_finish")
public func pushsealMediaFetchFinish(_ handle: UnsafeMutableRawPointer) {
    Unmanaged<Fetch>.fromOpaque(handle).release()
}

/// Limits of the transfer loop.
enum FetchLimits {
    /// Most redirect hops followed even if the caller approves each (20); the caller's own limit
    /// (MediaDownloader: 3) is normally reached first.
    static let maxRedirectHops = 20
    /// Longest the transfer thread sleeps in `curl_multi_poll` (1000 ms); `cancel` wakes it.
    static let pollMilliseconds: Int32 = 1000
    /// The statuses whose `Location` is a redirect (RFC 9110 §15.4).
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]
}

/// `curl_global_init`, once per process (Swift initializes a global `let` once, thread-safely).
let curlGlobalInit: CURLcode = pushseal_curl_global_init()

/// The caller's context and callbacks. Sendable: a raw pointer the caller keeps valid until
/// `release`, plus C function pointers.
struct Callbacks: @unchecked Sendable {
    let context: UnsafeMutableRawPointer
    let redirect: PushSealFetchRedirect
    let response: PushSealFetchResponse
    let data: PushSealFetchData
    let complete: PushSealFetchComplete
    let connect: PushSealFetchConnect
    let release: PushSealFetchRelease
}

/// The head of the response being received (reset at each status line).
struct ResponseHead {
    var status = 0
    var contentType: String?
    var contentLength: Int64 = -1
    var location: String?
    /// The blank line ending the head was seen (later header lines are trailers).
    var complete = false
}

/// One GET and its libcurl handles.
///
/// `@unchecked Sendable`: the immutable fields are set at creation; `cancelled` and `multi` are
/// only touched under `lock` (so `cancel` never wakes a freed multi handle); every other field
/// is touched only by the transfer thread, including from libcurl's callbacks, which libcurl
/// runs on that thread inside `curl_multi_perform`.
final class Fetch: @unchecked Sendable {
    let timeoutSeconds: Double
    let callbacks: Callbacks
    private let lock = PosixLock()
    private var cancelled = false
    private var multi: UnsafeMutableRawPointer?

    // Transfer thread only.
    var url: String
    var head = ResponseHead()
    /// The response was handed to the caller (its body goes to the data callback).
    var responseDelivered = false
    /// An approved redirect to fetch next.
    var pendingRedirect: String?
    /// A callback answered 0: the transfer ends as cancelled.
    var stoppedByCaller = false

    init(url: String, timeoutSeconds: Double, callbacks: Callbacks) {
        self.url = url
        self.timeoutSeconds = timeoutSeconds
        self.callbacks = callbacks
    }

    var isCancelled: Bool { lock.withLock { cancelled } }

    /// Sets the flag and wakes the transfer thread out of `curl_multi_poll`.
    func cancel() {
        lock.withLock {
            cancelled = true
            if let multi { _ = curl_multi_wakeup(multi) }
        }
    }

    /// The transfer thread's body: runs every hop, then completes and releases exactly once.
    func run() {
        let (kind, code, status) = transfer()
        callbacks.complete(callbacks.context, kind, code, Int32(clamping: status))
        callbacks.release(callbacks.context)
    }

    /// Runs the hops; returns the completion (kind, error code, HTTP status).
    private func transfer() -> (Int32, Int64, Int) {
        guard curlGlobalInit == CURLE_OK, let easy = curl_easy_init() else { return (3, -1, 0) }
        guard let newMulti = curl_multi_init() else {
            curl_easy_cleanup(easy)
            return (3, -1, 0)
        }
        let headers = curl_slist_append(nil, "Accept-Encoding: identity")
        lock.withLock { multi = newMulti }
        defer {
            lock.withLock { multi = nil }
            curl_multi_cleanup(newMulti)
            curl_easy_cleanup(easy)
            curl_slist_free_all(headers)
        }
        guard configure(easy, headers: headers) else { return (3, -1, 0) }

        let deadline = monotonicSeconds() + timeoutSeconds
        var hops = 0
        while true {
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else { return (1, -1001, head.status) }
            if isCancelled { return (2, -999, head.status) }
            head = ResponseHead()
            responseDelivered = false
            pendingRedirect = nil
            let milliseconds = max(1, Int(remaining * 1000))
            guard pushseal_curl_setopt_pointer(easy, CURLOPT_URL, url) == CURLE_OK,
                  pushseal_curl_setopt_long(easy, CURLOPT_TIMEOUT_MS, milliseconds) == CURLE_OK,
                  pushseal_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, milliseconds) == CURLE_OK else {
                return (3, -1, 0)
            }
            let result = perform(easy, on: newMulti)
            if let next = pendingRedirect {
                hops += 1
                guard hops <= FetchLimits.maxRedirectHops else { return (3, -1007, head.status) }
                url = next
                continue
            }
            if isCancelled || stoppedByCaller { return (2, -999, head.status) }
            var status = 0
            if pushseal_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK { status = head.status }
            switch result {
            case CURLE_OK: return (0, 0, status)
            case CURLE_OPERATION_TIMEDOUT: return (1, -1001, status)
            default: return (3, urlErrorCode(result), status)
            }
        }
    }

    /// Options shared by every hop. False if libcurl refused one.
    private func configure(_ easy: UnsafeMutableRawPointer, headers: UnsafeMutablePointer<curl_slist>?) -> Bool {
        let me = Unmanaged.passUnretained(self).toOpaque()
        var ok = true
        func set(_ code: CURLcode) { ok = ok && code == CURLE_OK }
        set(pushseal_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        set(pushseal_curl_setopt_pointer(easy, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(pushseal_curl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0))
        // An empty proxy disables the http_proxy/https_proxy/all_proxy environment variables.
        set(pushseal_curl_setopt_pointer(easy, CURLOPT_PROXY, ""))
        set(pushseal_curl_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1))
        set(pushseal_curl_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2))
        set(pushseal_curl_setopt_pointer(easy, CURLOPT_HTTPHEADER, UnsafeRawPointer(headers)))
        set(pushseal_curl_setopt_pointer(easy, CURLOPT_USERAGENT, "PushSealMediaFetch/1"))
        set(pushseal_curl_setopt_write_function(easy, CURLOPT_HEADERFUNCTION, { buffer, size, count, me in
            guard let me else { return 0 }
            return Unmanaged<Fetch>.fromOpaque(me).takeUnretainedValue().header(buffer, size * count)
        }))
        set(pushseal_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, me))
        set(pushseal_curl_setopt_write_function(easy, CURLOPT_WRITEFUNCTION, { buffer, size, count, me in
            guard let me else { return 0 }
            return Unmanaged<Fetch>.fromOpaque(me).takeUnretainedValue().body(buffer, size * count)
        }))
        set(pushseal_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, me))
        set(pushseal_curl_setopt_opensocket_function(easy, { me, _, address in
            guard let me, let address else { return CURL_SOCKET_BAD }
            return Unmanaged<Fetch>.fromOpaque(me).takeUnretainedValue().openSocket(address)
        }))
        set(pushseal_curl_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, me))
        return ok
    }

    /// Runs one hop on `multi` until it ends or is cancelled; returns libcurl's result.
    private func perform(_ easy: UnsafeMutableRawPointer, on multi: UnsafeMutableRawPointer) -> CURLcode {
        guard curl_multi_add_handle(multi, easy) == CURLM_OK else { return CURLE_FAILED_INIT }
        defer { curl_multi_remove_handle(multi, easy) }
        var running: Int32 = 1
        while !isCancelled {
            guard curl_multi_perform(multi, &running) == CURLM_OK else { return CURLE_FAILED_INIT }
            if running == 0 { break }
            guard curl_multi_poll(multi, nil, 0, FetchLimits.pollMilliseconds, nil) == CURLM_OK else { return CURLE_FAILED_INIT }
        }
        if isCancelled { return CURLE_ABORTED_BY_CALLBACK }
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            if message.pointee.msg == CURLMSG_DONE { return pushseal_curl_msg_result(message) }
        }
        return CURLE_FAILED_INIT
    }

    /// libcurl's header callback: one header line (with its CRLF). Returns `count` to go on,
    /// 0 to abort the hop (redirect approved, response refused, cancelled).
    func header(_ buffer: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let buffer, !isCancelled else { return 0 }
        let line = UnsafeRawBufferPointer(start: buffer, count: count)
        if line.starts(with: "HTTP/".utf8) {
            head = ResponseHead()
            head.status = parseStatus(line)
            return count
        }
        if head.complete { return count } // trailers
        guard trimmed(line).isEmpty else {
            if let (name, value) = splitHeader(line) {
                switch name {
                case "content-type": head.contentType = value
                case "content-length": head.contentLength = Int64(value).flatMap { $0 >= 0 ? $0 : nil } ?? -1
                case "location": head.location = value
                default: break
                }
            }
            return count
        }
        // The blank line: the head is complete.
        if (100..<200).contains(head.status) {
            head = ResponseHead() // an interim response; the real head follows
            return count
        }
        head.complete = true
        if FetchLimits.redirectStatuses.contains(head.status), let location = head.location, !location.isEmpty,
           let target = resolveURL(location, against: url) {
            let follow = target.withCString { callbacks.redirect(callbacks.context, $0) }
            if follow == 1 {
                pendingRedirect = target
                return 0
            }
        }
        let allow: Int32
        if let type = head.contentType {
            allow = type.withCString { callbacks.response(callbacks.context, Int32(clamping: head.status), $0, head.contentLength) }
        } else {
            allow = callbacks.response(callbacks.context, Int32(clamping: head.status), nil, head.contentLength)
        }
        guard allow == 1 else {
            stoppedByCaller = true
            return 0
        }
        responseDelivered = true
        return count
    }

    /// libcurl's open-socket callback: asks the caller about the address, then opens the socket
    /// libcurl asked for; `CURL_SOCKET_BAD` when refused (or not an IP address).
    func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        guard !isCancelled else { return CURL_SOCKET_BAD }
        var bytes = [UInt8](repeating: 0, count: 16)
        var port: Int32 = 0
        let version = bytes.withUnsafeMutableBufferPointer { b -> Int32 in
            guard let base = b.baseAddress else { return 0 }
            return pushseal_curl_sockaddr_ip(address, base, &port)
        }
        guard version == 4 || version == 6 else { return CURL_SOCKET_BAD }
        let count = version == 4 ? 4 : 16
        let allowed = bytes.withUnsafeBufferPointer { b -> Int32 in
            guard let base = b.baseAddress else { return 0 }
            return callbacks.connect(callbacks.context, version, base, count, port)
        }
        guard allowed == 1 else { return CURL_SOCKET_BAD }
        return socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
    }

    /// libcurl's write callback: a body chunk. Returns `count` to go on, 0 to abort.
    func body(_ buffer: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard count > 0 else { return 0 }
        guard responseDelivered, !isCancelled else { return 0 }
        guard callbacks.data(callbacks.context, UnsafeRawPointer(buffer), count) == 1 else {
            stoppedByCaller = true
            return 0
        }
        return count
    }
}


/// `reference` (absolute, or relative to the absolute `base`) as an absolute URL, parsed and
/// normalised by libcurl's URL API; nil if it does not parse.
func resolveURL(_ reference: String, against base: String?) -> String? {
    guard curlGlobalInit == CURLE_OK, let handle = curl_url() else { return nil }
    defer { curl_url_cleanup(handle) }
    if let base, curl_url_set(handle, CURLUPART_URL, base, 0) != CURLUE_OK { return nil }
    guard curl_url_set(handle, CURLUPART_URL, reference, 0) == CURLUE_OK else { return nil }
    var out: UnsafeMutablePointer<CChar>?
    guard curl_url_get(handle, CURLUPART_URL, &out, 0) == CURLUE_OK, let out else { return nil }
    defer { curl_free(out) }
    return String(cString: out)
}

/// True for an `http:` or `https:` URL (any case).
func hasHTTPScheme(_ url: String) -> Bool {
    let lower = url.prefix(8).lowercased()
    return lower.hasPrefix("http://") || lower.hasPrefix("https://")
}

/// The status code of a status line (`HTTP/1.1 200 OK`, `HTTP/2 404`), 0 if none.
func parseStatus(_ line: UnsafeRawBufferPointer) -> Int {
    guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { return 0 }
    var status = 0
    var digits = 0
    for byte in line[(space + 1)...] {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { break }
        status = status * 10 + Int(byte - UInt8(ascii: "0"))
        digits += 1
        if digits == 3 { break }
    }
    return digits == 3 ? status : 0
}

/// A header line without surrounding spaces, tabs, CR and LF.
func trimmed(_ bytes: UnsafeRawBufferPointer) -> Slice<UnsafeRawBufferPointer> {
    func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
    var start = bytes.startIndex
    var end = bytes.endIndex
    while start < end, isSpace(bytes[start]) { start += 1 }
    while end > start, isSpace(bytes[end - 1]) { end -= 1 }
    return bytes[start..<end]
}

/// `Name: value` as (lower-cased name, trimmed value); nil without a colon.
func splitHeader(_ line: UnsafeRawBufferPointer) -> (String, String)? {
    guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
    let name = trimmed(UnsafeRawBufferPointer(rebasing: line[..<colon]))
    let value = trimmed(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...]))
    return (String(decoding: name, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self))
}

/// libcurl's result as an NSURLError-numbered code (the ABI's completion code).
func urlErrorCode(_ code: CURLcode) -> Int64 {
    switch code {
    case CURLE_UNSUPPORTED_PROTOCOL: -1002
    case CURLE_URL_MALFORMAT: -1000
    case CURLE_COULDNT_RESOLVE_HOST: -1003
    case CURLE_COULDNT_CONNECT: -1004
    case CURLE_OPERATION_TIMEDOUT: -1001
    case CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR: -1005
    case CURLE_TOO_MANY_REDIRECTS: -1007
    case CURLE_SSL_CONNECT_ERROR: -1200
    case CURLE_PEER_FAILED_VERIFICATION: -1202
    default: -1
    }
}
