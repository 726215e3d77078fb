public import PushSealJSON

/// One HTTP response: a status, headers and a body.
public struct HTTPResponse: Sendable {
    /// The status code, e.g. 200, 404.
    public var status: Int
    /// Headers in the order they are sent (`Content-Length`, `Date` and `X-Request-Id` are
    /// added by the server).
    public var headers: [(name: String, value: String)]
    /// The body's bytes.
    public var body: [UInt8]
    /// The name of the route that answered, for logs and metrics (e.g. `POST /v1/notifications`);
    /// set by ``HTTPRouter``; not sent.
    public var routeName: String?
    /// The error code of a JSON error answer made by ``error(_:)`` (`unauthorized`, …), for
    /// logs; not sent apart from the body.
    public var errorCode: String?

    /// Creates a response.
    /// - Parameters:
    ///   - status: the status code.
    ///   - headers: the headers to send.
    ///   - body: the body's bytes.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response (`Content-Type: application/json`).
    /// - Parameters:
    ///   - status: the status code.
    ///   - value: the body, written compactly.
    ///   - headers: more headers.
    public static func json(_ status: Int, _ value: JSONValue, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        let bytes = (try? JSONWriter.serialize(value)) ?? Array(#"{"error":{"code":"internal","message":"the answer could not be written"}}"#.utf8)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: bytes)
    }

    /// A plain-text response (`Content-Type: text/plain; charset=utf-8`).
    public static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: Array(text.utf8))
    }

    /// The JSON error answer `{"error":{"code","message"}}` of `error`, with its headers.
    public static func error(_ error: HTTPError) -> HTTPResponse {
        var members: [(key: String, value: JSONValue)] = [("code", .string(error.code)), ("message", .string(error.message))]
        members += error.details
        var response = json(error.status, .object(["error": .object(JSONObject(members))]), headers: error.headers)
        response.errorCode = error.code
        return response
    }

    /// The value of header `name` (any case), if set.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }
}

/// A failure a handler answers with: status, a stable code and a message for people.
///
/// The message is written for the client: it never holds a secret, a stack trace or internal
/// details (a handler turns internal failures into `internal` with a generic message and logs
/// the rest itself).
public struct HTTPError: Error, Sendable {
    /// The status code (4xx or 5xx).
    public var status: Int
    /// A stable lowerCamelCase code, e.g. `malformedJSON`, `unauthorized`.
    public var code: String
    /// One sentence for people, lower case, no full stop.
    public var message: String
    /// Headers sent with the answer (e.g. `Retry-After`, `Allow`, `WWW-Authenticate`).
    public var headers: [(name: String, value: String)]
    /// More members of the error object (e.g. `"field"`).
    public var details: [(key: String, value: JSONValue)]

    /// Creates an error answer.
    public init(_ status: Int, _ code: String, _ message: String,
                headers: [(name: String, value: String)] = [], details: [(key: String, value: JSONValue)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.details = details
    }

    /// 400 `malformedJSON`.
    public static func malformedJSON(_ message: String) -> HTTPError { HTTPError(400, "malformedJSON", message) }
    /// 400 `invalidRequest` (a well-formed body that breaks the API's rules).
    public static func invalid(_ message: String, field: String? = nil) -> HTTPError {
        HTTPError(400, "invalidRequest", message, details: field.map { [("field", .string($0))] } ?? [])
    }
    /// 404 `notFound`.
    public static func notFound(_ message: String) -> HTTPError { HTTPError(404, "notFound", message) }
    /// 500 `internal` with a generic message (details go to the log, never to the client).
    public static let internalError = HTTPError(500, "internal", "the server failed to answer; see its log (request id in X-Request-Id)")
    /// 503 `unavailable`: a dependency is down or the server is draining.
    public static func unavailable(_ message: String, retryAfterSeconds: Int = 1) -> HTTPError {
        HTTPError(503, "unavailable", message, headers: [("Retry-After", String(retryAfterSeconds))])
    }
}

extension HTTPRequest {
    /// The body as JSON (RFC 8259, strict: see `JSONReader`), read with `limits`.
    /// - Throws: ``HTTPError`` 400 `malformedJSON` (empty body, syntax, duplicate key, nesting),
    ///   400 `invalidUTF8`.
    public func jsonBody(limits: JSONReader.Limits = JSONReader.Limits(maxByteCount: Int.max, maxDepth: 32)) throws -> JSONValue {
        guard !body.isEmpty else { throw HTTPError.malformedJSON("the request has no body; send a JSON object") }
        do {
            return try JSONReader.parse(body, limits: limits)
        } catch let e as JSONError {
            if e.code == .invalidUTF8 { throw HTTPError(400, "invalidUTF8", "the body is not valid UTF-8") }
            throw HTTPError.malformedJSON("the body is not valid JSON: \(e.reason)")
        }
    }
}
