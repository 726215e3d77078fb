import PushSealCrypto
public import PushSealJSON
import PushSealKeyRecords
public import PushSealServerKeys
public import PushSealRegistry
import PushSealSender
import PushSealSystem

/// The gateway's durable outbox (issue 23 "The outbox: accepted means it will end, once"): the
/// accept side. ``accept(_:idempotency:nowMs:)`` seals every item at once (the row holds the
/// sealed payload and its APNs headers, never the text) and returns only after the rows are
/// committed; ``OutboxWorker`` sends them. Several processes on one registry are the way to
/// scale out: rows are claimed with `FOR UPDATE SKIP LOCKED`.
///
/// Every notification gets an opaque random `apns-collapse-id` (16 random bytes in hex, derived
/// from nothing in the content) unless the item gives its own (a string wins; `null` asks for
/// none): a resend after an instance died then replaces the first on the phone instead of
/// showing twice, and only rows with a collapse id are resent after a crash.
public final class Outbox: Sendable {
    /// How the outbox seals and where it sends.
    public struct Configuration: Sendable {
        /// The sealer's configuration (app id, default options, format).
        public var sealer: SealerConfiguration
        /// The environment of the device tokens the rows are addressed to.
        public var environment: DeviceTokenEnvironment

        /// A configuration (fields as above).
        public init(sealer: SealerConfiguration, environment: DeviceTokenEnvironment) {
            self.sealer = sealer
            self.environment = environment
        }
    }

    /// One item's result, in request order.
    public enum ItemResult: Sendable, Hashable {
        /// Stored `queued` under `id`.
        case queued(id: String, recipient: String)
        /// Not stored: `code` is stable (`unknownRecipient`, `noDeviceToken`, `payloadTooLarge`,
        /// `invalidNotification`, `keyUnavailable`, …), `message` says why (no notification text).
        case failed(recipient: String?, code: String, message: String)
    }

    /// What ``accept(_:idempotency:nowMs:)`` did.
    public struct Acceptance: Sendable {
        /// One result per item (a replay: the first request's, read back from `body`).
        public let items: [ItemResult]
        /// The answer body, `{"notifications":[{"id","recipient","status":"queued"} |
        /// {"recipient","error":{"code","message"}}]}`: the same bytes for a replay.
        public let body: [UInt8]
        /// `true` when the idempotency key had been used with the same body: nothing stored now.
        public let replayed: Bool
    }

    /// An idempotency key: who uses it (an API key's id) and the key.
    public struct IdempotencyKey: Sendable, Hashable {
        /// Whose key: keys of different callers never meet.
        public var scope: String
        /// The `Idempotency-Key` header (1 … 255 bytes).
        public var key: String

        /// Creates one.
        public init(scope: String, key: String) {
            self.scope = scope
            self.key = key
        }
    }

    /// The SQL side.
    public let rows: PostgresOutbox
    /// The store (keys, registrations, device tokens).
    public let store: ServerStore
    /// The configuration.
    public let configuration: Configuration
    /// Counters and histograms for the HTTP layer's `/metrics`.
    public let metrics = OutboxMetrics()
    /// The sealer accept uses, the sender key id it seals auth mode with, and when the store's
    /// primary sender key was last compared with it (monotonic ns).
    private struct Sealing: Sendable {
        var batch: BatchSealer
        var senderKeyID: String?
        var checkedAt: UInt64
    }

    private let sealing: Locked<Sealing>
    private let deviceTokens: StoreDeviceTokens
    private let sealerConfiguration: SealerConfiguration

    /// How often accept compares the sealer's sender key with the store's primary: 1 s, in ns
    /// (issue 24: a running sealer follows a promotion or retirement within 5 s, no restart).
    public static let senderKeyCheckNanoseconds: UInt64 = 1_000_000_000

    /// The outbox of a registry store.
    /// - Throws: ``ServerError`` `.unsupportedStore` (a file keychain: the outbox needs
    ///   PostgreSQL); the sealer's errors (as ``ServerStore/sealer(_:)``).
    public init(store: ServerStore, configuration: Configuration) throws {
        guard let registry = store.store as? PostgresKeyStore else {
            throw ServerError(.unsupportedStore, "the outbox needs a PostgreSQL registry (--registry URI --kek-file F)")
        }
        self.store = store
        self.configuration = configuration
        rows = PostgresOutbox(registry: registry)
        var sealerConfiguration = configuration.sealer
        sealerConfiguration.options.collapseID = nil
        self.sealerConfiguration = sealerConfiguration
        deviceTokens = StoreDeviceTokens(store: try store.deviceTokenStore(), environment: configuration.environment)
        let made = try store.sealerAndSenderKey(sealerConfiguration)
        sealing = Locked(Sealing(batch: BatchSealer(sealer: made.sealer, concurrency: 1, deviceTokens: deviceTokens),
                                 senderKeyID: made.senderKeyID, checkedAt: monotonicNanoseconds()))
    }

