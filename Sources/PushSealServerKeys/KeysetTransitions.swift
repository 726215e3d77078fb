import PushSealJSON
import PushSealCrypto
import PushSealWire
import PushSealKeyRecords

/// What a server store gives the keyset state machine (``KeysetTransitions``): reads, and one
/// locked read-modify-write of one keyset. The file keychain (``KeyStore``) does it under
/// `flock` on `keys.lock` with an atomic replace of the keyset item; a database store
/// (``KeysetStateStore``) in one transaction that locks the keyset's rows.
protocol KeysetTransacting {
    /// What ``KeysetInfo/accessGroup`` says for this store's keysets.
    var keysetAccessGroup: String { get }

    /// The `.unknownKeyset` error naming (app id, recipient) in this store.
    func unknownKeyset(_ appID: String, _ recipient: String) -> KeysError

    /// One keyset with its key bytes, or `nil` when there is none (names already checked).
    func load(appID: String, recipient: String) throws -> Keyset?

    /// Every keyset, sorted by app id then recipient; key bytes optional (a store may leave them out).
    func loadAll() throws -> [Keyset]

    /// The keysets that may have something for ``KeysetTransitions/prune(now:)`` at `now`: at
    /// least every keyset with a `decryptOnly` key past its `notAfter` or a `disabled` key that
    /// still has bytes (a superset costs only a change that finds nothing to do).
    func pruneCandidates(now: Int64) throws -> [Keyset]

    /// Loads (app id, recipient) under an exclusive lock against every other change of it, lets
    /// `body` change it (`isNew`: none existed, the keyset is empty), checks the keyset's
    /// invariants, and when `body` returns events saves the keyset and audits them atomically;
    /// else saves nothing. `body` may run more than once (a retried transaction), so it resets
    /// whatever it reports outside.
    /// - Returns: the keyset after the change.
    /// - Throws: `KeysError` `.unknownKeyset` (none and not `allowCreate`), `.duplicateKeyID`,
    ///   `.invalidState` (invariants); `body`'s errors (nothing saved); the store's errors.
    @discardableResult
    func mutate(appID: String, recipient: String, allowCreate: Bool,
                _ body: (inout Keyset, _ isNew: Bool) throws -> [KeyStore.AuditEvent]) throws -> Keyset
}

/// The one implementation of the server keysets' lookups and state transitions (generate,
/// rotate, promote, revoke, prune, due, export, import, copy), for every store: the rules, the
/// order of the checks (names and times before anything is read or written) and the audit events
/// live here; the store supplies the locking (``KeysetTransacting``).
struct KeysetTransitions<Store: KeysetTransacting> {
    let store: Store

    func keyset(appID: String, recipient: String) throws -> KeysetInfo {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        guard let ks = try store.load(appID: appID, recipient: recipient) else { throw store.unknownKeyset(appID, recipient) }
        return ks.info(accessGroup: store.keysetAccessGroup)
    }

    func keysets() throws -> [KeysetInfo] { try store.loadAll().map { $0.info(accessGroup: store.keysetAccessGroup) } }

    /// The primary's id and bytes of a loaded keyset. Throws `KeysError` `.noPrimaryKey`.
    static func sealingPrimary(of ks: Keyset) throws -> SealingKey {
        guard let p = ks.primaryIndex, let key = ks.keys[p].secret else {
            throw KeysError(.noPrimaryKey, "keyset \(ks.appID)/\(ks.recipient) has no primary key (revoked?): run push-keys rotate")
        }
        return SealingKey(keyID: ks.keys[p].info.keyID, key: key)
    }

    func sealingPrimary(appID: String, recipient: String) throws -> SealingKey {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        guard let ks = try store.load(appID: appID, recipient: recipient) else { throw store.unknownKeyset(appID, recipient) }
        return try Self.sealingPrimary(of: ks)
    }

    func generate(appID: String, recipient: String, now: Int64) throws -> KeyInfo {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        try KeyTime.checkTime(now)
        let ks = try store.mutate(appID: appID, recipient: recipient, allowCreate: true) { ks, isNew in
            guard isNew else { throw KeysError(.keysetExists, "app id \(appID) and recipient \(recipient) already have a keyset") }
            let info = KeyInfo(keyID: KeyID.generate(), status: .primary, createdAt: now, promotedAt: now)
            ks.keys = [ManagedKey(info: info, secret: SecretBytes(randomByteCount: AES256GCM.keyByteCount))]
            return [KeyStore.AuditEvent(event: "generate", time: now, members: [("keyId", .string(info.keyID)), ("status", .string("primary"))])]
        }
        return ks.keys[0].info
    }

    func promote(appID: String, recipient: String, keyID: String, graceSeconds: Int64, now: Int64) throws -> KeysetInfo {
        try KeyID.validate(keyID)
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        _ = try KeyTime.time(now, plus: graceSeconds, named: "graceSeconds")
        return try store.mutate(appID: appID, recipient: recipient, allowCreate: false) { ks, _ in
            var events = try KeyStore.promote(&ks, keyID: keyID, graceSeconds: graceSeconds, now: now)
            if ks.rotation?.keyID == keyID {
                ks.rotation = nil
                events.append(KeyStore.AuditEvent(event: "rotationFinished", time: now, members: [("keyId", .string(keyID))]))
            }
            return events
        }.info(accessGroup: store.keysetAccessGroup)
    }

