public import PushSealCrypto
public import PushSealJSON
import PushSealWire

// What the server stores answer about v2 registrations and sender keys (PushSealServerKeys'
// `RegistrationStore`): plain values, shared with their callers.

/// One registration of a recipient (no secrets).
public struct RegistrationInfo: Sendable, Hashable {
    /// The device key id (`key_id` of the payloads sealed to it).
    public var keyID: String
    /// The device public key, 32 bytes.
    public var publicKey: X25519.PublicKey
    /// `primary` (sealed to), `decryptOnly` (superseded), `disabled` (revoked).
    public var status: KeyStatus
    /// The record's `createdAt`: Unix seconds (UTC), the device's clock.
    public var createdAt: Int64
    /// When the store imported it: Unix seconds (UTC).
    public var registeredAt: Int64
    /// When a newer registration superseded it, or it was revoked: Unix seconds (UTC), or `nil`.
    public var supersededAt: Int64?
    /// The sender key ids the device reported pinned with this registration (its upload's
    /// `pinnedSenderKeyIds`, sorted); `nil`: never reported (a bare record, an older app).
    public var pinnedSenderKeyIDs: [String]?
    /// When the device last reported a changed pin list: Unix seconds (UTC), or `nil`.
    public var pinsReportedAt: Int64?

    /// Creates registration metadata (for a store that keeps it elsewhere).
    public init(keyID: String, publicKey: X25519.PublicKey, status: KeyStatus, createdAt: Int64, registeredAt: Int64, supersededAt: Int64?,
                pinnedSenderKeyIDs: [String]? = nil, pinsReportedAt: Int64? = nil) {
        self.pinnedSenderKeyIDs = pinnedSenderKeyIDs
        self.pinsReportedAt = pinsReportedAt
        self.keyID = keyID
        self.publicKey = publicKey
        self.status = status
        self.createdAt = createdAt
        self.registeredAt = registeredAt
        self.supersededAt = supersededAt
    }
}

/// The registrations of one (app id, recipient), oldest first.
public struct RegistrationSet: Sendable, Hashable {
    /// The app id.
    public var appID: String
    /// The recipient (one app installation).
    public var recipient: String
    /// The history, oldest first; at most one is `primary`.
    public var registrations: [RegistrationInfo]

    /// Creates a registration set.
    public init(appID: String, recipient: String, registrations: [RegistrationInfo]) {
        self.appID = appID
        self.recipient = recipient
        self.registrations = registrations
    }

    /// The one sealed to (status `primary`), or `nil` (revoked).
    public var current: RegistrationInfo? { registrations.last { $0.status == .primary } }
}

/// One sender key of an app (no private key).
public struct SenderKeyInfo: Sendable, Hashable {
    /// The app id.
    public var appID: String
    /// The sender key id (`sender_key_id` of auth-mode payloads; FORMAT.md §V.6 derivation).
    public var keyID: String
    /// The public key, 32 bytes (what apps pin).
    public var publicKey: X25519.PublicKey
    /// `primary` (seals), `decryptOnly` (rotated out, published until `notAfter`), `destroyed`.
    public var status: KeyStatus
    /// When it was made: Unix seconds (UTC).
    public var createdAt: Int64
    /// When it was rotated out or destroyed: Unix seconds (UTC), or `nil`.
    public var retiredAt: Int64?
    /// End of its grace window (`decryptOnly`): Unix seconds (UTC), or `nil`.
    public var notAfter: Int64?

    /// Creates sender key metadata (for a store that keeps it elsewhere).
    public init(appID: String, keyID: String, publicKey: X25519.PublicKey, status: KeyStatus, createdAt: Int64,
                retiredAt: Int64? = nil, notAfter: Int64? = nil) {
        self.appID = appID
        self.keyID = keyID
        self.publicKey = publicKey
        self.status = status
        self.createdAt = createdAt
        self.retiredAt = retiredAt
        self.notAfter = notAfter
    }

    /// Published (apps should have it pinned) at `now`: the next key (`pending`, staged
    /// rotation), the primary, or `decryptOnly` before `notAfter`.
    public func isPublished(at now: Int64) -> Bool {
        status == .pending || status == .primary || (status == .decryptOnly && (notAfter ?? Int64.max) > now)
    }

    /// The sender key record apps pin (FORMAT.md §V.6):
    /// `{"format":"pushseal-sender-key","version":2,"appId","senderKeyId","publicKey","status"}`
    /// plus `retiredAt` and `notAfter` when set (security review G15: a phone pins a retired
    /// key with its end). Public data.
    public var record: JSONObject {
        var members: [(String, JSONValue)] = [
            ("format", .string("pushseal-sender-key")), ("version", .integer(2)), ("appId", .string(appID)),
            ("senderKeyId", .string(keyID)), ("publicKey", .string(WireBase64.encode(publicKey.rawRepresentation))),
        ]
        if status == .pending || status == .primary || status == .decryptOnly { members.append(("status", .string(status.rawValue))) }
        if let retiredAt { members.append(("retiredAt", .integer(retiredAt))) }
        if let notAfter { members.append(("notAfter", .integer(notAfter))) }
        return JSONObject(members)
    }
}

/// Who is ready for an app's next sender key (staged rotation, issue 24): counted over the
/// registrations active in the last 30 days (``RegistrationStore/isActive(_:now:days:)``), from
/// the sender key ids their devices reported pinned with their uploads.
public struct SenderPinReadiness: Sendable, Hashable {
    /// The app's pending (next) sender key; `nil` when none is pending.
    public var nextKeyID: String?
    /// Current registrations active in the last 30 days.
    public var activeRegistrations: Int
    /// Of those, how many reported the next key pinned (0 without a next key).
    public var pinnedNext: Int
    /// Of those, how many never reported their pins (a bare record, an app before issue 24):
    /// they count as not pinned.
    public var pinsNotReported: Int

    /// Active registrations that have not pinned the next key (the pins outstanding).
    public var outstanding: Int { nextKeyID == nil ? 0 : activeRegistrations - pinnedNext }

    /// Whether at least `percent` % of the active registrations pinned the next key (`true`
    /// with none active: nobody to leave behind).
    public func meets(percent: Int64) -> Bool {
        Int64(pinnedNext) * 100 >= percent * Int64(activeRegistrations)
    }

    /// Creates one.
    public init(nextKeyID: String?, activeRegistrations: Int, pinnedNext: Int, pinsNotReported: Int) {
        self.nextKeyID = nextKeyID
        self.activeRegistrations = activeRegistrations
        self.pinnedNext = pinnedNext
        self.pinsNotReported = pinsNotReported
    }
}
