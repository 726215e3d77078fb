#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
import PushSealJSON
import PushSealSystem
import PushSealCrypto
public import PushSealKeychain
public import PushSealKeyRecords

/// Keysets in one keychain — a server keychain (many recipients) or a device keychain (the
/// app's own keyset, in the access group it shares with its Notification Service Extension).
///
/// Each keyset (app id, recipient) is one keychain item of class generic password:
/// service `pushseal.keyset:<appID>`, account `<recipient>`, in ``accessGroup``, whose secret
/// data holds the keys (ids, statuses, times, seal counters, 32-byte keys). Every state change is
/// one atomic `SecItemUpdate` of that item, made under an exclusive `flock` on `keys.lock` in the
/// keychain directory (read-modify-write is serialized across processes), and is written to the
/// audit trail (``KeyAudit``). Lookups are by app id, recipient and key id — never by trying keys.
///
/// Sendable: all stored properties are immutable (`Keychain` is itself Sendable) but
/// `ownReservations`, which is `Locked`.
public final class KeyStore: Sendable {
    /// The keychain the keysets live in.
    public let keychain: Keychain
    /// The access group holding the keyset items.
    public let accessGroup: String
    /// Accessibility of newly created keyset items (default `afterFirstUnlockThisDeviceOnly`:
    /// an extension must read its key while the phone is locked).
    public let accessibility: Accessibility
    /// Where audit lines go.
    public let audit: KeyAudit
    /// This store's own batch reservation writes, per keyset item (``reserveSeals(appID:blocks:)``).
    let ownReservations = Locked<[ItemLocation: OwnWrite]>([:])
    /// `true` for a device key store that keeps v1 keys as device key items (docs/keychain.md
    /// "Device key items"): a rotation that installs on it writes kind 1 items (converting a
    /// legacy keyset of the recipient first), not a keyset item. Default `false` (keysets).
    public let writesDeviceKeyItems: Bool

    /// The identity `push-keys` uses for a server keychain when no identity option is given:
    /// access group `pushseal.server`.
    public static let serverIdentity = Entitlements(keychainAccessGroups: ["pushseal.server"])
    /// Default rotation period for ``due(now:rotationPeriodSeconds:sealThreshold:)``: 30 days, in seconds.
    public static let defaultRotationPeriodSeconds: Int64 = 30 * 86_400
    /// Seal count past which `due` lists a keyset: 2^24.
    public static let dueSealThreshold: UInt64 = 1 << 24
    /// The lock file serializing keyset changes, inside the keychain directory.
    public static let lockFileName = "keys.lock"

    /// Opens the keysets of `keychain`.
    /// - Parameters:
    ///   - keychain: an open keychain (its identity decides what can be read).
    ///   - accessGroup: the group holding keyset items; `nil` picks the identity's first
    ///     `keychain-access-groups` entry, else its first application group — never its
    ///     application identifier, which its extension could not read.
    ///   - accessibility: for new keyset items.
    ///   - audit: the audit destination (default `keys-audit.log` in the keychain directory).
    ///   - deviceKeyItems: a device store that keeps v1 keys as device key items (``writesDeviceKeyItems``).
    /// - Throws: `KeysError` `.noSharedAccessGroup`; `KeychainError` `.missingEntitlement` (-34018)
    ///   for a group the identity lacks; `.symbolicLink`, `.insecurePermissions` (with a
    ///   `chmod 600 PATH` suggestion) or `.corrupt` when ``lockFileName`` or
    ///   ``KeyAudit/fileName`` in the keychain directory is a link, not 0600 or not a regular file
    ///   (checked like item files).
    public init(keychain: Keychain, accessGroup: String? = nil, accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly,
                audit: KeyAudit = .keychainFile, deviceKeyItems: Bool = false) throws {
        let e = keychain.entitlements
        if let accessGroup {
            guard e.accessGroups.contains(accessGroup) else {
                throw KeychainError(.missingEntitlement, "the identity is not entitled to access group \(accessGroup)")
            }
            self.accessGroup = accessGroup
        } else if let g = e.keychainAccessGroups.first ?? e.applicationGroups.first {
            self.accessGroup = g
        } else {
            throw KeysError(.noSharedAccessGroup,
                "the identity has no keychain-access-groups or application group to share keys with its extension")
        }
        // The keysets' own files in the keychain directory follow the keychain's rules.
        try keychain.checkPrivateFile(named: Self.lockFileName)
        try keychain.checkPrivateFile(named: KeyAudit.fileName)
        self.keychain = keychain
        self.accessibility = accessibility
        self.audit = audit
        writesDeviceKeyItems = deviceKeyItems
    }

