import PushSealJSON
public import PushSealCrypto
public import PushSealWire

/// A ``ServerKeyStore`` that keeps each keyset as a ``KeysetState`` and can change one keyset in
/// one transaction (a database store). It supplies the three primitives below plus the sealing
/// methods (``ServerKeyStore/watchKeyset(appID:recipient:)``,
/// ``ServerKeyStore/reserveSeals(appID:recipient:keyID:count:)``); PushSealKeys supplies the
/// rest of the protocol — lookup, generate, rotate, promote, revoke, prune, due, export and import —
/// with the file keychain's rules, steps and audit events, so both stores behave alike.
public protocol KeysetStateStore: ServerKeyStore {
    /// What ``KeysetInfo/accessGroup`` says for this store's keysets (e.g. `pushseal.server`).
    var keysetLabel: String { get }

    /// The state of (app id, recipient), or `nil` when there is no such keyset. Names are checked.
    /// - Throws: `KeysError` `.corruptKeyset`; the store's errors (a key that does not unwrap).
    func loadState(appID: String, recipient: String) throws -> KeysetState?

    /// Every keyset's state, sorted by app id then recipient.
    /// - Throws: as ``loadState(appID:recipient:)``.
    func loadAllStates() throws -> [KeysetState]

    /// Loads (app id, recipient) with an exclusive lock against every other change of it, lets
    /// `body` change it (`isNew`: no keyset existed, the state is empty), and when `body` returns
    /// changes, saves the state and their audit lines atomically; else saves nothing. `body` may
    /// run more than once (a store may retry a transaction that failed to commit).
    /// - Returns: the state after the change.
    /// - Throws: `KeysError` `.unknownKeyset` (none and not `allowCreate`); `body`'s errors
    ///   (nothing saved); the store's errors.
    func transact(appID: String, recipient: String, allowCreate: Bool,
                  _ body: (inout KeysetState, _ isNew: Bool) throws -> [KeysetChange]) throws -> KeysetState
}

extension KeysetStateStore {
    func unknown(_ appID: String, _ recipient: String) -> KeysError {
        KeysError(.unknownKeyset, "no keyset for app id \(appID) and recipient \(recipient) in \(storeDescription)")
    }

    /// Runs `body` on the internal model inside ``transact(appID:recipient:allowCreate:_:)``,
    /// checking the keyset's invariants before anything is saved.
    @discardableResult
    func mutate(appID: String, recipient: String, allowCreate: Bool = false,
                _ body: (inout Keyset, Bool) throws -> [KeyStore.AuditEvent]) throws -> Keyset {
        try transact(appID: appID, recipient: recipient, allowCreate: allowCreate) { state, isNew in
            let events = try body(&state.keyset, isNew)
            try KeyStore.checkInvariants(state.keyset)
            return events.map { KeysetChange(event: $0) }
        }.keyset
    }

    /// The keyset's metadata. Throws `KeysError` `.unknownKeyset`, `.invalidName`; the store's errors.
    public func keyset(appID: String, recipient: String) throws -> KeysetInfo {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        guard let s = try loadState(appID: appID, recipient: recipient) else { throw unknown(appID, recipient) }
        return s.info(accessGroup: keysetLabel)
    }

    /// Every keyset's metadata, sorted. Throws the store's errors.
    public func keysets() throws -> [KeysetInfo] { try loadAllStates().map { $0.info(accessGroup: keysetLabel) } }

    /// The primary's key id and bytes. Throws `KeysError` `.unknownKeyset`, `.noPrimaryKey`, `.invalidName`; the store's errors.
    public func sealingPrimary(appID: String, recipient: String) throws -> SealingKey {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        guard let s = try loadState(appID: appID, recipient: recipient) else { throw unknown(appID, recipient) }
        guard let p = s.primarySealingKey else {
            throw KeysError(.noPrimaryKey, "keyset \(appID)/\(recipient) has no primary key (revoked?): run push-keys rotate")
        }
        return p
    }

