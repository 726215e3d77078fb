internal import CCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One notification in flight: its libcurl easy handle (kept and reused for the next
/// notification), the request and what came back. Used on the transfer thread only.
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
    // The answer.
    var body: [UInt8] = []
    var apnsUniqueID: String?
    var retryAfter: Double?

    /// A new easy handle with the options that never change; `nil` when `curl_easy_init` fails
    /// (out of memory).
    init?(configuration: APNsClient.Configuration) {
        guard let e = curl_easy_init() else { return nil }
        easy = e
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

    /// Sets this attempt's URL, headers and body. `false` if libcurl refused an option.
    func prepare(url: String, authorization: String) -> Bool {
        body.removeAll(keepingCapacity: true)
        apnsUniqueID = nil
        retryAfter = nil
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
        ok = ok && n.payload.withUnsafeBytes { pushseal_curl_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) } == CURLE_OK
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