    var keychainPath: String { keychain.url.path }

    /// Writes a generation counter item, adding it when missing (after the item it counts).
    /// - Throws: `KeychainError`.
    func writeCounter(service: String, account: String, label: String, _ generation: UInt64) throws {
        let data = Self.generationBytes(generation)
        do {
            try keychain.update(ItemQuery(itemClass: .genericPassword, service: service, account: account, accessGroup: accessGroup), with: ItemChanges(data: data))
        } catch let e as KeychainError where e.code == .itemNotFound {
            try keychain.add(.genericPassword, service: service, account: account, label: label, accessGroup: accessGroup,
                             accessibility: accessibility, data: data)
        }
    }

    // MARK: Reading

    /// The keyset of (app id, recipient), without key bytes.
    /// - Throws: `KeysError` `.unknownKeyset`, `.invalidName`, `.corruptKeyset`; `KeychainError`
    ///   (e.g. -25308 while locked for a `whenUnlocked` item).
    public func keyset(appID: String, recipient: String) throws -> KeysetInfo {
        try transitions.keyset(appID: appID, recipient: recipient)
    }

    /// Every keyset in ``accessGroup``, sorted by app id then recipient (no key bytes).
    /// - Throws: `KeysError` `.corruptKeyset`; `KeychainError`.
    public func keysets() throws -> [KeysetInfo] {
        try transitions.keysets()
    }

    func loadAll() throws -> [Keyset] {
        let items: [KeychainItem]
        do {
            items = try keychain.copyMatching(ItemQuery(accessGroup: accessGroup), limit: .all, returning: [.attributes])
        } catch let e as KeychainError where e.code == .itemNotFound {
            return []
        }
        var out: [Keyset] = []
        for item in items where item.attributes.service.hasPrefix("pushseal.keyset:") {
            let appID = String(item.attributes.service.dropFirst("pushseal.keyset:".count))
            if let ks = try load(appID: appID, recipient: item.attributes.account) { out.append(ks) }
        }
        return out.sorted { ($0.appID, $0.recipient) < ($1.appID, $1.recipient) }
    }

    func query(_ appID: String, _ recipient: String) -> ItemQuery {
        ItemQuery(itemClass: .genericPassword, service: KeychainNames.service(appID: appID), account: recipient, accessGroup: accessGroup)
    }

    /// Reads one keyset; `nil` when there is no item. Keychain errors other than not-found propagate.
    func load(appID: String, recipient: String) throws -> Keyset? {
        let data: SecretBytes
        do {
            data = try keychain.copyData(query(appID, recipient))
        } catch let e as KeychainError where e.code == .itemNotFound {
            return nil
        }
        let ks = try data.withUnsafeBytes { raw -> Keyset in
            var bytes = Array(raw)
            defer { SecretBytes.wipe(&bytes) }
            return try Keyset.decode(bytes)
        }
        guard ks.appID == appID, ks.recipient == recipient else {
            throw KeysError(.corruptKeyset, "keyset item for \(appID)/\(recipient) holds another keyset (\(ks.appID)/\(ks.recipient))")
        }
        try GenerationCounters.checkGeneration(ks, keychain: keychain, accessGroup: accessGroup)
        return ks
    }

    /// Saves `ks` as the next generation: the keyset item first, then its counter (a crash in
    /// between leaves the counter behind, which the check accepts). A missing counter is added
    /// first, at the generation the store has (G10: no item above 0 without its counter, even
    /// after a crash).
    func save(_ ks: Keyset, isNew: Bool) throws {
        var ks = ks
        let present = try GenerationCounters.presentGeneration(keychain, accessGroup: accessGroup, appID: ks.appID, recipient: ks.recipient)
        let stored = present ?? 0
        ks.generation = max(ks.generation, stored) &+ 1
        if present == nil {
            try writeCounter(service: KeychainNames.generationService(appID: ks.appID), account: ks.recipient, label: "PushSeal keyset generation", stored)
        }
        try saveItem(ks, isNew: isNew)
        try writeCounter(service: KeychainNames.generationService(appID: ks.appID), account: ks.recipient, label: "PushSeal keyset generation", ks.generation)
    }

