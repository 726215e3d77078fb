public import PushSealCrypto
import PushSealJSON
public import PushSealKeyRecords

/// The stored form of a list of version 2 keys in one keychain item: a recipient's
/// registrations (public keys) or an app's sender keys (private keys). Binary, integers
/// big-endian:
///
/// ```
/// "PSV2" | layout (2 or 3) | kind (1 registrations, 2 sender keys) | generation (u64)
/// | appID (u8 length, bytes) | owner (u8 length, bytes: the recipient, "-" for sender keys) | count (u16)
/// | count × [ keyID (u8 length, bytes) | status tag (u8) | createdAt | registeredAt
///             | retiredAt (-1: none) | notAfter (-1: none) (4 × i64) | public key (32)
///             | private key (u8 length 0 or 32, bytes)
///             | layout 3 only: pins (u8: 0 none reported, 1 reported, then pinsReportedAt (i64)
///               | count (u8) | count × keyID (u8 length, bytes)) ]
/// ```
///
/// Layout 1 (before the generation) reads as generation 0. Layout 3 (issue 24: the sender key
/// ids a device reported pinned, with its registration) is written only when an entry has
/// reported pins, so a list without them stays readable by the builds before it. The generation grows by one at
/// every save and is checked against the store's counter item (security review F5, as for
/// keysets: an older copy of the item put back is refused, so a revoked registration or a
/// rotated-out sender key does not come back). The item's data is encrypted at rest by the keychain like every item; a sender entry's
/// private key is a secret (held in `SecretBytes`, the encoding wiped after use), dropped when
/// the key is destroyed (its public key stays, for the history).
///
/// The rules of ``RegistrationStore`` live here as mutating methods returning the audit changes
/// (``KeysetChange``), so every store (the file keychain, PostgreSQL) applies the same ones to
/// the list it loaded under its lock and saves the result with the changes.
public struct V2KeyList: Sendable {
    /// Which list: registrations (public keys) or sender keys (private keys).
    public enum Kind: UInt8, Sendable { case registrations = 1, senderKeys = 2 }

    /// One key of the list (the ``RegistrationInfo`` / ``SenderKeyInfo`` fields, plus a sender's private key).
    public struct Entry: Sendable {
        /// The key id.
        public var keyID: String
        /// `primary`, `decryptOnly`, `disabled`, `destroyed` (sender keys).
        public var status: KeyStatus
        /// Unix seconds (UTC): the record's `createdAt` (registrations), when made (sender keys).
        public var createdAt: Int64
        /// Registrations: when the store imported it; sender keys: equal to `createdAt`.
        public var registeredAt: Int64
        /// When superseded, revoked or rotated out: Unix seconds (UTC), or `nil`.
        public var retiredAt: Int64?
        /// A rotated-out sender key's end of grace: Unix seconds (UTC), or `nil`.
        public var notAfter: Int64?
        /// The 32-byte public key (a registration's, or a sender key's).
        public var publicKey: [UInt8]
        /// A sender key's 32-byte private key; `nil` for registrations and destroyed sender keys.
        public var secret: SecretBytes? = nil
        /// Registrations: the sender key ids the device reported pinned (the upload's
        /// `pinnedSenderKeyIds`, sorted, each at most once); `nil`: never reported.
        public var pinnedSenderKeyIDs: [String]? = nil
        /// Registrations: when the device last reported a changed pin list (Unix seconds, UTC);
        /// `nil` exactly when ``pinnedSenderKeyIDs`` is.
        public var pinsReportedAt: Int64? = nil

        /// Creates an entry (a store that keeps entries as rows).
        public init(keyID: String, status: KeyStatus, createdAt: Int64, registeredAt: Int64, retiredAt: Int64? = nil, notAfter: Int64? = nil,
                    publicKey: [UInt8], secret: SecretBytes? = nil, pinnedSenderKeyIDs: [String]? = nil, pinsReportedAt: Int64? = nil) {
            self.pinnedSenderKeyIDs = pinnedSenderKeyIDs
            self.pinsReportedAt = pinsReportedAt
            self.keyID = keyID
            self.status = status
            self.createdAt = createdAt
            self.registeredAt = registeredAt
            self.retiredAt = retiredAt
            self.notAfter = notAfter
            self.publicKey = publicKey
            self.secret = secret
        }
    }

    static let magic: [UInt8] = Array("PSV2".utf8)
    /// Registrations or sender keys.
    public let kind: Kind
    /// The app id.
    public let appID: String
    /// The recipient (registrations), `-` (sender keys).
    public let owner: String
    /// The keys, oldest first.
    public var entries: [Entry]
    /// The save count of the file keychain's item (0: never saved, or layout 1); the registry
    /// keeps its own `version` instead.
    public var generation: UInt64 = 0