    /// The sealer to seal with now: once a second, the store's primary sender key is compared
    /// with the one the sealer uses, and a promotion (or a retirement that changed the primary)
    /// rebuilds it. A store that cannot be read keeps the current sealer until the next check.
    func currentSealer() -> BatchSealer {
        let now = monotonicNanoseconds()
        let (batch, due, senderKeyID) = sealing.withLock { s -> (BatchSealer, Bool, String?) in
            let due = now &- s.checkedAt >= Self.senderKeyCheckNanoseconds
            if due { s.checkedAt = now }
            return (s.batch, due, s.senderKeyID)
        }
        guard due, sealerConfiguration.format != .v1,
              let keys = try? store.registrationStore().senderKeys(appID: sealerConfiguration.appID) else { return batch }
        let primary = keys.last { $0.status == .primary }?.keyID
        guard primary != senderKeyID, let made = try? store.sealerAndSenderKey(sealerConfiguration) else { return batch }
        let fresh = BatchSealer(sealer: made.sealer, concurrency: 1, deviceTokens: deviceTokens)
        sealing.withLock {
            $0.batch = fresh
            $0.senderKeyID = made.senderKeyID
        }
        return fresh
    }

    /// The SHA-256 of a request body, for an idempotency key.
    /// - Throws: `CryptoError` `.internalFailure` (OpenSSL failed).
    public static func requestHash(_ body: [UInt8]) throws -> [UInt8] { try SHA256Hasher.hash(body) }

    /// The item members besides what a `push-seal batch` line takes.
    static let headerMembers: Set<String> = ["ttl", "collapseId", "priority", "pushType"]

    /// Seals and stores `items` (each `{"recipient", "notification": {…}, "ttl"?, "collapseId"?,
    /// "priority"?, "pushType"?, "aps"?}`); returns after the commit. An item that cannot be
    /// sealed (unknown recipient, no device token, too large, a bad notification) gets its own
    /// error and does not fail the others.
    /// - Parameters:
    ///   - items: the request's items (1 … 1,000).
    ///   - idempotency: the key and the SHA-256 of the request body, or `nil`.
    ///   - nowMs: the time of acceptance, ms since 1970.
    /// - Throws: ``ServerError`` `.idempotencyKeyReused` (the key with another body: HTTP 422),
    ///   `.invalidIdempotencyKey`; `RegistryError` (`.unavailable`, `.outcomeUnknown`: HTTP 503,
    ///   nothing or everything stored).
    public func accept(_ items: [JSONValue], idempotency: (key: IdempotencyKey, requestHash: [UInt8])?, nowMs: Int64) throws -> Acceptance {
        if let i = idempotency {
            guard (1...PostgresOutbox.maxIdempotencyKeyByteCount).contains(i.key.key.utf8.count) else {
                throw ServerError(.invalidIdempotencyKey, "the idempotency key must be 1 to 255 bytes")
            }
            switch try rows.replay(scope: i.key.scope, key: i.key.key, requestHash: i.requestHash, nowMs: nowMs) {
            case .none: break
            case .same(let body): return try Self.replayed(body)
            case .differentBody: throw ServerError(.idempotencyKeyReused, "the idempotency key was used with another request body in the last 24 h")
            }
        }
        let start = monotonicNanoseconds()
        var results: [ItemResult] = []
        var newRows: [PostgresOutbox.NewRow] = []
        let sealer = currentSealer()
        for (n, item) in items.enumerated() {
            switch seal(item, line: n + 1, nowMs: nowMs, sealer: sealer) {
            case .success(let row):
                newRows.append(row)
                results.append(.queued(id: row.id, recipient: row.recipient))
            case .failure(let f):
                results.append(f)
                metrics.itemRefused(code: { if case .failed(_, let c, _) = f { c } else { "" } }())
            }
        }
        metrics.sealed(count: newRows.count, nanoseconds: monotonicNanoseconds() &- start)
        let body = try Self.body(results)
        let replay = try rows.enqueue(newRows, idempotency: idempotency.map {
            PostgresOutbox.Idempotency(scope: $0.key.scope, key: $0.key.key, requestHash: $0.requestHash, response: body)
        }, nowMs: nowMs)
        switch replay {
        case .none: return Acceptance(items: results, body: body, replayed: false)
        case .same(let first): return try Self.replayed(first)
        case .differentBody: throw ServerError(.idempotencyKeyReused, "the idempotency key was used with another request body in the last 24 h")
        }
    }

    /// One item sealed into a row, or its error.
    enum SealOutcome {
        case success(PostgresOutbox.NewRow)
        case failure(ItemResult)
    }

