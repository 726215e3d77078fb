#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import Dispatch
public import PushSealCrypto
public import PushSealWire
public import PushSealMediaFetch
import PushSealSystem

/// What ``MediaDownloader`` fetches: a notification's `media` (`{url, type?, sha256?, key?}`)
/// plus the media box's AAD, with the digest as hex text as the downloader checks it.
public struct MediaDownload: Sendable {
    /// The URL to fetch, as written in the plaintext.
    public let url: String
    /// The MIME type the sender declared (`type`), e.g. `image/jpeg`, or `nil`.
    public let type: String?
    /// Lower- or upper-case hex of the SHA-256 of the bytes at `url` (64 hex digits), or `nil`.
    public let sha256Hex: String?
    /// When present, the bytes at `url` are an AES-256-GCM combined box
    /// (nonce(12) ‖ ciphertext ‖ tag(16)) sealed with this 32-byte key.
    public let key: SecretBytes?
    /// AAD the media box was sealed with (empty unless the wire format says otherwise).
    public let aad: [UInt8]

    /// Creates a descriptor.
    /// - Parameters:
    ///   - url: an http(s) URL.
    ///   - type: the declared MIME type, or `nil`.
    ///   - sha256Hex: 64 hex digits, or `nil`.
    ///   - key: the 32-byte media key when the file is sealed, else `nil`.
    ///   - aad: the media box's AAD (default empty).
    public init(url: String, type: String? = nil, sha256Hex: String? = nil, key: SecretBytes? = nil, aad: [UInt8] = []) {
        self.url = url
        self.type = type
        self.sha256Hex = sha256Hex
        self.key = key
        self.aad = aad
    }

    /// The download of a decoded plaintext's `media` (empty AAD, FORMAT.md §5).
    /// - Parameter media: the plaintext's media descriptor; its `sha256` becomes lower-case hex.
    public init(_ media: PushSealWire.MediaDescriptor) {
        self.init(url: media.url, type: media.type, sha256Hex: media.sha256Hex, key: media.key)
    }
}

/// A media file downloaded (and, if sealed, opened) into the App Group container.
public struct DownloadedMedia: Sendable, Hashable {
    /// The file, named `<uuid>.<ext>` with the extension of its real type (never `.tmp`).
    public let fileURL: URL
    /// The type recognised from the content's magic bytes.
    public let mediaType: MediaType
    /// Size of the file in bytes (the plaintext for sealed media).
    public let byteCount: Int
    /// Bytes received over the network (the box for sealed media).
    public let downloadedByteCount: Int
    /// Redirects followed.
    public let redirectCount: Int
}

/// Cancels an in-flight download from another thread (the extension's expiry call).
public final class DownloadCancellation: Sendable {
    private let state = Locked<(cancelled: Bool, action: (@Sendable () -> Void)?)>((false, nil))

    /// Creates a token that is not cancelled.
    public init() {}

    /// True once ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Cancels the current download, if any, and every later one using this token.
    public func cancel() {
        let action = state.withLock { s -> (@Sendable () -> Void)? in
            s.cancelled = true
            defer { s.action = nil }
            return s.action
        }
        action?()
    }

    /// Installs what ``cancel()`` does; runs it at once if already cancelled.
    func onCancel(_ action: (@Sendable () -> Void)?) {
        let runNow = state.withLock { s -> Bool in
            if s.cancelled { return true }
            s.action = action
            return false
        }
        if runNow { action?() }
    }
}

