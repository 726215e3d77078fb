import PushSealJSON
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealSystem
import PushSealWire

/// Runs Notification Service Extensions the way iOS does, one notification at a time.
///
/// For each request: checks eligibility (``Eligibility``); creates a fresh instance from the
/// factory; calls `didReceive` on a new thread; if no content arrived by
/// `budget − expiryMargin` calls `serviceExtensionTimeWillExpire()`; if still none by the end
/// of the budget, shows the original content. The first content-handler call wins; any later
/// call is dropped and logged (`stage=host event=dropped`). ``run(_:)`` returns as soon as
/// content is delivered; the instance may keep running in the background (it should stop).
///
/// Expiry margin: `min(1 s, 10 % of the budget)` — 1 s for the 30 s default (iOS gives about
/// that), 0.3 s for a 3 s budget.
public struct ExtensionHost: Sendable {
    /// The result of one notification.
    public struct Result: Sendable {
        /// Which fallback the user sees.
        public let outcome: NotificationOutcome
        /// The displayed content; `nil` when nothing is shown (background push).
        public let content: UNNotificationContent?
        /// Why this outcome, as a stable token (docs/fallback.md): the extension's reason, the
        /// eligibility reason (e.g. `mutableContent:true`), or `extensionTimedOut`.
        public let reason: String
        /// The reason in words, for logs and tools (never key bytes, plaintext or ciphertext).
        public let detail: String
        /// Milliseconds from the start of ``run(_:)`` to the delivery.
        public let elapsedMilliseconds: Double
        /// True when the host called `serviceExtensionTimeWillExpire()`.
        public let expiryCalled: Bool
        /// The diagnostic lines logged up to the delivery (host and extension), in order.
        public let log: [String]
    }

    /// The budget in seconds (iOS: about 30).
    public let budgetSeconds: Double
    /// Where every diagnostic line also goes (besides the result's ``Result/log``).
    public let logger: any DiagnosticLogger
    /// The system's attachment store the delivered attachments are moved into, as iOS does
    /// (``SystemAttachmentStore``), or `nil`: the files stay where the extension put them.
    public let attachmentStore: SystemAttachmentStore?
    private let makeExtension: @Sendable (ExtensionContext) -> UNNotificationServiceExtension

    /// The default budget: 30 seconds, as iOS.
    public static let defaultBudgetSeconds = 30.0

    /// The largest budget a host takes: one day (86,400 s); a longer one counts as this, so the
    /// deadline arithmetic in nanoseconds can never overflow.
    public static let maxBudgetSeconds = 86_400.0

    /// Creates a host.
    /// - Parameters:
    ///   - budgetSeconds: seconds the extension has per notification (default 30; negative counts
    ///     as 0, more than ``maxBudgetSeconds`` as that, NaN or infinity as the default).
    ///   - logger: receives every diagnostic line (default: discard).
    ///   - attachmentStore: where delivered attachments are moved (default `nil`: left in place).
    ///   - makeExtension: makes a fresh instance per notification.
    public init(budgetSeconds: Double = ExtensionHost.defaultBudgetSeconds, logger: any DiagnosticLogger = NullLogger(),
                attachmentStore: SystemAttachmentStore? = nil,
                makeExtension: @escaping @Sendable (ExtensionContext) -> UNNotificationServiceExtension) {
        self.budgetSeconds = budgetSeconds.isFinite ? min(max(0, budgetSeconds), ExtensionHost.maxBudgetSeconds) : ExtensionHost.defaultBudgetSeconds
        self.logger = logger
        self.attachmentStore = attachmentStore
        self.makeExtension = makeExtension
    }

    /// How long before the end of a budget the expiry call comes: `min(1 s, 10 % of budget)`.
    /// - Parameter budgetSeconds: the budget in seconds.
    /// - Returns: the margin in seconds.
    public static func expiryMarginSeconds(forBudget budgetSeconds: Double) -> Double {
        min(1.0, budgetSeconds * 0.1)
    }

