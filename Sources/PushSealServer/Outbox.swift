import Dispatch
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
        /// Called after the commit for each row the outbox itself ends `cancelled` (reason
        /// `forgotten` by ``cancel(recipient:nowMs:)``, `retracted` by a retract): the final
        /// outcomes the worker's `onFinal` never sees. `nil`: nobody is told.
        public var onCancelled: (@Sendable (OutboxWorker.FinalOutcome) -> Void)?

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
        if idempotency == nil, items.count <= Self.groupedItemLimit { return try acceptTogether(items, nowMs: nowMs) }
        let (answers, newRows) = sealRows([(items, nowMs)])[0]
        let body = try Self.body(answers)
        let replay = try rows.enqueue(newRows, idempotency: idempotency.map {
            PostgresOutbox.Idempotency(scope: $0.key.scope, key: $0.key.key, requestHash: $0.requestHash, response: body)
        }, nowMs: nowMs)
        switch replay {
        case .none: return Acceptance(items: answers, body: body, replayed: false)
        case .same(let first): return try Self.replayed(first)
        case .differentBody: throw ServerError(.idempotencyKeyReused, "the idempotency key was used with another request body in the last 24 h")
        }
    }

    /// Requests of at most this many items without an idempotency key are stored together with
    /// those that arrive while the previous group is being stored (``acceptTogether(_:nowMs:)``).
    static let groupedItemLimit = 10
    /// Items in one such group at most (sealed by one thread: a group seals in a few ms).
    static let groupItemLimit = 100

    /// The items of each request checked, sealed in ONE batch (the registry's keys, seal
    /// counters and device tokens read and reserved once for all, not once per item: 500 round
    /// trips and commits for a request of 500 before) and made into rows accepted at the
    /// request's `nowMs`; per request, its answers in order and its rows.
    func sealRows(_ requests: [(items: [JSONValue], nowMs: Int64)]) -> [(answers: [ItemResult], rows: [PostgresOutbox.NewRow])] {
        let start = monotonicNanoseconds()
        var results: [[ItemResult?]] = requests.map { Array(repeating: nil, count: $0.items.count) }
        var rows: [[PostgresOutbox.NewRow]] = Array(repeating: [], count: requests.count)
        var ready: [(request: Int, index: Int, item: PreparedItem)] = []
        for (q, request) in requests.enumerated() {
            for (n, item) in request.items.enumerated() {
                switch prepare(item) {
                case .success(let p): ready.append((q, n, p))
                case .failure(let f): results[q][n] = f.result
                }
            }
        }
        let sealed = sealLines(ready.map(\.item), sealer: currentSealer())
        for (k, r) in ready.enumerated() {
            let nowMs = requests[r.request].nowMs
            switch row(r.item, sealedLine: sealed[k], nowMs: nowMs) {
            case .success(var row):
                row.acceptedAtMs = nowMs
                rows[r.request].append(row)
                results[r.request][r.index] = .queued(id: row.id, recipient: row.recipient)
            case .failure(let f):
                results[r.request][r.index] = f
            }
        }
        let answers = results.map { $0.map { $0 ?? .failed(recipient: nil, code: "sealFailed", message: "the sealer gave no payload") } }
        for list in answers { for case .failed(_, let code, _) in list { metrics.itemRefused(code: code) } }
        metrics.sealed(count: rows.reduce(0) { $0 + $1.count }, nanoseconds: monotonicNanoseconds() &- start)
        return Array(zip(answers, rows))
    }

    /// A request waiting to be stored with others (``acceptTogether(_:nowMs:)``). Its fields are
    /// written by the leading thread before it signals, and read by the waiter after.
    final class GroupedRequest: @unchecked Sendable {
        let items: [JSONValue]
        let nowMs: Int64
        var outcome: Result<[ItemResult], any Error>?
        var leads = false
        let signal = DispatchSemaphore(value: 0)

        init(items: [JSONValue], nowMs: Int64) {
            self.items = items
            self.nowMs = nowMs
        }
    }

    /// Whether a group is being stored now, and the requests waiting for the next one.
    private let group = Locked<(busy: Bool, waiting: [GroupedRequest])>((false, []))

    /// Group commit of small requests without an idempotency key: when no group is being
    /// stored, this request is stored at once; otherwise it waits, and the first waiting request
    /// then stores every waiting one (up to ``groupItemLimit`` items) in one seal and ONE
    /// autocommitted `INSERT` (one commit, one `NOTIFY`). Each request's rows and answers are its
    /// own, exactly as if stored alone; every request is answered after the commit that stored
    /// its rows, and a failed commit fails every request of the group (nothing of it stored, or
    /// for a lost connection the statement is run again: ``PostgresOutbox/enqueue(_:idempotency:nowMs:)``).
    /// At 500 single requests/s each request made its own four to six round trips (registration,
    /// keyset versions, device token, insert and commit) and commit, one after the other behind
    /// `NOTIFY`'s commit lock (bench-gateway).
    func acceptTogether(_ items: [JSONValue], nowMs: Int64) throws -> Acceptance {
        let me = GroupedRequest(items: items, nowMs: nowMs)
        let leadsNow = group.withLock { g -> Bool in
            if g.busy {
                g.waiting.append(me)
                return false
            }
            g.busy = true
            return true
        }
        if !leadsNow {
            me.signal.wait()
            if !me.leads, let outcome = me.outcome { return try Self.acceptance(outcome.get()) }
        }
        var members = [me]
        var count = items.count
        group.withLock { g in
            while let next = g.waiting.first, count + next.items.count <= Self.groupItemLimit {
                members.append(g.waiting.removeFirst())
                count += next.items.count
            }
        }
        let outcomes: [Result<[ItemResult], any Error>]
        do {
            let sealed = sealRows(members.map { ($0.items, $0.nowMs) })
            _ = try rows.enqueue(sealed.flatMap(\.rows), idempotency: nil, nowMs: nowMs)
            outcomes = sealed.map { .success($0.answers) }
        } catch {
            outcomes = members.map { _ in .failure(error) }
        }
        // The lead passes to the first request still waiting before any answer is given.
        let next = group.withLock { g -> GroupedRequest? in
            guard !g.waiting.isEmpty else {
                g.busy = false
                return nil
            }
            return g.waiting.removeFirst()
        }
        if let next {
            next.leads = true
            next.signal.signal()
        }
        for (member, outcome) in zip(members, outcomes).dropFirst() {
            member.outcome = outcome
            member.signal.signal()
        }
        return try Self.acceptance(outcomes[0].get())
    }

    /// A first (not replayed) answer.
    static func acceptance(_ answers: [ItemResult]) throws -> Acceptance {
        Acceptance(items: answers, body: try body(answers), replayed: false)
    }

    /// One item sealed into a row, or its error.
    enum SealOutcome {
        case success(PostgresOutbox.NewRow)
        case failure(ItemResult)
    }

    /// One item sealed into a row on its own (a retract per recipient: ``retract(_:single:idempotency:nowMs:)``).
    func seal(_ item: JSONValue, line: Int, nowMs: Int64) -> SealOutcome {
        switch prepare(item) {
        case .failure(let f): return .failure(f.result)
        case .success(let p): return row(p, sealedLine: sealLines([p], sealer: currentSealer())[0], nowMs: nowMs)
        }
    }

    /// An item checked and written as a `push-seal batch` line, with the members the line does
    /// not carry (the outbox's own headers).
    struct PreparedItem {
        var line: [UInt8]
        /// The row's id (a new UUID), and the message's kind (`display` or `retract`).
        var rowID: String
        var kind: String
        /// The caller's own `notification.id`, kept sealed in the row (``PostgresOutbox/NewRow/deviceVisibleID``).
        var callerID: String?
        var collapseID: String?
        var priority: Int?
        var pushType: APNsPushType?
    }

    /// An item refused before sealing.
    struct Refusal: Error {
        var result: ItemResult
    }

    /// The output line of each prepared item, in order (one `BatchSealer.seal` call for all:
    /// one bulk read of keys and device tokens, one reservation of seal counters). An empty
    /// line where the sealer's output does not split into one line per item (never expected).
    func sealLines(_ items: [PreparedItem], sealer: BatchSealer) -> [[UInt8]] {
        guard !items.isEmpty else { return [] }
        let out = sealer.seal(items.enumerated().map { BatchSealer.Line(number: $0.offset + 1, bytes: $0.element.line) }).output
        // Each output line ends in a newline; JSON strings hold none unescaped.
        let lines = out.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast().map(Array.init)
        return lines.count == items.count ? lines : Array(repeating: [], count: items.count)
    }

    /// One item checked and written as a batch line, or its error.
    func prepare(_ item: JSONValue) -> Result<PreparedItem, Refusal> {
        guard case .object(let o) = item else {
            return .failure(Refusal(result: .failed(recipient: nil, code: "invalidNotification", message: "an item must be a JSON object")))
        }
        let recipient = o["recipient"]?.stringValue
        func fail(_ code: String, _ message: String) -> Result<PreparedItem, Refusal> {
            .failure(Refusal(result: .failed(recipient: recipient, code: code, message: message)))
        }
        // The batch line: recipient, notification (with the item's ttl and the device-visible
        // id: the caller's own, else this row's id), aps; or a retract line.
        let rowID = Self.uuid()
        var callerID: String?
        var kind = o["retract"] == nil ? "display" : "retract"
        var members: [(key: String, value: JSONValue)] = []
        for m in o where !Self.headerMembers.contains(m.key) {
            if m.key == "notification", case .object(var n) = m.value {
                if let ttl = o["ttl"], n["ttl"] == nil { n["ttl"] = ttl }
                switch n["id"] {
                case nil, .null?: n["id"] = .string(rowID)
                case .string(let s)?: callerID = s
                default: break // the sealer refuses it
                }
                if n["kind"]?.stringValue == "retract" { kind = "retract" }
                members.append((m.key, .object(n)))
            } else {
                members.append((m.key, m.value))
            }
        }
        var collapseID: String? = Self.randomCollapseID()
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
        return .success(PreparedItem(line: lineBytes, rowID: rowID, kind: kind, callerID: callerID, collapseID: collapseID, priority: priority, pushType: pushType))
    }

    /// A prepared item's sealed output line made into a row, or its error (the sealer's, or the
    /// APNs request check's).
    func row(_ item: PreparedItem, sealedLine out: [UInt8], nowMs: Int64) -> SealOutcome {
        let (rowID, kind, callerID) = (item.rowID, item.kind, item.callerID)
        let (collapseID, priority, pushType) = (item.collapseID, item.priority, item.pushType)
        func fail(_ code: String, _ message: String) -> SealOutcome {
            let recipient: String? = if case .object(let o)? = try? JSONReader.parse(item.line) { o["recipient"]?.stringValue } else { nil }
            return .failure(.failed(recipient: recipient, code: code, message: message))
        }
        guard let parsed = Self.sealedLine(out) else {
            guard case .object(let e)? = try? JSONReader.parse(out), case .object(let err)? = e["error"] else {
                return fail("sealFailed", "the sealer gave no payload")
            }
            let code = err["code"]?.stringValue ?? "sealFailed"
            if code == ErrorCode<ServerError>.noDeviceToken.name {
                // The sealer's own text speaks of a batch line's deviceToken member, which an
                // outbox item does not have: say what the caller of the outbox can do.
                let recipient: String? = if case .object(let o)? = try? JSONReader.parse(item.line) { o["recipient"]?.stringValue } else { nil }
                return fail(code, "recipient \(recipient ?? "?") has no \(configuration.environment.rawValue) device token: register the installation with its APNs device token first (POST /v1/devices)")
            }
            return fail(code, err["message"]?.stringValue ?? "")
        }
        let type = pushType ?? APNsPushType(rawValue: parsed.headers["apns-push-type"]?.stringValue ?? "alert") ?? .alert
        let bundle = parsed.headers["apns-topic"]?.stringValue ?? configuration.sealer.appID
        let expiration = parsed.headers["apns-expiration"]?.stringValue.flatMap { Int64($0) }
        var row = PostgresOutbox.NewRow(
            id: rowID, appID: configuration.sealer.appID, recipient: parsed.recipient, environment: configuration.environment,
            deviceToken: parsed.deviceToken, payload: parsed.payload, pushType: type.rawValue, topic: type.topic(forBundleID: bundle),
            priority: priority ?? parsed.headers["apns-priority"]?.stringValue.flatMap { Int($0) }, expiration: expiration,
            collapseID: collapseID, apnsID: Self.uuid(), expiresAtMs: expiration.flatMap { $0 == 0 ? nowMs + 60_000 : $0 * 1000 })
        row.kind = kind
        row.deviceVisibleID = kind == "display" ? callerID : nil
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
        guard let p = Self.range(of: payloadKey, in: out, last: false), let h = Self.range(of: headersKey, in: out, last: true),
              p.upperBound < h.lowerBound, let end = out[h.upperBound...].firstIndex(of: UInt8(ascii: "}")) else { return nil }
        let headerBytes = Array(out[(h.upperBound - 1)...end])
        let head = Array(out[..<p.lowerBound]) + [UInt8(ascii: "}")]
        guard case .object(let headers)? = try? JSONReader.parse(headerBytes), case .object(let o)? = try? JSONReader.parse(head),
              let recipient = o["recipient"]?.stringValue, let token = o["deviceToken"]?.stringValue else { return nil }
        return (recipient, token, Array(out[p.upperBound..<h.lowerBound]), headers)
    }

    /// The first (or last) place `needle` occurs in `bytes`. A plain loop: the standard library's
    /// `firstRange(of:)` / `ranges(of:)` on `[UInt8]` run unspecialized generic code and took 40 %
    /// of a gateway's CPU in this function (perf, bench-gateway).
    static func range(of needle: [UInt8], in bytes: [UInt8], last: Bool) -> Range<Int>? {
        let n = needle.count
        guard n > 0, bytes.count >= n else { return nil }
        return bytes.withUnsafeBufferPointer { b in
            needle.withUnsafeBufferPointer { k in
                func matches(at i: Int) -> Bool {
                    var j = 0
                    while j < n, b[i + j] == k[j] { j += 1 }
                    return j == n
                }
                if last {
                    for i in stride(from: b.count - n, through: 0, by: -1) where matches(at: i) { return i..<(i + n) }
                } else {
                    for i in 0...(b.count - n) where matches(at: i) { return i..<(i + n) }
                }
                return nil
            }
        }
    }

    /// A random (version 4) UUID in lower case.
    static func uuid() -> String {
        randomIDBytes.withLock { pool in
            pool.next16 { b in
                String(unsafeUninitializedCapacity: 36) { out in
                    var o = 0
                    for i in 0..<16 {
                        var byte = b[i]
                        if i == 6 { byte = (byte & 0x0F) | 0x40 }
                        if i == 8 { byte = (byte & 0x3F) | 0x80 }
                        if i == 4 || i == 6 || i == 8 || i == 10 {
                            out[o] = UInt8(ascii: "-")
                            o += 1
                        }
                        out[o] = hexDigits[Int(byte >> 4)]
                        out[o + 1] = hexDigits[Int(byte & 0x0F)]
                        o += 2
                    }
                    return o
                }
            }
        }
    }

    /// An opaque collapse id: 16 random bytes in hex (derived from nothing in the content).
    static func randomCollapseID() -> String {
        randomIDBytes.withLock { pool in
            pool.next16 { b in
                String(unsafeUninitializedCapacity: 32) { out in
                    for i in 0..<16 {
                        out[2 * i] = hexDigits[Int(b[i] >> 4)]
                        out[2 * i + 1] = hexDigits[Int(b[i] & 0x0F)]
                    }
                    return 32
                }
            }
        }
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Random bytes for ids (notification ids, `apns-id`s, collapse ids: public values, never
    /// keys), fetched 4 KiB at a time: three ids per notification were three `getrandom` calls
    /// and, with their formatting through `Character` arrays, ~10 % of a gateway's CPU for v1
    /// batches (perf, bench-gateway).
    struct RandomIDBytes: Sendable {
        private var buffer: [UInt8] = []
        private var offset = 0

        /// Calls `body` with the next 16 bytes (indexed from 0).
        mutating func next16<R>(_ body: (Span<UInt8>) -> R) -> R {
            if offset + 16 > buffer.count {
                buffer = SecureRandom.bytes(4096)
                offset = 0
            }
            defer { offset += 16 }
            return body(buffer.span.extracting(offset..<(offset + 16)))
        }
    }

    private static let randomIDBytes = Locked(RandomIDBytes())

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

    /// Claims up to `limit` queued rows of this outbox's app and environment for `owner` until
    /// `nowMs + leaseMs` (``PostgresOutbox/claim(appID:environment:owner:limit:leaseMs:nowMs:)``):
    /// gateways of other apps or of the other environment on the same database keep their own.
    /// - Throws: `RegistryError` `.unavailable`, `.query`, `.corrupt`.
    public func claim(owner: String, limit: Int, leaseMs: Int64, nowMs: Int64) throws -> [PostgresOutbox.Claimed] {
        try rows.claim(appID: configuration.sealer.appID, environment: configuration.environment, owner: owner, limit: limit, leaseMs: leaseMs, nowMs: nowMs)
    }

    /// Queue depth, rows being sent and the oldest queued row's age (ms) of this outbox's app and
    /// environment (the rows its worker claims), for `/metrics` and `/readyz`.
    /// - Throws: `RegistryError` (the database is unreachable: not ready).
    public func queueStatistics(nowMs: Int64) throws -> (queued: Int, sending: Int, oldestQueuedAgeMs: Int64) {
        try rows.queueStatistics(appID: configuration.sealer.appID, environment: configuration.environment, nowMs: nowMs)
    }

    /// Ends the queued notifications of `recipient` unsent (`cancelled`, reason `forgotten`).
    /// - Returns: how many.
    /// - Throws: `RegistryError`.
    @discardableResult
    public func cancel(recipient: String, nowMs: Int64) throws -> Int {
        let cancelled = try rows.cancelQueued(appID: configuration.sealer.appID, recipient: recipient, nowMs: nowMs)
        for _ in cancelled { metrics.finished(status: "cancelled", reason: "forgotten", apnsNanoseconds: nil) }
        reportCancelled(cancelled, reason: "forgotten")
        return cancelled.count
    }

    /// Hands each row ended `cancelled` to ``Configuration/onCancelled`` (after its commit).
    func reportCancelled(_ rows: [PostgresOutbox.CancelledRow], reason: String) {
        guard let report = configuration.onCancelled else { return }
        for r in rows {
            report(OutboxWorker.FinalOutcome(id: r.id, recipient: r.recipient, apnsID: r.apnsID, status: "cancelled",
                                             httpStatus: nil, reason: reason, apnsUniqueID: nil, attempts: r.attempts))
        }
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
