// PushSealMediaFetch: the network half of the extension's media download, on libcurl's C API
// directly, with no Foundation (a URLSession-based fetcher pulled in libFoundation, ICU,
// FoundationNetworking and ~30 libraries, ~17 MB of RSS). It is linked into push-open like any
// module, but libcurl is not: CCurlLazy loads libcurl.so.4 with dlopen on the first fetch, so a
// notification without media never maps libcurl and its ~30 libraries (~5 MiB of RSS, ~30 ms
// at start-up). It runs in the extension's process, so the download's memory counts as it
// would on iOS.
//
// The caller's policy (App Transport Security per hop, redirect limit, size limits, sniffing,
// hashing, writing the file) stays in PushSealExtension and runs inside the events below.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
internal import CCurlLazy
import PushSealSystem

/// The libcurl-based fetcher: libcurl is loaded (once per process) by the first ``start``.
///
/// Each GET runs on a transfer thread of its own, with one timeout for the whole request in
/// seconds (redirects included), no cache, no cookies, no proxy (the `http_proxy` family of
/// environment variables is ignored), TLS peer and host verification on,
/// `Accept-Encoding: identity`, and redirects not followed by libcurl: each hop goes through
/// ``MediaFetchEvents/redirect(to:)`` (at most ``FetchLimits/maxRedirectHops`` hops), and
/// every socket through ``MediaFetchEvents/connect(to:port:)`` with the address actually
/// connected (`CURLOPT_OPENSOCKETFUNCTION`), so a name that resolves to a refused address (DNS
/// rebinding included) is caught where it matters.
///
/// Backpressure: every event runs synchronously on the transfer thread, so libcurl reads
/// nothing more from the socket until ``MediaFetchEvents/receive(_:)`` returned; at most one
/// chunk (16 KiB, libcurl's receive buffer) is in memory.
public struct CurlMediaFetcher: MediaFetching {
    /// Creates a fetcher; nothing is loaded before the first ``start``.
    public init() {}

    /// Loads libcurl if needed and starts the fetch on its transfer thread.
    /// - Throws: ``MediaFetchError`` `.libcurlUnavailable` (libcurl cannot be loaded; the
    ///   reason gives dlerror's text), `.urlRefused` (`url` does not parse as an http(s) URL).
    ///   No event follows a throw.
    public func start(url: String, timeoutSeconds: Double, events: any MediaFetchEvents) throws -> any MediaFetchTask {
        try libcurl.get()
        guard let absolute = resolveURL(url, against: nil), hasHTTPScheme(absolute) else {
            throw MediaFetchError(.urlRefused, "the media URL does not parse as an http(s) URL")
        }
        let fetch = Fetch(url: absolute, timeoutSeconds: timeoutSeconds, events: events)
        // The transfer thread's closure holds its own reference until `run` has completed.
        if !startDetachedThread({ fetch.run() }) { fetch.complete(.failed(code: -1)) }
        return fetch
    }
}

/// libcurl loaded and initialized, once per process (Swift initializes a global `let` once,
/// thread-safely; CCurlLazy's own `pthread_once` makes the C side safe by itself too).
let libcurl: Result<Void, MediaFetchError> = {
    guard pushseal_lazy_curl_load() == 1 else {
        return .failure(MediaFetchError(.libcurlUnavailable, "libcurl (\(PUSHSEAL_LAZY_CURL_LIBRARY)) cannot be loaded: \(String(cString: pushseal_lazy_curl_error()))"))
    }
    return .success(())
}()

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
/// runs on that thread inside `curl_multi_perform` (and by `start` only when that thread could
/// not be started).
final class Fetch: MediaFetchTask, @unchecked Sendable {
    let timeoutSeconds: Double
    private let lock = PosixLock()
    private var cancelled = false
    private var multi: UnsafeMutableRawPointer?

    // Transfer thread only.
    /// The caller's events until ``complete(_:)``, then nil: the caller's events object may
    /// hold this task, and dropping it here breaks that cycle.
    private var events: (any MediaFetchEvents)?
    var url: String
    var head = ResponseHead()
    /// The response was handed to the caller (its body goes to the data callback).
    var responseDelivered = false
    /// An approved redirect to fetch next.
    var pendingRedirect: String?
    /// A callback answered 0: the transfer ends as cancelled.
    var stoppedByCaller = false

    init(url: String, timeoutSeconds: Double, events: any MediaFetchEvents) {
        self.url = url
        self.timeoutSeconds = timeoutSeconds
        self.events = events
    }

    var isCancelled: Bool { lock.withLock { cancelled } }

    /// Sets the flag and wakes the transfer thread out of `curl_multi_poll` at once, never waits
    /// for it; ``MediaFetchEvents/complete(_:)`` follows with `.cancelled` unless it came already.
    func cancel() {
        lock.withLock {
            cancelled = true
            if let multi { _ = pushseal_lazy_curl_multi_wakeup(multi) }
        }
    }

