import PushSealJSON
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import PushSealSystem
import PushSealCrypto
public import PushSealWire

/// How a ``DecryptingServiceExtension`` is set up: what on iOS comes from the extension's
/// bundle, entitlements and device.
public struct DecryptingServiceConfiguration: Sendable {
    /// The app's bundle identifier (the APNs topic), bound into the AAD. Never taken from the payload.
    public var appID: String
    /// Reads keys by key id as the extension's identity.
    public var keyProvider: any NotificationKeyProvider
    /// Parses and opens payloads: ``WireFormatOpener`` unless a test injects another.
    public var opener: any NotificationPayloadOpener
    /// The device locale, e.g. `pt-BR`, or `nil` for the plaintext's default texts.
    public var locale: String?
    /// The App Group container directory for media and the replay cache, or `nil` (no media,
    /// no replay guard).
    public var containerDirectory: URL?
    /// Allow plain http media from loopback hosts (tests, `--allow-insecure-loopback`).
    public var allowInsecureLoopback: Bool
    /// The replay guard's capacity in ids (``ReplayGuard``; 0 turns the guard off). The guard
    /// keeps its store in ``containerDirectory``: without one (an extension without an App
    /// Group) it has nowhere to keep it and fails closed, as the iOS reference does: every
    /// notification that carries an `id` falls back with `replayGuardUnavailable`.
    public var replayCapacity: Int
    /// The wall clock, seconds since 1970 UTC, for `exp`.
    public var now: @Sendable () -> Int64

    /// Creates a configuration.
    /// - Parameters:
    ///   - appID: the app's bundle identifier.
    ///   - keyProvider: the key source.
    ///   - opener: the payload codec (default ``WireFormatOpener``).
    ///   - locale: the device locale, or `nil`.
    ///   - containerDirectory: the App Group container, or `nil`.
    ///   - allowInsecureLoopback: permit `http://127.0.0.1…` media.
    ///   - replayCapacity: ids remembered at most (default 5,000; 0 = off).
    ///   - now: Unix seconds now (default: the system clock).
    public init(appID: String, keyProvider: any NotificationKeyProvider, opener: any NotificationPayloadOpener = WireFormatOpener(),
                locale: String? = nil, containerDirectory: URL? = nil, allowInsecureLoopback: Bool = false,
                replayCapacity: Int = ReplayGuard.defaultCapacity,
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }) {
        self.appID = appID
        self.keyProvider = keyProvider
        self.opener = opener
        self.locale = locale
        self.containerDirectory = containerDirectory
        self.allowInsecureLoopback = allowInsecureLoopback
        self.replayCapacity = replayCapacity
        self.now = now
    }
}

/// The decrypting Notification Service Extension.
///
/// Stages, in priority order, each logged as one line (`stage=… event=… durationMs=…`):
/// `keyLookup` (envelope checked and key id read from the payload, key from the provider),
/// `open` (authenticate and decrypt with the configured app id), `check` (`exp` against the
/// clock — only after authentication — and the replay guard), `localize` (title, subtitle, body
/// for the locale; `userInfo` becomes the delivered `aps` and the sealed `data` under `pushseal`,
/// nothing else; thread, category, interruption level and sound from the sealed `aps`, or the
/// delivered ones made harmless), then `download` and
/// `attach` for media.
///
/// The best attempt content is updated after each stage; the expiry call cancels the download
/// and delivers it. Fallback ladder: decrypted with media (``NotificationOutcome/decrypted``) →
/// decrypted without media (``NotificationOutcome/decryptedWithoutMedia``) → the original
/// content (``NotificationOutcome/original``). Failures never put error text, ciphertext or a
/// blank text in what the user sees; the stable reason token (``FallbackReason``,
/// docs/fallback.md) and a human detail go only to the delivery and the log.
///
/// `@unchecked Sendable` (restated from the base class): every stored property is an
/// immutable Sendable value except `state`, which is only touched under its lock.
public final class DecryptingServiceExtension: UNNotificationServiceExtension, @unchecked Sendable {
    private struct State {
        var best: UNNotificationContent
        var outcome: NotificationOutcome = .original
        var reason = FallbackReason.timeWillExpire
        var detail = "the expiry call came before the payload was decrypted"
        var handler: ContentHandler?
        var delivered = false
    }