    /// One item sealed into a row, or its error.
    func seal(_ item: JSONValue, line: Int, nowMs: Int64, sealer: BatchSealer) -> SealOutcome {
        guard case .object(let o) = item else {
            return .failure(.failed(recipient: nil, code: "invalidNotification", message: "an item must be a JSON object"))
        }
        let recipient = o["recipient"]?.stringValue
        func fail(_ code: String, _ message: String) -> SealOutcome {
            .failure(.failed(recipient: recipient, code: code, message: message))
        }
        // The batch line: recipient, notification (with the item's ttl), aps.
        var members: [(key: String, value: JSONValue)] = []
        for m in o where !Self.headerMembers.contains(m.key) {
            if m.key == "notification", case .object(var n) = m.value, let ttl = o["ttl"], n["ttl"] == nil {
                n["ttl"] = ttl
                members.append((m.key, .object(n)))
            } else {
                members.append((m.key, m.value))
            }
        }
        var collapseID: String? = Hex.encode(SecureRandom.bytes(16))
        switch o["collapseId"] {
        case nil: break
        case .null?: collapseID = nil
        case .string(let s)?:
            guard !s.isEmpty, s.utf8.count <= 64 else { return fail("invalidNotification", "collapseId must be 1 to 64 bytes") }
            collapseID = s
        default: return fail("invalidNotification", "collapseId must be a string or null")
        }
        var priority: Int?
        if let p = o["priority"] {
            guard case .integer(let v) = p, [10, 5, 1].contains(v) else { return fail("invalidNotification", "priority must be 10, 5 or 1") }
            priority = Int(v)
        }
        var pushType: APNsPushType?
        if let t = o["pushType"] {
            guard let name = t.stringValue, let type = APNsPushType(rawValue: name) else { return fail("invalidNotification", "unknown pushType") }
            pushType = type
        }
        let lineBytes: [UInt8]
        do {
            lineBytes = try JSONWriter.serialize(.object(JSONObject(members)))
        } catch {
            return fail("invalidNotification", "the item cannot be written as a batch line")
        }
        let out = sealer.seal([BatchSealer.Line(number: line, bytes: lineBytes)]).output
        guard let parsed = Self.sealedLine(out) else {
            guard case .object(let e)? = try? JSONReader.parse(out), case .object(let err)? = e["error"] else {
                return fail("sealFailed", "the sealer gave no payload")
            }
            return fail(err["code"]?.stringValue ?? "sealFailed", err["message"]?.stringValue ?? "")
        }
        let type = pushType ?? APNsPushType(rawValue: parsed.headers["apns-push-type"]?.stringValue ?? "alert") ?? .alert
        let bundle = parsed.headers["apns-topic"]?.stringValue ?? configuration.sealer.appID
        let expiration = parsed.headers["apns-expiration"]?.stringValue.flatMap { Int64($0) }
        let row = PostgresOutbox.NewRow(
            id: Self.uuid(), appID: configuration.sealer.appID, recipient: parsed.recipient, environment: configuration.environment,
            deviceToken: parsed.deviceToken, payload: parsed.payload, pushType: type.rawValue, topic: type.topic(forBundleID: bundle),
            priority: priority ?? parsed.headers["apns-priority"]?.stringValue.flatMap { Int($0) }, expiration: expiration,
            collapseID: collapseID, apnsID: Self.uuid(), expiresAtMs: expiration.flatMap { $0 == 0 ? nowMs + 60_000 : $0 * 1000 })
        let check = APNsNotification(deviceToken: row.deviceToken, payload: row.payload, pushType: type, topic: row.topic, priority: row.priority,
                                     expiration: row.expiration, collapseID: row.collapseID, apnsID: row.apnsID)
        do {
            try check.validate()
        } catch let e as APNsError {
            return fail(e.code == .payloadTooLarge ? "payloadTooLarge" : "invalidNotification", e.reason)
        } catch {
            return fail("invalidNotification", "the request would be refused by APNs")
        }
        return .success(row)
    }

    /// The parts of a `push-seal batch` output line: recipient, device token, the payload's exact
    /// bytes (between `"payload":` and the last `,"headers":{`: neither can occur unescaped in
    /// a JSON string) and the headers.
    static func sealedLine(_ out: [UInt8]) -> (recipient: String, deviceToken: String, payload: [UInt8], headers: JSONObject)? {
        let payloadKey = Array(",\"payload\":".utf8), headersKey = Array(",\"headers\":{".utf8)
        // The headers object holds strings without braces (the collapse id is set apart).
        guard let p = out.firstRange(of: payloadKey), let h = out.ranges(of: headersKey).last, p.upperBound < h.lowerBound,
              let end = out[h.upperBound...].firstIndex(of: UInt8(ascii: "}")) else { return nil }
        let headerBytes = Array(out[(h.upperBound - 1)...end])
        let head = Array(out[..<p.lowerBound]) + [UInt8(ascii: "}")]
        guard case .object(let headers)? = try? JSONReader.parse(headerBytes), case .object(let o)? = try? JSONReader.parse(head),
              let recipient = o["recipient"]?.stringValue, let token = o["deviceToken"]?.stringValue else { return nil }
        return (recipient, token, Array(out[p.upperBound..<h.lowerBound]), headers)
    }