    func saveItem(_ ks: Keyset, isNew: Bool) throws {
        var bytes = ks.encode()
        let data = SecretBytes(copying: bytes)
        SecretBytes.wipe(&bytes)
        if isNew {
            try keychain.add(.genericPassword, service: KeychainNames.service(appID: ks.appID), account: ks.recipient,
                             label: "PushSeal keyset", accessGroup: accessGroup, accessibility: accessibility, data: data)
        } else {
            try keychain.update(query(ks.appID, ks.recipient), with: ItemChanges(data: data))
        }
    }

    func unknownKeyset(_ appID: String, _ recipient: String) -> KeysError {
        KeysError(.unknownKeyset, "no keyset for app id \(appID) and recipient \(recipient) in \(keychainPath) (access group \(accessGroup))")
    }

    // MARK: Locked read-modify-write

    /// Runs `body` holding the exclusive lock of this keychain's keysets (``lockFileName``,
    /// created 0600; refused when it is a link or not 0600, like an item file).
    func withLock<R>(_ body: () throws -> R) throws -> R {
        try keychain.withExclusiveLock(named: Self.lockFileName, body)
    }

    /// Loads, lets `body` change, and saves one keyset under the lock. `body` returns the audit
    /// events (each a list of members after time/event); saving happens only when it returns some.
    @discardableResult
    func mutate(appID: String, recipient: String, allowCreate: Bool = false,
                _ body: (inout Keyset, Bool) throws -> [AuditEvent]) throws -> Keyset {
        try withLock {
            let existing = try load(appID: appID, recipient: recipient)
            guard existing != nil || allowCreate else { throw unknownKeyset(appID, recipient) }
            var ks = existing ?? Keyset(appID: appID, recipient: recipient, keys: [], rotation: nil)
            let events = try body(&ks, existing == nil)
            try Self.checkInvariants(ks)
            if !events.isEmpty {
                // The audit destination is opened first: one that cannot be opened fails the
                // change before it is saved, rather than leaving it unaudited.
                let sink = try audit.open(keychain: keychain)
                try save(ks, isNew: existing == nil)
                for e in events { try writeAudit(e, appID: appID, recipient: recipient, to: sink) }
            }
            return ks
        }
    }

    /// This keychain's keyset transitions (generate, rotate, promote, revoke, prune, …): the
    /// state machine every server store shares, over ``mutate(appID:recipient:allowCreate:_:)``.
    var transitions: KeysetTransitions<KeyStore> { KeysetTransitions(store: self) }

    struct AuditEvent {
        var event: String
        var time: Int64
        var members: [(key: String, value: JSONValue)] = []
    }

    func writeAudit(_ e: AuditEvent, appID: String, recipient: String, to sink: borrowing KeyAudit.Sink) throws {
        let head: [(key: String, value: JSONValue)] = [("time", .integer(e.time)), ("event", .string(e.event)),
                                                       ("keychain", .string(keychainPath)), ("appId", .string(appID)), ("recipient", .string(recipient))]
        try sink.write(JSONObject(head + e.members))
    }

    static func checkInvariants(_ ks: Keyset) throws {
        var ids = Set<String>()
        for k in ks.keys {
            guard ids.insert(k.info.keyID).inserted else { throw KeysError(.duplicateKeyID, "key id \(k.info.keyID) appears twice in the keyset") }
        }
        guard ks.keys.filter({ $0.info.status == .primary }).count <= 1 else {
            throw KeysError(.invalidState, "a keyset must have at most one primary key")
        }
    }

    // MARK: Lifecycle

    /// Creates a keyset for (app id, recipient) with one primary key of 32 random bytes.
    /// - Parameters:
    ///   - appID: the app's bundle identifier, e.g. `com.example.app`.
    ///   - recipient: the app installation, e.g. `alice-iphone`.
    ///   - now: Unix seconds, 0 to ``maxTimeSeconds`` (default: the current time).
    /// - Returns: the new primary key's metadata (its key id).
    /// - Throws: `KeysError` `.keysetExists`, `.invalidName`, `.timeOutOfRange`; `KeychainError`.
    @discardableResult
    public func generate(appID: String, recipient: String, now: Int64 = KeyTime.now()) throws -> KeyInfo {
        try transitions.generate(appID: appID, recipient: recipient, now: now)
    }

