/// How a fetch ended, as the network side reports it.
public enum MediaFetchCompletion: Sendable, Hashable {
    /// The response completed; the final HTTP status (0 if unknown).
    case finished(status: Int)
    /// The request's timeout passed.
    case timedOut
    /// The request was cancelled (by ``MediaFetchTask/cancel()`` or a refused callback).
    case cancelled
    /// Any other failure, with the URL error code in NSURLError numbering: -1003 host not
    /// found, -1004 cannot connect, -1005 connection lost, -1007 too many redirects, -1200 TLS
    /// failed, -1202 untrusted certificate, -1 other.
    case failed(code: Int)
}

/// What the network side tells the downloader, from its own thread, in order: zero or more
/// ``redirect(to:)``, one ``response(status:contentType:contentLength:)``, body chunks, and
/// exactly one ``complete(_:)``; ``connect(to:port:)`` before every socket it opens.
public protocol MediaFetchEvents: AnyObject, Sendable {
    /// A connection is about to be opened to `address` (4 or 16 bytes, network order, after
    /// name resolution) on TCP `port`: true connects, false refuses (no socket is opened).
    func connect(to address: [UInt8], port: Int) -> Bool
    /// A redirect to `url` (absolute): true follows it.
    func redirect(to url: String) -> Bool
    /// The response head: HTTP status, `Content-Type`, `Content-Length` in bytes. True receives the body.
    func response(status: Int, contentType: String?, contentLength: Int?) -> Bool
    /// A body chunk, borrowed from the network side's receive buffer for this call only (no
    /// copy is made to hand it over; copy what must be kept). False stops the transfer (the
    /// fetcher cancels it).
    func receive(_ bytes: Span<UInt8>) -> Bool
    /// The end, exactly once.
    func complete(_ completion: MediaFetchCompletion)
}

/// A running fetch.
public protocol MediaFetchTask: Sendable {
    /// Cancels the transfer; never waits for the network side. ``MediaFetchEvents/complete(_:)``
    /// follows with `.cancelled` (unless it came already).
    func cancel()
    /// Ends the caller's use (no ``cancel()`` may follow): resources are released once the
    /// network side is done.
    func finish()
}

/// The network side of a media download: one GET, streamed to ``MediaFetchEvents``
/// (PushSealExtension's `MediaDownloader` applies its policy inside those callbacks).
public protocol MediaFetching: Sendable {
    /// Starts a GET of `url` (http or https; the caller checked its policy) with one timeout
    /// for the whole request in seconds, no cache, no cookies, `Accept-Encoding: identity`.
    /// Every connection, on every hop, is first offered to ``MediaFetchEvents/connect(to:port:)``.
    /// - Throws: ``MediaFetchError`` `.libcurlUnavailable` when the network library cannot be
    ///   loaded; `.urlRefused` when `url` does not parse as an http(s) URL. No event follows a throw.
    func start(url: String, timeoutSeconds: Double, events: any MediaFetchEvents) throws -> any MediaFetchTask
}
