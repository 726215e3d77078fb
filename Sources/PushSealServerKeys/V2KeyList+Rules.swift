public import PushSealCrypto
import PushSealJSON
import PushSealKeyRecords
import PushSealDeviceKeys

/// The rules of ``RegistrationStore`` on a loaded list (see ``V2KeyList``). Each mutating method
/// changes the list and returns its audit changes; none means nothing changed (save nothing).
extension V2KeyList {
    /// Adds `registration` as the primary; the former primary becomes `decryptOnly` at `now`.
    /// The same key id and key again changes nothing, unless that registration was revoked.
    /// - Throws: `KeysError` `.duplicateKeyID`, `.registrationRevoked`, `.staleRegistration`, `.futureRegistration`
    ///   (`createdAt` more than 5 minutes after `now`).
    public mutating func register(_ registration: DeviceRegistration, now: Int64) throws -> [KeysetChange] {
        try DeviceRegistration.checkNotFuture(keyID: registration.keyID, createdAt: registration.createdAt, now: now)
        let raw = registration.publicKey.rawRepresentation
        if let same = entries.first(where: { $0.keyID == registration.keyID }) {
            guard same.publicKey == raw else {
                throw KeysError(.duplicateKeyID, "recipient \(owner) of \(appID) already has a registration \(registration.keyID) with another public key")
            }
            // A revoked registration never comes back (logout, a forgotten installation, a
            // stolen phone): the same record again is refused, not "unchanged".
            guard same.status != .disabled else {
                throw KeysError(.registrationRevoked,
                    "registration \(registration.keyID) of recipient \(owner) of \(appID) was revoked: the app must make a new device key and register that")
            }
            return []
        }
        if let current = entries.last(where: { $0.status == .primary }), registration.createdAt < current.createdAt {
            throw KeysError(.staleRegistration,
                "registration \(registration.keyID) was created at \(registration.createdAt), before the current registration \(current.keyID) (\(current.createdAt)): refused, notifications are sealed to the newest registration")
        }
        var members: [(key: String, value: JSONValue)] = [("keyId", .string(registration.keyID)), ("status", .string("primary")),
                                                          ("createdAt", .integer(registration.createdAt))]
        for i in entries.indices where entries[i].status == .primary {
            entries[i].status = .decryptOnly
            entries[i].retiredAt = now
            members.append(("previousKeyId", .string(entries[i].keyID)))
        }
        entries.append(Entry(keyID: registration.keyID, status: .primary, createdAt: registration.createdAt, registeredAt: now, publicKey: raw))
        return [Self.change("register", now, members)]
    }

    /// The most sender key ids an upload may report pinned (a phone pins the primary, the next
    /// key and the former keys still in grace: a handful).
    public static let maxPinnedSenderKeyIDs = 32

    /// `ids` as stored: each checked (``KeyID/validate(_:)``), sorted, duplicates dropped.
    /// - Throws: `KeysError` `.invalidName` (a bad key id, or more than ``maxPinnedSenderKeyIDs``).
    public static func canonicalPins(_ ids: [String]) throws -> [String] {
        for id in ids { try KeyID.validate(id) }
        let out = Array(Set(ids)).sorted()
        guard out.count <= maxPinnedSenderKeyIDs else {
            throw KeysError(.invalidName, "\(out.count) pinned sender key ids reported, more than \(maxPinnedSenderKeyIDs)")
        }
        return out
    }

    /// Records the sender key ids the device of registration `keyID` reported pinned (issue 24:
    /// who is ready for a staged sender rotation). A list equal to the stored one changes nothing;
    /// otherwise audited as `reportPins` (`keyId`, `pinnedSenderKeyIds`: public ids).
    /// - Throws: `KeysError` `.unknownKey`, `.invalidName` (``canonicalPins(_:)``).
    public mutating func reportPins(keyID: String, pinnedSenderKeyIDs ids: [String], now: Int64) throws -> [KeysetChange] {
        guard let i = entries.firstIndex(where: { $0.keyID == keyID }) else {
            throw KeysError(.unknownKey, "recipient \(owner) of \(appID) has no registration \(keyID)")
        }
        let pins = try Self.canonicalPins(ids)
        guard entries[i].pinnedSenderKeyIDs != pins else { return [] }
        entries[i].pinnedSenderKeyIDs = pins
        entries[i].pinsReportedAt = now
        return [Self.change("reportPins", now, [("keyId", .string(keyID)), ("pinnedSenderKeyIds", .array(pins.map { .string($0) }))])]
    }

    /// Revokes registration `keyID` (status `disabled`, `retiredAt` now). Idempotent.
    /// - Throws: `KeysError` `.unknownKey`.
    public mutating func revokeRegistration(keyID: String, now: Int64) throws -> [KeysetChange] {
        guard let i = entries.firstIndex(where: { $0.keyID == keyID }) else {
            throw KeysError(.unknownKey, "recipient \(owner) of \(appID) has no registration \(keyID)")
        }
        let previous = entries[i].status
        guard previous != .disabled else { return [] }
        entries[i].status = .disabled
        entries[i].retiredAt = now
        return [Self.change("revokeRegistration", now, [("keyId", .string(keyID)), ("previousStatus", .string(previous.rawValue))])]
    }