    /// Nothing to release: the transfer thread holds the fetch until it has completed, and
    /// ARC frees it (and its libcurl handles are freed by then) when the caller drops it.
    func finish() {}

    /// The transfer thread's body: runs every hop, then completes exactly once.
    func run() { complete(transfer()) }

    /// Reports the end and drops the events.
    func complete(_ completion: MediaFetchCompletion) {
        events?.complete(completion)
        events = nil
    }

    /// Runs the hops; returns how the fetch ended.
    private func transfer() -> MediaFetchCompletion {
        guard let easy = pushseal_lazy_curl_easy_init() else { return .failed(code: -1) }
        guard let newMulti = pushseal_lazy_curl_multi_init() else {
            pushseal_lazy_curl_easy_cleanup(easy)
            return .failed(code: -1)
        }
        let headers = pushseal_lazy_curl_slist_append(nil, "Accept-Encoding: identity")
        lock.withLock { multi = newMulti }
        defer {
            lock.withLock { multi = nil }
            pushseal_lazy_curl_multi_cleanup(newMulti)
            pushseal_lazy_curl_easy_cleanup(easy)
            pushseal_lazy_curl_slist_free_all(headers)
        }
        guard configure(easy, headers: headers) else { return .failed(code: -1) }

        let deadline = monotonicSeconds() + timeoutSeconds
        var hops = 0
        while true {
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else { return .timedOut }
            if isCancelled { return .cancelled }
            head = ResponseHead()
            responseDelivered = false
            pendingRedirect = nil
            let milliseconds = max(1, Int(remaining * 1000))
            guard pushseal_lazy_curl_setopt_pointer(easy, CURLOPT_URL, url) == CURLE_OK,
                  pushseal_lazy_curl_setopt_long(easy, CURLOPT_TIMEOUT_MS, milliseconds) == CURLE_OK,
                  pushseal_lazy_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, milliseconds) == CURLE_OK else {
                return .failed(code: -1)
            }
            let result = perform(easy, on: newMulti)
            if let next = pendingRedirect {
                hops += 1
                guard hops <= FetchLimits.maxRedirectHops else { return .failed(code: -1007) }
                url = next
                continue
            }
            if isCancelled || stoppedByCaller { return .cancelled }
            var status = 0
            if pushseal_lazy_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK { status = head.status }
            switch result {
            case CURLE_OK: return .finished(status: status)
            case CURLE_OPERATION_TIMEDOUT: return .timedOut
            default: return .failed(code: urlErrorCode(result))
            }
        }
    }

    /// Options shared by every hop. False if libcurl refused one.
    private func configure(_ easy: UnsafeMutableRawPointer, headers: UnsafeMutablePointer<curl_slist>?) -> Bool {
        // Safe: the callbacks get `self` back unretained; they run only inside `perform` on the
        // transfer thread, whose closure holds `self` until `run` returns, and `transfer` cleans
        // the easy handle up (no callback after that) before it returns.
        let me = Unmanaged.passUnretained(self).toOpaque()
        var ok = true
        func set(_ code: CURLcode) { ok = ok && code == CURLE_OK }
        set(pushseal_lazy_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        set(pushseal_lazy_curl_setopt_pointer(easy, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(pushseal_lazy_curl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0))
        // An empty proxy disables the http_proxy/https_proxy/all_proxy environment variables.
        set(pushseal_lazy_curl_setopt_pointer(easy, CURLOPT_PROXY, ""))
        set(pushseal_lazy_curl_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1))
        set(pushseal_lazy_curl_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2))
        set(pushseal_lazy_curl_setopt_pointer(easy, CURLOPT_HTTPHEADER, UnsafeRawPointer(headers)))
        set(pushseal_lazy_curl_setopt_pointer(easy, CURLOPT_USERAGENT, "PushSealMediaFetch/1"))
        set(pushseal_lazy_curl_setopt_write_function(easy, CURLOPT_HEADERFUNCTION, { buffer, size, count, me in
            guard let me else { return 0 }
            return Unmanaged<Fetch>.fromOpaque(me).takeUnretainedValue().header(buffer, size * count)
        }))
        set(pushseal_lazy_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, me))
        set(pushseal_lazy_curl_setopt_write_function(easy, CURLOPT_WRITEFUNCTION, { buffer, size, count, me in
            guard let me else { return 0 }
            return Unmanaged<Fetch>.fromOpaque(me).takeUnretainedValue().body(buffer, size * count)
        }))
        set(pushseal_lazy_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, me))
        set(pushseal_lazy_curl_setopt_opensocket_function(easy, { me, _, address in
            guard let me, let address else { return CURL_SOCKET_BAD }
            return Unmanaged<Fetch>.fromOpaque(me).takeUnretainedValue().openSocket(address)
        }))
        set(pushseal_lazy_curl_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, me))
        return ok
    }

    /// Runs one hop on `multi` until it ends or is cancelled; returns libcurl's result.
    private func perform(_ easy: UnsafeMutableRawPointer, on multi: UnsafeMutableRawPointer) -> CURLcode {
        guard pushseal_lazy_curl_multi_add_handle(multi, easy) == CURLM_OK else { return CURLE_FAILED_INIT }
        defer { pushseal_lazy_curl_multi_remove_handle(multi, easy) }
        var running: Int32 = 1
        while !isCancelled {
            guard pushseal_lazy_curl_multi_perform(multi, &running) == CURLM_OK else { return CURLE_FAILED_INIT }
            if running == 0 { break }
            guard pushseal_lazy_curl_multi_poll(multi, nil, 0, FetchLimits.pollMilliseconds, nil) == CURLM_OK else { return CURLE_FAILED_INIT }
        }
        if isCancelled { return CURLE_ABORTED_BY_CALLBACK }
        var left: Int32 = 0
        while let message = pushseal_lazy_curl_multi_info_read(multi, &left) {
            // Safe: libcurl's message stays valid until the next call on `multi`; it is read here only.
            if message.pointee.msg == CURLMSG_DONE { return pushseal_lazy_curl_msg_result(message) }
        }
        return CURLE_FAILED_INIT
    }

    /// libcurl's header callback: one header line (with its CRLF). Returns `count` to go on,
    /// 0 to abort the hop (redirect approved, response refused, cancelled).
    func header(_ buffer: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let buffer, !isCancelled else { return 0 }
        // Safe: libcurl hands over `count` readable bytes at `buffer`, valid until this callback
        // returns; `line` and its slices are read here only (values leave as `String`s).
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
            if events?.redirect(to: target) == true {
                pendingRedirect = target
                return 0
            }
        }
        let length = head.contentLength < 0 ? nil : Int(exactly: head.contentLength)
        guard events?.response(status: head.status, contentType: head.contentType, contentLength: length) == true else {
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
        // Safe: `pushseal_lazy_curl_sockaddr_ip` writes at most 16 bytes (an IPv6 address) into
        // `bytes`, which holds 16; `address` is libcurl's, valid for this callback.
        let version = bytes.withUnsafeMutableBufferPointer { b -> Int32 in
            guard let base = b.baseAddress else { return 0 }
            return pushseal_lazy_curl_sockaddr_ip(address, base, &port)
        }
        guard version == 4 || version == 6 else { return CURL_SOCKET_BAD }
        guard events?.connect(to: Array(bytes.prefix(version == 4 ? 4 : 16)), port: Int(port)) == true else { return CURL_SOCKET_BAD }
        return socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
    }

    /// libcurl's write callback: a body chunk. Returns `count` to go on, 0 to abort.
    func body(_ buffer: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard count > 0 else { return 0 }
        guard responseDelivered, !isCancelled else { return 0 }
        guard let buffer else { return 0 }
        // Safe: libcurl hands over `count` readable bytes at `buffer`, valid until this callback
        // returns; the span given to `receive` cannot outlive that call (it is borrowed, not
        // escapable). `char` and UInt8 have the same size and layout.
        let accepted = buffer.withMemoryRebound(to: UInt8.self, capacity: count) { bytes in
            events?.receive(UnsafeBufferPointer(start: bytes, count: count).span) == true
        }
        guard accepted else {
            stoppedByCaller = true
            return 0
        }
        return count
    }
}


/// `reference` (absolute, or relative to the absolute `base`) as an absolute URL, parsed and
/// normalised by libcurl's URL API; nil if it does not parse.
func resolveURL(_ reference: String, against base: String?) -> String? {
    guard case .success = libcurl, let handle = pushseal_lazy_curl_url() else { return nil }
    defer { pushseal_lazy_curl_url_cleanup(handle) }
    if let base, pushseal_lazy_curl_url_set(handle, CURLUPART_URL, base, 0) != CURLUE_OK { return nil }
    guard pushseal_lazy_curl_url_set(handle, CURLUPART_URL, reference, 0) == CURLUE_OK else { return nil }
    var out: UnsafeMutablePointer<CChar>?
    guard pushseal_lazy_curl_url_get(handle, CURLUPART_URL, &out, 0) == CURLUE_OK, let out else { return nil }
    defer { pushseal_lazy_curl_free(out) }
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

/// libcurl's result as an NSURLError-numbered code (``MediaFetchCompletion/failed(code:)``).
func urlErrorCode(_ code: CURLcode) -> Int {
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
