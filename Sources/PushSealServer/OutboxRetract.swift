import PushSealJSON
import PushSealRegistry
import PushSealSystem

/// Retracting what the gateway accepted (issue 29; FORMAT.md §5.1): a sealed `retract` message
/// per recipient naming the notifications' device-visible ids, sent as a background push; a
/// notification still `queued` is cancelled instead (never sent, so never shown).
extension Outbox {
    /// What became of one notification a retract named, in request order.
    public enum RetractResult: Sendable, Hashable {
        /// A retract naming it is queued under `retractID` (one per recipient and request).
        case queued(target: String, recipient: String, retractID: String)
        /// It had not been sent: it is `cancelled` (reason `retracted`) and never will be; no
        /// retract is sent for it.
        case cancelled(target: String, recipient: String)
        /// Nothing done for it: `code` is `notFound` (no such notification of this app),
        /// `notRetractable` (it is a retract itself, or its sealed id does not open), or the
        /// sealer's (`noDeviceToken`, `unknownRecipient`, `keyUnavailable`, …).
        case failed(target: String, recipient: String?, code: String, message: String)
    }

    /// What ``retract(_:single:idempotency:nowMs:)`` did.
    public struct RetractAcceptance: Sendable {
        /// One result per requested id (empty for a replay: ``body`` says it).
        public let results: [RetractResult]
        /// The answer body: one result object for `single`, else `{"notifications":[…]}`; a
        /// replay's are the first request's bytes.
        public let body: [UInt8]
        /// `true` when the idempotency key had been used with the same request: nothing done now.
        public let replayed: Bool
    }

