import PushSealKeyRecords

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
