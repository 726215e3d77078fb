public import PushSealAPNs
import PushSealKeyRecords
public import PushSealServerKeys
public import PushSealSender
import PushSealSystem

/// Seal and send at once, without an outbox: looks the recipient's device token up, seals for
/// the recipient, sends through ``APNsClient/send(_:)`` and applies a dead-token answer to the
/// store. For a process that must not lose an accepted notification use the outbox instead
/// (issue 23); this is the composition the CLIs' pipeline does in one process.
///
/// Token hygiene: a 410 removes the token when it was registered before the 410's timestamp,
/// in the call that got it; a `BadDeviceToken` only once the client's ``InvalidationGuard`` lets
/// it through (applied at the next ``send(_:to:)`` or ``applyPendingInvalidations()``).
public final class NotificationDispatcher: Sendable {
    /// What one send did.
    public struct Delivery: Sendable {
        /// The device token sent to.
        public let deviceToken: DeviceToken
        /// APNs' final answer.
        public let outcome: APNsOutcome
        /// What the answer did to the stored token (`nil` when it was not a dead-token answer).
        public let invalidation: DeviceTokenInvalidation?
    }

    /// The store (keys, registrations, device tokens).
    public let store: ServerStore
    /// The sealer.
    public let sealer: NotificationSealer
    /// The APNs client (awaitable; made by this dispatcher).
    public let client: APNsClient
    /// The environment of the tokens sent to (the client's endpoint's).
    public let environment: DeviceTokenEnvironment
    private let pending = Locked<[APNsInvalidation]>([])

    /// Makes the APNs client of `apns` for the tokens of `environment`.
    /// - Parameters:
    ///   - tokens: the key's provider token cache, when shared with other clients; `nil` makes one.
    /// - Throws: `APNsError` `.badProviderKey`, `.badEndpoint`, `.transportUnavailable`.
    public init(store: ServerStore, sealer: NotificationSealer, apns: APNsProviderConfiguration,
                environment: DeviceTokenEnvironment, tokens: ProviderTokenCache? = nil) throws {
        self.store = store
        self.sealer = sealer
        self.environment = environment
        let pending = self.pending
        client = try APNsClient(configuration: apns.client, tokens: try tokens ?? apns.tokenCache(), onInvalidation: { i in
            // 410s are applied by send(_:to:) from their outcome; the guard's BadDeviceToken here.
            if i.timestampMilliseconds == nil { pending.withLock { $0.append(i) } }
        })
    }

    /// Seals `request` for `recipient` and sends it to the recipient's token of ``environment``.
    /// - Returns: the delivery (APNs' outcome; a dead-token answer already applied).
    /// - Throws: ``ServerError`` `.noDeviceToken`; `SenderError` from the seal (`.unknownRecipient`,
    ///   `.keyUnavailable`, `.sealLimitReached`, `.payloadTooLarge`, …); the store's errors.
    public func send(_ request: SealRequest, to recipient: String) async throws -> Delivery {
        try applyPendingInvalidations()
        let tokens = try store.deviceTokenStore().deviceTokens(appID: sealer.appID, recipient: recipient)
        guard let token = tokens.first(where: { $0.environment == environment }) else {
            throw ServerError(.noDeviceToken, "\(sealer.appID)/\(recipient) has no \(environment.rawValue) device token")
        }
        let sealed = try sealer.seal(request, for: recipient)
        let outcome = await client.send(APNsNotification(sealed: sealed, deviceToken: token.token))
        var result: DeviceTokenInvalidation?
        if outcome.kind == .unregistered, let ts = outcome.timestampMilliseconds {
            result = try store.invalidateDeviceTokens([(token.token, ts)], appID: sealer.appID).first
        }
        return Delivery(deviceToken: token, outcome: outcome, invalidation: result)
    }

    /// Applies the `BadDeviceToken` invalidations the client's guard released since the last call.
    /// - Returns: their results.
    /// - Throws: the store's errors (they stay pending then).
    @discardableResult
    public func applyPendingInvalidations() throws -> [DeviceTokenInvalidation] {
        let items = pending.withLock { p -> [APNsInvalidation] in defer { p = [] }; return p }
        guard !items.isEmpty else { return [] }
        do {
            return try store.apply(items, appID: sealer.appID, nowMilliseconds: unixTimeMilliseconds())
        } catch {
            pending.withLock { $0 = items + $0 }
            throw error
        }
    }

    /// Sends nothing more: waits for the outcomes in flight, closes the connections. Call once.
    public func finish() {
        client.finish()
    }
}