    /// Runs one notification to its delivery, blocking the calling thread for at most the budget.
    /// - Parameter request: the notification; its `payload` decides eligibility.
    /// - Returns: outcome, delivered content, reason, elapsed milliseconds and log lines.
    public func run(_ request: UNNotificationRequest) -> Result {
        let start = ContinuousClock.now
        let collector = CollectingLogger(forwardingTo: logger)

        if case .notEligible(let reason, let detail) = Eligibility(payload: request.payload) {
            let hasAlert = Eligibility.hasNonEmptyAlert(request.payload["aps"]?["alert"])
            collector.log(DiagnosticEntry(stage: "host", event: "notInvoked", fields: [
                ("reason", reason), ("shows", hasAlert ? "alertAsSent" : "nothing")]))
            return Result(outcome: .notInvoked, content: hasAlert ? request.content : nil, reason: reason, detail: detail,
                          elapsedMilliseconds: millisecondsSince(start), expiryCalled: false, log: collector.lines)
        }

        let budgetNanoseconds = UInt64(budgetSeconds * 1e9)
        let marginNanoseconds = UInt64(Self.expiryMarginSeconds(forBudget: budgetSeconds) * 1e9)
        let now = DispatchTime.now()
        let deadline = now + .nanoseconds(Int(budgetNanoseconds))
        let expiry = now + .nanoseconds(Int(budgetNanoseconds - marginNanoseconds))
        let context = ExtensionContext(logger: collector, budgetSeconds: budgetSeconds, expiry: expiry, deadline: deadline)

        let run = HostRun(start: start, logger: collector)
        let handler = ContentHandler(delivery: { d in
            run.accept(d.content, outcome: d.outcome, reason: d.reason, detail: d.detail, by: "contentHandler")
        })
        let instance = makeExtension(context)
        collector.log(DiagnosticEntry(stage: "host", event: "didReceive", fields: [
            ("budgetMs", formatMilliseconds(budgetSeconds * 1000)),
            ("expiryMarginMs", formatMilliseconds(Double(marginNanoseconds) / 1e6))]))
        // Signalled when didReceive is entered: the expiry call must never overtake it (on a
        // loaded machine the worker thread may not run before the expiry time).
        let entered = DispatchSemaphore(value: 0)
        let started = startDetachedThread {
            entered.signal()
            instance.didReceive(request, withContentHandler: handler)
        }
        if !started {
            // No thread for the extension: it cannot run; the original content is shown.
            entered.signal()
            run.accept(request.content, outcome: .original, reason: "extensionNotStarted",
                       detail: "no thread could be created for the extension", by: "host")
        }

        var expiryCalled = false
        if run.delivered.wait(timeout: expiry) == .timedOut {
            expiryCalled = true
            collector.log(DiagnosticEntry(stage: "host", event: "timeWillExpire",
                                          fields: [("elapsedMs", formatMilliseconds(millisecondsSince(start)))]))
            DispatchQueue.global().async {
                entered.wait()
                instance.serviceExtensionTimeWillExpire()
            }
            if run.delivered.wait(timeout: deadline) == .timedOut {
                run.accept(request.content, outcome: .original, reason: "extensionTimedOut",
                           detail: "the extension did not call its content handler within the \(budgetSeconds) s budget",
                           by: "budgetEnd")
            }
        }
        let delivery = storeAttachments(of: run.firstDelivery(), identifier: request.identifier, logger: collector)
        return Result(outcome: delivery.outcome, content: delivery.content, reason: delivery.reason, detail: delivery.detail,
                      elapsedMilliseconds: delivery.elapsedMilliseconds, expiryCalled: expiryCalled, log: collector.lines)
    }

