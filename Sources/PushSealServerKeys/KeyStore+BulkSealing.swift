import PushSealCrypto
import PushSealJSON
import PushSealSystem
public import PushSealWire
import PushSealKeychain
import PushSealKeyRecords

/// The file keychain's batch path (`push-seal batch` over many recipients): a chunk's seal
/// counter reservations are written together — every keyset item of the chunk, one flush of
/// the file system, the renames, one sync of the directory (``Keychain/updateData(_:)``), then
/// the generation counters the same way — instead of one atomic replace with its own flush and
/// directory syncs per recipient. The rules are those of one reservation
/// (``reserveSeals(appID:recipient:keyID:count:)``): under the keysets' lock, only on the key
/// that is still the primary and below 2^32, audited as `reserveSeals`, and durable before it
/// returns, so before any payload sealed under it is written out: a crash (even SIGKILL) only
/// ever over-counts.
///
/// Watches: the change token of each keyset is taken before it is read
/// (``sealingPrimaries(appID:recipients:)``); the reservation's own write of the item is
/// recorded (the token before and after it, taken under the lock), so a watch whose token was
/// current just before that write stays current after it — a write by anyone else still makes
/// it stale.
extension KeyStore: BulkSealingKeyStore {
    /// The primary and a watch of each keyset of `appID` named in `recipients`: per recipient
    /// two `lstat` calls and one item read. Recipients with no keyset, no primary, a malformed
    /// name or a keyset that does not read (`KeysError`) are left out.
    /// - Throws: `KeysError` `.invalidName` (the app id); `KeychainError` (then nothing is loaded).
    public func sealingPrimaries(appID: String, recipients: [String]) throws -> [String: (watch: any KeysetWatch, key: SealingKey)] {
        try KeyID.validateAppID(appID)
        var out: [String: (watch: any KeysetWatch, key: SealingKey)] = [:]
        for r in Set(recipients) where (try? KeyID.validateRecipient(r)) != nil {
            let location = try keychain.location(of: query(appID, r))
            guard let version = try keychain.itemVersion(at: location) else { continue }
            let ks: Keyset?
            do {
                ks = try load(appID: appID, recipient: r)
            } catch is KeysError {
                continue  // its own seal reports the error
            }
            guard let ks, let primary = try? KeysetTransitions<KeyStore>.sealingPrimary(of: ks) else { continue }
            out[r] = (ReservingItemWatch(store: self, location: location, version: version), primary)
        }
        return out
    }

    /// Reserves every block under one hold of the keysets' lock and writes them as one durable
    /// step (see above); a request whose key is no longer the primary, reached 2^32, or whose
    /// keyset is gone or does not read is left out. One `reserveSeals` audit line per grant.
    /// - Throws: `KeysError` `.invalidName` (the app id); `KeychainError`, `KeysError` `.io`
    ///   (nothing granted; some counters may be raised: an over-count only).
    public func reserveSeals(appID: String, blocks: [(recipient: String, keyID: String, count: UInt64)]) throws -> [String: SealReservation] {
        try KeyID.validateAppID(appID)
        let valid = blocks.filter { (try? KeyID.validateRecipient($0.recipient)) != nil && KeyID.isValid($0.keyID) }
        guard !valid.isEmpty else { return [:] }
        return try withLock {
            let time = KeyTime.now()
            var granted: [String: SealReservation] = [:]
            var changed: [(ks: Keyset, location: ItemLocation, before: ItemVersion)] = []
            for b in valid where granted[b.recipient] == nil {
                let location = try keychain.location(of: query(appID, b.recipient))
                guard let before = try keychain.itemVersion(at: location),
                      var ks = try? load(appID: appID, recipient: b.recipient),
                      let q = ks.primaryIndex, ks.keys[q].info.keyID == b.keyID, ks.keys[q].info.sealCount < KeyInfo.sealLimit else { continue }
                let used = ks.keys[q].info.sealCount
                let limit = min(used + max(b.count, 1), KeyInfo.sealLimit)
                ks.keys[q].info.sealCount = limit
                granted[b.recipient] = SealReservation(previousCount: used, reservedCount: limit)
                changed.append((ks, location, before))
            }
            guard !changed.isEmpty else { return [:] }
            // The audit destination first: one that cannot be opened fails before anything is saved.
            let sink = try audit.open(keychain: keychain)
            try saveAll(changed.map(\.ks))
            for c in changed {
                guard let k = c.ks.primaryIndex.map({ c.ks.keys[$0].info }) else { continue }
                try writeAudit(AuditEvent(event: "reserveSeals", time: time, members: [("keyId", .string(k.keyID)), ("sealCount", .integer(Int64(k.sealCount)))]),
                               appID: appID, recipient: c.ks.recipient, to: sink)
            }
            for c in changed {
                guard let after = try? keychain.itemVersion(at: c.location), after.hasSameDeviceState(as: c.before) else { continue }
                ownReservations.withLock { $0[c.location] = OwnWrite(before: c.before, after: after) }
            }
            return granted
        }
    }