    /// Adds the app's first sender key (primary).
    /// - Throws: `KeysError` `.keysetExists` (the app has one).
    public mutating func generateSenderKey(_ key: X25519.PrivateKey, keyID: String, now: Int64) throws -> [KeysetChange] {
        guard entries.isEmpty else {
            throw KeysError(.keysetExists, "\(appID) already has a sender key: rotate it (push-keys sender rotate)")
        }
        entries.append(Entry(keyID: keyID, status: .primary, createdAt: now, registeredAt: now, publicKey: key.publicKey.rawRepresentation,
                             secret: key.rawRepresentation))
        return [Self.change("senderGenerate", now, [("keyId", .string(keyID)), ("status", .string("primary"))])]
    }

    /// Destroys rotated-out keys past their `notAfter` (private key dropped), makes the primary
    /// `decryptOnly` until `notAfter`, adds `key` as the primary.
    /// - Throws: `KeysError` `.unknownKeyset` (no sender key yet), `.duplicateKeyID`.
    public mutating func rotateSenderKey(to key: X25519.PrivateKey, keyID: String, notAfter: Int64, now: Int64) throws -> [KeysetChange] {
        guard !entries.isEmpty else {
            throw KeysError(.unknownKeyset, "\(appID) has no sender key: generate one (push-keys sender generate)")
        }
        guard !entries.contains(where: { $0.keyID == keyID }) else {
            throw KeysError(.duplicateKeyID, "sender key id \(keyID) exists already: rotate again")
        }
        let changes = pruneSenderKeys(now: now)
        var members: [(key: String, value: JSONValue)] = [("keyId", .string(keyID))]
        for i in entries.indices where entries[i].status == .primary {
            entries[i].status = .decryptOnly
            entries[i].retiredAt = now
            entries[i].notAfter = notAfter
            members += [("previousKeyId", .string(entries[i].keyID)), ("notAfter", .integer(notAfter))]
        }
        entries.append(Entry(keyID: keyID, status: .primary, createdAt: now, registeredAt: now, publicKey: key.publicKey.rawRepresentation,
                             secret: key.rawRepresentation))
        return changes + [Self.change("senderRotate", now, members)]
    }

    /// Staged rotation, step 1 (Tink's order: add, roll out, promote): adds `key` as the app's
    /// next sender key, `pending` — published to apps (`sender export --all`) but not sealing.
    /// - Throws: `KeysError` `.unknownKeyset` (no sender key yet), `.duplicateKeyID`,
    ///   `.invalidState` (a next key is already pending: promote it first).
    public mutating func addSenderKey(_ key: X25519.PrivateKey, keyID: String, now: Int64) throws -> [KeysetChange] {
        guard !entries.isEmpty else {
            throw KeysError(.unknownKeyset, "\(appID) has no sender key: generate one (push-keys sender generate)")
        }
        guard !entries.contains(where: { $0.keyID == keyID }) else {
            throw KeysError(.duplicateKeyID, "sender key id \(keyID) exists already: add again")
        }
        if let pending = entries.first(where: { $0.status == .pending }) {
            throw KeysError(.invalidState, "\(appID) already has a next sender key \(pending.keyID) (pending): promote it (push-keys sender promote) before adding another")
        }
        entries.append(Entry(keyID: keyID, status: .pending, createdAt: now, registeredAt: now, publicKey: key.publicKey.rawRepresentation,
                             secret: key.rawRepresentation))
        return [Self.change("senderAdd", now, [("keyId", .string(keyID)), ("status", .string("pending"))])]
    }

    /// Staged rotation, step 3: the pending sender key becomes the primary (sealing); the former
    /// primary becomes `decryptOnly` until `notAfter`; keys past their `notAfter` are destroyed.
    /// - Returns: the changes and the new primary's key id.
    /// - Throws: `KeysError` `.unknownKeyset`, `.invalidState` (no pending key).
    public mutating func promoteSenderKey(notAfter: Int64, now: Int64) throws -> (changes: [KeysetChange], keyID: String) {
        guard !entries.isEmpty else {
            throw KeysError(.unknownKeyset, "\(appID) has no sender key: generate one (push-keys sender generate)")
        }
        guard let next = entries.firstIndex(where: { $0.status == .pending }) else {
            throw KeysError(.invalidState, "\(appID) has no next sender key to promote: add one first (push-keys sender add)")
        }
        var changes = pruneSenderKeys(now: now)
        var members: [(key: String, value: JSONValue)] = [("keyId", .string(entries[next].keyID))]
        for i in entries.indices where entries[i].status == .primary {
            entries[i].status = .decryptOnly
            entries[i].retiredAt = now
            entries[i].notAfter = notAfter
            members += [("previousKeyId", .string(entries[i].keyID)), ("notAfter", .integer(notAfter))]
        }
        entries[next].status = .primary
        changes.append(Self.change("senderPromote", now, members))
        return (changes, entries[next].keyID)
    }