    private let configuration: DecryptingServiceConfiguration
    private let context: ExtensionContext
    private let state = Locked<State>(State(best: UNNotificationContent()))
    private let cancellation = DownloadCancellation()

    /// Creates an instance for one notification.
    /// - Parameters:
    ///   - configuration: app id, key provider, codec, locale, container.
    ///   - context: the host's context (logger, expiry time).
    public init(configuration: DecryptingServiceConfiguration, context: ExtensionContext) {
        self.configuration = configuration
        self.context = context
        super.init()
    }

    /// A factory for ``ExtensionHost`` making a fresh instance per notification.
    public static func factory(_ configuration: DecryptingServiceConfiguration) -> @Sendable (ExtensionContext) -> UNNotificationServiceExtension {
        { context in DecryptingServiceExtension(configuration: configuration, context: context) }
    }

    /// Decrypts, localizes and attaches media, then calls the content handler once.
    public override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: ContentHandler) {
        state.withLock {
            $0.best = request.content
            $0.handler = contentHandler
        }
        guard let decrypted = decrypt(request) else {
            deliver()
            return
        }
        if let media = decrypted.media {
            attachMedia(MediaDownload(media))
        }
        deliver()
    }

    /// Cancels the media download and delivers the best attempt content now.
    public override func serviceExtensionTimeWillExpire() {
        state.withLock { s in
            if s.outcome == .decryptedWithoutMedia, s.reason == Self.mediaPendingReason {
                s.reason = FallbackReason.mediaTimeWillExpire
                s.detail = "the extension's time ran out before the media download finished"
            }
        }
        // Deliver first, then cancel: the cancelled download's own error must not replace the
        // best attempt's reason between the two (it lost that race now and then on 2 busy cores).
        deliver()
        cancellation.cancel()
    }

    private static let mediaPendingReason = "media:downloading"

    /// Sets the best attempt content.
    private func update(_ content: UNNotificationContent? = nil, outcome: NotificationOutcome, reason: String, detail: String) {
        state.withLock { s in
            guard !s.delivered else { return }
            if let content { s.best = content }
            s.outcome = outcome
            s.reason = reason
            s.detail = detail
        }
    }

    /// Falls back to the original content (still the best attempt) with a reason.
    private func fallBack(_ reason: String, _ detail: String) {
        update(outcome: .original, reason: reason, detail: detail)
    }

    /// Calls the content handler with the best attempt, once.
    private func deliver() {
        let taken = state.withLock { s -> (ContentHandler, ContentHandler.Delivery)? in
            guard !s.delivered, let handler = s.handler else { return nil }
            s.delivered = true
            return (handler, ContentHandler.Delivery(content: s.best, outcome: s.outcome, reason: s.reason, detail: s.detail))
        }
        guard let (handler, d) = taken else { return }
        handler.deliver(d.content, outcome: d.outcome, reason: d.reason, detail: d.detail)
    }

    private func log(_ stage: String, _ event: String, since start: ContinuousClock.Instant, _ fields: [(key: String, value: String)] = []) {
        context.logger.log(DiagnosticEntry(stage: stage, event: event,
                                           fields: [("durationMs", formatMilliseconds(millisecondsSince(start)))] + fields))
    }

    private static func describe(_ error: any Error) -> String { SealedMessageReceiver.describe(error) }

    /// The detail of an envelope failure, one per cause: a malformed envelope, the sender
    /// policy (`downgradeRefused`: a base-mode payload once a sender key is pinned;
    /// `unknownSenderKey`: a sender key id the app has not pinned), or the pinned sender keys
    /// not readable (a keychain or key error of the pin items).
    static func envelopeDetail(_ error: any Error) -> String {
        let why = describe(error)
        guard let e = error as? FormatError else { return "the app's device key or pinned sender keys could not be read: \(why)" }
        switch e.code {
        case .downgradeRefused:
            return "refused a base-mode payload: the app pinned a sender key, so only auth-mode payloads by a pinned sender open (downgrade check): \(why)"
        case .unknownSenderKey:
            return "the payload's sender key is not pinned for this app (pin it with push-keys device pin-sender): \(why)"
        default:
            return "the payload's envelope is malformed: \(why)"
        }
    }

    /// Key lookup, open, checks and localization. Returns the plaintext when the best attempt
    /// is now decrypted content, `nil` when it stays the original (reason set).
    private func decrypt(_ request: UNNotificationRequest) -> PushNotification? {
        // keyLookup, open, check: the stages the app's background handler runs too.
        let plaintext: PushNotification
        switch SealedMessageReceiver(configuration: configuration, logger: context.logger).receive(request.payload, expecting: .display) {
        case .refused(let reason, let detail):
            fallBack(reason, detail)
            return nil
        case .opened(let opened):
            plaintext = opened
        }

        let start = ContinuousClock.now
        let texts = plaintext.localized(for: configuration.locale)
        var content = request.content.mutableCopy()
        content.title = texts.title ?? ""
        content.subtitle = texts.subtitle ?? ""
        content.body = texts.body ?? ""
        if content.fields.hasNoReadableText {
            log("localize", "blank", since: start)
            fallBack(FallbackReason.blankContent, "decrypted title, subtitle and body are all empty or white space")
            return nil
        }
        content.setSealedUserInfo(plaintext.data, id: plaintext.id, payload: request.payload)
        content.applyPresentation(plaintext.aps)
        log("localize", "ok", since: start, [("locale", texts.locale ?? "default"),
                                              ("dataMemberCount", String(plaintext.data?.count ?? 0))])
        if plaintext.media != nil {
            update(UNNotificationContent(content), outcome: .decryptedWithoutMedia, reason: Self.mediaPendingReason,
                   detail: "decrypted; the media download had not finished")
        } else {
            update(UNNotificationContent(content), outcome: .decrypted, reason: FallbackReason.decrypted, detail: "decrypted")
        }
        return plaintext
    }

    /// Download and attach; the best attempt becomes decrypted-with-media only on success.
    private func attachMedia(_ media: MediaDownload) {
        guard let container = configuration.containerDirectory else {
            context.logger.log(DiagnosticEntry(stage: "download", event: "skipped", fields: [("reason", "no App Group container")]))
            update(outcome: .decryptedWithoutMedia, reason: FallbackReason.mediaNoContainer,
                   detail: "media named, but the extension has no App Group container")
            return
        }
        let remaining = context.secondsUntilExpiry()
        let timeout = remaining - MediaDownloader.safetyMarginSeconds(forRemaining: remaining)
        let downloader = MediaDownloader(containerDirectory: container, allowInsecureLoopback: configuration.allowInsecureLoopback,
                                         logger: context.logger)
        let file: DownloadedMedia
        do {
            file = try downloader.download(media, timeoutSeconds: timeout, cancellation: cancellation)
        } catch {
            update(outcome: .decryptedWithoutMedia, reason: "media:\((error as? ExtensionError)?.code.name ?? "error")",
                   detail: "decrypted; media failed: \(Self.describe(error))")
            return
        }
        let start = ContinuousClock.now
        do {
            let attachment = try UNNotificationAttachment(identifier: "media", url: file.fileURL)
            var content = state.withLock { $0.best }.mutableCopy()
            content.attachments = [attachment]
            log("attach", "ok", since: start, [("type", attachment.type), ("byteCount", String(attachment.byteCount))])
            update(UNNotificationContent(content), outcome: .decrypted, reason: FallbackReason.mediaAttached,
                   detail: "decrypted; media attached")
        } catch {
            try? FileManager.default.removeItem(at: file.fileURL)
            log("attach", "failed", since: start, [("reason", Self.describe(error))])
            update(outcome: .decryptedWithoutMedia, reason: "media:\((error as? ExtensionError)?.code.name ?? "error")",
                   detail: "decrypted; the attachment was refused: \(Self.describe(error))")
        }
    }
}
