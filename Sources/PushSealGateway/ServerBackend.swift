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
    /// The outbox (accept side).
    public let outbox: Outbox
    /// The worker sending the outbox's rows, when this instance runs one.
    public let worker: OutboxWorker?

    /// A backend over an opened registry and its outbox.
    /// - Parameters:
    ///   - outbox: the outbox (its store is a registry).
    ///   - worker: the sending worker of this instance, if any (readiness reports it).
    /// - Throws: ``ServerError`` `.unsupportedStore` when the outbox's store is not a registry.
    public init(outbox: Outbox, worker: OutboxWorker?) throws {
        guard let registry = outbox.store.store as? PostgresKeyStore else {
            throw ServerError(.unsupportedStore, "the gateway needs a PostgreSQL registry")
        }
        self.registry = registry
        self.store = outbox.store
        self.appID = outbox.configuration.sealer.appID
        self.outbox = outbox
        self.worker = worker
    }

    public func enqueue(_ submissions: [NotificationSubmission], idempotency: (scope: String, key: String)?,
                        bodySHA256: [UInt8]) throws -> EnqueueAnswer {
        let acceptance: Outbox.Acceptance
        do {
            acceptance = try outbox.accept(submissions.map(\.item),
                                           idempotency: idempotency.map { (Outbox.IdempotencyKey(scope: $0.scope, key: $0.key), bodySHA256) },
                                           nowMs: unixTimeMilliseconds())
        } catch let e as ServerError where e.code == .idempotencyKeyReused {
            throw HTTPError(422, "idempotencyKeyReused", "this Idempotency-Key was used with a different body in the last 24 h")
        } catch let e as ServerError where e.code == .invalidIdempotencyKey {
            throw HTTPError.invalid(e.reason, field: "Idempotency-Key")
        } catch let e as RegistryError where e.code == .unavailable || e.code == .outcomeUnknown {
            throw HTTPError.unavailable("the database cannot be reached; nothing was queued unless a retry with the same Idempotency-Key says so")
        }
        let results: [SubmissionResult] = acceptance.items.map {
            switch $0 {
            case .queued(let id, _): return .queued(id: id)
            case .failed(_, let code, let message): return .refused(code: code, message: message)
            }
        }
        return EnqueueAnswer(results: results, body: acceptance.body, replayed: acceptance.replayed)
    }

    public func retract(_ ids: [String], single: Bool, idempotency: (scope: String, key: String)?, requestSHA256: [UInt8]) throws -> RetractAnswer {
        do {
            let done = try outbox.retract(ids, single: single,
                                          idempotency: idempotency.map { (Outbox.IdempotencyKey(scope: $0.scope, key: $0.key), requestSHA256) },
                                          nowMs: unixTimeMilliseconds())
            return RetractAnswer(results: done.results, body: done.body, replayed: done.replayed)
        } catch let e as ServerError where e.code == .idempotencyKeyReused {
            throw HTTPError(422, "idempotencyKeyReused", "this Idempotency-Key was used with a different request in the last 24 h")
        } catch let e as ServerError where e.code == .invalidIdempotencyKey {
            throw HTTPError.invalid(e.reason, field: "Idempotency-Key")
        } catch let e as ServerError where e.code.name == "notFound" {
            throw HTTPError.notFound(e.reason)
        } catch let e as ServerError where e.code.name == "notRetractable" {
            throw HTTPError(409, "notRetractable", e.reason)
        } catch let e as ServerError {
            throw HTTPError(422, e.code.name, e.reason)
        } catch let e as RegistryError where e.code == .unavailable || e.code == .outcomeUnknown {
            throw HTTPError.unavailable("the database cannot be reached; nothing was retracted unless a retry with the same Idempotency-Key says so")
        }
    }

    public func notificationState(id: String) throws -> NotificationState? {
        guard let s = try outbox.status(id: id), s.appID == appID else { return nil }
        return NotificationState(id: s.id, recipient: s.recipient, status: s.status, apnsID: s.apnsID, apnsUniqueID: s.apnsUniqueID,
                                 httpStatus: s.httpStatus, reason: s.reason, attempts: s.attempts, createdAtMs: s.createdAtMs,
                                 finishedAtMs: s.finishedAtMs)
    }

    /// - Throws: ``HTTPError`` 400 `invalidRequest` for a recipient the store cannot name.
    static func checkRecipient(_ recipient: String) throws {
        do {
            try KeyID.validateRecipient(recipient)
        } catch let e as KeysError {
            throw HTTPError.invalid("recipient: \(e.reason)", field: "recipient")
        }
    }

    public func registerDevice(_ body: [UInt8], recipient: String) throws -> (recipient: String, created: Bool, tokenReplaced: Bool) {
        try Self.checkRecipient(recipient)
        let upload: RegistrationUpload
        do {
            upload = try RegistrationUpload(body: body, expectedAppID: appID)
        } catch let e as ServerError {
            throw HTTPError(400, "invalidRegistration", e.reason)
        } catch let e as KeysError {
            throw HTTPError(e.code == .wrongAppID ? 422 : 400, "invalidRegistration", e.reason)
        }
        // A registration may not take a sender key's id (public, GET /v1/sender-keys): phones
        // apply a revocation to every key of a listed id, so a revoked registration named like
        // the sender key would have disabled everyone's pin where such a list is published
        // (push-keys revocations export; review of 2026-12-04).
        if try store.registrationStore().senderKeys(appID: appID).contains(where: { $0.keyID == upload.registration.keyID }) {
            throw HTTPError(409, "registrationConflict", "the key id \(upload.registration.keyID) is one of the app's sender key ids: the device must make another key")
        }
        do {
            let done = try store.importRegistration(upload, recipient: recipient, nowMilliseconds: unixTimeMilliseconds())
            return (recipient, done.added, done.tokenChanged)
        } catch let e as KeysError where e.code == .duplicateKeyID || e.code == .invalidName || e.code == .timeOutOfRange {
            throw HTTPError(409, "registrationConflict", e.reason)
        } catch let e as KeysError where e.code == .staleRegistration || e.code == .registrationRevoked {
            throw HTTPError(409, e.code.name, e.reason)
        } catch let e as KeysError where e.code == .futureRegistration {
            // Created more than 5 minutes after the server's clock (G8): the phone's clock is
            // wrong; a 422 the app does not retry as it would a 500 (review of 2026-12-04, B1).
            throw HTTPError(422, "futureRegistration", e.reason)
        }
    }

    public func forgetDevice(appID requested: String?, recipient: String) throws -> Bool {
        let app = requested ?? appID
        guard app == appID else { return false }
        try Self.checkRecipient(recipient)
        let registrations = try store.registrationStore()
        let tokens = try store.deviceTokenStore()
        var found = false
        let now = unixTimeMilliseconds()
        // Only "no registrations" is skipped: any other error (a row failing its tag, the
        // database away) fails the request rather than answering 204 with the key still primary.
        let set: RegistrationSet?
        do {
            set = try registrations.registrations(appID: app, recipient: recipient)
        } catch let e as KeysError where e.code == .unknownRegistration {
            set = nil
        }
        for r in set?.registrations ?? [] where r.status == .primary {
            _ = try registrations.revokeRegistration(appID: app, recipient: recipient, keyID: r.keyID, now: now / 1000)
            found = true
        }
        // Every token of the installation goes, whatever its `registeredAt` (audited `removed`,
        // as `push-keys token remove`): a forgotten installation is not an APNs 410.
        if !(try tokens.removeDeviceTokens(appID: app, recipient: recipient, token: nil, time: now / 1000)).isEmpty {
            found = true
        }
        if try outbox.cancel(recipient: recipient, nowMs: now) > 0 { found = true }
        return found
    }

    public func senderKeys(appID requested: String?) throws -> JSONValue? {
        guard (requested ?? appID) == appID else { return nil }
        let keys = try store.registrationStore().publishedSenderKeys(appID: appID, now: unixTimeSeconds())
        return .array(keys.map { .object($0.record) })
    }

    /// The app's revocation list (FORMAT.md §V.12): its revoked sender keys (`sender retire
    /// --revoke`: status `disabled`), one record per revocation time, as `push-keys revocations
    /// export` writes them. Revoked registrations are not published here (review of 2026-12-04):
    /// a registration's key id is chosen by the device and unique only per recipient, and a phone
    /// disables every item of a listed id, so one user could have listed the sender key's id, or
    /// another phone's; the server already stops sealing to a revoked registration, and the list
    /// would grow with every forgotten installation, on a public, unauthenticated route. A
    /// sender key destroyed after its ordinary retirement is not revoked and not listed (it was
    /// before: phones disabled keys that were merely retired).
    public func revocations(appID requested: String?) throws -> JSONValue? {
        guard (requested ?? appID) == appID else { return nil }
        let revoked = try store.registrationStore().senderKeys(appID: appID).filter { $0.status == .disabled }
            .map { (keyID: $0.keyID, revokedAt: $0.retiredAt ?? $0.createdAt) }
        return .array(try RevocationRecord.list(appID: appID, revoked: revoked).map { try JSONReader.parse($0.encoded()) })
    }

    public func readiness() -> Readiness {
        var checks: [(name: String, finding: String)] = []
        var ready = true
        do {
            try registry.checkReachable()
            checks.append(("database", "ok"))
        } catch let e as RegistryError where e.code == .schemaTooNew {
            // The next version migrated the database while this one still runs (a rolling
            // upgrade migrates first): its migrations only add what this build does not read,
            // so this instance stays ready. Marking it not ready would take every instance of
            // the old version out of the load balancer at the same moment.
            checks.append(("database", "schemaNewer"))
        } catch let e as RegistryError {
            checks.append(("database", e.code.name))
            ready = false
        } catch {
            checks.append(("database", "error"))
            ready = false
        }
        // The worker reconnects to APNs on its own (retrying counts as usable); only a stopped worker is not.
        if let worker {
            let stopped = worker.isStopped
            checks.append(("apns", stopped ? "stopped" : "ok"))
            if stopped { ready = false }
        }
        return Readiness(ready: ready, checks: checks)
    }

    public func metricsSnapshot() -> BackendMetrics {
        let snapshot = outbox.metrics.snapshot()
        var m = BackendMetrics()
        for (pair, n) in snapshot.outcomes { m.outcomes[.init(outcome: pair.status, reason: pair.reason), default: 0] += n }
        m.retracts = snapshot.retracts
        m.outboxDeleted = snapshot.deletedFinished
        m.sealLatency = snapshot.sealLatency
        m.apnsLatency = snapshot.apnsLatency
        m.providerTokenMints = snapshot.providerTokenMints
        m.apnsConnectionsOpened = snapshot.connectionsOpened
        m.apnsConnectionsOpen = snapshot.connectionsOpen
        if let q = try? outbox.queueStatistics(nowMs: unixTimeMilliseconds()) {
            m.queueDepth = q.queued
            m.sending = q.sending
            m.oldestQueuedAgeSeconds = Double(q.oldestQueuedAgeMs) / 1000
        } else {
            // Unknown, not empty: an alert on the backlog must not read "all clear" in an outage.
            m.databaseUp = false
            m.queueDepth = nil
            m.sending = nil
            m.oldestQueuedAgeSeconds = nil
        }
        return m
    }
}