    /// A random (version 4) UUID in lower case.
    static func uuid() -> String {
        var b = SecureRandom.bytes(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        let hex = Hex.encode(b)
        let h = Array(hex)
        return String(h[0..<8]) + "-" + String(h[8..<12]) + "-" + String(h[12..<16]) + "-" + String(h[16..<20]) + "-" + String(h[20..<32])
    }

    static func body(_ results: [ItemResult]) throws -> [UInt8] {
        let list: [JSONValue] = results.map { r in
            switch r {
            case .queued(let id, let recipient):
                .object(JSONObject([("id", .string(id)), ("recipient", .string(recipient)), ("status", .string("queued"))]))
            case .failed(let recipient, let code, let message):
                .object(JSONObject([("recipient", recipient.map { .string($0) } ?? .null),
                                    ("error", .object(JSONObject([("code", .string(code)), ("message", .string(message))])))]))
            }
        }
        return try JSONWriter.serialize(.object(JSONObject([("notifications", .array(list))])))
    }

    static func replayed(_ body: [UInt8]) throws -> Acceptance {
        guard case .object(let o)? = try? JSONReader.parse(body), case .array(let list)? = o["notifications"] else {
            throw ServerError(.idempotencyKeyReused, "the stored answer of this idempotency key does not read")
        }
        let items: [ItemResult] = list.map { v in
            guard case .object(let i) = v else { return .failed(recipient: nil, code: "internal", message: "") }
            if let id = i["id"]?.stringValue, let r = i["recipient"]?.stringValue { return .queued(id: id, recipient: r) }
            guard case .object(let e)? = i["error"] else { return .failed(recipient: nil, code: "internal", message: "") }
            return .failed(recipient: i["recipient"]?.stringValue, code: e["code"]?.stringValue ?? "", message: e["message"]?.stringValue ?? "")
        }
        return Acceptance(items: items, body: body, replayed: true)
    }

    /// The status of one notification (`nil`: unknown id).
    /// - Throws: `RegistryError`.
    public func status(id: String) throws -> PostgresOutbox.Status? { try rows.status(id: id) }

    /// Queue depth, rows being sent and the oldest queued row's age (ms), for `/metrics` and `/readyz`.
    /// - Throws: `RegistryError` (the database is unreachable: not ready).
    public func queueStatistics(nowMs: Int64) throws -> (queued: Int, sending: Int, oldestQueuedAgeMs: Int64) {
        try rows.queueStatistics(nowMs: nowMs)
    }

    /// Ends the queued notifications of `recipient` unsent (`failed`, reason `cancelled`).
    /// - Returns: how many.
    /// - Throws: `RegistryError`.
    @discardableResult
    public func cancel(recipient: String, nowMs: Int64) throws -> Int {
        try rows.cancelQueued(appID: configuration.sealer.appID, recipient: recipient, nowMs: nowMs)
    }
}

/// A store's device tokens of one environment as a batch sealer's ``DeviceTokenSource``
/// (`push-seal batch --device-tokens`, the outbox).
public struct StoreDeviceTokens: DeviceTokenSource {
    /// The store.
    public let store: any DeviceTokenStore
    /// The environment whose tokens are used.
    public let environment: DeviceTokenEnvironment

    /// The tokens of `store` for `environment`.
    public init(store: any DeviceTokenStore, environment: DeviceTokenEnvironment) {
        self.store = store
        self.environment = environment
    }

    /// One bulk lookup (the registry: one query per 4,096 recipients).
    /// - Throws: the store's errors (each line needing a token then fails with `deviceTokenLookupFailed`).
    public func deviceTokens(appID: String, recipients: [String]) throws -> [String: String] {
        try store.deviceTokens(appID: appID, recipients: recipients, environment: environment).mapValues(\.token)
    }
}

extension ErrorCode<ServerError> {
    /// The idempotency key was used in the last 24 h with another request body (HTTP 422).
    public static var idempotencyKeyReused: Self { Self("idempotencyKeyReused") }
    /// The idempotency key is empty or over 255 bytes (HTTP 400).
    public static var invalidIdempotencyKey: Self { Self("invalidIdempotencyKey") }
}
