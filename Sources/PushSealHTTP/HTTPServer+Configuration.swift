import PushSealSystem

extension HTTPServer {
    /// Bounds on what a request may be; a request beyond one is answered with its 4xx and the
    /// handler never sees it.
    public struct Limits: Sendable, Hashable {
        /// Longest body in bytes (1 MiB default); a longer Content-Length is 413 `bodyTooLarge`,
        /// its body never stored (read and dropped first, see ``maxDrainedByteCount``).
        public var maxBodyByteCount: Int = 1 << 20
        /// The body of a request the checks refuse (413, 415, 503 `draining`, …) is read and
        /// dropped before the answer when its Content-Length is at most this (16 MiB default)
        /// and the client did not send `Expect: 100-continue` (which gets the answer before any
        /// body is sent). A client that writes its whole body before it reads (Python's urllib
        /// and http.client) then gets the answer, not a broken pipe: answering early and closing
        /// with its bytes unread resets the connection, and the answer with it. A longer body is
        /// answered at once and the connection closed. 0 never reads one.
        public var maxDrainedByteCount: Int = 16 << 20
        /// Longest path and query in bytes (8 KiB default); longer is 414 `urlTooLong`.
        public var maxURLByteCount: Int = 8 << 10
        /// Most header lines (64 default); more is 431 `headersTooLarge`.
        public var maxHeaderCount: Int = 64
        /// Most bytes of header names and values together (16 KiB default); more is 431.
        /// A request line and headers beyond the connection memory limit (4 times this) are
        /// refused by libmicrohttpd itself, with its own 431 page.
        public var maxHeaderByteCount: Int = 16 << 10
        /// Headers that must appear at most once (lower case); a repeat is 400 `duplicateHeader`.
        public var singleHeaders: Set<String> = ["host", "content-length", "content-type", "transfer-encoding",
                                                 "authorization", "idempotency-key", "if-none-match", "expect"]

        /// The defaults.
        public init() {}
    }

    /// HTTPS through libmicrohttpd's own TLS (GnuTLS): a PEM key and certificate chain.
    public struct TLS: Sendable {
        /// The PEM certificate chain (leaf first).
        public var certificatePEM: String
        /// The PEM private key (kept by libmicrohttpd for the server's life).
        public var privateKeyPEM: String

        /// Creates a TLS setting.
        public init(certificatePEM: String, privateKeyPEM: String) {
            self.certificatePEM = certificatePEM
            self.privateKeyPEM = privateKeyPEM
        }
    }

    /// How the server listens and how many threads answer.
    public struct Configuration: Sendable {
        /// The IP address to bind: `127.0.0.1` (default), `0.0.0.0`, `::1`, `::`.
        public var host: String = "127.0.0.1"
        /// The TCP port; 0 (default) for any free one (read ``HTTPServer/port``).
        public var port: UInt16 = 0
        /// Threads in libmicrohttpd's pool, each with its own epoll set (4 default). A handler
        /// runs on one of them and may block it (database work), so count the handlers that
        /// may wait at once.
        public var threadCount: Int = 4
        /// Open connections at most (1024 default); more are closed at accept.
        public var connectionLimit: Int = 1024
        /// Open connections from one IP address at most; more from it are closed at accept
        /// (0, the default: no limit, as behind a proxy every connection comes from its address).
        /// Bounds what one slow or idle client can hold of ``connectionLimit``.
        public var perIPConnectionLimit: Int = 0
        /// Seconds a keep-alive connection may idle before it is closed (30 default).
        public var idleTimeoutSeconds: Int = 30
        /// The request limits.
        public var limits = Limits()
        /// HTTPS settings; `nil` (default) for plain HTTP (e.g. behind a TLS-terminating proxy).
        public var tls: TLS?

        /// The defaults: 127.0.0.1, any free port, 4 threads, plain HTTP.
        public init() {}

        /// Reads `HOST:PORT` (`127.0.0.1:8080`, `[::1]:8443`, `:8080` for every IPv4 address).
        /// - Throws: ``HTTPServerError`` `.invalidAddress`.
        public mutating func setListenAddress(_ text: String) throws {
            guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
                throw HTTPServerError(.invalidAddress, "listen address \(text.debugDescription) is not HOST:PORT (e.g. 127.0.0.1:8080 or [::1]:8080)")
            }
            var host = String(text[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            if host.isEmpty { host = "0.0.0.0" }
            self.host = host
            self.port = port
        }
    }
}
