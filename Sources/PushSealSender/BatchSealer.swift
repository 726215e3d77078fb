import PushSealJSON
import PushSealSystem
import Dispatch
import PushSealWire

/// Seals JSON Lines in chunks on every core, keeping input order.
///
/// Input line: `{"recipient": "…", "notification": {…}}`, optionally with `deviceToken`, `aps`
/// and `collapseId` (``BatchLineFields``: the line's own clear fields, the sealer's options as
/// defaults). Output line, one per input line in
/// the same order (blank lines, ``Line/isBlank``, are the caller's to skip): `{"recipient":…,"line":N,"id":…,"payload":{…},"headers":{…}}` (plus `"changes":[…]`
/// when the fit ladder changed something) or `{"recipient":…|null,"line":N,"error":{"code":…,"message":…}}`;
/// `N` is the 1-based input line number, so outputs of a repeated recipient can be matched to their inputs.
/// A bad line never stops the batch. The caller streams: it reads a bounded chunk, calls
/// ``seal(_:)``, writes the result, and repeats, so memory stays flat for any input length.
public struct BatchSealer: Sendable {
    /// One input line.
    public struct Line: Sendable {
        /// 1-based line number in the input.
        public var number: Int
        /// The line's bytes without the newline (empty when it was too long).
        public var bytes: [UInt8]
        /// When the line was longer than the reader's limit: its length in bytes; its bytes were dropped.
        public var overlongByteCount: Int?

        /// Creates a line.
        public init(number: Int, bytes: [UInt8], overlongByteCount: Int? = nil) {
            self.number = number
            self.bytes = bytes
            self.overlongByteCount = overlongByteCount
        }

        /// `true` for an empty line or one of JSON whitespace only (space, tab, CR): a reader
        /// skips it, with no output line, though it still counts in the line numbers.
        public var isBlank: Bool {
            overlongByteCount == nil && bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
        }
    }

    /// The result of one chunk.
    public struct Chunk: Sendable {
        /// The output JSON Lines, each ending in `\n`, in input order.
        public var output: [UInt8]
        /// How many lines failed.
        public var failureCount: Int
        /// How many lines failed with each error code (the `code` of their error lines), so a
        /// caller can summarise a batch ("keyStoreLocked: 5") and give one hint for it.
        public var failuresByCode: [String: Int]

        /// Creates a chunk result.
        public init(output: [UInt8], failureCount: Int, failuresByCode: [String: Int] = [:]) {
            self.output = output
            self.failureCount = failureCount
            self.failuresByCode = failuresByCode
        }
    }

    private let sealer: NotificationSealer
    /// Worker threads per chunk (at least 1).
    public let concurrency: Int
    /// Where a line without its own `deviceToken` gets one (`nil`: lines keep what they give).
    public let deviceTokens: (any DeviceTokenSource)?
    /// Lines per revalidation chunk: 2,048. ``seal(_:)`` calls the key provider's
    /// `beginBatch()` (``SealingKeyProvider``) before every run of at most this many lines; a
    /// caching provider (PushSealServerKeyProviders' `KeychainSealingKeys`) then checks each
    /// recipient's keyset change token at its first seal in each run, so a rotation, revoke or
    /// keychain lock by another process is seen from the next run on at the latest.
    public static let revalidationLineCount = 2048

    /// Lines a worker takes at a time (workers take the next run as they finish: dynamic balance).
    static let linesPerTask = 16

    /// Creates a batch sealer.
    /// - Parameters:
    ///   - sealer: the configured sealer (app id, keys, options); its key provider's
    ///     `beginBatch()` is called before each run of ``revalidationLineCount`` lines.
    ///   - concurrency: worker threads; defaults to the active processor count.
    ///   - deviceTokens: looked up once per run of ``revalidationLineCount`` lines for the lines
    ///     that give no `deviceToken`; a line whose recipient has none fails (`noDeviceToken`)
    ///     without being sealed. Each input line still has exactly one output line.
    public init(sealer: NotificationSealer, concurrency: Int? = nil, deviceTokens: (any DeviceTokenSource)? = nil) {
        self.sealer = sealer
        self.concurrency = max(1, concurrency ?? activeProcessorCount)
        self.deviceTokens = deviceTokens
    }