    func revoke(appID: String, recipient: String, keyID: String, now: Int64) throws -> KeyInfo {
        try KeyID.validate(keyID)
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        try KeyTime.checkTime(now)
        let ks = try store.mutate(appID: appID, recipient: recipient, allowCreate: false) { ks, _ in
            guard let i = ks.index(of: keyID) else { throw KeysError(.unknownKey, "keyset \(appID)/\(recipient) has no key \(keyID)") }
            let s = ks.keys[i].info.status
            guard s != .disabled, s != .destroyed else { return [] }
            ks.keys[i].info.status = .disabled
            ks.keys[i].info.retiredAt = now
            ks.keys[i].info.notAfter = nil
            if ks.rotation?.keyID == keyID { ks.rotation = nil }
            return [KeyStore.AuditEvent(event: "revoke", time: now, members: [("keyId", .string(keyID)), ("previousStatus", .string(s.rawValue))])]
        }
        return ks.keys.first { $0.info.keyID == keyID }?.info ?? KeyInfo(keyID: keyID, status: .disabled, createdAt: now)
    }

    func prune(now: Int64) throws -> [KeyStore.PrunedKey] {
        try KeyTime.checkTime(now)
        var out: [KeyStore.PrunedKey] = []
        for candidate in try store.pruneCandidates(now: now) {
            var pruned: [KeyStore.PrunedKey] = []
            try store.mutate(appID: candidate.appID, recipient: candidate.recipient, allowCreate: false) { ks, _ in
                pruned = []
                var events: [KeyStore.AuditEvent] = []
                for i in ks.keys.indices where KeyStore.hasRevokedBytes(ks.keys[i]) {
                    ks.keys[i].secret = nil  // SecretBytes zeroes its buffer when released
                    pruned.append(KeyStore.PrunedKey(appID: ks.appID, recipient: ks.recipient, keyID: ks.keys[i].info.keyID))
                    events.append(KeyStore.AuditEvent(event: "prune", time: now, members: [("keyId", .string(ks.keys[i].info.keyID)), ("status", .string("disabled"))]))
                }
                for i in ks.keys.indices where KeyStore.isPrunable(ks.keys[i].info, now) {
                    ks.keys[i].info.status = .destroyed
                    ks.keys[i].info.retiredAt = now
                    ks.keys[i].secret = nil
                    pruned.append(KeyStore.PrunedKey(appID: ks.appID, recipient: ks.recipient, keyID: ks.keys[i].info.keyID))
                    events.append(KeyStore.AuditEvent(event: "prune", time: now, members: [("keyId", .string(ks.keys[i].info.keyID))]))
                }
                return events
            }
            out += pruned
        }
        return out
    }

    func due(now: Int64, rotationPeriodSeconds: Int64, sealThreshold: UInt64) throws -> [KeyStore.DueKeyset] {
        try KeyTime.checkTime(now)
        try KeyTime.checkDuration(rotationPeriodSeconds, named: "rotationPeriodSeconds")
        return try store.loadAll().compactMap { KeyStore.dueEntry($0, now: now, rotationPeriodSeconds: rotationPeriodSeconds, sealThreshold: sealThreshold) }
    }

    func exportRecord(appID: String, recipient: String, keyID: String?) throws -> KeyRecord {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        if let keyID { try KeyID.validate(keyID) }
        guard let ks = try store.load(appID: appID, recipient: recipient) else { throw store.unknownKeyset(appID, recipient) }
        var keys = ks.keys
        if let keyID {
            keys = keys.filter { $0.info.keyID == keyID }
            guard !keys.isEmpty else { throw KeysError(.unknownKey, "keyset \(appID)/\(recipient) has no key \(keyID)") }
        }
        for i in keys.indices where !keys[i].info.status.canOpen { keys[i].secret = nil }
        return KeyRecord(appID: appID, recipient: recipient, keys: keys)
    }

    /// - Parameter applicationIdentifier: the store's identity (`TEAMID.bundle.id`), whose bundle
    ///   id the record's app id must be (or prefix); `nil`: none to check.
    func importRecord(_ record: KeyRecord, expectedAppID: String?, applicationIdentifier: String?, graceSeconds: Int64,
                      now: Int64) throws -> KeyStore.ImportResult {
        _ = try KeyTime.time(now, plus: graceSeconds, named: "graceSeconds")
        if let expectedAppID, expectedAppID != record.appID {
            throw KeysError(.wrongAppID, "the record is for app id \(record.appID), not \(expectedAppID)")
        }
        try record.checkApplicationIdentifier(applicationIdentifier)
        var created = false
        var changed: [String] = []
        let ks = try store.mutate(appID: record.appID, recipient: record.recipient, allowCreate: true) { ks, isNew in
            created = isNew
            let events = try KeyStore.merge(&ks, incoming: record.keys, now: now, graceSeconds: graceSeconds, event: "import")
            changed = events.compactMap { KeysetChange(event: $0).keyID }
            return events
        }
        return KeyStore.ImportResult(keyset: ks.info(accessGroup: store.keysetAccessGroup), created: created, changedKeyIDs: changed)
    }

