import PushSealKeyRecords

/// One version 2 item `push-keys due` reports (issue 24, "Operators"): a sender key to rotate,
/// a next sender key not promoted yet (with the pins outstanding), or a registration the app
/// has not rotated for too long (its background task never runs).
public struct V2DueItem: Sendable, Hashable {
    /// What is due.
    public enum Reason: String, Sendable, Hashable {
        /// The app's primary sender key is older than the rotation period.
        case senderKeyAge
        /// A next sender key was added (`sender add`) and not promoted yet.
        case nextKeyNotPromoted
        /// The recipient's current registration is older than the registration period: the
        /// app's 30-day background rotation has not run (or its uploads do not arrive).
        case registrationNotRotated
    }

    /// The app id.
    public var appID: String
    /// The recipient; `nil` for an app's sender key.
    public var recipient: String?
    /// The sender key id or the registration's key id.
    public var keyID: String
    /// Seconds since the key was made (sender keys) or registered (registrations).
    public var ageSeconds: Int64
    /// Why it is listed.
    public var reason: Reason
    /// For ``Reason/nextKeyNotPromoted``: who pinned it; `nil` otherwise.
    public var pins: SenderPinReadiness?

    /// Creates one.
    public init(appID: String, recipient: String?, keyID: String, ageSeconds: Int64, reason: Reason, pins: SenderPinReadiness? = nil) {
        self.appID = appID
        self.recipient = recipient
        self.keyID = keyID
        self.ageSeconds = ageSeconds
        self.reason = reason
        self.pins = pins
    }
}

extension RegistrationStore {
    /// The default age after which a registration counts as not rotated: 45 days (the app
    /// rotates every 30; 15 days of slack for a phone that was off).
    public static var defaultRegistrationRotationSeconds: Int64 { 45 * 86_400 }

    /// What is due in version 2 at `now`, sorted by app id, then sender keys before
    /// registrations, then recipient: every app's primary sender key older than
    /// `senderPeriodSeconds`, every pending (next) sender key with its pins
    /// (``pinReadiness(appID:now:)``), every current registration registered more than
    /// `registrationPeriodSeconds` ago.
    /// - Throws: `KeysError` `.timeOutOfRange` (a bad `now` or period), `.corruptKeyset`; the store's errors.
    public func dueV2(now: Int64, senderPeriodSeconds: Int64, registrationPeriodSeconds: Int64) throws -> [V2DueItem] {
        try KeyTime.checkTime(now)
        try KeyTime.checkDuration(senderPeriodSeconds, named: "senderPeriodSeconds")
        try KeyTime.checkDuration(registrationPeriodSeconds, named: "registrationPeriodSeconds")
        let sets = try allRegistrations()
        var out: [V2DueItem] = []
        for app in Set(try senderKeyAppIDs() + sets.map(\.appID)).sorted() {
            let keys = try senderKeys(appID: app)
            if let primary = keys.last(where: { $0.status == .primary }), now - primary.createdAt > senderPeriodSeconds {
                out.append(V2DueItem(appID: app, recipient: nil, keyID: primary.keyID, ageSeconds: now - primary.createdAt, reason: .senderKeyAge))
            }
            if let next = keys.last(where: { $0.status == .pending }) {
                out.append(V2DueItem(appID: app, recipient: nil, keyID: next.keyID, ageSeconds: now - next.createdAt, reason: .nextKeyNotPromoted,
                                     pins: try pinReadiness(appID: app, now: now)))
            }
            for set in sets where set.appID == app {
                guard let r = set.current, now - r.registeredAt > registrationPeriodSeconds else { continue }
                out.append(V2DueItem(appID: app, recipient: set.recipient, keyID: r.keyID, ageSeconds: now - r.registeredAt, reason: .registrationNotRotated))
            }
        }
        return out
    }
}