    /// Seals `lines` in parallel and returns their output lines in order.
    public func seal(_ lines: [Line]) -> Chunk {
        var results: [LineResult] = []
        results.reserveCapacity(lines.count)
        var runStart = 0
        while runStart < lines.count {
            let runEnd = min(runStart + Self.revalidationLineCount, lines.count)
            let bulk = sealer.keys.loadsBatchRecipientsInBulk || deviceTokens != nil
            let recipients = bulk ? Self.recipients(lines[runStart..<runEnd]) : []
            if sealer.keys.loadsBatchRecipientsInBulk {
                sealer.keys.beginBatch(appID: sealer.appID, recipients: recipients)
            } else {
                sealer.keys.beginBatch()
            }
            let tokens = deviceTokens.map { ChunkDeviceTokens(source: $0, appID: sealer.appID, recipients: recipients) }
            let count = runEnd - runStart
            let tasks = (count + Self.linesPerTask - 1) / Self.linesPerTask
            if concurrency == 1 || tasks == 1 {
                for i in runStart..<runEnd { results.append(sealLineReportingCode(lines[i], tokens: tokens)) }
            } else {
                // Each task seals its lines into its own array and hands it over under the lock
                // once (one lock per linesPerTask lines); the run's results are then taken in order.
                let base = runStart
                let next = Locked(0)
                let done = Locked([[LineResult]](repeating: [], count: tasks))
                DispatchQueue.concurrentPerform(iterations: min(concurrency, tasks)) { _ in
                    while let t = next.takeIndex(below: tasks) {
                        let start = base + t * Self.linesPerTask
                        let end = min(start + Self.linesPerTask, runEnd)
                        var sealed: [LineResult] = []
                        sealed.reserveCapacity(end - start)
                        for i in start..<end { sealed.append(sealLineReportingCode(lines[i], tokens: tokens)) }
                        done.withLock { $0[t] = sealed }
                    }
                }
                done.withLock { for taskResults in $0 { results.append(contentsOf: taskResults) } }
            }
            runStart = runEnd
        }
        var total = 0
        var failures = 0
        var byCode: [String: Int] = [:]
        for r in results {
            total += r.bytes.count
            if let code = r.failureCode { failures += 1; byCode[code, default: 0] += 1 }
        }
        var out: [UInt8] = []
        out.reserveCapacity(total)
        for r in results { out.append(contentsOf: r.bytes) }
        return Chunk(output: out, failureCount: failures, failuresByCode: byCode)
    }

    /// The recipients the lines name, each once in first-seen order, read quickly: a line's
    /// `recipient` when it is the object's first member (a plain non-empty string); other lines
    /// are left out (their seal looks the key up alone).
    static func recipients(_ lines: ArraySlice<Line>) -> [String] {
        var seen = Set<String>()
        var out: [String] = []
        for line in lines where line.overlongByteCount == nil && !line.bytes.isEmpty && line.bytes.count <= lineLimits.maxByteCount {
            let r: String?? = try? JSONReader.Scanner.scanning(line.bytes, limits: lineLimits) { s -> String? in
                guard try s.peekKind() == .object else { return nil }
                try s.beginObject()
                guard let key = try s.nextKey(), !key.hasEscapes, s.rawEquals(key, "recipient"), try s.peekKind() == .string else { return nil }
                let r = s.string(try s.readString())
                return r.isEmpty ? nil : r
            }
            if let r = r ?? nil, seen.insert(r).inserted { out.append(r) }
        }
        return out
    }

    /// The bounds for one input line: 2 MiB, nesting depth 64.
    static let lineLimits = JSONReader.Limits(maxByteCount: 2 << 20)

    /// Seals one line into its output line (with the trailing newline).
    ///
    /// A well-formed line takes the scan path (no tree, text copied from the line into the
    /// plaintext); anything else takes the tree path, which gives the same output or the
    /// precise error.
    public func sealLine(_ line: Line) -> (bytes: [UInt8], failed: Bool) {
        let r = sealLineReportingCode(line)
        return (r.bytes, r.failureCode != nil)
    }

