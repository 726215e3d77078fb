import PushSealSystem
import PushSealAPNs
import PushSealCLI
import PushSealJSON
import PushSealServer

/// One input line turned into a request, or the reason it cannot be sent.
enum SendInput {
    /// What `push-send` sends for one line, or the line's error.
    enum Parsed {
        case notification(line: Int, APNsNotification)
        case invalid(line: Int, deviceToken: String, code: String, message: String)
    }

    /// Defaults from the command line for what a line does not say.
    struct Defaults {
        var deviceToken: String?
        var topic: String?
        var pushType: String?
        var priority: Int?
        var expiration: Int64?
        var collapseID: String?
    }

    /// The request fields a line's `headers` member (with the defaults) gives.
    struct HeaderFields {
        var pushType: APNsPushType
        var topic: String
        var priority: Int?
        var expiration: Int64?
        var collapseID: String?
    }

    /// The last `headers` member seen (its raw bytes, `nil` for a line without one) and what it
    /// gave: push-seal batch writes the same headers on most lines, so they are decoded once.
    struct HeaderCache {
        fileprivate var raw: [UInt8]?
        fileprivate var fields: Result<HeaderFields, SendLineError>?

        init() {}
    }

    /// Parses one line: `{"line"?, "deviceToken", "payload": {…}, "headers": {…}}` (push-seal
    /// batch's output plus a device token: ``BatchLine``), or a batch error line (`"error"`: not sealed).
    /// The payload is sent as the exact bytes of the line's `payload` member (checked as JSON,
    /// not decoded). With `validating` false the notification is not checked here
    /// (``APNsClient/send(_:tag:)`` checks it and throws the same errors).
    static func parse(_ bytes: [UInt8], physicalLine: Int, defaults: Defaults) -> Parsed {
        var cache = HeaderCache()
        var context = OutcomeLog.LineContext()
        return parse(bytes, physicalLine: physicalLine, defaults: defaults, cache: &cache, validating: true, context: &context)
    }

    /// The longest input line, in bytes (longer: `lineTooLong`).
    static let maxLineByteCount = 1 << 20

    /// ``parse(_:physicalLine:defaults:)`` reusing `cache` from the line before; `context` gets
    /// the line's `recipient` and `id` (strings), for its outcome line, whatever the result.
    /// The line is read by PushSealSender's ``BatchLine`` codec (push-seal batch's writer).
    static func parse(_ bytes: [UInt8], physicalLine: Int, defaults: Defaults, cache: inout HeaderCache, validating: Bool,
                      context: inout OutcomeLog.LineContext) -> Parsed {
        var r = BatchLine.Read()
        var failure: BatchLine.ReadError?
        do {
            try BatchLine.read(bytes, sameHeadersAs: cache.raw, into: &r)
        } catch let e as BatchLine.ReadError {
            failure = e
        } catch {
            failure = BatchLine.ReadError(code: "badInput", message: "\(error)")
        }
        context = OutcomeLog.LineContext(recipient: r.recipient, id: r.id)
        let line = r.line ?? physicalLine
        let token = r.deviceToken ?? defaults.deviceToken ?? ""
        if let failure { return .invalid(line: line, deviceToken: token, code: failure.code, message: failure.message) }
        let fields = Self.fields(r.headers.map { bytes[$0] }, same: r.headersAreTheSame, defaults: defaults, cache: &cache)
        if let batchError = r.errorCode {
            return .invalid(line: line, deviceToken: token, code: "notSealed", message: "push-seal batch could not seal this line (\(batchError))")
        }
        guard let payload = r.payload.map({ Array(bytes[$0]) }) else {
            return .invalid(line: line, deviceToken: token, code: "badPayload", message: "the line has no \"payload\" object")
        }
        guard !token.isEmpty else {
            return .invalid(line: line, deviceToken: token, code: "missingDeviceToken", message: "the line has no \"deviceToken\" (and no --device-token was given)")
        }
        switch fields {
        case .success(let f):
            let n = APNsNotification(deviceToken: token, payload: payload, pushType: f.pushType, topic: f.topic,
                                     priority: f.priority, expiration: f.expiration, collapseID: f.collapseID)
            if validating, case .failure(let e) = validated(n) { return .invalid(line: line, deviceToken: token, code: e.code, message: e.message) }
            return .notification(line: line, n)
        case .failure(let e):
            return .invalid(line: line, deviceToken: token, code: e.code, message: e.message)
        }
    }