    /// As ``KeyStore/generate(appID:recipient:now:)``.
    @discardableResult
    public func generate(appID: String, recipient: String, now: Int64) throws -> KeyInfo {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        try KeyStore.checkTime(now)
        let ks = try mutate(appID: appID, recipient: recipient, allowCreate: true) { ks, isNew in
            guard isNew else { throw KeysError(.keysetExists, "app id \(appID) and recipient \(recipient) already have a keyset") }
            let info = KeyInfo(keyID: KeyID.generate(), status: .primary, createdAt: now, promotedAt: now)
            ks.keys = [ManagedKey(info: info, secret: SecretBytes(randomByteCount: AES256GCM.keyByteCount))]
            return [KeyStore.AuditEvent(event: "generate", time: now, members: [("keyId", .string(info.keyID)), ("status", .string("primary"))])]
        }
        return ks.keys[0].info
    }

    /// As ``KeyStore/promote(appID:recipient:keyID:graceSeconds:now:)``.
    @discardableResult
    public func promote(appID: String, recipient: String, keyID: String, graceSeconds: Int64, now: Int64) throws -> KeysetInfo {
        try KeyID.validate(keyID)
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        _ = try KeyStore.time(now, plus: graceSeconds, named: "graceSeconds")
        return try mutate(appID: appID, recipient: recipient) { ks, _ in
            var events = try KeyStore.promote(&ks, keyID: keyID, graceSeconds: graceSeconds, now: now)
            if ks.rotation?.keyID == keyID {
                ks.rotation = nil
                events.append(KeyStore.AuditEvent(event: "rotationFinished", time: now, members: [("keyId", .string(keyID))]))
            }
            return events
        }.info(accessGroup: keysetLabel)
    }