/// Downloads notification media with the platform's rules, into the App Group container.
///
/// - Schemes: `https`; plain `http` only to a loopback host (127.0.0.0/8, `::1`, `localhost`)
///   and only with `allowInsecureLoopback` — App Transport Security refuses the rest.
///   Every redirect target is checked the same way; at most ``maxRedirectCount`` (3).
/// - Addresses (``MediaAddressPolicy``): no loopback, private, link-local, multicast, CGNAT or
///   other special-purpose address, checked on every address a socket is opened to (first hop
///   and redirects, after name resolution: DNS rebinding gains nothing) and on IP-literal URL
///   hosts in any spelling. The test flag `allowInsecureLoopback` allows loopback only, and
///   with `allowedLoopbackPorts` only those ports.
/// - Time: one timeout for the whole request (redirects included), enforced by a timer that
///   cancels the transfer, so a slow drip cannot outlast the budget.
/// - Size: the body is streamed to a file chunk by chunk from the fetcher (PushSealMediaFetch's
///   ``CurlMediaFetcher``: libcurl, loaded only when a notification has media);
///   the transfer is cancelled as soon as the byte count passes the limit for its type —
///   known from the magic bytes once 12 bytes arrived, before that from `Content-Type` or the
///   descriptor's `type`, else the largest limit (50 MiB); a `Content-Length` over the limit
///   cancels before the body.
/// - Name: `Attachments/<uuid>/<uuid>.<ext>` in the container (one directory per
///   notification, ``MediaStore``), with the extension of the type recognised by magic bytes
///   (an HTML page served with `200` and `image/png` is refused); the partial file is removed
///   on failure.
/// - Store: every download first cleans the container's media (``MediaStore``: stale
///   `.download`/`.opening` files of killed extensions, expired attachments) and keeps it
///   under its cap (256 MiB by default), evicting the oldest attachments.
/// - Memory: the fetcher hands over one chunk (at most 16 KiB) at a time and reads no more
///   until it is written, so a fast server cannot pile the body up in memory; a 9 MB image
///   costs no more peak RSS than a 10 KB one (the one-time cost is loading libcurl).
/// - Sealed media: the SHA-256 of the downloaded box is computed while streaming and
///   compared to `sha256`; the box file is then opened in 64 KiB chunks with the
///   descriptor's key and AAD (empty, FORMAT.md §5) through `AES256GCM.Stream` into a private
///   `.<uuid>.opening` file, renamed to `<uuid>.<ext>` only after the tag verified and
///   deleted otherwise (no unverified plaintext is ever attached).
public struct MediaDownloader: Sendable {
    /// Most redirects followed (3).
    public static let maxRedirectCount = 3
    /// After a timeout, how long to wait for the fetcher to confirm the cancellation (100 ms).
    static let cancellationGraceMilliseconds = 100

    /// The App Group container directory the files go into.
    public let containerDirectory: URL
    /// Allow loopback hosts, plain `http` included (tests, `--allow-insecure-loopback`).
    public let allowInsecureLoopback: Bool
    /// The address rule every connection and IP-literal host is checked against.
    public let addressPolicy: MediaAddressPolicy
    /// The container's media files: layout, sweep, size cap.
    public let store: MediaStore
    /// Where the `download` diagnostic lines go.
    public let logger: any DiagnosticLogger
    /// The network side.
    public let fetcher: any MediaFetching
    /// Bytes of the box read per step when opening sealed media (tests make it small).
    var openChunkByteCount = MediaDownloader.openChunkByteCount
    /// Sees every step of opening sealed media (tests: the bound on what is held at once, and
    /// that no plaintext is readable before the tag verified).
    var openObserver: (@Sendable (OpenStep) -> Void)?

    /// A step of opening sealed media, as ``openObserver`` sees it.
    enum OpenStep: Sendable, Equatable {
        /// `byteCount` bytes of the box were read (nonce, a ciphertext chunk, or the tag).
        case read(byteCount: Int)
        /// `byteCount` plaintext bytes were written to the private `.opening` file; the
        /// chunk's buffers are released (wiped) before the next read.
        case wrote(byteCount: Int)
        /// Every chunk is written and the tag read; it is checked next. `partial` is the
        /// private file holding the unverified plaintext.
        case checkingTag(partial: URL)
    }