    /// Saves keysets as their next generations: every keyset item in one batch update, then
    /// every generation counter in another (the items before their counters, as ``save(_:isNew:)``);
    /// a counter item a keyset of before 0.2.0 lacks is added one by one.
    func saveAll(_ sets: [Keyset]) throws {
        var items: [(query: ItemQuery, data: SecretBytes)] = []
        var counters: [(query: ItemQuery, data: SecretBytes)] = []
        var missingCounters: [Keyset] = []
        for var ks in sets {
            let present = try GenerationCounters.presentGeneration(keychain, accessGroup: accessGroup, appID: ks.appID, recipient: ks.recipient)
            ks.generation = max(ks.generation, present ?? 0) &+ 1
            var bytes = ks.encode()
            items.append((query(ks.appID, ks.recipient), SecretBytes(copying: bytes)))
            SecretBytes.wipe(&bytes)
            if present == nil { missingCounters.append(ks) }
            counters.append((generationQuery(ks), Self.generationBytes(ks.generation)))
        }
        // A missing counter (a keyset of before 0.2.0) is added first, at 0 (G10: never an item
        // above 0 without its counter, even after a crash), then raised with the others.
        for ks in missingCounters {
            try keychain.add(.genericPassword, service: KeychainNames.generationService(appID: ks.appID), account: ks.recipient,
                             label: "PushSeal keyset generation", accessGroup: accessGroup, accessibility: accessibility, data: Self.generationBytes(0))
        }
        try keychain.updateData(items)
        try keychain.updateData(counters)
    }

    func generationQuery(_ ks: Keyset) -> ItemQuery {
        ItemQuery(itemClass: .genericPassword, service: KeychainNames.generationService(appID: ks.appID), account: ks.recipient, accessGroup: accessGroup)
    }

    /// A generation counter's 8 bytes, big-endian.
    static func generationBytes(_ generation: UInt64) -> SecretBytes {
        var g: [UInt8] = []
        for shift in stride(from: 56, through: 0, by: -8) { g.append(UInt8(truncatingIfNeeded: generation >> UInt64(shift))) }
        return SecretBytes(copying: g)
    }
}

/// This store's own reservation write of one keyset item: its change token just before and
/// just after (under the keysets' lock).
struct OwnWrite: Sendable {
    var before: ItemVersion
    var after: ItemVersion
}

/// A keyset item's change token that also accepts this store's own batch reservation of the
/// item (``KeyStore/reserveSeals(appID:blocks:)``): current when the token is unchanged, or when
/// the only change since is that reservation.
struct ReservingItemWatch: KeysetWatch {
    let store: KeyStore
    let location: ItemLocation
    let version: ItemVersion

    func isCurrent() throws -> Bool {
        guard let now = try store.keychain.itemVersion(at: location) else { return false }
        if now == version { return true }
        return store.ownReservations.withLock { $0[location] }.map { $0.before == version && $0.after == now } ?? false
    }
}
