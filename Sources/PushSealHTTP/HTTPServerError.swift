public import PushSealSystem

/// An error starting the HTTP server (``HTTPServer/init(configuration:handler:observer:)``).
public typealias HTTPServerError = DomainError<HTTPServerErrorDomain>

/// The domain of ``HTTPServerError``: `name` is `http`.
public enum HTTPServerErrorDomain: ErrorDomain { public static let name = "http" }

extension ErrorCode<HTTPServerError> {
    /// The listen address is not an IP address and port (`127.0.0.1:8080`, `[::1]:0`).
    public static var invalidAddress: Self { Self("invalidAddress") }
    /// libmicrohttpd did not start: the port is in use, the address is not this machine's, or
    /// the TLS key and certificate were refused.
    public static var startFailed: Self { Self("startFailed") }
    /// HTTPS was asked for and this libmicrohttpd was built without TLS.
    public static var tlsUnsupported: Self { Self("tlsUnsupported") }
}