    /// Makes `keyID` the primary; the previous primary becomes `decryptOnly` until
    /// `now + graceSeconds`. Idempotent: promoting the current primary changes nothing.
    /// - Parameters:
    ///   - graceSeconds: grace window of the old primary, 0 or more seconds; `now + graceSeconds`
    ///     must not pass ``maxTimeSeconds``.
    ///   - now: Unix seconds, 0 to ``maxTimeSeconds``.
    /// - Throws: `KeysError` `.unknownKeyset`, `.unknownKey`, `.invalidState` (key disabled,
    ///   destroyed or without bytes), `.invalidName`, `.timeOutOfRange` (checked before anything
    ///   is read or written); `KeychainError`.
    @discardableResult
    public func promote(appID: String, recipient: String, keyID: String, graceSeconds: Int64 = KeyTime.defaultGraceSeconds,
                        now: Int64 = KeyTime.now()) throws -> KeysetInfo {
        try transitions.promote(appID: appID, recipient: recipient, keyID: keyID, graceSeconds: graceSeconds, now: now)
    }

    /// Promotes `keyID` inside `ks` (see the public `promote`); throws `.timeOutOfRange` before
    /// changing `ks` when `now + graceSeconds` is out of range.
    static func promote(_ ks: inout Keyset, keyID: String, graceSeconds: Int64, now: Int64) throws -> [AuditEvent] {
        guard let i = ks.index(of: keyID) else { throw KeysError(.unknownKey, "keyset \(ks.appID)/\(ks.recipient) has no key \(keyID)") }
        let k = ks.keys[i].info
        if k.status == .primary { return [] }
        guard k.status == .pending || k.status == .decryptOnly, ks.keys[i].secret != nil else {
            throw KeysError(.invalidState, "key \(keyID) is \(k.status) and cannot become primary")
        }
        let notAfter = try KeyTime.time(now, plus: graceSeconds, named: "graceSeconds")
        var members: [(key: String, value: JSONValue)] = [("keyId", .string(keyID))]
        if let p = ks.primaryIndex {
            ks.keys[p].info.status = .decryptOnly
            ks.keys[p].info.retiredAt = now
            ks.keys[p].info.notAfter = notAfter
            members += [("previousKeyId", .string(ks.keys[p].info.keyID)), ("notAfter", .integer(notAfter))]
        }
        ks.keys[i].info.status = .primary
        ks.keys[i].info.promotedAt = now
        ks.keys[i].info.retiredAt = nil
        ks.keys[i].info.notAfter = nil
        return [AuditEvent(event: "promote", time: now, members: members)]
    }

    /// Disables `keyID` at once: it neither seals nor opens. Messages already sealed with it
    /// and still in flight will fall back to their APNs alert text. Revoking the primary leaves
    /// the keyset without one until a rotation. Idempotent.
    /// - Parameter now: Unix seconds, 0 to ``maxTimeSeconds`` (default: the current time).
    /// - Returns: the key's metadata after the change.
    /// - Throws: `KeysError` `.unknownKeyset`, `.unknownKey`, `.invalidName`, `.timeOutOfRange`; `KeychainError`.
    @discardableResult
    public func revoke(appID: String, recipient: String, keyID: String, now: Int64 = KeyTime.now()) throws -> KeyInfo {
        try transitions.revoke(appID: appID, recipient: recipient, keyID: keyID, now: now)
    }

    /// A key destroyed by ``prune(now:)``.
    public struct PrunedKey: Sendable, Hashable {
        /// The app id.
        public var appID: String
        /// The recipient.
        public var recipient: String
        /// The destroyed key's id.
        public var keyID: String

        /// Creates a pruned-key entry.
        public init(appID: String, recipient: String, keyID: String) {
            self.appID = appID
            self.recipient = recipient
            self.keyID = keyID
        }
    }