    /// Moves the delivered attachments into ``attachmentStore`` (iOS moves them when the content
    /// is handed back). When that fails the content is shown without them — once: no retry, no
    /// second run of the extension — as decrypted without media (`media:storeFailed`) when it
    /// was decrypted.
    private func storeAttachments(of delivery: HostRun.Delivery, identifier: String, logger: CollectingLogger) -> HostRun.Delivery {
        guard let store = attachmentStore, !delivery.content.attachments.isEmpty else { return delivery }
        var content = delivery.content.mutableCopy()
        do {
            content.attachments = try store.store(delivery.content.attachments, identifier: identifier)
            logger.log(DiagnosticEntry(stage: "host", event: "attachmentsStored", fields: [("count", String(content.attachments.count))]))
            return HostRun.Delivery(content: UNNotificationContent(content), outcome: delivery.outcome, reason: delivery.reason,
                                    detail: delivery.detail, elapsedMilliseconds: delivery.elapsedMilliseconds)
        } catch {
            let why = (error as? ExtensionError)?.reason ?? String(describing: error)
            logger.log(DiagnosticEntry(stage: "host", event: "attachmentStoreFailed", fields: [("reason", why)]))
            content.attachments = []
            let decrypted = delivery.outcome == .decrypted
            return HostRun.Delivery(content: UNNotificationContent(content), outcome: decrypted ? .decryptedWithoutMedia : delivery.outcome,
                                    reason: decrypted ? FallbackReason.mediaStoreFailed : delivery.reason,
                                    detail: "the attachment was not shown: \(why)",
                                    elapsedMilliseconds: delivery.elapsedMilliseconds)
        }
    }

    /// Runs one notification without blocking the caller's task (``run(_:)`` on a new thread).
    public func run(_ request: UNNotificationRequest) async -> Result {
        await withCheckedContinuation { continuation in
            let request = request
            if !startDetachedThread({ continuation.resume(returning: self.run(request)) }) {
                DispatchQueue.global().async { continuation.resume(returning: self.run(request)) }
            }
        }
    }
}

/// The shared state of one notification's run: the first delivery, and a semaphore signalled
/// when it happens. Sendable through its lock.
final class HostRun: Sendable {
    struct Delivery: Sendable {
        let content: UNNotificationContent
        let outcome: NotificationOutcome
        let reason: String
        let detail: String
        let elapsedMilliseconds: Double
    }

    private let state = Locked<Delivery?>(nil)
    /// Signalled once, on the first accepted delivery.
    let delivered = DispatchSemaphore(value: 0)
    private let start: ContinuousClock.Instant
    private let logger: any DiagnosticLogger

    init(start: ContinuousClock.Instant, logger: any DiagnosticLogger) {
        self.start = start
        self.logger = logger
    }

    /// Takes the first delivery; drops and logs any later one.
    /// - Returns: true when this call was the first.
    @discardableResult
    func accept(_ content: UNNotificationContent, outcome: NotificationOutcome, reason: String, detail: String = "", by source: String) -> Bool {
        let elapsed = millisecondsSince(start)
        let first = state.withLock { current -> Bool in
            guard current == nil else { return false }
            current = Delivery(content: content, outcome: outcome, reason: reason, detail: detail, elapsedMilliseconds: elapsed)
            return true
        }
        if first {
            logger.log(DiagnosticEntry(stage: "host", event: "delivered", fields: [
                ("by", source), ("outcome", outcome.rawValue), ("reason", reason), ("elapsedMs", formatMilliseconds(elapsed)),
                ("attachments", String(content.attachments.count)), ("blank", String(content.isBlank))]))
            delivered.signal()
        } else {
            logger.log(DiagnosticEntry(stage: "host", event: "dropped", fields: [
                ("by", source), ("elapsedMs", formatMilliseconds(elapsed)),
                ("reason", "content already delivered; only the first call counts")]))
        }
        return first
    }

    /// The first delivery. Call only after one happened.
    func firstDelivery() -> Delivery {
        state.withLock { $0 } ?? Delivery(content: UNNotificationContent(), outcome: .original, reason: "noDelivery", detail: "", elapsedMilliseconds: 0)
    }
}
