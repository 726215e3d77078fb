public import Dispatch

/// What the user ends up seeing, as the host and the decrypting service report it.
public enum NotificationOutcome: String, Sendable, Hashable, CaseIterable {
    /// Decrypted content, with its media attached when it had any.
    case decrypted
    /// Decrypted content without the media it named (download or attachment failed, or time ran out).
    case decryptedWithoutMedia
    /// The original content as delivered by APNs (the fallback text).
    case original
    /// The extension never ran (not eligible); the system shows the alert as sent, or nothing.
    case notInvoked
    /// An extension's own content, delivered without a service-specific outcome.
    case delivered
}

/// What the host gives each extension instance it creates (an emulation extra: on iOS the
/// extension only knows it has about 30 seconds).
public struct ExtensionContext: Sendable {
    /// Where the instance logs; the host collects these lines into its result.
    public let logger: any DiagnosticLogger
    /// The whole budget, in seconds.
    public let budgetSeconds: Double
    /// When the host calls ``UNNotificationServiceExtension/serviceExtensionTimeWillExpire()``.
    public let expiry: DispatchTime
    /// When the budget ends and the host shows the original content if nothing was delivered.
    public let deadline: DispatchTime

    /// Creates a context.
    /// - Parameters:
    ///   - logger: the diagnostics sink.
    ///   - budgetSeconds: the budget in seconds.
    ///   - expiry: the moment the expiry call happens.
    ///   - deadline: the moment the budget ends.
    public init(logger: any DiagnosticLogger, budgetSeconds: Double, expiry: DispatchTime, deadline: DispatchTime) {
        self.logger = logger
        self.budgetSeconds = budgetSeconds
        self.expiry = expiry
        self.deadline = deadline
    }

    /// Seconds left until the expiry call, 0 when it has passed.
    public func secondsUntilExpiry() -> Double {
        let now = DispatchTime.now().uptimeNanoseconds
        let end = expiry.uptimeNanoseconds
        return end > now ? Double(end - now) / 1e9 : 0
    }
}

/// The content handler an extension calls exactly once with the content to show.
///
/// The host accepts the first call and drops (and logs) any later one. Callable with
/// ``UNNotificationContent`` or ``UNMutableNotificationContent``, as on iOS:
/// `contentHandler(bestAttemptContent)`.
public struct ContentHandler: Sendable {
    /// What one call hands the host (an emulation extra besides the content).
    public struct Delivery: Sendable {
        /// The content to show.
        public let content: UNNotificationContent
        /// Which fallback it is.
        public let outcome: NotificationOutcome
        /// A short, stable reason token, e.g. `decrypted`, `unknownKey`,
        /// `keychain:errSecInteractionNotAllowed(-25308)` (docs/fallback.md lists them).
        public let reason: String
        /// A human explanation for logs and tools (no key bytes, plaintext or ciphertext); may be empty.
        public let detail: String

        /// Creates a delivery.
        public init(content: UNNotificationContent, outcome: NotificationOutcome, reason: String, detail: String = "") {
            self.content = content
            self.outcome = outcome
            self.reason = reason
            self.detail = detail
        }
    }

    let sink: @Sendable (Delivery) -> Bool

    /// Wraps a sink; the sink returns true when it accepted the call (the first one).
    /// - Parameter sink: receives content, outcome and reason.
    public init(_ sink: @escaping @Sendable (UNNotificationContent, NotificationOutcome, String) -> Bool) {
        self.sink = { sink($0.content, $0.outcome, $0.reason) }
    }

    /// Wraps a sink receiving the whole ``Delivery`` (detail included); it returns true when it
    /// accepted the call (the first one).
    public init(delivery sink: @escaping @Sendable (Delivery) -> Bool) {
        self.sink = sink
    }

    /// Delivers `content` (outcome ``NotificationOutcome/delivered``).
    public func callAsFunction(_ content: UNNotificationContent) {
        _ = sink(Delivery(content: content, outcome: .delivered, reason: ""))
    }

    /// Delivers a snapshot of `content` (outcome ``NotificationOutcome/delivered``).
    public func callAsFunction(_ content: UNMutableNotificationContent) {
        _ = sink(Delivery(content: UNNotificationContent(content), outcome: .delivered, reason: ""))
    }

    /// Delivers `content` and tells the host which fallback it is and why (an emulation extra).
    /// - Parameters:
    ///   - content: what to show.
    ///   - outcome: which fallback.
    ///   - reason: a stable reason token.
    ///   - detail: a human explanation (default empty).
    /// - Returns: true if this was the first call and the host took it; false if dropped.
    @discardableResult
    public func deliver(_ content: UNNotificationContent, outcome: NotificationOutcome, reason: String, detail: String = "") -> Bool {
        sink(Delivery(content: content, outcome: outcome, reason: reason, detail: detail))
    }
}

/// An emulated `UNNotificationServiceExtension`: subclass it and override both methods.
///
/// The host creates one fresh instance per notification and calls ``didReceive(_:withContentHandler:)``
/// on its own thread, then ``serviceExtensionTimeWillExpire()`` from another thread shortly
/// before the budget ends if nothing was delivered yet. Call the content handler exactly once.
///
/// `@unchecked Sendable`: the base class has no stored state. Subclasses are reached from two
/// threads (didReceive and the expiry call), exactly as on iOS, and must guard their own
/// mutable state with a lock.
open class UNNotificationServiceExtension: @unchecked Sendable {
    /// Creates an instance.
    public init() {}

    /// Called once with the notification; call `contentHandler` once with the content to show.
    /// The default delivers the request's content unchanged.
    /// - Parameters:
    ///   - request: the notification as delivered by APNs.
    ///   - contentHandler: takes the content to display; only its first call counts.
    open func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: ContentHandler) {
        contentHandler(request.content)
    }

    /// Called shortly before the budget ends if the content handler was not called yet:
    /// deliver the best attempt content now. The default does nothing (the host then shows
    /// the original content when the budget ends).
    open func serviceExtensionTimeWillExpire() {}
}
