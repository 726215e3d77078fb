/// Where notifications go: Apple's production or development (sandbox) APNs, or any
/// `host:port` with its own CA file (the mock APNs in tests).
public struct APNsEndpoint: Sendable, Hashable {
    /// Apple's two environments (a device token belongs to one of them).
    public enum Environment: String, Sendable, Hashable, CaseIterable {
        /// `api.push.apple.com`: App Store, TestFlight and ad-hoc builds.
        case production
        /// `api.sandbox.push.apple.com`: builds signed for development.
        case development
    }

    /// The host name (or `127.0.0.1` for a local mock).
    public let host: String
    /// The TCP port: 443, or 2197 where 443 is blocked.
    public let port: Int
    /// A PEM CA file to trust instead of the system's (testing only), or `nil`.
    public let caFile: String?
    /// The environment, or `nil` for a custom host.
    public let environment: Environment?

    /// Apple's endpoint for `environment` on port 443 or 2197.
    /// - Throws: `APNsError` `.badEndpoint` for another port.
    public init(_ environment: Environment, port: Int = 443) throws {
        guard port == 443 || port == 2197 else {
            throw APNsError(.badEndpoint, "APNs listens on port 443 or 2197, not \(port)")
        }
        host = environment == .production ? "api.push.apple.com" : "api.sandbox.push.apple.com"
        self.port = port
        caFile = nil
        self.environment = environment
    }

    /// A custom `host:port` (e.g. `127.0.0.1:8443`, `[::1]:8443`) trusting `caFile`.
    /// - Throws: `APNsError` `.badEndpoint` when it is not `host:port` with a port 1…65535.
    public init(hostAndPort: String, caFile: String?) throws {
        guard let colon = hostAndPort.lastIndex(of: ":"), let port = Int(hostAndPort[hostAndPort.index(after: colon)...]),
              (1...65535).contains(port), colon > hostAndPort.startIndex else {
            throw APNsError(.badEndpoint, "'\(hostAndPort.prefix(80))' is not HOST:PORT")
        }
        var host = String(hostAndPort[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }) else {
            throw APNsError(.badEndpoint, "'\(hostAndPort.prefix(80))' has no valid host")
        }
        self.host = host
        self.port = port
        self.caFile = caFile
        environment = nil
    }

    /// `https://HOST:PORT` (IPv6 literals in brackets).
    public var baseURL: String {
        host.contains(":") ? "https://[\(host)]:\(port)" : "https://\(host):\(port)"
    }
}