    /// Creates a downloader.
    /// - Parameters:
    ///   - containerDirectory: an existing directory (the App Group container).
    ///   - allowInsecureLoopback: permit loopback addresses, `http://127.0.0.1…` and friends
    ///     (the test flag; every other special-purpose address stays refused).
    ///   - allowedLoopbackPorts: with `allowInsecureLoopback`, only these loopback TCP ports
    ///     (`nil`: any); a test gives exactly its server's port, so a redirect elsewhere on
    ///     loopback is refused as in production.
    ///   - store: the container's media store (default: ``MediaStore`` of `containerDirectory`
    ///     with its default cap and ages).
    ///   - logger: diagnostics sink.
    ///   - fetcher: the network side (default: PushSealMediaFetch's `CurlMediaFetcher`, whose
    ///     libcurl is loaded on the first download).
    public init(containerDirectory: URL, allowInsecureLoopback: Bool = false, allowedLoopbackPorts: Set<Int>? = nil,
                store: MediaStore? = nil, logger: any DiagnosticLogger = NullLogger(), fetcher: any MediaFetching = CurlMediaFetcher()) {
        self.fetcher = fetcher
        self.store = store ?? MediaStore(containerDirectory: containerDirectory)
        self.containerDirectory = containerDirectory
        self.allowInsecureLoopback = allowInsecureLoopback
        self.addressPolicy = MediaAddressPolicy(allowsLoopback: allowInsecureLoopback, loopbackPorts: allowedLoopbackPorts)
        self.logger = logger
    }

    /// The safety margin kept between a download's timeout and the extension's expiry call,
    /// in seconds: `min(0.5 s, 10 % of the time remaining)`.
    public static func safetyMarginSeconds(forRemaining remainingSeconds: Double) -> Double {
        min(0.5, max(0, remainingSeconds) * 0.1)
    }

    /// Checks a URL against the scheme and App Transport Security rules, and an IP-literal
    /// host (any spelling) against ``addressPolicy``. Names are checked when connecting, on the
    /// addresses they resolve to.
    /// - Throws: `ExtensionError` `.mediaURLRefused` with the reason.
    public func checkPolicy(_ url: URL) throws {
        let plainHTTP: Bool
        switch url.scheme?.lowercased() {
        case "https":
            guard let host = url.host, !host.isEmpty else { throw ExtensionError(.mediaURLRefused, "URL has no host") }
            plainHTTP = false
        case "http":
            guard let host = url.host, Self.isLoopback(host) else {
                throw ExtensionError(.mediaURLRefused, "plain http to a non-loopback host is refused (App Transport Security)")
            }
            guard allowInsecureLoopback else {
                throw ExtensionError(.mediaURLRefused, "plain http to loopback needs allowInsecureLoopback (App Transport Security)")
            }
            plainHTTP = true
        case let scheme:
            throw ExtensionError(.mediaURLRefused, "scheme \(scheme ?? "none") is not http(s)")
        }
        if let host = url.host, let address = MediaAddressPolicy.ipLiteral(host) {
            try addressPolicy.check(address, port: url.port ?? (plainHTTP ? 80 : 443), plainHTTP: plainHTTP)
        }
    }

    /// True for `localhost` and an IP literal of a loopback address (127.0.0.0/8 and `::1` in
    /// any spelling, IPv4-mapped included).
    static func isLoopback(_ host: String) -> Bool {
        if host.lowercased() == "localhost" { return true }
        guard let address = MediaAddressPolicy.ipLiteral(host) else { return false }
        return MediaAddressPolicy.classify(address) == .loopback
    }

