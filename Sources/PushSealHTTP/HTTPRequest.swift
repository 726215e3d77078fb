/// One HTTP request as the server hands it to a handler: already checked against the server's
/// ``HTTPServer/Limits`` (one Content-Length, no Transfer-Encoding, body within its limit,
/// `application/json` for a body, no repeated header that matters).
public struct HTTPRequest: Sendable {
    /// The method as sent, e.g. `GET`, `POST`.
    public let method: String
    /// The path, percent-decoded by libmicrohttpd, without the query (e.g. `/v1/notifications/42`).
    public let path: String
    /// The query's arguments, decoded; a name given twice is refused before the handler runs.
    public let query: [String: String]
    /// The headers: names in lower case, each with its values in the order sent.
    public let headers: [String: [String]]
    /// The body's bytes (empty without one); at most ``HTTPServer/Limits/maxBodyByteCount``.
    public let body: [UInt8]
    /// The server's id of this request (16 hex digits), also sent back as `X-Request-Id`.
    public let requestID: String
    /// The path parameters of the matched route (`{id}` → `["id": "42"]`); set by ``HTTPRouter``.
    public internal(set) var pathParameters: [String: String] = [:]

    /// Creates a request (the server makes them; tests may too).
    /// - Parameters:
    ///   - method: the method, e.g. `GET`.
    ///   - path: the decoded path without the query.
    ///   - query: the decoded query arguments.
    ///   - headers: lower-case names to their values.
    ///   - body: the body's bytes.
    ///   - requestID: an id for logs and the `X-Request-Id` header.
    public init(method: String, path: String, query: [String: String] = [:], headers: [String: [String]] = [:],
                body: [UInt8] = [], requestID: String = "0000000000000000") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.requestID = requestID
    }

    /// The one value of header `name` (any case), `nil` when it is absent.
    /// - Parameter name: the header's name, e.g. `Idempotency-Key`.
    /// - Returns: the first value (the server refuses a repeated header among
    ///   ``HTTPServer/Limits/singleHeaders``).
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]?.first
    }

    /// The bearer token of the `Authorization` header (`Bearer TOKEN`, scheme in any case), if any.
    public var bearerToken: String? {
        guard let value = header("authorization") else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1]).trimmingSpaces()
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}
