public import PushSealSystem

/// An error from the media fetcher (PushSealMediaFetch): a fetch that could not start.
/// How a started fetch ends is a ``MediaFetchCompletion``, never an error.
///
/// Compare errors by ``code``; the human ``reason`` may change between releases.
public struct MediaFetchError: CodedError {
    /// The stable codes of this domain (constants below).
    public typealias Code = ErrorCode<MediaFetchError>
    /// `mediaFetch`.
    public static let domain = "mediaFetch"

    /// The stable code; equality and hashing use it alone.
    public let code: Code
    /// A human explanation (a URL's text is never included: it may carry a token).
    public let reason: String

    /// Creates an error with a stable `code` and a human `reason`.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

extension ErrorCode<MediaFetchError> {
    /// libcurl (`libcurl.so.4`, loaded on the first fetch) is missing or not usable: dlopen
    /// failed, an entry point is missing, or `curl_global_init` failed (the reason says which).
    public static var libcurlUnavailable: Self { Self("libcurlUnavailable") }
    /// The URL does not parse as an absolute http(s) URL (libcurl's URL parser).
    public static var urlRefused: Self { Self("urlRefused") }
}