    /// Downloads `descriptor` into the container, blocking the calling thread.
    /// - Parameters:
    ///   - descriptor: URL, declared type, optional SHA-256 and key.
    ///   - timeoutSeconds: the whole request's limit in seconds (redirects included).
    ///   - cancellation: a token another thread may cancel, or `nil`.
    /// - Returns: the file and its recognised type.
    /// - Throws: `ExtensionError` `.mediaURLRefused`, `.mediaTooManyRedirects`,
    ///   `.mediaHTTPStatus`, `.mediaTimedOut`, `.mediaCancelled`, `.mediaTransferFailed`,
    ///   `.attachmentInvalidFileSize` (over the type's limit), `.attachmentUnrecognizedType`
    ///   (content is no supported media), `.mediaDigestMismatch`, `.mediaDecryptionFailed`,
    ///   `.mediaInvalidDescriptor`; `.mediaTransferFailed` also when the media store is full.
    public func download(_ descriptor: MediaDownload, timeoutSeconds: Double,
                         cancellation: DownloadCancellation? = nil) throws -> DownloadedMedia {
        let start = ContinuousClock.now
        do {
            let media = try performDownload(descriptor, timeoutSeconds: timeoutSeconds, cancellation: cancellation)
            logger.log(DiagnosticEntry(stage: "download", event: "ok", fields: [
                ("durationMs", formatMilliseconds(millisecondsSince(start))), ("byteCount", String(media.downloadedByteCount)),
                ("fileByteCount", String(media.byteCount)), ("type", media.mediaType.rawValue),
                ("redirects", String(media.redirectCount)), ("sealed", String(descriptor.key != nil))]))
            return media
        } catch let error as ExtensionError {
            logger.log(DiagnosticEntry(stage: "download", event: "failed", fields: [
                ("durationMs", formatMilliseconds(millisecondsSince(start))), ("code", error.code.name), ("reason", error.reason)]))
            throw error
        }
    }

