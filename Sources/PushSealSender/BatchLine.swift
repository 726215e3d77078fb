public import PushSealJSON

/// The codec of one line of `push-seal batch`'s output, which is `push-send`'s input: the
/// writer (``BatchSealer``) and the reader (push-send) share these member names and shapes.
///
/// A sealed line: `{"recipient":…,"line":N[,"id":…][,"deviceToken":…],"payload":{…},"headers":{…}[,"changes":[…]]}`
/// (`N`: the 1-based input line number; `id` the notification's id as sealed, given or
/// generated, repeated outside the payload for push-send's outcome lines; the device token as
/// the input line gave it). An error line: `{"recipient":…|null,"line":N[,"id":…][,"deviceToken":…],"error":{"code":…,"message":…}}`.
/// Each is one line of JSON ending in `\n`.
public enum BatchLine {
    /// Writes a sealed line and its newline.
    /// - Parameters:
    ///   - payload: the APNs payload (compact JSON, copied as it is).
    ///   - headers: the APNs request headers (``APNsHeaders/write(to:)``).
    ///   - changes: what the fit ladder changed, written as their descriptions (none: no member).
    public static func writeSealed<S: ByteSink>(recipient: String, line: Int, id: String?, deviceToken: String?, payload: [UInt8],
                                                headers: APNsHeaders, changes: [FitChange], to w: inout JSONSinkWriter<S>) {
        w.beginObject()
        w.key(static: "recipient"); w.string(recipient)
        w.key(static: "line"); w.integer(line)
        if let id { w.key(static: "id"); w.string(id) }
        if let deviceToken { w.key(static: "deviceToken"); w.string(deviceToken) }
        w.key(static: "payload"); w.value(json: payload)
        w.key(static: "headers"); headers.write(to: &w)
        if !changes.isEmpty {
            w.key(static: "changes")
            w.beginArray()
            for c in changes { w.string(c.description) }
            w.endArray()
        }
        w.endObject()
        w.endLine()
    }

    /// Writes an error line (the input line was not sealed) and its newline.
    /// - Parameters:
    ///   - recipient: the line's recipient, `nil` (written `null`) when it had none.
    ///   - code: ``SenderError`` code name; `message`: its reason.
    public static func writeFailed<S: ByteSink>(recipient: String?, line: Int, id: String?, deviceToken: String?, code: String, message: String,
                                                to w: inout JSONSinkWriter<S>) {
        w.beginObject()
        w.key(static: "recipient")
        if let recipient { w.string(recipient) } else { w.null() }
        w.key(static: "line"); w.integer(line)
        if let id { w.key(static: "id"); w.string(id) }
        if let deviceToken { w.key(static: "deviceToken"); w.string(deviceToken) }
        w.key(static: "error")
        w.beginObject()
        w.key(static: "code"); w.string(code)
        w.key(static: "message"); w.string(message)
        w.endObject()
        w.endObject()
        w.endLine()
    }

    /// What a reader takes from one line (push-send's input: a batch line, plus a
    /// `deviceToken` when push-seal had none). Unknown members are read and passed over.
    public struct Read: Sendable {
        /// `line`: a positive integer, `nil` when absent (the reader numbers the line itself).
        public var line: Int?
        /// `deviceToken`, when a string.
        public var deviceToken: String?
        /// `recipient`, when a string of at most ``maxContextByteCount`` bytes.
        public var recipient: String?
        /// `id`, when a string of at most ``maxContextByteCount`` bytes.
        public var id: String?
        /// Where `payload` (an object) lies in the line's bytes.
        public var payload: Range<Int>?
        /// Where `headers` (an object) lies in the line's bytes.
        public var headers: Range<Int>?
        /// `headers` holds the same bytes as the `sameHeadersAs` given to ``read(_:sameHeadersAs:)``
        /// (stepped over, not checked again).
        public var headersAreTheSame = false
        /// `error.code` of an error line (`sealFailed` when it has none): the line was not sealed.
        public var errorCode: String?

        /// Nothing read yet.
        public init() {}
    }

    /// The longest `recipient` or `id` a reader keeps, in bytes (longer: left out).
    public static let maxContextByteCount = 1024

    /// Why a line cannot be read: a stable code and a message.
    public struct ReadError: Error, Sendable {
        /// `badPayload`, `badHeaders`, `badDeviceToken`, `badLine` or `badInput` (not JSON).
        public let code: String
        /// What is wrong, in words.
        public let message: String

        /// An error of `code` saying `message`.
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// Reads one line's members (``Read``). The members `recipient`, `id` and `line` are
    /// taken as soon as they are read, so `partial` holds them even when a later member fails.
    /// - Parameters:
    ///   - bytes: the line, without its newline.
    ///   - sameHeadersAs: the last line's `headers` bytes, if any: equal bytes are not parsed again.
    ///   - partial: what was read so far (reset first).
    /// - Throws: ``ReadError``; its `badInput` for a line that is not one JSON object.
    public static func read(_ bytes: [UInt8], sameHeadersAs last: [UInt8]?, into r: inout Read) throws {
        r = Read()
        do {
            try JSONReader.Scanner.scanning(bytes) { s in
                try s.beginObject()
                while let key = try s.nextKey() {
                    if s.rawEquals(key, "payload") {
                        guard try s.peekKind() == .object else { throw ReadError(code: "badPayload", message: "\"payload\" is not a JSON object") }
                        let start = s.offset
                        try s.skipValue()
                        r.payload = start..<s.offset
                    } else if s.rawEquals(key, "headers") {
                        guard try s.peekKind() == .object else { throw ReadError(code: "badHeaders", message: "\"headers\" is not a JSON object") }
                        let start = s.offset
                        let same = last.map { s.skipValue(ifEqualTo: $0) } ?? false
                        if !same { try s.skipValue() }
                        r.headers = start..<s.offset
                        r.headersAreTheSame = same
                    } else if s.rawEquals(key, "deviceToken") {
                        guard try s.peekKind() == .string else { throw ReadError(code: "badDeviceToken", message: "\"deviceToken\" is not a string") }
                        r.deviceToken = s.string(try s.readString())
                    } else if s.rawEquals(key, "line") {
                        guard case .integer(let n) = try s.readNumber(), n >= 1, n <= Int64(Int32.max) else {
                            throw ReadError(code: "badLine", message: "\"line\" is not a positive integer")
                        }
                        r.line = Int(n)
                    } else if s.rawEquals(key, "recipient") || s.rawEquals(key, "id") {
                        let isRecipient = s.rawEquals(key, "recipient")
                        if case .string(let v) = try s.readValue(), v.utf8.count <= maxContextByteCount {
                            if isRecipient { r.recipient = v } else { r.id = v }
                        }
                    } else if s.rawEquals(key, "error") {
                        let e = try s.readValue()
                        r.errorCode = e["code"]?.stringValue ?? "sealFailed"
                    } else {
                        _ = try s.readValue()
                    }
                }
                try s.finish()
            }
        } catch let e as JSONError {
            throw ReadError(code: "badInput", message: "not a JSON object: \(e.reason)")
        }
    }
}
