public import PushSealServer
import PushSealHTTP
import PushSealJSON
public import PushSealRegistry
import PushSealSystem

/// The production ``GatewayBackend``: PushSealServer's store, sealer and outbox on the
/// PostgreSQL registry (every instance on one database).
public final class ServerBackend: GatewayBackend {
    /// The opened store.
    public let store: ServerStore
    /// The registry under it (API keys, readiness).
    public let registry: PostgresKeyStore
    /// The app (bundle id) this gateway registers and seals for.
    public let appID: String

    /// A backend over an opened registry.
    /// - Parameters:
    ///   - registry: the registry (opened with the KEK).
    ///   - appID: the app's bundle id.
    public init(registry: PostgresKeyStore, appID: String) {
        self.registry = registry
        self.store = ServerStore(store: registry)
        self.appID = appID
    }

    public func enqueue(_ submissions: [NotificationSubmission], idempotencyKey: String?, bodySHA256: [UInt8],
                        answer: @Sendable ([SubmissionResult]) -> [UInt8]) throws -> EnqueueOutcome {
        throw HTTPError.unavailable("the outbox is not part of this build yet")
    }

    public func notificationState(id: String) throws -> NotificationState? {
        throw HTTPError.unavailable("the outbox is not part of this build yet")
    }

    public func registerDevice(_ body: [UInt8], recipient: String) throws -> (recipient: String, created: Bool) {
        let upload: RegistrationUpload
        do {
            upload = try RegistrationUpload(body: body, expectedAppID: appID)
        } catch let e as ServerError {
            throw HTTPError(400, "invalidRegistration", e.reason)
        } catch let e as KeysError {
            throw HTTPError(e.code == .wrongAppID ? 422 : 400, "invalidRegistration", e.reason)
        }
        do {
            let done = try store.importRegistration(upload, recipient: recipient, nowMilliseconds: unixTimeMilliseconds())
            return (recipient, done.added)
        } catch let e as KeysError where e.code == .duplicateKeyID || e.code == .invalidName || e.code == .timeOutOfRange {
            throw HTTPError(409, "registrationConflict", e.reason)
        } catch let e as KeysError where e.code.name == "staleRegistration" {
            throw HTTPError(409, "staleRegistration", e.reason)
        }
    }

    public func forgetDevice(appID requested: String?, recipient: String) throws -> Bool {
        let app = requested ?? appID
        guard app == appID else { return false }
        let registrations = try store.registrationStore()
        let tokens = try store.deviceTokenStore()
        var found = false
        let now = unixTimeMilliseconds()
        if let set = try? registrations.registrations(appID: app, recipient: recipient) {
            for r in set.registrations where r.status == .primary {
                _ = try registrations.revokeRegistration(appID: app, recipient: recipient, keyID: r.keyID, now: now / 1000)
                found = true
            }
        }
        let held = try tokens.deviceTokens(appID: app, recipient: recipient)
        if !held.isEmpty {
            _ = try tokens.invalidateDeviceTokens(held.map { ($0.token, now + 1) }, appID: app)
            found = true
        }
        return found
    }

    public func senderKeys(appID requested: String) throws -> JSONValue? {
        guard requested == appID else { return nil }
        let keys = try store.registrationStore().publishedSenderKeys(appID: appID, now: unixTimeSeconds())
        return .object(JSONObject([("appId", .string(appID)), ("senderKeys", .array(keys.map { .object($0.record) }))]))
    }

    public func revocations(appID requested: String) throws -> JSONValue? {
        guard requested == appID else { return nil }
        let revoked = try store.registrationStore().senderKeys(appID: appID).filter { $0.status == .disabled || $0.status == .destroyed }
        let records: [JSONValue] = revoked.isEmpty ? [] : [
            .object(JSONObject([("format", .string(RevocationRecord.format)), ("version", .integer(1)), ("appId", .string(appID)),
                                ("keyIds", .array(revoked.map { .string($0.keyID) })),
                                ("revokedAt", .integer(revoked.compactMap(\.retiredAt).max() ?? revoked.map(\.createdAt).max() ?? 0))])),
        ]
        return .object(JSONObject([("appId", .string(appID)), ("revocations", .array(records))]))
    }

    public func readiness() -> Readiness {
        do {
            try registry.checkReachable()
            return Readiness(ready: true, checks: [("database", "ok")])
        } catch let e as RegistryError {
            return Readiness(ready: false, checks: [("database", e.code.name)])
        } catch {
            return Readiness(ready: false, checks: [("database", "error")])
        }
    }

    public func metricsSnapshot() -> BackendMetrics { BackendMetrics() }
}