    private func performDownload(_ descriptor: MediaDownload, timeoutSeconds: Double,
                                 cancellation: DownloadCancellation?) throws -> DownloadedMedia {
        guard let url = URL(string: descriptor.url) else {
            throw ExtensionError(.mediaURLRefused, "media URL does not parse")
        }
        try checkPolicy(url)
        var expectedDigest: [UInt8]? = nil
        if let hex = descriptor.sha256Hex {
            guard let digest = Hex.decode(hex), digest.count == SHA256Hasher.digestByteCount else {
                throw ExtensionError(.mediaInvalidDescriptor, "sha256 is not 64 hex digits")
            }
            expectedDigest = digest
        }
        if let key = descriptor.key, key.byteCount != AES256GCM.keyByteCount {
            throw ExtensionError(.mediaInvalidDescriptor, "media key is \(key.byteCount) bytes, not 32")
        }
        guard timeoutSeconds > 0 else { throw ExtensionError(.mediaTimedOut, "no time left for the download") }
        if cancellation?.isCancelled == true { throw ExtensionError(.mediaCancelled, "cancelled before the request") }

        let sealed = descriptor.key != nil
        let declared = descriptor.type.flatMap(MediaType.init(mimeType:))
        // A sealed box is the plaintext plus nonce and tag.
        let overhead = sealed ? AES256GCM.minimumCombinedByteCount : 0
        // Room for the largest body (and, sealed, its plaintext beside the box).
        let reserve = (MediaType.largestMaxByteCount + overhead) * (sealed ? 2 : 1)
        try store.prepare(reservingByteCount: reserve)
        let base = UUID().uuidString
        let partURL = containerDirectory.appendingPathComponent(".\(base).download")
        guard let handle = try? FileDescriptor.open(partURL.path, [.writeOnly, .create, .exclusive], mode: 0o600) else {
            throw ExtensionError(.mediaTransferFailed, "cannot create a file in the App Group container")
        }
        defer { try? FileManager.default.removeItem(at: partURL) }
        // Held until the file is gone, so another extension's sweep never takes it.
        let partLock = TemporaryFileLock(path: partURL.path, wait: true)
        defer { partLock?.release() }
        if cancellation?.isCancelled == true { handle.close(); throw ExtensionError(.mediaCancelled, "cancelled before the request") }

        let transfer = Transfer(downloader: self, file: handle, sniff: !sealed, declared: declared, overhead: overhead,
                                hashing: expectedDigest != nil, plainHTTP: url.scheme?.lowercased() == "http")
        let task: any MediaFetchTask
        do {
            task = try fetcher.start(url: url.absoluteString, timeoutSeconds: timeoutSeconds, events: transfer)
        } catch let error as MediaFetchError {
            transfer.closeFile()
            throw ExtensionError(error.code == .libcurlUnavailable ? .mediaFetcherUnavailable : .mediaURLRefused, error.reason)
        } catch {
            transfer.closeFile()
            throw error
        }
        transfer.task.withLock { $0 = task }
        cancellation?.onCancel { transfer.abort(ExtensionError(.mediaCancelled, "the extension's time is up")) }

        if transfer.done.wait(timeout: .now() + .nanoseconds(Int(timeoutSeconds * 1e9))) == .timedOut {
            transfer.abort(ExtensionError(.mediaTimedOut, "no complete answer within \(formatMilliseconds(timeoutSeconds * 1000)) ms"))
            // Give the network side a moment to report the cancellation; never wait longer.
            _ = transfer.done.wait(timeout: .now() + .milliseconds(Self.cancellationGraceMilliseconds))
        }
        cancellation?.onCancel(nil)
        transfer.closeFile()
        task.finish()

        let result = transfer.result()
        if let error = result.error { throw error }

        if let expectedDigest {
            guard let actual = result.digest, ConstantTime.equals(actual, expectedDigest) else {
                throw ExtensionError(.mediaDigestMismatch, "SHA-256 of the downloaded bytes differs from the descriptor's sha256")
            }
        }
        if let key = descriptor.key {
            return try openSealed(at: partURL, key: key, aad: descriptor.aad, base: base,
                                  downloaded: result.byteCount, redirects: result.redirects)
        }
        guard let type = MediaType.sniff(result.header) else {
            throw ExtensionError(.attachmentUnrecognizedType, "content is not a supported media type (magic bytes)\(result.contentType.map { ", Content-Type \($0)" } ?? "")")
        }
        let directory = try store.makeAttachmentDirectory(named: base)
        let finalURL = directory.appendingPathComponent("\(base).\(type.fileExtension)")
        do {
            try FileManager.default.moveItem(at: partURL, to: finalURL)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw ExtensionError(.mediaTransferFailed, "cannot rename the downloaded file in the App Group container")
        }
        return DownloadedMedia(fileURL: finalURL, mediaType: type, byteCount: result.byteCount,
                               downloadedByteCount: result.byteCount, redirectCount: result.redirects)
    }

    /// Bytes read from the box file per step when opening sealed media (64 KiB).
    static let openChunkByteCount = 64 * 1024

