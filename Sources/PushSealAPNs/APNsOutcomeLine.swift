public import PushSealJSON

/// The codec of push-send's output lines: its outcome lines (standard output or `--outcomes`),
/// the intent lines of an `--outcomes` file, and its `--invalidations` lines. push-send writes
/// them with it; `push-send --resume` and `push-keys token invalidate` read them with it, so the
/// member names exist once. Each line is one JSON object and a `\n`.
///
/// - An outcome line: `{"line", "recipient"?, "id"?, "deviceToken", "outcome", "status"?,
///   "reason"?, "apnsId", "apnsUniqueId"?, "timestamp"?, "attempts", "connection"?, "latencyMs"}`
///   (`latencyMs` with three decimals); a line not sent has `"outcome":"failed"`, a `reason`,
///   an `error` object or `"resumed":true`, and `"attempts":0`.
/// - An intent line: `{"line", "intent":"send", "apnsId"}`, written before the request goes out.
/// - An invalidation line: `{"line", "deviceToken", "reason", "timestamp"?}`.
///
/// The writers are inlinable: push-send's pending buffer gets a writer specialized for it.
public enum APNsOutcomeLine {
    /// What an input line says about its notification, repeated in its outcome line.
    public struct Context: Sendable, Hashable {
        /// The input line's `recipient`, if any.
        public var recipient: String?
        /// The input line's notification `id`, if any.
        public var id: String?
        /// Neither is known.
        public var isEmpty: Bool { recipient == nil && id == nil }

        /// A context of the two (each optional).
        public init(recipient: String? = nil, id: String? = nil) {
            self.recipient = recipient
            self.id = id
        }
    }

    /// Writes the outcome line of `o` (with `context`'s members) and its newline.
    @inlinable public static func write<S: ByteSink>(_ o: APNsOutcome, context: Context, to w: inout JSONSinkWriter<S>) {
        start(line: o.tag, context: context, deviceToken: o.deviceToken, to: &w)
        w.key(static: "outcome"); w.string(o.kind.rawValue)
        if let s = o.status { w.key(static: "status"); w.integer(s) }
        if let r = o.reason { w.key(static: "reason"); w.string(r) }
        w.key(static: "apnsId"); w.string(o.apnsID)
        if let u = o.apnsUniqueID { w.key(static: "apnsUniqueId"); w.string(u) }
        if let t = o.timestampMilliseconds { w.key(static: "timestamp"); w.integer(t) }
        w.key(static: "attempts"); w.integer(o.attempts)
        if let c = o.connection { w.key(static: "connection"); w.integer(c) }
        w.key(static: "latencyMs"); w.decimal(Int64(clamping: o.latencyNanoseconds / 1000), fractionDigits: 3)
        w.endObject()
        w.endLine()
    }

    /// Writes the outcome line of an input line that was not sent (bad input): outcome
    /// `failed`, reason `code`, `error` `{code, message}`, attempts 0.
    @inlinable public static func writeNotSent<S: ByteSink>(line: Int, deviceToken: String, code: String, message: String, context: Context,
                                                 to w: inout JSONSinkWriter<S>) {
        start(line: line, context: context, deviceToken: deviceToken, to: &w)
        w.key(static: "outcome"); w.string(APNsOutcome.Kind.failed.rawValue)
        w.key(static: "reason"); w.string(code)
        w.key(static: "error")
        w.beginObject()
        w.key(static: "code"); w.string(code)
        w.key(static: "message"); w.string(message)
        w.endObject()
        w.key(static: "attempts"); w.integer(0)
        w.endObject()
        w.endLine()
    }

    /// The reason of ``writeUnconfirmed(line:deviceToken:context:to:)``'s line.
    public static let mayHaveBeenDelivered = "mayHaveBeenDelivered"