    /// Destroys every `decryptOnly` key past its `notAfter` (bytes zeroed and removed; a
    /// tombstone remains), and the bytes of every `disabled` (revoked) key at once (it stays
    /// `disabled`, without bytes). Idempotent.
    /// - Parameter now: Unix seconds, 0 to ``maxTimeSeconds`` (default: the current time).
    /// - Returns: the keys destroyed now.
    /// - Throws: `KeysError` `.corruptKeyset`, `.timeOutOfRange`; `KeychainError`.
    @discardableResult
    public func prune(now: Int64 = KeyTime.now()) throws -> [PrunedKey] {
        try transitions.prune(now: now)
    }

    static func isPrunable(_ k: KeyInfo, _ now: Int64) -> Bool {
        k.status == .decryptOnly && (k.notAfter ?? Int64.max) <= now
    }

    /// A `disabled` (revoked) key that still has bytes: a revoked key never seals or opens again
    /// (statuses only move forward), so prune zeroes and drops its bytes at once, at the first
    /// prune after the revoke; it stays `disabled`, so a device still says "revoked" (F20).
    static func hasRevokedBytes(_ k: ManagedKey) -> Bool { k.info.status == .disabled && k.secret != nil }

    /// A keyset due for rotation.
    public struct DueKeyset: Sendable, Hashable {
        /// The app id.
        public var appID: String
        /// The recipient.
        public var recipient: String
        /// The primary's key id, or `nil` when the keyset has none.
        public var keyID: String?
        /// Age of the primary in seconds (since promotion), or `nil` without a primary. Negative
        /// when `now` is before the promotion; saturated at `Int64.min`/`Int64.max` for a stored
        /// time out of range (written before times were checked).
        public var ageSeconds: Int64?
        /// The primary's seal count (upper bound, see ``KeyInfo/sealCount``).
        public var sealCount: UInt64
        /// Why: `age`, `seals`, `noPrimary`, or `unfinishedRotation` (several joined by `,`).
        public var reasons: [String]

        /// Creates a due entry (see the properties).
        public init(appID: String, recipient: String, keyID: String?, ageSeconds: Int64?, sealCount: UInt64, reasons: [String]) {
            self.appID = appID
            self.recipient = recipient
            self.keyID = keyID
            self.ageSeconds = ageSeconds
            self.sealCount = sealCount
            self.reasons = reasons
        }
    }

    /// Keysets whose primary is older than `rotationPeriodSeconds` or past `sealThreshold`
    /// seals, that have no primary, or whose rotation was interrupted.
    /// - Parameters:
    ///   - now: Unix seconds, 0 to ``maxTimeSeconds`` (default: the current time).
    ///   - rotationPeriodSeconds: a primary at least this old (since promotion) is due; 0 to
    ///     ``maxTimeSeconds``.
    ///   - sealThreshold: a primary with at least this many seals is due.
    /// - Throws: `KeysError` `.corruptKeyset`, `.timeOutOfRange` (`now` or the period out of
    ///   range); `KeychainError`.
    public func due(now: Int64 = KeyTime.now(), rotationPeriodSeconds: Int64 = KeyStore.defaultRotationPeriodSeconds,
                    sealThreshold: UInt64 = KeyStore.dueSealThreshold) throws -> [DueKeyset] {
        try transitions.due(now: now, rotationPeriodSeconds: rotationPeriodSeconds, sealThreshold: sealThreshold)
    }

    /// Sets a key's seal counter (tests and repairs only; audited).
    func setSealCount(appID: String, recipient: String, keyID: String, to count: UInt64, now: Int64 = KeyTime.now()) throws {
        try KeyTime.checkTime(now)
        try mutate(appID: appID, recipient: recipient) { ks, _ in
            guard let i = ks.index(of: keyID) else { throw KeysError(.unknownKey, "no key \(keyID)") }
            ks.keys[i].info.sealCount = count
            return [AuditEvent(event: "setSealCount", time: now, members: [("keyId", .string(keyID)), ("sealCount", .integer(Int64(count)))])]
        }
    }
}

/// The file keychain under the shared keyset state machine: `mutate` holds `flock` on
/// ``KeyStore/lockFileName`` and replaces the keyset item atomically.
extension KeyStore: KeysetTransacting {
    var keysetAccessGroup: String { accessGroup }

    func pruneCandidates(now: Int64) throws -> [Keyset] {
        try loadAll().filter { $0.keys.contains { Self.isPrunable($0.info, now) || Self.hasRevokedBytes($0) } }
    }
}