    /// Retracts the notifications the gateway accepted as `ids` (1 … 100), in one transaction:
    /// the ones still `queued` are cancelled; for the others one retract per recipient is sealed
    /// (the batch retract line `{"recipient", "retract": [ids]}`: a background push, priority 5,
    /// no alert, no collapse id) naming their device-visible ids, and stored `queued`. Returns
    /// after the commit.
    /// - Parameters:
    ///   - ids: the gateway's notification ids.
    ///   - single: `true` for `POST /v1/notifications/{id}/retract`: a notification that cannot
    ///     be retracted throws before anything is stored, and the body is the one result object.
    ///   - idempotency: the key and the SHA-256 of the request (route and body), or `nil`.
    ///   - nowMs: now, ms since 1970.
    /// - Throws: with `single`, ``ServerError`` `notFound`, `notRetractable` or the sealer's code
    ///   (nothing stored); ``ServerError`` `.idempotencyKeyReused`, `.invalidIdempotencyKey`;
    ///   `RegistryError` (`.unavailable`, `.outcomeUnknown`).
    public func retract(_ ids: [String], single: Bool, idempotency: (key: IdempotencyKey, requestHash: [UInt8])?,
                        nowMs: Int64) throws -> RetractAcceptance {
        if let i = idempotency {
            guard (1...PostgresOutbox.maxIdempotencyKeyByteCount).contains(i.key.key.utf8.count) else {
                throw ServerError(.invalidIdempotencyKey, "the idempotency key must be 1 to 255 bytes")
            }
            switch try rows.replay(scope: i.key.scope, key: i.key.key, requestHash: i.requestHash, nowMs: nowMs) {
            case .none: break
            case .same(let body): return RetractAcceptance(results: [], body: body, replayed: true)
            case .differentBody: throw ServerError(.idempotencyKeyReused, "the idempotency key was used with another request in the last 24 h")
            }
        }
        let appID = configuration.sealer.appID
        var found: [String: PostgresOutbox.RetractTarget] = [:]
        for t in try rows.retractTargets(ids) where t.appID == appID { found[t.id] = t }

        // Plan: per id a failure, "already cancelled", or a place in its recipient's retract.
        enum Plan { case failed(String?, String, String), alreadyCancelled(String), retract(String) }
        var plans: [Plan] = []
        var groups: [(recipient: String, targets: [String], deviceIDs: [String])] = []
        for id in ids {
            guard let t = found[id.lowercased()] else {
                plans.append(.failed(nil, "notFound", "no notification \(id.debugDescription)"))
                continue
            }
            guard t.kind == "display" else {
                plans.append(.failed(t.recipient, "notRetractable", "\(t.id) is a retract itself"))
                continue
            }
            guard let visible = t.deviceVisibleID else {
                plans.append(.failed(t.recipient, "notRetractable", "the stored id of \(t.id) does not open under the key-encryption key"))
                continue
            }
            if t.status == "cancelled" {
                plans.append(.alreadyCancelled(t.recipient))
                continue
            }
            if let g = groups.firstIndex(where: { $0.recipient == t.recipient }) {
                if !groups[g].targets.contains(t.id) { groups[g].targets.append(t.id) }
                if !groups[g].deviceIDs.contains(visible) { groups[g].deviceIDs.append(visible) }
            } else {
                groups.append((recipient: t.recipient, targets: [t.id], deviceIDs: [visible]))
            }
            plans.append(.retract(t.recipient))
        }
        if single, case .failed(_, let code, let message)? = plans.first {
            throw ServerError(ErrorCode(code), message)
        }

        // Seal one retract per recipient (the batch retract line: what `push-seal retract` makes).
        var sealed: [String: PostgresOutbox.RetractRow] = [:]
        var sealFailures: [String: (code: String, message: String)] = [:]
        let start = monotonicNanoseconds()
        for (n, g) in groups.enumerated() {
            let item = JSONValue.object(JSONObject([("recipient", .string(g.recipient)), ("retract", .array(g.deviceIDs.map { .string($0) })),
                                                    ("collapseId", .null)]))
            switch seal(item, line: n + 1, nowMs: nowMs) {
            case .success(let row): sealed[g.recipient] = PostgresOutbox.RetractRow(row: row, targets: g.targets)
            case .failure(.failed(_, let code, let message)): sealFailures[g.recipient] = (code, message)
            case .failure: sealFailures[g.recipient] = ("sealFailed", "the sealer gave no payload")
            }
        }
        metrics.sealed(count: sealed.count, nanoseconds: monotonicNanoseconds() &- start)
        if single, case .retract(let r)? = plans.first, let f = sealFailures[r], let t = found[ids[0].lowercased()], t.status != "queued" {
            throw ServerError(ErrorCode(f.code), f.message)
        }

        let targets = groups.flatMap(\.targets)
        func results(cancelled: Set<String>, stored: Set<String>) -> [RetractResult] {
            zip(ids, plans).map { id, plan in
                switch plan {
                case .failed(let r, let code, let message): return .failed(target: id, recipient: r, code: code, message: message)
                case .alreadyCancelled(let r): return .cancelled(target: id, recipient: r)
                case .retract(let r):
                    let key = id.lowercased()
                    if cancelled.contains(key) { return .cancelled(target: id, recipient: r) }
                    if let row = sealed[r]?.row, stored.contains(row.id.lowercased()) { return .queued(target: id, recipient: r, retractID: row.id.lowercased()) }
                    let f = sealFailures[r] ?? ("sealFailed", "the retract could not be sealed")
                    return .failed(target: id, recipient: r, code: f.code, message: f.message)
                }
            }
        }
        let done = try rows.retract(targets: targets, retracts: groups.compactMap { sealed[$0.recipient] },
                                    idempotency: idempotency.map { PostgresOutbox.Idempotency(scope: $0.key.scope, key: $0.key.key, requestHash: $0.requestHash, response: []) },
                                    nowMs: nowMs) { cancelled, stored in
            try Self.retractBody(results(cancelled: cancelled, stored: stored), single: single)
        }
        switch done.replay {
        case .none: break
        case .same(let body): return RetractAcceptance(results: [], body: body, replayed: true)
        case .differentBody: throw ServerError(.idempotencyKeyReused, "the idempotency key was used with another request in the last 24 h")
        }
        reportCancelled(done.cancelledRows, reason: "retracted")
        let final = results(cancelled: done.cancelled, stored: done.stored)
        for r in final {
            switch r {
            case .queued: metrics.retracted("queued")
            case .cancelled(let target, _):
                metrics.retracted("cancelled")
                if done.cancelled.contains(target.lowercased()) { metrics.finished(status: "cancelled", reason: "retracted", apnsNanoseconds: nil) }
            case .failed: metrics.retracted("refused")
            }
        }
        return RetractAcceptance(results: final, body: done.body, replayed: false)
    }

    /// The JSON of one result: `{"id": retract, "notification", "recipient", "status": "queued"}`,
    /// `{"notification", "recipient", "status": "cancelled"}` or `{"notification", "recipient", "error": {"code", "message"}}`.
    static func retractObject(_ r: RetractResult) -> JSONValue {
        switch r {
        case .queued(let target, let recipient, let retractID):
            .object(JSONObject([("id", .string(retractID)), ("notification", .string(target)), ("recipient", .string(recipient)), ("status", .string("queued"))]))
        case .cancelled(let target, let recipient):
            .object(JSONObject([("notification", .string(target)), ("recipient", .string(recipient)), ("status", .string("cancelled"))]))
        case .failed(let target, let recipient, let code, let message):
            .object(JSONObject([("notification", .string(target)), ("recipient", recipient.map { .string($0) } ?? .null),
                                ("error", .object(JSONObject([("code", .string(code)), ("message", .string(message))])))]))
        }
    }

    /// The answer body: the one object (`single`) or `{"notifications":[…]}`.
    static func retractBody(_ results: [RetractResult], single: Bool) throws -> [UInt8] {
        if single, let only = results.first { return try JSONWriter.serialize(retractObject(only)) }
        return try JSONWriter.serialize(.object(JSONObject([("notifications", .array(results.map(retractObject)))])))
    }
}