    /// Writes the outcome line of an input line `--resume` does not send again because an
    /// earlier run recorded its intent and no outcome: outcome `failed`, reason
    /// ``mayHaveBeenDelivered``, `"resumed":true`, attempts 0.
    @inlinable public static func writeUnconfirmed<S: ByteSink>(line: Int, deviceToken: String, context: Context, to w: inout JSONSinkWriter<S>) {
        start(line: line, context: context, deviceToken: deviceToken, to: &w)
        w.key(static: "outcome"); w.string(APNsOutcome.Kind.failed.rawValue)
        w.key(static: "reason"); w.string(mayHaveBeenDelivered)
        w.key(static: "resumed"); w.bool(true)
        w.key(static: "attempts"); w.integer(0)
        w.endObject()
        w.endLine()
    }

    /// Writes the intent line of `i` and its newline.
    @inlinable public static func write<S: ByteSink>(_ i: APNsIntent, to w: inout JSONSinkWriter<S>) {
        w.beginObject()
        w.key(static: "line"); w.integer(i.tag)
        w.key(static: "intent"); w.string("send")
        w.key(static: "apnsId"); w.string(i.apnsID)
        w.endObject()
        w.endLine()
    }

    /// Writes the invalidation line of `i` and its newline.
    @inlinable public static func write<S: ByteSink>(_ i: APNsInvalidation, to w: inout JSONSinkWriter<S>) {
        w.beginObject()
        w.key(static: "line"); w.integer(i.tag)
        w.key(static: "deviceToken"); w.string(i.deviceToken)
        w.key(static: "reason"); w.string(i.reason)
        if let t = i.timestampMilliseconds { w.key(static: "timestamp"); w.integer(t) }
        w.endObject()
        w.endLine()
    }

    @inlinable static func start<S: ByteSink>(line: Int, context: Context, deviceToken: String, to w: inout JSONSinkWriter<S>) {
        w.beginObject()
        w.key(static: "line"); w.integer(line)
        if let r = context.recipient { w.key(static: "recipient"); w.string(r) }
        if let i = context.id { w.key(static: "id"); w.string(i) }
        w.key(static: "deviceToken"); w.string(deviceToken)
    }

    /// What a reader takes from one line of any of the three kinds (members of another type
    /// read as absent).
    public struct Read: Sendable, Hashable {
        /// `line` (push-send's input line number).
        public var line: Int64?
        /// `deviceToken`.
        public var deviceToken: String?
        /// `outcome`: present on an outcome line (any text; ``kind`` when a known one).
        public var outcome: String?
        /// `status` (HTTP status of APNs' answer).
        public var status: Int?
        /// `reason` (APNs' reason, or why the line was not sent; an invalidation's reason).
        public var reason: String?
        /// `timestamp` (ms since 1970: a 410's).
        public var timestamp: Int64?
        /// The line has an `intent` member.
        public var isIntent = false

        /// ``outcome`` as a known kind.
        public var kind: APNsOutcome.Kind? { outcome.flatMap(APNsOutcome.Kind.init(rawValue:)) }
        /// An outcome line (it has `outcome`).
        public var isOutcome: Bool { outcome != nil }
        /// An invalidation line: no `outcome`, and a `deviceToken` and a `reason`.
        public var isInvalidation: Bool { outcome == nil && deviceToken != nil && reason != nil }
    }

    /// Reads one line (without its newline).
    /// - Returns: its members, or `nil` when it is not a JSON object.
    public static func read(_ bytes: [UInt8]) -> Read? {
        guard case .object(let o)? = try? JSONReader.parse(bytes) else { return nil }
        var r = Read()
        r.line = o["line"]?.integerValue
        r.deviceToken = o["deviceToken"]?.stringValue
        r.outcome = o["outcome"]?.stringValue
        r.status = o["status"]?.integerValue.map { Int(clamping: $0) }
        r.reason = o["reason"]?.stringValue
        r.timestamp = o["timestamp"]?.integerValue
        r.isIntent = o["intent"] != nil
        return r
    }
}