    /// Opens a downloaded box into `<base>.<ext>` in chunks; the plaintext file appears only
    /// after the tag verified.
    ///
    /// The box file is read in ``openChunkByteCount`` steps (nonce = first 12 bytes, tag = last
    /// 16) through `AES256GCM.Stream`; the unverified plaintext goes to a private file
    /// `.<base>.opening` (0600) in the container, renamed to `Attachments/<base>/<base>.<ext>` (extension from the
    /// plaintext's magic bytes) only after `finish(tag:)` succeeded, deleted on any failure.
    /// Memory stays at a few chunks whatever the file size.
    private func openSealed(at boxURL: URL, key: SecretBytes, aad: [UInt8], base: String,
                            downloaded: Int, redirects: Int) throws -> DownloadedMedia {
        guard let box = try? FileDescriptor.open(boxURL.path, .readOnly) else {
            throw ExtensionError(.mediaTransferFailed, "cannot read the downloaded box")
        }
        defer { box.close() }
        let boxByteCount = downloaded
        guard boxByteCount >= AES256GCM.minimumCombinedByteCount else {
            throw ExtensionError(.mediaDecryptionFailed, "the media box is \(boxByteCount) bytes, shorter than nonce and tag (28)")
        }
        let plaintextByteCount = boxByteCount - AES256GCM.minimumCombinedByteCount
        guard plaintextByteCount <= MediaType.largestMaxByteCount else {
            throw ExtensionError(.attachmentInvalidFileSize, "decrypted media of \(plaintextByteCount) bytes is over every limit")
        }
        func readExactly(_ count: Int) throws -> [UInt8] {
            do {
                let data = try box.read(upToCount: count)
                guard data.count == count else {
                    throw ExtensionError(.mediaTransferFailed, "the downloaded box is shorter than its byte count")
                }
                return data
            } catch let error as ExtensionError {
                throw error
            } catch {
                throw ExtensionError(.mediaTransferFailed, "cannot read the downloaded box")
            }
        }
        func read(_ count: Int) throws -> [UInt8] {
            let data = try readExactly(count)
            openObserver?(.read(byteCount: data.count))
            return data
        }

        let partial = containerDirectory.appendingPathComponent(".\(base).opening")
        guard let out = try? FileDescriptor.open(partial.path, [.writeOnly, .create, .exclusive], mode: 0o600) else {
            throw ExtensionError(.mediaTransferFailed, "cannot create a file in the App Group container")
        }
        var released = false
        let partialLock = TemporaryFileLock(path: partial.path, wait: true)
        defer {
            out.close()
            if !released { try? FileManager.default.removeItem(at: partial) }
            partialLock?.release()
        }

        let nonce = try read(AES256GCM.nonceByteCount)
        let stream: AES256GCM.Stream
        do {
            stream = try AES256GCM.Stream.opening(with: key, nonce: nonce, authenticating: aad)
        } catch {
            throw ExtensionError(.mediaDecryptionFailed, "the media box cannot be opened with this key")
        }
        var header: [UInt8] = []
        var remaining = plaintextByteCount
        while remaining > 0 {
            let chunk = try read(min(openChunkByteCount, remaining))
            remaining -= chunk.count
            var plain: [UInt8]
            do {
                plain = try chunk.withUnsafeBytes { try stream.update($0) }
            } catch {
                throw ExtensionError(.mediaDecryptionFailed, "the media box did not open")
            }
            if header.count < MediaType.sniffByteCount {
                header.append(contentsOf: plain.prefix(MediaType.sniffByteCount - header.count))
            }
            do {
                try plain.withUnsafeBytes { try out.writeAll($0) }
            } catch {
                SecretBytes.wipe(&plain)
                throw ExtensionError(.mediaTransferFailed, "cannot write the decrypted media to the App Group container")
            }
            openObserver?(.wrote(byteCount: plain.count))
            SecretBytes.wipe(&plain)
        }
        let tag = try read(AES256GCM.tagByteCount)
        openObserver?(.checkingTag(partial: partial))
        do {
            try stream.finish(tag: tag)
        } catch {
            throw ExtensionError(.mediaDecryptionFailed, "the media box did not open (wrong key or modified bytes)")
        }
        // Authentic from here on: the header and size may decide.
        guard let type = MediaType.sniff(header) else {
            throw ExtensionError(.attachmentUnrecognizedType, "decrypted media is not a supported media type (magic bytes)")
        }
        guard plaintextByteCount <= type.category.maxByteCount else {
            throw ExtensionError(.attachmentInvalidFileSize, "decrypted \(type.category.rawValue) of \(plaintextByteCount) bytes is over the limit")
        }
        let directory = try store.makeAttachmentDirectory(named: base)
        let finalURL = directory.appendingPathComponent("\(base).\(type.fileExtension)")
        do {
            try out.synchronize()
            try FileManager.default.moveItem(at: partial, to: finalURL)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw ExtensionError(.mediaTransferFailed, "cannot rename the decrypted media in the App Group container")
        }
        released = true
        return DownloadedMedia(fileURL: finalURL, mediaType: type, byteCount: plaintextByteCount,
                               downloadedByteCount: downloaded, redirectCount: redirects)
    }
}

