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