    /// ``sealLine(_:)`` with the error code of a failed line (`nil` when it was sealed).
    func sealLineReportingCode(_ line: Line, tokens: ChunkDeviceTokens? = nil) -> (bytes: [UInt8], failureCode: String?) {
        var recipient: String?
        var fields = BatchLineFields()  // the tree path's (the scan path keeps its own in `scanned`)
        var scannedToken: String?       // the scan path's device token, for an error line
        var notificationID: String?     // the notification's id once known, for an error line
        do {
            if let n = line.overlongByteCount {
                throw SenderError(.lineTooLong, "the line is \(n) bytes, longer than the limit")
            }
            // The scanner holds the line, so the notification's text stays spans of it.
            let maybeScanned = line.bytes.isEmpty || line.bytes.count > Self.lineLimits.maxByteCount ? nil
                : (try? JSONReader.Scanner.scanning(line.bytes, limits: Self.lineLimits) { Self.scanLine(&$0) }) ?? nil
            // Moved, not copied (a copy retains every member of the notification and the fields).
            if var scanned = consume maybeScanned {
                recipient = scanned.recipient
                if scanned.fields.deviceToken == nil, let tokens { scanned.fields.deviceToken = try tokens.token(for: scanned.recipient) }
                scannedToken = scanned.fields.deviceToken
                try SealRequest.checkTTL(exp: scanned.notification.exp, ttlSeconds: scanned.ttl)
                notificationID = scanned.notification.id
                let clear = try sealer.clearPart(overriding: scanned.fields)
                let sealed = try sealer.seal(&scanned.notification, ttlSeconds: scanned.ttl, for: scanned.recipient, clear: clear)
                return (Self.output(recipient: scanned.recipient, line: line.number, id: scanned.notification.id, deviceToken: scanned.fields.deviceToken,
                                    sealed: sealed), nil)
            }
            let (r, n) = try Self.treeLine(line.bytes, recipient: &recipient, fields: &fields)
            if fields.deviceToken == nil, let tokens { fields.deviceToken = try tokens.token(for: r) }
            if case .string(let id)? = n["id"] { notificationID = id }
            var request = try SealRequest(json: n)
            let clear = try sealer.clearPart(overriding: fields)
            let sealed = try sealer.seal(&request.notification, ttlSeconds: request.ttlSeconds, for: r, clear: clear)
            return (Self.output(recipient: r, line: line.number, id: request.notification.id, deviceToken: fields.deviceToken, sealed: sealed), nil)
        } catch {
            let (code, message) = BatchSealer.describe(error)
            var w = JSONWriter(reservingCapacity: 256)
            BatchLine.writeFailed(recipient: recipient, line: line.number, id: notificationID, deviceToken: scannedToken ?? fields.deviceToken,
                                  code: code, message: message, to: &w)
            return (w.bytes, code)
        }
    }

    /// The scan path of one line: `{"recipient": "…", "notification": {…}}` with those two
    /// members and optionally the ``BatchLineFields`` ones, the notification read by the wire
    /// module's scanner (`PushNotification.scan`); returns the recipient, notification, `ttl` and
    /// the line's own fields, or `nil` to take the tree path (which gives the precise error).
    static func scanLine(_ s: inout JSONReader.Scanner) -> (recipient: String, notification: PushNotification, ttl: Int64?, fields: BatchLineFields)? {
        do {
            guard try s.peekKind() == .object else { return nil }
            try s.beginObject()
            var recipient: String?
            var scanned: PushNotification?
            var ttl: Int64?
            var fields = BatchLineFields()
            var seen: [String] = []  // at most three names: a small array, no hashing
            while let key = try s.nextKey() {
                if recipient == nil, !key.hasEscapes, s.rawEquals(key, "recipient") {
                    guard try s.peekKind() == .string else { return nil }
                    let r = s.string(try s.readString())
                    guard !r.isEmpty else { return nil }
                    recipient = r
                } else if scanned == nil, !key.hasEscapes, s.rawEquals(key, "notification") {
                    var n = PushNotification()
                    guard PushNotification.scan(&s, into: &n, otherMember: { try SealRequest.scanTTL($0, &$1, into: &ttl) }) else { return nil }
                    scanned = n
                } else if !key.hasEscapes, let name = Self.lineFieldName(s, key), !seen.contains(name) {
                    seen.append(name)
                    // A token is a string: read it without a JSON value.
                    let value: JSONValue = try name == "deviceToken" && s.peekKind() == .string ? .string(s.string(s.readString())) : s.readValue()
                    guard try fields.take(name, value) else { return nil }
                } else {
                    return nil
                }
            }
            try s.finish()
            guard let recipient, let scanned else { return nil }
            return (recipient, scanned, ttl, fields)
        } catch {
            return nil
        }
    }

    /// The ``BatchLineFields`` member `key` names, `nil` for another name.
    static func lineFieldName(_ s: JSONReader.Scanner, _ key: JSONReader.StringSpan) -> String? {
        if s.rawEquals(key, "deviceToken") { return "deviceToken" }
        if s.rawEquals(key, "aps") { return "aps" }
        if s.rawEquals(key, "collapseId") { return "collapseId" }
        return nil
    }