    /// Staged rotation, step 4: ends the former (`decryptOnly`) sender keys now — their
    /// `notAfter` becomes `now`, so phones stop accepting them at their next refresh — or, with
    /// `revoke` (a suspected leak), makes them `disabled` with `retiredAt` = `now` and drops
    /// their private keys: `revocations export` then lists them and phones disable the pins.
    /// - Returns: the changes and the key ids ended.
    /// - Throws: `KeysError` `.unknownKeyset`.
    public mutating func retireSenderKeys(revoke: Bool, now: Int64) throws -> (changes: [KeysetChange], keyIDs: [String]) {
        guard !entries.isEmpty else {
            throw KeysError(.unknownKeyset, "\(appID) has no sender key: generate one (push-keys sender generate)")
        }
        var changes: [KeysetChange] = [], ended: [String] = []
        for i in entries.indices where entries[i].status == .decryptOnly {
            if revoke {
                entries[i].status = .disabled
                entries[i].retiredAt = min(entries[i].retiredAt ?? now, now)
                entries[i].notAfter = now
                entries[i].secret = nil
            } else {
                guard (entries[i].notAfter ?? Int64.max) > now else { continue }
                entries[i].notAfter = now
            }
            ended.append(entries[i].keyID)
            changes.append(Self.change(revoke ? "senderRevoke" : "senderRetire", now, [("keyId", .string(entries[i].keyID)), ("notAfter", .integer(now))]))
        }
        return (changes, ended)
    }

    /// Destroys `decryptOnly` sender keys past their `notAfter` (private key dropped).
    mutating func pruneSenderKeys(now: Int64) -> [KeysetChange] {
        var changes: [KeysetChange] = []
        for i in entries.indices where entries[i].status == .decryptOnly && (entries[i].notAfter ?? Int64.max) <= now {
            entries[i].status = .destroyed
            entries[i].retiredAt = now
            entries[i].secret = nil  // SecretBytes zeroes its buffer when released
            changes.append(Self.change("senderPrune", now, [("keyId", .string(entries[i].keyID))]))
        }
        return changes
    }

    /// The registrations, oldest first.
    /// - Throws: `CryptoError` for a stored public key that does not import.
    public func registrationSet() throws -> RegistrationSet {
        RegistrationSet(appID: appID, recipient: owner, registrations: try entries.map { e in
            RegistrationInfo(keyID: e.keyID, publicKey: try X25519.PublicKey(rawRepresentation: e.publicKey), status: e.status,
                             createdAt: e.createdAt, registeredAt: e.registeredAt, supersededAt: e.retiredAt,
                             pinnedSenderKeyIDs: e.pinnedSenderKeyIDs, pinsReportedAt: e.pinsReportedAt)
        })
    }

    /// The sender keys, oldest first, public halves only.
    /// - Throws: `CryptoError` for a stored public key that does not import.
    public func senderKeyInfos() throws -> [SenderKeyInfo] {
        try entries.map { e in
            SenderKeyInfo(appID: appID, keyID: e.keyID, publicKey: try X25519.PublicKey(rawRepresentation: e.publicKey),
                          status: e.status, createdAt: e.createdAt, retiredAt: e.retiredAt, notAfter: e.notAfter)
        }
    }

    /// The primary sender key with its private half; `nil` without one.
    /// - Throws: `KeysError` `.corruptKeyset` (no private key, or one that does not match its public key); `CryptoError`.
    public func primarySenderKey() throws -> (keyID: String, key: X25519.PrivateKey)? {
        guard let p = entries.last(where: { $0.status == .primary }) else { return nil }
        guard let raw = p.secret else { throw KeysError(.corruptKeyset, "the primary sender key \(p.keyID) of \(appID) has no private key") }
        let key = try X25519.PrivateKey(rawRepresentation: raw)
        guard key.publicKey.rawRepresentation == p.publicKey else {
            throw KeysError(.corruptKeyset, "the primary sender key \(p.keyID) of \(appID) does not match its public key")
        }
        return (p.keyID, key)
    }

    static func change(_ event: String, _ time: Int64, _ members: [(key: String, value: JSONValue)]) -> KeysetChange {
        KeysetChange(event: KeyStore.AuditEvent(event: event, time: time, members: members))
    }

    /// A fresh sender key pair and its key id (FORMAT.md §V.6).
    /// - Throws: `CryptoError`.
    public static func newSenderKey() throws -> (key: X25519.PrivateKey, keyID: String) {
        let key = try X25519.PrivateKey()
        return (key, try DeviceKeyItem.keyID(for: key.publicKey))
    }
}
