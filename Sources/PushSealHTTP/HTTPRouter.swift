/// Routes requests by method and path pattern to handlers.
///
/// A pattern is a path of literal segments and parameters in braces: `/v1/notifications/{id}`.
/// A parameter matches one whole non-empty segment (no `/`). A path that matches no pattern is
/// 404 `notFound`; one that matches with another method is 405 `methodNotAllowed` with `Allow`.
/// `HEAD` is answered as `GET` without a body (libmicrohttpd drops the body).
public struct HTTPRouter: Sendable {
    /// A handler: the request (with ``HTTPRequest/pathParameters`` set) in, a response out;
    /// throw ``HTTPError`` for an error answer. Any other error becomes 500 `internal`.
    public typealias Handler = @Sendable (HTTPRequest) throws -> HTTPResponse

    private struct Route: Sendable {
        let method: String
        let segments: [Segment]
        let name: String
        let handler: Handler
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []

    /// An empty router.
    public init() {}

    /// Adds a route.
    /// - Parameters:
    ///   - method: `GET`, `POST`, `DELETE`, …
    ///   - pattern: e.g. `/v1/devices/{recipient}`.
    ///   - handler: what answers.
    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments = pattern.split(separator: "/", omittingEmptySubsequences: true).map { s -> Segment in
            if s.hasPrefix("{") && s.hasSuffix("}") { return .parameter(String(s.dropFirst().dropLast())) }
            return .literal(String(s))
        }
        routes.append(Route(method: method, segments: segments, name: "\(method) \(pattern)", handler: handler))
    }

    /// The names of the routes (`METHOD PATTERN`), in the order added.
    public var routeNames: [String] { routes.map(\.name) }

    /// Answers `request`: the matching route's answer (its name in ``HTTPResponse/routeName``),
    /// 404, 405, or a thrown ``HTTPError``'s answer; 500 for any other error.
    /// - Parameters:
    ///   - request: the request.
    ///   - failure: called with an error that is not an ``HTTPError`` (to log it) before the 500.
    public func respond(to request: HTTPRequest, failure: (any Error, HTTPRequest) -> Void = { _, _ in }) -> HTTPResponse {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        // "/a/b/" and "//a" are not "/a/b" and "/a": an empty segment matches nothing.
        let segments = parts.map(String.init)
        var allowed: [String] = []
        let method = request.method == "HEAD" ? "GET" : request.method
        for route in routes {
            guard let parameters = match(route.segments, segments) else { continue }
            guard route.method == method else {
                if !allowed.contains(route.method) { allowed.append(route.method) }
                continue
            }
            var routed = request
            routed.pathParameters = parameters
            var response: HTTPResponse
            do {
                response = try route.handler(routed)
            } catch let e as HTTPError {
                response = .error(e)
            } catch {
                failure(error, routed)
                response = .error(.internalError)
            }
            response.routeName = route.name
            return response
        }
        if !allowed.isEmpty {
            if allowed.contains("GET") { allowed.append("HEAD") }
            var response = HTTPResponse.error(HTTPError(405, "methodNotAllowed", "\(request.method) is not allowed on \(request.path)",
                                                        headers: [("Allow", allowed.joined(separator: ", "))]))
            response.routeName = "unrouted"
            return response
        }
        var response = HTTPResponse.error(.notFound("no route for \(request.method) \(request.path)"))
        response.routeName = "unrouted"
        return response
    }

    private func match(_ pattern: [Segment], _ path: [String]) -> [String: String]? {
        if pattern.isEmpty { return path == [""] ? [:] : nil }
        guard pattern.count == path.count else { return nil }
        var parameters: [String: String] = [:]
        for (p, s) in zip(pattern, path) {
            switch p {
            case .literal(let l): guard l == s else { return nil }
            case .parameter(let name):
                guard !s.isEmpty else { return nil }
                parameters[name] = s
            }
        }
        return parameters
    }
}
