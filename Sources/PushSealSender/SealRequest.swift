public import PushSealWire
public import PushSealJSON

/// What a sender asks to seal: the wire module's `PushNotification` (everything that goes inside
/// `encrypted_data`) and, optionally, a time to live that the sealer turns into `exp`.
///
/// Its JSON form is the notification's sending form (`PushNotification(sendingJSON:)`) plus
/// `ttl` (an integer number of seconds, not sealed itself). A value built in code is checked
/// by the same rules when it is sealed (``validate()``): the sender never seals a plaintext a
/// receiver rejects.
public struct SealRequest: Sendable, Equatable {
    /// What the user should see; `iat` defaults to the seal time when `nil`.
    public var notification: PushSealWire.PushNotification
    /// Time to live in seconds from the seal (0 or more); the sealer turns it into `exp`, which
    /// must stay at most `WireFormat.maxTimeSeconds`. Exclusive with `notification.exp`.
    public var ttlSeconds: Int64?

    /// Creates a request.
    public init(_ notification: PushSealWire.PushNotification, ttlSeconds: Int64? = nil) {
        self.notification = notification
        self.ttlSeconds = ttlSeconds
    }

    /// Reads the JSON form (the sending form of `PushNotification` plus `ttl`).
    /// - Throws: `SenderError` `.invalidNotification` naming the member for a wrong JSON type,
    ///   an unknown member, a time out of range (negative, after `WireFormat.maxTimeSeconds`,
    ///   `exp` before `iat`, both `exp` and `ttl`), or a `media`, `localizations` or `data` a
    ///   receiver would reject.
    public init(json: JSONValue) throws {
        var ttl: Int64?
        let notification = try SenderError.fromNotificationRules {
            try PushNotification(sendingJSON: json, extraMemberNames: ["ttl"], extraMember: { key, value in
                guard key == "ttl" else { return false }
                ttl = try PushNotification.sendingTime(value, "ttl")
                return true
            }, checkingTimes: false)
        }
        self.init(notification, ttlSeconds: ttl)
        try Self.checkTTL(exp: notification.exp, ttlSeconds: ttl)
        try SenderError.fromNotificationRules { try PushNotification.checkTimes(iat: notification.iat, exp: notification.exp) }
    }

    /// The scanner's reading of `ttl` (`PushNotification.scan`'s `otherMember`): when `key` is
    /// `ttl` and not seen before, reads a non-negative integer into `ttl`.
    /// - Returns: `false` for another key, a repeated `ttl` or a value that is not a
    ///   non-negative integer (the tree decoder then gives the precise error).
    /// - Throws: the scanner's errors.
    static func scanTTL(_ key: String, _ s: inout JSONReader.Scanner, into ttl: inout Int64?) throws -> Bool {
        guard ttl == nil, key == "ttl", try s.peekKind() == .number,
              case .integer(let t) = try s.readNumber(), t >= 0 else { return false }
        ttl = t
        return true
    }

    /// Parses and reads the JSON text of a request (see ``init(json:)``).
    /// - Parameter jsonBytes: UTF-8 JSON text of one object.
    /// - Throws: `SenderError` `.invalidJSON` (not UTF-8, not JSON), `.invalidNotification`.
    public init(jsonBytes: [UInt8]) throws {
        let value: JSONValue
        do {
            value = try JSONReader.parse(jsonBytes)
        } catch let e as JSONError {
            throw SenderError(.invalidJSON, "the notification is not valid JSON: \(e.reason)")
        }
        try self.init(json: value)
    }

    /// Checks a request built in code by the rules of its JSON form (`PushNotification.validate()`
    /// and the TTL rules).
    /// - Throws: `SenderError` `.invalidNotification` naming the member.
    public func validate() throws {
        try SenderError.fromNotificationRules { try notification.validate(checkingTimes: false) }
        if let ttlSeconds { _ = try SenderError.fromNotificationRules { try PushNotification.sendingTime(.integer(ttlSeconds), "ttl") } }
        try Self.checkTTL(exp: notification.exp, ttlSeconds: ttlSeconds)
        try SenderError.fromNotificationRules { try PushNotification.checkTimes(iat: notification.iat, exp: notification.exp) }
    }

    /// Not both `exp` and a TTL.
    static func checkTTL(exp: Int64?, ttlSeconds: Int64?) throws {
        guard exp == nil || ttlSeconds == nil else {
            throw SenderError(.invalidNotification, "give either exp or ttl, not both")
        }
    }

    /// `now + ttlSeconds`, or `nil` when that is after `WireFormat.maxTimeSeconds` (or overflows).
    static func expiry(now: Int64, ttlSeconds: Int64) -> Int64? {
        let (e, overflow) = now.addingReportingOverflow(ttlSeconds)
        return overflow || e > WireFormat.maxTimeSeconds ? nil : e
    }

    /// The reason for a TTL that ``expiry(now:ttlSeconds:)`` refuses.
    static func ttlTooLarge(_ ttlSeconds: Int64) -> String {
        "ttl \(ttlSeconds) seconds is too large: exp would be after \(WireFormat.maxTimeText)"
    }
}

extension SenderError {
    /// Runs one of the wire module's notification rules; its `FormatError` becomes
    /// `.invalidNotification` with the same reason.
    static func fromNotificationRules<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as FormatError {
            throw SenderError(.invalidNotification, e.reason)
        }
    }
}
