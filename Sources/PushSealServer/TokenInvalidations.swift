import PushSealKeyRecords
public import PushSealServerKeys
public import PushSealAPNs
import PushSealJSON

/// The dead tokens in push-send's output, for `push-keys token invalidate`, read by
/// ``APNsOutcomeLine`` (push-send's own codec): its outcome lines
/// (`{"line", "deviceToken", "outcome": "unregistered", …, "timestamp"}`) or its
/// `--invalidations` lines (`{"line", "deviceToken", "reason", "timestamp"?}`). Every line must
/// be one of the two: anything else is refused (``ServerError`` `.unknownInput`), so a wrong
/// file never reads as "nothing to invalidate".
public struct PushSendInvalidations: Sendable {
    /// One token to invalidate.
    public struct Item: Sendable, Hashable {
        /// The line's `line` member (push-send's input line number), if any.
        public var line: Int64?
        /// The device token as written.
        public var deviceToken: String
        /// The 410's timestamp (ms since 1970); for a `BadDeviceToken` invalidation line (no
        /// timestamp: push-send's guard already decided the token is dead), the time of reading.
        public var unregisteredAtMs: Int64
    }

    /// The tokens to invalidate, in input order.
    public var items: [Item] = []
    /// `unregistered` outcome lines (or 410 invalidation lines) without a `timestamp` (nothing
    /// changes for them; APNs' 410 always has one).
    public var noTimestamp = 0
    /// Outcome lines read (any outcome).
    public var outcomeLines = 0
    /// Invalidation lines read.
    public var invalidationLines = 0

    /// Reads push-send's outcome or invalidation lines (the two may be mixed). Blank lines are
    /// skipped; a partial last line (push-send killed while writing it) is skipped.
    /// - Parameters:
    ///   - bytes: the file's bytes.
    ///   - nowMilliseconds: the time a `BadDeviceToken` invalidation line counts as its timestamp.
    /// - Throws: ``ServerError`` `.invalidOutcome` (a line that is not a JSON object, an
    ///   `unregistered` outcome without a `deviceToken` string), `.unknownInput` (a JSON object
    ///   that is neither an outcome line nor an invalidation line); nothing is applied then.
    public init(parsing bytes: [UInt8], nowMilliseconds: Int64) throws {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if bytes.last != UInt8(ascii: "\n") { lines.removeLast() }
        for (i, raw) in lines.enumerated() where !raw.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0d }) {
            guard let r = APNsOutcomeLine.read(Array(raw)) else {
                throw ServerError(.invalidOutcome, "outcome line \(i + 1) is not a JSON object")
            }
            if let outcome = r.outcome {
                outcomeLines += 1
                guard outcome == APNsOutcome.Kind.unregistered.rawValue else { continue }
                guard let token = r.deviceToken else {
                    throw ServerError(.invalidOutcome, "outcome line \(i + 1) is unregistered without a deviceToken string")
                }
                guard let ts = r.timestamp else { noTimestamp += 1; continue }
                items.append(Item(line: r.line, deviceToken: token, unregisteredAtMs: ts))
            } else if r.isInvalidation, let token = r.deviceToken, let reason = r.reason {
                invalidationLines += 1
                if let ts = r.timestamp {
                    items.append(Item(line: r.line, deviceToken: token, unregisteredAtMs: ts))
                } else if reason == "BadDeviceToken" {
                    items.append(Item(line: r.line, deviceToken: token, unregisteredAtMs: nowMilliseconds))
                } else {
                    noTimestamp += 1
                }
            } else {
                throw ServerError(.unknownInput, "line \(i + 1) is neither a push-send outcome line (with \"outcome\") nor an invalidation line (with \"deviceToken\" and \"reason\")")
            }
        }
    }
}

extension ServerStore {
    /// Applies APNs' dead-token answers to the store's device tokens (docs/apns.md "Token
    /// hygiene"): each token is removed only when it was registered before the answer's
    /// timestamp; registered at or after it, it is kept (the app registered it again).
    /// - Parameters:
    ///   - items: (token, timestamp in ms since 1970) pairs.
    ///   - appID: the app the tokens belong to.
    /// - Returns: one result per pair, in order.
    /// - Throws: `KeysError` `.invalidDeviceToken`, `.timeOutOfRange` (checked before anything
    ///   changes), `.invalidName`; ``ServerError`` `.unsupportedStore`; the store's errors.
    public func invalidateDeviceTokens(_ items: [(token: String, unregisteredAtMs: Int64)], appID: String) throws -> [DeviceTokenInvalidation] {
        let checked = try DeviceToken.checkUnregistrations(items)
        return try deviceTokenStore().invalidateDeviceTokens(checked, appID: appID)
    }

    /// ``invalidateDeviceTokens(_:appID:)`` for the client's invalidations (a 410 with its
    /// timestamp; a `BadDeviceToken` the guard let through counts as dead at `nowMilliseconds`).
    /// - Throws: as ``invalidateDeviceTokens(_:appID:)``.
    public func apply(_ invalidations: [APNsInvalidation], appID: String, nowMilliseconds: Int64) throws -> [DeviceTokenInvalidation] {
        try invalidateDeviceTokens(invalidations.map { ($0.deviceToken, $0.timestampMilliseconds ?? nowMilliseconds) }, appID: appID)
    }
}