/// The state of one transfer, shared by the waiting thread and the fetcher's callback queue.
///
/// `@unchecked Sendable`: all mutable state, the file handle and the hasher are touched only
/// under `state`'s lock (writes to the file included, so closing it cannot race a write).
///
/// Callbacks only *record* an error and answer through their return value; only the data
/// callback, the timer and the cancellation token cancel the transfer (a lesson kept from the
/// earlier URLSession fetcher, which trapped when a task was cancelled inside a callback).
final class Transfer: @unchecked Sendable {
    struct State {
        var error: ExtensionError?
        var completed = false
        var fileClosed = false
        var header: [UInt8] = []
        var byteCount = 0
        var limit: Int
        var redirects = 0
        var contentType: String?
        var digest: [UInt8]?
        /// The current hop is plain http (connections must go to an allowed loopback address).
        var plainHTTP: Bool
    }

    let downloader: MediaDownloader
    private let file: FileDescriptor
    let sniffContent: Bool
    let overhead: Int
    private let hasher: SHA256Hasher?
    let state: Locked<State>
    let task = Locked<(any MediaFetchTask)?>(nil)
    /// Signalled once, when the fetcher reports the transfer complete.
    let done = DispatchSemaphore(value: 0)

    init(downloader: MediaDownloader, file: FileDescriptor, sniff: Bool, declared: MediaType?, overhead: Int, hashing: Bool, plainHTTP: Bool) {
        self.downloader = downloader
        self.file = file
        self.sniffContent = sniff
        self.overhead = overhead
        self.hasher = hashing ? SHA256Hasher() : nil
        state = Locked(State(limit: (declared?.category.maxByteCount ?? MediaType.largestMaxByteCount) + overhead, plainHTTP: plainHTTP))
    }

    /// Records the first error (later ones are ignored).
    func record(_ error: ExtensionError) {
        state.withLock { s in if s.error == nil { s.error = error } }
    }

    /// Records the error and cancels the task (not from inside a callback awaiting its completion handler).
    func abort(_ error: ExtensionError) {
        record(error)
        cancelTask()
    }

    private let cancelRequested = Locked(false)

    /// Cancels the task once (the fetcher never waits for its network side in `cancel()`).
    func cancelTask() {
        let first = cancelRequested.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first, let task = task.withLock({ $0 }) else { return }
        task.cancel()
    }

    var hasFailed: Bool { state.withLock { $0.error != nil } }

    /// Streams one chunk: counts, sniffs, enforces the limit, hashes and writes — under the lock.
    /// The chunk is hashed and written straight from the fetcher's buffer (no copy).
    /// - Returns: false when the transfer must stop (error recorded).
    func receive(_ data: Span<UInt8>) -> Bool {
        state.withLock { s -> Bool in
            guard s.error == nil, !s.fileClosed else { return false }
            s.byteCount += data.count
            if s.header.count < MediaType.sniffByteCount {
                for i in 0..<min(data.count, MediaType.sniffByteCount - s.header.count) { s.header.append(data[i]) }
                if sniffContent, s.header.count >= MediaType.sniffByteCount {
                    guard let type = MediaType.sniff(s.header) else {
                        s.error = ExtensionError(.attachmentUnrecognizedType, "content is not a supported media type (magic bytes)\(s.contentType.map { ", Content-Type \($0)" } ?? "")")
                        return false
                    }
                    s.limit = type.category.maxByteCount
                }
            }
            if s.byteCount > s.limit {
                s.error = ExtensionError(.attachmentInvalidFileSize, "passed the limit of \(s.limit) bytes; aborted at \(s.byteCount)")
                return false
            }
            hasher?.update(data)
            do {
                try file.writeAll(data)
            } catch {
                s.error = ExtensionError(.mediaTransferFailed, "cannot write to the App Group container")
                return false
            }
            return true
        }
    }

