public import PushSealJSON
import PushSealWire

/// The app's background handler for a sealed retract (FORMAT.md §5.1): the emulation of what
/// the app does in `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`
/// (Examples/iOS/AppDelegate.swift is the iOS reference).
///
/// It opens the payload with the same key items and rules as the extension
/// (``SealedMessageReceiver``: key by key id, pinned sender keys in auth mode, a retired key,
/// `exp`, the replay guard), accepts only a `retract`, and removes the delivered notifications
/// whose decrypted `id` is listed (``DeliveredNotificationCenter/removeDelivered(ids:)``). It
/// never shows anything. A retract that does not open removes nothing and says why (the
/// extension's reason tokens, docs/fallback.md); ids that match nothing are fine (already gone).
public struct RetractHandler: Sendable {
    /// What handling one background push did.
    public struct Result: Sendable {
        /// `retracted` (opened; ``removed`` may be empty) or `refused` (nothing removed).
        public let outcome: Outcome
        /// A stable token: `retracted`, or the reason of the refusal (``FallbackReason``:
        /// `authenticationFailed`, `replayed`, `expired`, `unknownSenderKey`, `wrongKind:display`,
        /// `notificationCenterUnavailable`, …).
        public let reason: String
        /// A human detail (never plaintext beyond the ids).
        public let detail: String
        /// The notifications removed, oldest first.
        public let removed: [DeliveredNotificationCenter.Delivered]
        /// The listed ids that matched no delivered notification.
        public let notFound: [String]

        /// The `UIBackgroundFetchResult` the app passes to its completion handler: `newData`
        /// when something was removed, `noData` when nothing was (or the retract was refused),
        /// `failed` when the notification center could not be used.
        public var fetchResult: String {
            if reason == RetractHandler.centerUnavailable { return "failed" }
            return removed.isEmpty ? "noData" : "newData"
        }
    }

    /// ``Result/outcome``.
    public enum Outcome: String, Sendable {
        /// The retract opened and was applied.
        case retracted
        /// The payload did not open as a retract: nothing removed.
        case refused
    }

    /// The reason when the notification center cannot be read or written.
    public static let centerUnavailable = "notificationCenterUnavailable"

    let configuration: DecryptingServiceConfiguration
    let logger: any DiagnosticLogger

    /// Creates the handler.
    /// - Parameters:
    ///   - configuration: the same configuration as the extension's (app id, key provider and
    ///     opener, App Group container for the replay guard and the notification center).
    ///   - logger: receives one line per stage (never plaintext).
    public init(configuration: DecryptingServiceConfiguration, logger: any DiagnosticLogger = NullLogger()) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Handles one background push.
    /// - Parameter payload: the APNs payload as delivered.
    /// - Returns: what was removed, or why nothing was.
    public func handle(_ payload: JSONValue) -> Result {
        // No App Group container, no notification center (and no replay cache): nothing can be
        // removed, so the payload is not even opened.
        guard let container = configuration.containerDirectory else {
            return Result(outcome: .refused, reason: Self.centerUnavailable,
                          detail: "nothing removed: the app has no App Group container, so no notification center", removed: [], notFound: [])
        }
        let plaintext: PushNotification
        switch SealedMessageReceiver(configuration: configuration, logger: logger).receive(payload, expecting: .retract) {
        case .refused(let reason, let detail):
            return Result(outcome: .refused, reason: reason, detail: "nothing removed: \(detail)", removed: [], notFound: [])
        case .opened(let opened):
            plaintext = opened
        }
        let removed: [DeliveredNotificationCenter.Delivered]
        do {
            removed = try DeliveredNotificationCenter(containerDirectory: container).removeDelivered(ids: plaintext.ids)
        } catch {
            return Result(outcome: .refused, reason: Self.centerUnavailable,
                          detail: "nothing removed: \(SealedMessageReceiver.describe(error))", removed: [], notFound: [])
        }
        let found = Set(removed.compactMap(\.id))
        var notFound: [String] = []
        for id in plaintext.ids where !found.contains(id) && !notFound.contains(id) { notFound.append(id) }
        logger.log(DiagnosticEntry(stage: "retract", event: "ok", fields: [("removedCount", String(removed.count)), ("notFoundCount", String(notFound.count))]))
        return Result(outcome: .retracted, reason: "retracted",
                      detail: "removed \(removed.count) delivered notification(s); \(notFound.count) id(s) matched none (already gone)",
                      removed: removed, notFound: notFound)
    }
}