    func copyIn(_ source: Keyset, now: Int64) throws -> Bool {
        try KeyID.validateAppID(source.appID)
        try KeyID.validateRecipient(source.recipient)
        try KeyTime.checkTime(now)
        var changed = false
        try store.mutate(appID: source.appID, recipient: source.recipient, allowCreate: true) { ks, _ in
            let events = try KeyStore.copyKeys(&ks, from: source, now: now)
            changed = !events.isEmpty
            return events
        }
        return changed
    }

    /// The rotation in Tink's order (see ``KeyStore/rotate(appID:recipient:graceSeconds:device:promote:now:afterStep:)``):
    /// add (or resume), install on `device`, promote, mirror on `device`, finish; each server
    /// step is its own ``KeysetTransacting/mutate(appID:recipient:allowCreate:_:)``.
    func rotate(appID: String, recipient: String, graceSeconds: Int64, device: KeyStore?, promote: Bool, now: Int64,
                afterStep: (RotationStep) -> Void) throws -> RotationResult {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        _ = try KeyTime.time(now, plus: graceSeconds, named: "graceSeconds")
        // 1. Add (or resume).
        var resumed = false
        var ks = try store.mutate(appID: appID, recipient: recipient, allowCreate: false) { ks, _ in
            resumed = false
            if let r = ks.rotation, let i = ks.index(of: r.keyID), ks.keys[i].info.status == .pending || ks.keys[i].info.status == .primary {
                // A journal written before grace windows were checked may hold one that cannot
                // be added to now: refuse here, before the device or the promotion is touched.
                if promote, r.phase != .promoted, (try? KeyTime.time(now, plus: r.graceSeconds, named: "graceSeconds")) == nil {
                    throw KeysError(.invalidState,
                        "the interrupted rotation to key \(r.keyID) of \(appID)/\(recipient) was started with a grace of \(r.graceSeconds) seconds, which takes notAfter past \(KeyTime.maxTimeText): finish it with push-keys promote --key-id \(r.keyID) --grace DURATION")
                }
                resumed = true
                return []
            }
            let id = KeyID.generate(avoiding: Set(ks.keys.map(\.info.keyID)))
            ks.keys.append(ManagedKey(info: KeyInfo(keyID: id, status: .pending, createdAt: now),
                                      secret: SecretBytes(randomByteCount: AES256GCM.keyByteCount)))
            ks.rotation = Keyset.Rotation(keyID: id, graceSeconds: graceSeconds, phase: .added)
            return [KeyStore.AuditEvent(event: "add", time: now, members: [("keyId", .string(id)), ("status", .string("pending"))])]
        }
        guard let rotation = ks.rotation else { throw KeysError(.invalidState, "rotation journal missing after add") }
        let newID = rotation.keyID
        afterStep(.added)

        // 2. Install on the device.
        if let device {
            try device.sync(from: ks, now: now, event: "install")
            afterStep(.installed)
        }
        guard promote else {
            return RotationResult(keyID: newID, previousKeyID: ks.primaryIndex.map { ks.keys[$0].info.keyID }, notAfter: nil,
                                  promoted: false, deviceUpdated: device != nil, resumed: resumed)
        }

        // 3. Promote on the server.
        var previous: String?
        ks = try store.mutate(appID: appID, recipient: recipient, allowCreate: false) { ks, _ in
            guard var r = ks.rotation, r.keyID == newID, r.phase != .promoted else { return [] }
            previous = ks.primaryIndex.map { ks.keys[$0].info.keyID }
            var events = try KeyStore.promote(&ks, keyID: newID, graceSeconds: r.graceSeconds, now: now)
            r.phase = .promoted
            ks.rotation = r
            events.append(KeyStore.AuditEvent(event: "rotationPromoted", time: now, members: [("keyId", .string(newID))]))
            return events
        }
        afterStep(.promoted)

        // 4. Mirror on the device.
        if let device {
            try device.sync(from: ks, now: now, event: "sync")
            afterStep(.devicePromoted)
        }

        // 5. Finish.
        ks = try store.mutate(appID: appID, recipient: recipient, allowCreate: false) { ks, _ in
            guard ks.rotation?.keyID == newID else { return [] }
            ks.rotation = nil
            return [KeyStore.AuditEvent(event: "rotationFinished", time: now, members: [("keyId", .string(newID))])]
        }
        afterStep(.finished)
        let old = previous.flatMap { p in ks.keys.first { $0.info.keyID == p } }?.info
            ?? ks.keys.filter { $0.info.status == .decryptOnly }.max { ($0.info.retiredAt ?? 0) < ($1.info.retiredAt ?? 0) }?.info
        return RotationResult(keyID: newID, previousKeyID: old?.keyID, notAfter: old?.notAfter, promoted: true,
                              deviceUpdated: device != nil, resumed: resumed)
    }
}