    /// As ``KeyStore/revoke(appID:recipient:keyID:now:)``.
    @discardableResult
    public func revoke(appID: String, recipient: String, keyID: String, now: Int64) throws -> KeyInfo {
        try KeyID.validate(keyID)
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        try KeyStore.checkTime(now)
        let ks = try mutate(appID: appID, recipient: recipient) { ks, _ in
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

    /// As ``KeyStore/prune(now:)``.
    @discardableResult
    public func prune(now: Int64) throws -> [KeyStore.PrunedKey] {
        try KeyStore.checkTime(now)
        var out: [KeyStore.PrunedKey] = []
        for candidate in try loadAllStates() where candidate.keyset.keys.contains(where: { KeyStore.isPrunable($0.info, now) }) {
            var pruned: [KeyStore.PrunedKey] = []
            try mutate(appID: candidate.appID, recipient: candidate.recipient) { ks, _ in
                pruned = []
                var events: [KeyStore.AuditEvent] = []
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

    /// As ``KeyStore/due(now:rotationPeriodSeconds:sealThreshold:)``.
    public func due(now: Int64, rotationPeriodSeconds: Int64, sealThreshold: UInt64) throws -> [KeyStore.DueKeyset] {
        try KeyStore.checkTime(now)
        try KeyStore.checkDuration(rotationPeriodSeconds, named: "rotationPeriodSeconds")
        return try loadAllStates().compactMap { KeyStore.dueEntry($0.keyset, now: now, rotationPeriodSeconds: rotationPeriodSeconds, sealThreshold: sealThreshold) }
    }

    /// As ``KeyStore/exportRecord(appID:recipient:keyID:)``.
    public func exportRecord(appID: String, recipient: String, keyID: String?) throws -> KeyRecord {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        if let keyID { try KeyID.validate(keyID) }
        guard let s = try loadState(appID: appID, recipient: recipient) else { throw unknown(appID, recipient) }
        var keys = s.keyset.keys
        if let keyID {
            keys = keys.filter { $0.info.keyID == keyID }
            guard !keys.isEmpty else { throw KeysError(.unknownKey, "keyset \(appID)/\(recipient) has no key \(keyID)") }
        }
        for i in keys.indices where !keys[i].info.status.canOpen { keys[i].secret = nil }
        return KeyRecord(appID: appID, recipient: recipient, keys: keys)
    }

    /// As ``KeyStore/importRecord(_:expectedAppID:graceSeconds:now:)`` (no keychain identity to check).
    @discardableResult
    public func importRecord(_ record: KeyRecord, expectedAppID: String?, graceSeconds: Int64, now: Int64) throws -> KeyStore.ImportResult {
        _ = try KeyStore.time(now, plus: graceSeconds, named: "graceSeconds")
        if let expectedAppID, expectedAppID != record.appID {
            throw KeysError(.wrongAppID, "the record is for app id \(record.appID), not \(expectedAppID)")
        }
        var created = false
        var changed: [String] = []
        let ks = try mutate(appID: record.appID, recipient: record.recipient, allowCreate: true) { ks, isNew in
            created = isNew
            let events = try KeyStore.merge(&ks, incoming: record.keys, now: now, graceSeconds: graceSeconds, event: "import")
            changed = events.compactMap { KeysetChange(event: $0).keyID }
            return events
        }
        return KeyStore.ImportResult(keyset: ks.info(accessGroup: keysetLabel), created: created, changedKeyIDs: changed)
    }

    /// Copies a keyset as it is, seal counters and statuses included (`push-keys registry
    /// import`/`export` between stores), creating it or replacing its keys. Audited as
    /// `import` per key whose state changed. Idempotent.
    /// - Throws: `KeysError` `.duplicateKeyID` (a key id already present with other bytes), `.invalidName`; the store's errors.
    @discardableResult
    public func copyIn(_ source: KeysetState, now: Int64) throws -> Bool {
        try KeyID.validateAppID(source.appID)
        try KeyID.validateRecipient(source.recipient)
        try KeyStore.checkTime(now)
        var changed = false
        try mutate(appID: source.appID, recipient: source.recipient, allowCreate: true) { ks, _ in
            let events = try KeyStore.copyKeys(&ks, from: source.keyset, now: now)
            changed = !events.isEmpty
            return events
        }
        return changed
    }

    /// As ``KeyStore/rotate(appID:recipient:graceSeconds:device:promote:now:afterStep:)``: the
    /// same five steps, each its own transaction.
    @discardableResult
    public func rotate(appID: String, recipient: String, graceSeconds: Int64, device: KeyStore?, promote: Bool, now: Int64,
                       afterStep: (RotationStep) -> Void) throws -> RotationResult {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        _ = try KeyStore.time(now, plus: graceSeconds, named: "graceSeconds")
        var resumed = false
        var ks = try mutate(appID: appID, recipient: recipient) { ks, _ in
            resumed = false
            if let r = ks.rotation, let i = ks.index(of: r.keyID), ks.keys[i].info.status == .pending || ks.keys[i].info.status == .primary {
                if promote, r.phase != .promoted, (try? KeyStore.time(now, plus: r.graceSeconds, named: "graceSeconds")) == nil {
                    throw KeysError(.invalidState,
                        "the interrupted rotation to key \(r.keyID) of \(appID)/\(recipient) was started with a grace of \(r.graceSeconds) seconds, which takes notAfter past \(KeyStore.maxTimeText): finish it with push-keys promote --key-id \(r.keyID) --grace DURATION")
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
        if let device {
            try device.sync(from: ks, now: now, event: "install")
            afterStep(.installed)
        }
        guard promote else {
            return RotationResult(keyID: newID, previousKeyID: ks.primaryIndex.map { ks.keys[$0].info.keyID }, notAfter: nil,
                                  promoted: false, deviceUpdated: device != nil, resumed: resumed)
        }
        var previous: String?
        ks = try mutate(appID: appID, recipient: recipient) { ks, _ in
            guard var r = ks.rotation, r.keyID == newID, r.phase != .promoted else { return [] }
            previous = ks.primaryIndex.map { ks.keys[$0].info.keyID }
            var events = try KeyStore.promote(&ks, keyID: newID, graceSeconds: r.graceSeconds, now: now)
            r.phase = .promoted
            ks.rotation = r
            events.append(KeyStore.AuditEvent(event: "rotationPromoted", time: now, members: [("keyId", .string(newID))]))
            return events
        }
        afterStep(.promoted)
        if let device {
            try device.sync(from: ks, now: now, event: "sync")
            afterStep(.devicePromoted)
        }
        ks = try mutate(appID: appID, recipient: recipient) { ks, _ in
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

extension KeyStore {
    /// The `due` entry of one keyset, or `nil` when it is not due (shared by both stores).
    static func dueEntry(_ ks: Keyset, now: Int64, rotationPeriodSeconds: Int64, sealThreshold: UInt64) -> DueKeyset? {
        var reasons: [String] = []
        let p = ks.primaryIndex.map { ks.keys[$0].info }
        var age: Int64?
        if let p {
            let a = Self.age(at: now, since: p.promotedAt ?? p.createdAt)
            age = a
            if a >= rotationPeriodSeconds { reasons.append("age") }
            if p.sealCount >= sealThreshold { reasons.append("seals") }
        } else {
            reasons.append("noPrimary")
        }
        if ks.rotation != nil { reasons.append("unfinishedRotation") }
        guard !reasons.isEmpty else { return nil }
        return DueKeyset(appID: ks.appID, recipient: ks.recipient, keyID: p?.keyID, ageSeconds: age, sealCount: p?.sealCount ?? 0, reasons: reasons)
    }

    /// The whole state of one keyset of this keychain (key bytes included), or `nil`: for
    /// copying a keychain's server keysets into another store (`push-keys registry import`).
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; `KeychainError`.
    public func state(appID: String, recipient: String) throws -> KeysetState? {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        return try load(appID: appID, recipient: recipient).map(KeysetState.init)
    }

    /// Copies a keyset from another store as it is (statuses, times, seal counters, rotation),
    /// creating it or updating its keys (`push-keys registry export`). Audited as `import`.
    /// Idempotent.
    /// - Returns: `true` when something changed.
    /// - Throws: `KeysError` `.duplicateKeyID`, `.invalidName`; `KeychainError`.
    @discardableResult
    public func copyIn(_ source: KeysetState, now: Int64 = KeyStore.now()) throws -> Bool {
        try KeyID.validateAppID(source.appID)
        try KeyID.validateRecipient(source.recipient)
        try Self.checkTime(now)
        var changed = false
        try mutate(appID: source.appID, recipient: source.recipient, allowCreate: true) { ks, _ in
            let events = try Self.copyKeys(&ks, from: source.keyset, now: now)
            changed = !events.isEmpty
            return events
        }
        return changed
    }

    /// Makes `ks` hold `source`'s keys and rotation as they are; the events to audit.
    static func copyKeys(_ ks: inout Keyset, from source: Keyset, now: Int64) throws -> [AuditEvent] {
        var events: [AuditEvent] = []
        for k in source.keys {
            if let i = ks.index(of: k.info.keyID) {
                if let a = ks.keys[i].secret, let b = k.secret, a != b {
                    throw KeysError(.duplicateKeyID, "key id \(k.info.keyID) is already in keyset \(ks.appID)/\(ks.recipient) with different key bytes")
                }
                guard ks.keys[i].info != k.info || (ks.keys[i].secret == nil) != (k.secret == nil) else { continue }
                ks.keys[i] = k
            } else {
                ks.keys.append(k)
            }
            events.append(AuditEvent(event: "import", time: now, members: [("keyId", .string(k.info.keyID)), ("status", .string(k.info.status.rawValue)),
                                                                         ("sealCount", .integer(Int64(clamping: k.info.sealCount)))]))
        }
        if ks.rotation?.keyID != source.rotation?.keyID || ks.rotation?.phase != source.rotation?.phase {
            ks.rotation = source.rotation
            if events.isEmpty { events.append(AuditEvent(event: "import", time: now, members: [("rotationKeyId", .string(source.rotation?.keyID ?? ""))])) }
        }
        return events
    }
}
