import PushSealJSON
import PushSealCrypto
public import PushSealWire
public import PushSealKeyRecords

/// A ``ServerKeyStore`` that keeps each keyset as a ``KeysetState`` and can change one keyset in
/// one transaction (a database store). It supplies the three primitives below plus the sealing
/// methods (``ServerKeyStore/watchKeyset(appID:recipient:)``,
/// ``ServerKeyStore/reserveSeals(appID:recipient:keyID:count:)``); PushSealServerKeys supplies the
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

    /// The states that may have something for ``prune(now:)`` to do at `now` (metadata only is
    /// enough): at least every keyset with a `decryptOnly` key whose `notAfter` is at or before
    /// `now`, or a `disabled` key whose bytes are still stored. A superset only costs a change
    /// that finds nothing to do.
    /// - Throws: as ``loadAllStates()``.
    func loadStatesToPrune(now: Int64) throws -> [KeysetState]

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

/// A ``KeysetStateStore`` under the shared keyset state machine: `mutate` is one
/// ``KeysetStateStore/transact(appID:recipient:allowCreate:_:)``.
struct StateStoreTransactor<Store: KeysetStateStore>: KeysetTransacting {
    let base: Store

    var keysetAccessGroup: String { base.keysetLabel }

    func unknownKeyset(_ appID: String, _ recipient: String) -> KeysError {
        KeysError(.unknownKeyset, "no keyset for app id \(appID) and recipient \(recipient) in \(base.storeDescription)")
    }

    func load(appID: String, recipient: String) throws -> Keyset? { try base.loadState(appID: appID, recipient: recipient)?.keyset }

    func loadAll() throws -> [Keyset] { try base.loadAllStates().map(\.keyset) }

    func pruneCandidates(now: Int64) throws -> [Keyset] { try base.loadStatesToPrune(now: now).map(\.keyset) }

    @discardableResult
    func mutate(appID: String, recipient: String, allowCreate: Bool,
                _ body: (inout Keyset, Bool) throws -> [KeyStore.AuditEvent]) throws -> Keyset {
        try base.transact(appID: appID, recipient: recipient, allowCreate: allowCreate) { state, isNew in
            let events = try body(&state.keyset, isNew)
            try KeyStore.checkInvariants(state.keyset)
            return events.map { KeysetChange(event: $0) }
        }.keyset
    }
}

/// Lookup and lifecycle of a ``KeysetStateStore``: the file keychain's own implementation
/// (``KeysetTransitions``), over the store's ``KeysetStateStore/transact(appID:recipient:allowCreate:_:)``.
extension KeysetStateStore {
    var transitions: KeysetTransitions<StateStoreTransactor<Self>> { KeysetTransitions(store: StateStoreTransactor(base: self)) }

    /// The keyset's metadata. Throws `KeysError` `.unknownKeyset`, `.invalidName`; the store's errors.
    public func keyset(appID: String, recipient: String) throws -> KeysetInfo { try transitions.keyset(appID: appID, recipient: recipient) }

    /// Every keyset's metadata, sorted. Throws the store's errors.
    public func keysets() throws -> [KeysetInfo] { try transitions.keysets() }

    /// The primary's key id and bytes. Throws `KeysError` `.unknownKeyset`, `.noPrimaryKey`, `.invalidName`; the store's errors.
    public func sealingPrimary(appID: String, recipient: String) throws -> SealingKey {
        try transitions.sealingPrimary(appID: appID, recipient: recipient)
    }

    /// As ``KeyStore/generate(appID:recipient:now:)``.
    @discardableResult
    public func generate(appID: String, recipient: String, now: Int64) throws -> KeyInfo {
        try transitions.generate(appID: appID, recipient: recipient, now: now)
    }

    /// As ``KeyStore/promote(appID:recipient:keyID:graceSeconds:now:)``.
    @discardableResult
    public func promote(appID: String, recipient: String, keyID: String, graceSeconds: Int64, now: Int64) throws -> KeysetInfo {
        try transitions.promote(appID: appID, recipient: recipient, keyID: keyID, graceSeconds: graceSeconds, now: now)
    }

