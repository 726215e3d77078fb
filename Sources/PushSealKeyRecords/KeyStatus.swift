/// The state of one key in a keyset. A key only moves forward:
/// `pending` → `primary` → `decryptOnly` → `destroyed`, and any state → `disabled` → `destroyed`.
public enum KeyStatus: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Added by a rotation and rolled out, not yet promoted: opens messages, never seals.
    case pending
    /// The one key the sender seals with (exactly one per keyset, except after a revoke).
    case primary
    /// A former primary: opens messages until `notAfter` (the grace window), never seals.
    case decryptOnly
    /// Revoked: neither seals nor opens. Messages sealed with it fall back.
    case disabled
    /// Pruned: the key bytes are zeroed and removed; a tombstone remains so that opening reports
    /// "key destroyed" rather than "unknown key".
    case destroyed

    /// Order of the lifecycle, used when merging two views of one key (the later state wins).
    package var rank: Int {
        switch self {
        case .pending: 0
        case .primary: 1
        case .decryptOnly: 2
        case .disabled: 3
        case .destroyed: 4
        }
    }

    package var storageTag: UInt8 { UInt8(rank + 1) }

    package init?(storageTag: UInt8) {
        guard let s = KeyStatus.allCases.first(where: { $0.storageTag == storageTag }) else { return nil }
        self = s
    }

    /// `true` when the key may open messages (pending, primary, decryptOnly before `notAfter`).
    public var canOpen: Bool { self == .pending || self == .primary || self == .decryptOnly }

    /// The raw value, e.g. `decryptOnly`.
    public var description: String { rawValue }
}

/// One key's metadata, never its bytes: what `list`, `due` and the audit log show.
public struct KeyInfo: Sendable, Hashable {
    /// The key id (1–64 characters of `[A-Za-z0-9_-]`), unique in its keyset.
    public var keyID: String
    /// The lifecycle state.
    public var status: KeyStatus
    /// Creation time, Unix seconds (UTC).
    public var createdAt: Int64
    /// When it became primary, Unix seconds, or `nil` if never.
    public var promotedAt: Int64?
    /// When it stopped being primary or was revoked/destroyed, Unix seconds, or `nil`.
    public var retiredAt: Int64?
    /// For `decryptOnly`: the end of the grace window, Unix seconds; else `nil`.
    public var notAfter: Int64?
    /// Seals counted for this key (on the server; reserved in blocks, so an upper bound of
    /// the seals actually made, never lower).
    public var sealCount: UInt64

    /// Hard limit of seals per key: 2^32 (random 96-bit nonces, NIST SP 800-38D §8.3).
    public static let sealLimit: UInt64 = 1 << 32

    /// Creates key metadata (all fields as above).
    public init(keyID: String, status: KeyStatus, createdAt: Int64, promotedAt: Int64? = nil, retiredAt: Int64? = nil,
                notAfter: Int64? = nil, sealCount: UInt64 = 0) {
        self.keyID = keyID
        self.status = status
        self.createdAt = createdAt
        self.promotedAt = promotedAt
        self.retiredAt = retiredAt
        self.notAfter = notAfter
        self.sealCount = sealCount
    }
}

/// One keyset's metadata, never key bytes.
public struct KeysetInfo: Sendable, Hashable {
    /// The app's bundle identifier (APNs topic), e.g. `com.example.app`.
    public var appID: String
    /// The recipient (one app installation), e.g. `alice-iphone`.
    public var recipient: String
    /// The keychain access group holding the keyset item.
    public var accessGroup: String
    /// The keys, oldest first.
    public var keys: [KeyInfo]
    /// The key id of an unfinished rotation (added or promoted, not yet finished), or `nil`.
    public var rotationKeyID: String?

    /// Creates keyset metadata.
    public init(appID: String, recipient: String, accessGroup: String, keys: [KeyInfo], rotationKeyID: String?) {
        self.appID = appID
        self.recipient = recipient
        self.accessGroup = accessGroup
        self.keys = keys
        self.rotationKeyID = rotationKeyID
    }

    /// The primary key, if any.
    public var primary: KeyInfo? { keys.first { $0.status == .primary } }
}