    /// The fetcher reported completion: map its error, finish the digest, wake the waiter.
    func complete(_ error: ExtensionError?) {
        state.withLock { s in
            if s.error == nil, let error { s.error = error }
            if s.error == nil, let hasher { s.digest = try? hasher.finalize() }
            s.completed = true
        }
        done.signal()
    }

    /// Closes the file; later chunks are ignored.
    func closeFile() {
        state.withLock { s in
            guard !s.fileClosed else { return }
            s.fileClosed = true
            file.close()
        }
    }

    /// The outcome, read after the wait.
    func result() -> (error: ExtensionError?, header: [UInt8], byteCount: Int, redirects: Int, contentType: String?, digest: [UInt8]?) {
        state.withLock { s in
            (s.error ?? (s.completed ? nil : ExtensionError(.mediaTransferFailed, "transfer did not finish")),
             s.header, s.byteCount, s.redirects, s.contentType, s.digest)
        }
    }
}

extension Transfer: MediaFetchEvents {
    func redirect(to url: String) -> Bool {
        let count = state.withLock { s -> Int in s.redirects += 1; return s.redirects }
        guard count <= MediaDownloader.maxRedirectCount else {
            record(ExtensionError(.mediaTooManyRedirects, "more than \(MediaDownloader.maxRedirectCount) redirects"))
            return false
        }
        guard let target = URL(string: url) else {
            record(ExtensionError(.mediaURLRefused, "redirect without a usable location"))
            return false
        }
        do {
            try downloader.checkPolicy(target)
        } catch {
            let e = error as? ExtensionError
            record(ExtensionError(.mediaURLRefused, "redirect refused: \(e?.reason ?? "policy")"))
            return false
        }
        state.withLock { $0.plainHTTP = target.scheme?.lowercased() == "http" }
        return true
    }

    func connect(to address: [UInt8], port: Int) -> Bool {
        let plainHTTP = state.withLock { $0.plainHTTP }
        do {
            try downloader.addressPolicy.check(address, port: port, plainHTTP: plainHTTP)
            return true
        } catch {
            let e = error as? ExtensionError
            record(ExtensionError(.mediaURLRefused, "connection refused by policy: \(e?.reason ?? "address")"))
            return false
        }
    }

    func response(status: Int, contentType: String?, contentLength: Int?) -> Bool {
        guard status != 0 else {
            record(ExtensionError(.mediaTransferFailed, "not an HTTP response"))
            return false
        }
        guard (200..<300).contains(status) else {
            record(ExtensionError(.mediaHTTPStatus, "the server answered HTTP \(status)"))
            return false
        }
        let limit = state.withLock { s -> Int in
            s.contentType = contentType
            if sniffContent, let declared = contentType.flatMap(MediaType.init(mimeType:)) {
                s.limit = min(s.limit, declared.category.maxByteCount + overhead)
            }
            return s.limit
        }
        if let length = contentLength, length > limit {
            record(ExtensionError(.attachmentInvalidFileSize, "Content-Length \(length) is over the limit of \(limit) bytes"))
            return false
        }
        return true
    }

    func complete(_ completion: MediaFetchCompletion) {
        switch completion {
        case .timedOut: complete(ExtensionError(.mediaTimedOut, "the request timed out"))
        case .cancelled: complete(ExtensionError(.mediaCancelled, "the request was cancelled"))
        case .failed(let code): complete(ExtensionError(.mediaTransferFailed, "transfer failed (URL error \(code))"))
        case .finished(let status):
            if status != 0, !(200..<300).contains(status) {
                complete(ExtensionError(.mediaHTTPStatus, "the server answered HTTP \(status)"))
                return
            }
            let empty = state.withLock { $0.byteCount == 0 }
            complete(empty ? ExtensionError(.attachmentUnrecognizedType, "empty body") : nil)
        }
    }
}
