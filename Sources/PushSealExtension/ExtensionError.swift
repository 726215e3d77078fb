public import PushSealSystem
/// An error from the extension module: attachment validation (named like `UNError`), media
/// download, and the decrypting service's stages.
///
/// Compare errors by ``code``: the human ``reason`` may change between releases, the codes
/// will not. Reasons never contain key bytes, plaintext or ciphertext.
public typealias ExtensionError = DomainError<ExtensionErrorDomain>

/// The domain of ``ExtensionError``: `name` is `extension`.
public enum ExtensionErrorDomain: ErrorDomain { public static let name = "extension" }

extension ErrorCode<ExtensionError> {
    /// Like `UNError.Code.attachmentInvalidURL`: not a file URL, or no regular file there.
    public static var attachmentInvalidURL: Self { Self("attachmentInvalidURL") }
    /// Like `UNError.Code.attachmentUnrecognizedType`: the content (magic bytes) or the file
    /// extension names no supported media type, or the two disagree.
    public static var attachmentUnrecognizedType: Self { Self("attachmentUnrecognizedType") }
    /// Like `UNError.Code.attachmentInvalidFileSize`: empty, or over the limit for its type
    /// (image 10 MiB, audio 5 MiB, movie 50 MiB).
    public static var attachmentInvalidFileSize: Self { Self("attachmentInvalidFileSize") }
    /// A media URL the platform would refuse: not http(s), or plain http to a non-loopback
    /// host or without `allowInsecureLoopback` (App Transport Security); or a URL host,
    /// redirect target or connected address that ``MediaAddressPolicy`` refuses (loopback,
    /// private, link-local, multicast, other special-purpose addresses).
    public static var mediaURLRefused: Self { Self("mediaURLRefused") }
    /// More than ``MediaDownloader/maxRedirectCount`` (3) redirects.
    public static var mediaTooManyRedirects: Self { Self("mediaTooManyRedirects") }
    /// The server answered with a status other than 2xx.
    public static var mediaHTTPStatus: Self { Self("mediaHTTPStatus") }
    /// The per-request timeout passed before the body was complete.
    public static var mediaTimedOut: Self { Self("mediaTimedOut") }
    /// The transfer was cancelled (the extension's time ran out).
    public static var mediaCancelled: Self { Self("mediaCancelled") }
    /// The transfer failed (connection refused, reset, DNS, TLS, file system).
    public static var mediaTransferFailed: Self { Self("mediaTransferFailed") }
    /// The downloaded blob's SHA-256 differs from the descriptor's `sha256`.
    public static var mediaDigestMismatch: Self { Self("mediaDigestMismatch") }
    /// An encrypted media blob did not open (wrong key, modified bytes, truncated box).
    public static var mediaDecryptionFailed: Self { Self("mediaDecryptionFailed") }
    /// The media descriptor is malformed (bad `sha256` hex, bad `key`).
    public static var mediaInvalidDescriptor: Self { Self("mediaInvalidDescriptor") }
    /// The network side of media downloads is missing or not loadable: libcurl
    /// (`libcurl.so.4`, loaded with dlopen on the first download) is not installed or unusable
    /// (the reason gives dlerror's text); the notification shows without its media.
    public static var mediaFetcherUnavailable: Self { Self("mediaFetcherUnavailable") }
    /// The key provider could not give the key (the reason carries e.g. OSStatus -25308).
    public static var keyUnavailable: Self { Self("keyUnavailable") }
    /// The payload did not open: malformed field, unknown key id or algorithm, bad tag.
    public static var openFailed: Self { Self("openFailed") }
    /// The plaintext's `exp` is in the past (checked only after authentication).
    public static var expired: Self { Self("expired") }
    /// The plaintext's `id` was seen recently (replay guard).
    public static var replayed: Self { Self("replayed") }
    /// The decrypted title, subtitle and body are all empty: showing it would be blank.
    public static var emptyContent: Self { Self("emptyContent") }
    /// The replay guard's store could not be locked, read, parsed or written.
    public static var replayCacheFailed: Self { Self("replayCacheFailed") }
    /// The emulated notification center's store (`pushseal-delivered.json` in the App Group
    /// container) cannot be locked, read, parsed or written.
    public static var notificationCenterFailed: Self { Self("notificationCenterFailed") }
}

extension ErrorCode<ExtensionError> {
    /// A `Localizable.strings` file that does not parse (``LocalizableStrings/init(bytes:)``).
    public static var invalidStrings: Self { Self("invalidStrings") }
}

// Re-exported so that code importing only this module reads the error's `code`, `reason` and
// `suggestion` (their declarations live in PushSealSystem; MemberImportVisibility).
@_exported public import struct PushSealSystem.DomainError