    /// The fields of a `headers` member given as its bytes (`nil`: the line has none), from
    /// `cache` when they are the same bytes as the last line's (`same`, or both absent).
    private static func fields(_ raw: ArraySlice<UInt8>?, same: Bool, defaults: Defaults, cache: inout HeaderCache) -> Result<HeaderFields, SendLineError> {
        if let cached = cache.fields, same || (raw == nil && cache.raw == nil) { return cached }
        var headers: JSONObject?
        if let raw {
            // Checked by the reader already: this parse cannot fail but for the limits.
            guard case .object(let h)? = try? JSONReader.parse(Array(raw)) else {
                return .failure(SendLineError(code: "badHeaders", message: "\"headers\" is not a JSON object"))
            }
            headers = h
        }
        let result = fields(headers: headers, defaults: defaults)
        cache.raw = raw.map { Array($0) }
        cache.fields = result
        return result
    }

    /// A request from a payload, push-seal's headers and the defaults, validated.
    static func notification(deviceToken: String, payload: [UInt8], headers: JSONObject?, defaults: Defaults) -> Result<APNsNotification, SendLineError> {
        switch fields(headers: headers, defaults: defaults) {
        case .success(let f):
            let n = APNsNotification(deviceToken: deviceToken, payload: payload, pushType: f.pushType, topic: f.topic,
                                     priority: f.priority, expiration: f.expiration, collapseID: f.collapseID)
            return validated(n)
        case .failure(let e):
            return .failure(e)
        }
    }

    /// The request fields from push-seal's headers and the defaults.
    static func fields(headers: JSONObject?, defaults: Defaults) -> Result<HeaderFields, SendLineError> {
        func header(_ name: String) -> String? { headers?[name]?.stringValue }
        let typeName = header("apns-push-type") ?? defaults.pushType ?? "alert"
        guard let pushType = APNsPushType(rawValue: typeName) else {
            return .failure(SendLineError(code: "unknownPushType", message: "unknown push type '\(typeName.prefix(40))' (known: \(APNsPushType.allCases.map(\.rawValue).joined(separator: ", ")))"))
        }
        guard let bundle = header("apns-topic") ?? defaults.topic else {
            return .failure(SendLineError(code: "missingTopic", message: "no apns-topic in the line's headers and no --topic"))
        }
        var priority = defaults.priority
        if let p = header("apns-priority") {
            guard let v = Int(p) else { return .failure(SendLineError(code: "badPriority", message: "apns-priority '\(p.prefix(20))' is not a number")) }
            priority = v
        }
        var expiration = defaults.expiration
        if let e = header("apns-expiration") {
            guard let v = Int64(e) else { return .failure(SendLineError(code: "badExpiration", message: "apns-expiration '\(e.prefix(20))' is not an integer")) }
            expiration = v
        }
        return .success(HeaderFields(pushType: pushType, topic: pushType.topic(forBundleID: bundle), priority: priority,
                                     expiration: expiration, collapseID: header("apns-collapse-id") ?? defaults.collapseID))
    }

    /// `n` when ``APNsNotification/validate()`` accepts it, else its error.
    static func validated(_ n: APNsNotification) -> Result<APNsNotification, SendLineError> {
        do {
            try n.validate()
        } catch let e as APNsError {
            return .failure(SendLineError(code: e.code.name, message: e.reason))
        } catch {
            return .failure(SendLineError(code: "badInput", message: "\(error)"))
        }
        return .success(n)
    }
}

/// Why one line cannot be sent: a stable code and a message.
struct SendLineError: Error {
    let code: String
    let message: String
}