    /// As ``KeyStore/revoke(appID:recipient:keyID:now:)``.
    @discardableResult
    public func revoke(appID: String, recipient: String, keyID: String, now: Int64) throws -> KeyInfo {
        try transitions.revoke(appID: appID, recipient: recipient, keyID: keyID, now: now)
    }

    /// As ``KeyStore/prune(now:)`` (candidates from ``loadStatesToPrune(now:)``).
    @discardableResult
    public func prune(now: Int64) throws -> [KeyStore.PrunedKey] { try transitions.prune(now: now) }

    /// As ``KeyStore/due(now:rotationPeriodSeconds:sealThreshold:)``.
    public func due(now: Int64, rotationPeriodSeconds: Int64, sealThreshold: UInt64) throws -> [KeyStore.DueKeyset] {
        try transitions.due(now: now, rotationPeriodSeconds: rotationPeriodSeconds, sealThreshold: sealThreshold)
    }

    /// As ``KeyStore/exportRecord(appID:recipient:keyID:)``.
    public func exportRecord(appID: String, recipient: String, keyID: String?) throws -> KeyRecord {
        try transitions.exportRecord(appID: appID, recipient: recipient, keyID: keyID)
    }

    /// As ``KeyStore/importRecord(_:expectedAppID:graceSeconds:now:)`` (no keychain identity to check).
    @discardableResult
    public func importRecord(_ record: KeyRecord, expectedAppID: String?, graceSeconds: Int64, now: Int64) throws -> KeyStore.ImportResult {
        try transitions.importRecord(record, expectedAppID: expectedAppID, applicationIdentifier: nil, graceSeconds: graceSeconds, now: now)
    }

    /// Copies a keyset as it is, seal counters and statuses included (`push-keys registry
    /// import`/`export` between stores; a counter is never lowered), creating it or replacing its keys. Audited as
    /// `import` per key whose state changed. Idempotent.
    /// - Throws: `KeysError` `.duplicateKeyID` (a key id already present with other bytes), `.invalidName`; the store's errors.
    @discardableResult
    public func copyIn(_ source: KeysetState, now: Int64) throws -> Bool { try transitions.copyIn(source.keyset, now: now) }

    /// As ``KeyStore/rotate(appID:recipient:graceSeconds:device:promote:now:afterStep:)``: the
    /// same five steps, each its own transaction.
    @discardableResult
    public func rotate(appID: String, recipient: String, graceSeconds: Int64, device: KeyStore?, promote: Bool, now: Int64,
                       afterStep: (RotationStep) -> Void) throws -> RotationResult {
        try transitions.rotate(appID: appID, recipient: recipient, graceSeconds: graceSeconds, device: device, promote: promote,
                               now: now, afterStep: afterStep)
    }
}

extension KeyStore {
    /// The `due` entry of one keyset, or `nil` when it is not due (shared by both stores).
    static func dueEntry(_ ks: Keyset, now: Int64, rotationPeriodSeconds: Int64, sealThreshold: UInt64) -> DueKeyset? {
        var reasons: [String] = []
        let p = ks.primaryIndex.map { ks.keys[$0].info }
        var age: Int64?
        if let p {
            let a = KeyTime.age(at: now, since: p.promotedAt ?? p.createdAt)
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
    public func copyIn(_ source: KeysetState, now: Int64 = KeyTime.now()) throws -> Bool {
        try transitions.copyIn(source.keyset, now: now)
    }

    /// Makes `ks` hold `source`'s keys and rotation as they are; the events to audit.
    static func copyKeys(_ ks: inout Keyset, from source: Keyset, now: Int64) throws -> [AuditEvent] {
        var events: [AuditEvent] = []
        for var k in source.keys {
            if let i = ks.index(of: k.info.keyID) {
                if let a = ks.keys[i].secret, let b = k.secret, a != b {
                    throw KeysError(.duplicateKeyID, "key id \(k.info.keyID) is already in keyset \(ks.appID)/\(ks.recipient) with different key bytes")
                }
                // A copy never lowers a seal counter (the target may have sealed since).
                k.info.sealCount = max(k.info.sealCount, ks.keys[i].info.sealCount)
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