    /// Creates a list (empty for a new recipient or app).
    public init(kind: Kind, appID: String, owner: String, entries: [Entry] = []) {
        self.kind = kind
        self.appID = appID
        self.owner = owner
        self.entries = entries
    }

    /// The encoded bytes (wipe them after use: a sender list holds private keys).
    func encode() -> [UInt8] {
        let layout: UInt8 = entries.contains { $0.pinnedSenderKeyIDs != nil } ? 3 : 2
        var out = Self.magic + [layout, kind.rawValue]
        func text(_ s: String) { out.append(UInt8(truncatingIfNeeded: s.utf8.count)); out += s.utf8 }
        func int(_ v: Int64) { withUnsafeBytes(of: v.bigEndian) { out += $0 } }
        int(Int64(bitPattern: generation))
        text(appID)
        text(owner)
        out += [UInt8(truncatingIfNeeded: entries.count >> 8), UInt8(truncatingIfNeeded: entries.count)]
        for e in entries {
            text(e.keyID)
            out.append(e.status.storageTag)
            for v in [e.createdAt, e.registeredAt, e.retiredAt ?? -1, e.notAfter ?? -1] { int(v) }
            out += e.publicKey
            if let key = e.secret {
                out.append(UInt8(truncatingIfNeeded: key.byteCount))
                key.withUnsafeBytes { out += $0 }
            } else {
                out.append(0)
            }
            guard layout == 3 else { continue }
            if let pins = e.pinnedSenderKeyIDs {
                out.append(1)
                int(e.pinsReportedAt ?? 0)
                out.append(UInt8(truncatingIfNeeded: pins.count))
                for id in pins { text(id) }
            } else {
                out.append(0)
            }
        }
        return out
    }

    /// Decodes an item's bytes.
    /// - Throws: `KeysError` `.corruptKeyset` for anything out of shape.
    static func decode(_ bytes: [UInt8], kind: Kind) throws -> V2KeyList {
        var at = 0
        func corrupt() -> KeysError { KeysError(.corruptKeyset, "a v2 key list item does not decode (damaged or written by another program)") }
        func take(_ n: Int) throws -> ArraySlice<UInt8> {
            guard n >= 0, bytes.count - at >= n else { throw corrupt() }
            defer { at += n }
            return bytes[at..<(at + n)]
        }
        func text() throws -> String {
            let n = Int(try take(1).first ?? 0)
            guard let s = String(validating: try take(n), as: UTF8.self) else { throw corrupt() }
            return s
        }
        func int() throws -> Int64 { Int64(bitPattern: try take(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) }
        guard Array(try take(4)) == magic, let layout = try take(1).first, (1...3).contains(layout),
              try take(1).first == kind.rawValue else { throw corrupt() }
        let generation = layout >= 2 ? UInt64(bitPattern: try int()) : 0
        let appID = try text(), owner = try text()
        let count = try take(2).reduce(0) { $0 << 8 | Int($1) }
        var entries: [Entry] = []
        for _ in 0..<count {
            let keyID = try text()
            guard let tag = try take(1).first, let status = KeyStatus(storageTag: tag) else { throw corrupt() }
            let createdAt = try int(), registeredAt = try int(), retiredAt = try int(), notAfter = try int()
            let publicKey = Array(try take(32))
            let n = Int(try take(1).first ?? 0)
            guard n == 0 || n == 32 else { throw corrupt() }
            let secret = n == 0 ? nil : SecretBytes(copying: try take(n))
            var pins: [String]?, pinsAt: Int64?
            if layout == 3 {
                switch try take(1).first {
                case 0?: break
                case 1?:
                    pinsAt = try int()
                    let count = Int(try take(1).first ?? 0)
                    pins = try (0..<count).map { _ in try text() }
                default: throw corrupt()
                }
            }
            entries.append(Entry(keyID: keyID, status: status, createdAt: createdAt, registeredAt: registeredAt,
                                 retiredAt: retiredAt < 0 ? nil : retiredAt, notAfter: notAfter < 0 ? nil : notAfter,
                                 publicKey: publicKey, secret: secret, pinnedSenderKeyIDs: pins, pinsReportedAt: pinsAt))
        }
        guard at == bytes.count else { throw corrupt() }
        var list = V2KeyList(kind: kind, appID: appID, owner: owner, entries: entries)
        list.generation = generation
        return list
    }
}
