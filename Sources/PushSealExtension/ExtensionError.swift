import PushSealCrypto
/// An error from the extension module: attachment validation (named like `UNError`), media
/// download, and the decrypting service's stages.
///
/// Compare errors by ``code``: the human ``reason`` may change between releases, the codes
/// will not. Reasons never contain key bytes, plaintext or ciphertext.
public struct ExtensionError: CodedError {
    /// A stable, machine-readable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name, e.g. `attachmentUnrecognizedType`.
        public let name: String

        init(_ name: String) { self.name = name }

        /// Like `UNError.Code.attachmentInvalidURL`: not a file URL, or no regular file there.
        public static let attachmentInvalidURL = Code("attachmentInvalidURL")
        /// Like `UNError.Code.attachmentUnrecognizedType`: the content (magic bytes) or the file
        /// extension names no supported media type, or the two disagree.
        public static let attachmentUnrecognizedType = Code("attachmentUnrecognizedType")
        /// Like `UNError.Code.attachmentInvalidFileSize`: empty, or over the limit for its type
        /// (image 10 MiB, audio 5 MiB, movie 50 MiB).
        public static let attachmentInvalidFileSize = Code("attachmentInvalidFileSize")

        /// A media URL the platform would refuse: not http(s), or plain http to a non-loopback
        /// host or without `allowInsecureLoopback` (App Transport Security); or a URL host,
        /// redirect target or connected address that ``MediaAddressPolicy`` refuses (loopback,
        /// private, link-local, multicast, other special-purpose addresses).
        public static let mediaURLRefused = Code("mediaURLRefused")
        /// More than ``MediaDownloader/maxRedirectCount`` (3) redirects.
        public static let mediaTooManyRedirects = Code("mediaTooManyRedirects")
        /// The server answered with a status other than 2xx.
        public static let mediaHTTPStatus = Code("mediaHTTPStatus")
        /// The per-request timeout passed before the body was complete.
        public static let mediaTimedOut = Code("mediaTimedOut")
        /// The transfer was cancelled (the extension's time ran out).
        public static let mediaCancelled = Code("mediaCancelled")
        /// The transfer failed (connection refused, reset, DNS, TLS, file system).
        public static let mediaTransferFailed = Code("mediaTransferFailed")
        /// The downloaded blob's SHA-256 differs from the descriptor's `sha256`.
        public static let mediaDigestMismatch = Code("mediaDigestMismatch")
        /// An encrypted media blob did not open (wrong key, modified bytes, truncated box).
        public static let mediaDecryptionFailed = Code("mediaDecryptionFailed")
        /// The media descriptor is malformed (bad `sha256` hex, bad `key`).
        public static let mediaInvalidDescriptor = Code("mediaInvalidDescriptor")
        /// The network side of media downloads (`libPushSealMediaFetch.so`, loaded on first
        /// use) is missing or not loadable; the notification shows without its media.
        public static let mediaFetcherUnavailable = Code("mediaFetcherUnavailable")

        /// The key provider could not give the key (the reason carries e.g. OSStatus -25308).
        public static let keyUnavailable = Code("keyUnavailable")
        /// The payload did not open: malformed field, unknown key id or algorithm, bad tag.
        public static let openFailed = Code("openFailed")
        /// The plaintext's `exp` is in the past (checked only after authentication).
        public static let expired = Code("expired")
        /// The plaintext's `id` was seen recently (replay guard).
        public static let replayed = Code("replayed")
        /// The decrypted title, subtitle and body are all empty: showing it would be blank.
        public static let emptyContent = Code("emptyContent")
        /// The replay cache could not be read or written.
        public static let replayCacheFailed = Code("replayCacheFailed")

        public var description: String { name }
    }

    /// The stable code; equality and hashing use it alone.
    public let code: Code
    /// A human explanation, without secrets.
    public let reason: String

    /// Creates an error with a stable `code` and a human `reason` (no secrets).
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}
