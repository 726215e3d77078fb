public import PushSealSystem

/// An error from the media fetcher (PushSealMediaFetch): a fetch that could not start.
/// How a started fetch ends is a ``MediaFetchCompletion``, never an error.
///
/// Compare errors by ``code``; the human ``reason`` may change between releases.
public typealias MediaFetchError = DomainError<MediaFetchErrorDomain>

/// The domain of ``MediaFetchError``: `name` is `mediaFetch`.
public enum MediaFetchErrorDomain: ErrorDomain { public static let name = "mediaFetch" }

extension ErrorCode<MediaFetchError> {
    /// libcurl (`libcurl.so.4`, loaded on the first fetch) is missing or not usable: dlopen
    /// failed, an entry point is missing, or `curl_global_init` failed (the reason says which).
    public static var libcurlUnavailable: Self { Self("libcurlUnavailable") }
    /// The URL does not parse as an absolute http(s) URL (libcurl's URL parser).
    public static var urlRefused: Self { Self("urlRefused") }
}

// Re-exported so that code importing only this module reads the error's `code`, `reason` and
// `suggestion` (their declarations live in PushSealSystem; MemberImportVisibility).
@_exported public import struct PushSealSystem.DomainError