    /// The tree path of one line: parse and check the members (the notification is read by
    /// the caller, once the recipient is known for the error line).
    /// - Throws: `SenderError` `.invalidJSON`, `.invalidNotification`.
    static func treeLine(_ bytes: [UInt8]) throws -> (recipient: String, notification: JSONValue) {
        var recipient: String?
        var fields = BatchLineFields()
        return try treeLine(bytes, recipient: &recipient, fields: &fields)
    }

    /// ``treeLine(_:)``, setting `recipient` as soon as the line is an object with a non-empty
    /// string `recipient`, before its other members are checked: an error line then names it;
    /// `fields` gets the line's ``BatchLineFields`` members (a valid device token first, so an
    /// error line carries it too).
    static func treeLine(_ bytes: [UInt8], recipient: inout String?, fields: inout BatchLineFields) throws -> (recipient: String, notification: JSONValue) {
        let value: JSONValue
        do {
            value = try JSONReader.parse(bytes, limits: lineLimits)
        } catch let e as JSONError {
            throw SenderError(.invalidJSON, "the line is not valid JSON: \(e.reason)")
        }
        guard case .object(let o) = value else {
            throw SenderError(.invalidNotification, "a line must be an object {recipient, notification}, got \(value.typeName)")
        }
        if case .string(let r)? = o["recipient"], !r.isEmpty { recipient = r }
        if let t = o["deviceToken"] { _ = try fields.take("deviceToken", t) }
        let retract = o["retract"]
        for m in o where m.key != "recipient" && m.key != "notification" && m.key != "retract" {
            // A retract line is a background push: no clear aps, no collapse id (FORMAT.md §5.1).
            if retract != nil, m.key != "deviceToken" {
                throw SenderError(.invalidNotification, "a retract line carries recipient, retract and deviceToken only, not \(PushNotification.excerpt(m.key)) (a retract is a background push without an alert)")
            }
            guard try fields.take(m.key, m.value) else {
                throw SenderError(.invalidNotification, "unknown member \(PushNotification.excerpt(m.key)) (known: \((["recipient", "notification", "retract"] + BatchLineFields.memberNames).joined(separator: ", ")))")
            }
        }
        guard case .string(let r)? = o["recipient"], !r.isEmpty else {
            throw SenderError(.invalidNotification, "the line needs a non-empty string recipient")
        }
        if let retract {
            guard o["notification"] == nil else {
                throw SenderError(.invalidNotification, "a line has a notification or a retract, not both")
            }
            return (r, retractNotification(ids: retract))
        }
        guard let n = o["notification"] else { throw SenderError(.invalidNotification, "the line needs a notification (or a retract)") }
        return (r, n)
    }

    /// The notification of a retract line (`{"recipient": …, "retract": ["id", …]}`): the
    /// sending form `{"kind": "retract", "ids": […]}`, read and checked like any notification.
    static func retractNotification(ids: JSONValue) -> JSONValue {
        var o = JSONObject()
        o["kind"] = .string(MessageKind.retract.rawValue)
        o["ids"] = ids
        return .object(o)
    }

    /// The sealed line (``BatchLine/writeSealed(recipient:line:id:deviceToken:payload:headers:changes:to:)``)
    /// and its newline.
    static func output(recipient: String, line: Int, id: String? = nil, deviceToken: String? = nil, sealed: SealedNotification) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: sealed.payload.count + recipient.utf8.count + 256)
        BatchLine.writeSealed(recipient: recipient, line: line, id: id, deviceToken: deviceToken, payload: sealed.payload,
                              headers: sealed.headers, changes: sealed.changes, to: &w)
        return w.bytes
    }

    /// A stable code and a message for any error a line can raise.
    public static func describe(_ error: any Error) -> (code: String, message: String) {
        if let e = error as? SenderError { return (e.code.name, e.reason) }
        if let e = error as? any SenderErrorConvertible { let s = e.senderError; return (s.code.name, s.reason) }
        return ("internal", String(describing: error))
    }
}

/// One line's output bytes and, for a failed line, its error code.
typealias LineResult = (bytes: [UInt8], failureCode: String?)

/// An error a key provider throws that maps onto a ``SenderError`` for reporting.
public protocol SenderErrorConvertible: Error {
    /// The equivalent sender error.
    var senderError: SenderError { get }
}
