import PushSealJSON
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import PushSealSystem
public import PushSealCrypto
import PushSealWire
public import PushSealKeychain
import PushSealKeyRecords

/// The sender's view of a server key store (any ``ServerKeyStore``; today the file keychain,
/// ``KeyStore``): the primary key of each (app id, recipient), with a persistent seal counter.
///
/// **Counting.** Seals are counted in blocks: the first seal of a key in this instance reserves
/// ``reservationBlockSize`` seals by raising the stored counter
/// (``ServerKeyStore/reserveSeals(appID:recipient:keyID:count:)``: for the file keychain one
/// durable keychain update under the keysets' lock), and the next seals of the block are handed out from memory. After a
/// crash (even SIGKILL) the stored counter is therefore an upper bound — it never under-counts.
/// A key that reached 2^32 seals (NIST SP 800-38D §8.3, random 96-bit nonces) refuses to seal.
///
/// **Caching, and when a change by another process is seen.** Each instance keeps, per
/// (app id, recipient), the primary's key id and key bytes, the rest of its reserved block, and
/// a ``KeysetWatch`` of the keyset (for the file keychain the item's change token,
/// ``ItemVersion``: the identity of the keyset item file and of the device-state file). A seal
/// inside the block costs one watch check (the file keychain: two `lstat` calls) and no read:
/// - every seal compares the token; any keychain write to the keyset (a rotation, revoke,
///   promote or reservation by another process, a delete) or a lock-state change makes that
///   seal re-read and decrypt the item, so a revoked or demoted key stops sealing at the next
///   seal, as without the cache;
/// - every seal that starts a new block re-reads the item (the reservation is a locked
///   read-modify-write);
/// - a cached keyset older than ``revalidationIntervalNanoseconds`` (1 s by default) is re-read
///   even when its token is unchanged: this bounds the one case the token cannot see (an item
///   replaced twice within one file-timestamp tick, reusing the inode number and size).
/// The token is taken before the item is read, so a change racing with a re-read is caught at
/// the following seal.
///
/// **Batch chunks (opt-in).** A batch sealer may call ``beginBatchChunk()`` before each input
/// chunk (`push-seal batch`: at most 2,048 lines). From the
/// first such call on, the change token of a (app id, recipient) is checked once per chunk — at
/// the first seal of that recipient in the chunk — instead of at every seal; the other seals of
/// the recipient in the same chunk trust that check. The rest is unchanged: a new block still
/// re-reads the item, the 1 s re-read still applies, and the counter is reserved as above. So a
/// rotation, revoke or lock made by another process is seen at the latest by the first seal of the
/// recipient in the next chunk (seals already under way in the current chunk may still use the
/// old key, at most one chunk's worth). Without ``beginBatchChunk()`` every seal checks the token.
/// In batch mode the reservation block also adapts to the sealing rate: a key whose block was used
/// up within 1 s of its reservation reserves twice as many seals next (at most
/// ``maxBatchReservationBlockSize``), otherwise ``reservationBlockSize`` again; so the seals a
/// crash or exit leaves unused stay below about twice one second's seals of the key (and are only
/// ever over-counted, never under-counted).
///
/// Each ``beginBatchChunk()`` call is passed on to the store
/// (``ServerKeyStore/batchChunkWillBegin()``).
///
/// Sendable (checked by hand): the cache is guarded by `lock`; slow paths (re-reads and
/// reservations) are serialized by `refillLock` so that two threads never reserve two blocks
/// for one key at once; everything else is immutable.
public final class ServerKeyring: @unchecked Sendable {
    /// The key store (the file keychain: server keychain and access group).
    public let store: any ServerKeyStore
    /// Seals reserved per durable counter update: 1,024.
    public static let reservationBlockSize: UInt64 = 1024
    /// Largest block in batch mode: 65,536 seals (2^-16 of the 2^32 limit). See "Batch chunks".
    public static let maxBatchReservationBlockSize: UInt64 = 65_536
    /// Default ``revalidationIntervalNanoseconds``: 1 s.
    public static let defaultRevalidationIntervalNanoseconds: UInt64 = 1_000_000_000
    /// Longest time, in nanoseconds, a cached keyset is trusted on its unchanged change token
    /// alone before it is re-read anyway. `0` re-reads on every seal (no caching of keysets;
    /// reservations still count in blocks).
    public let revalidationIntervalNanoseconds: UInt64

    fileprivate struct Slot: Hashable {
        var appID: String
        var recipient: String
    }

    fileprivate struct Entry {
        /// The watch taken just before the last full read.
        var watch: any KeysetWatch
        /// Changes whenever `watch` is replaced (a full read), so a fast path that checked an
        /// older watch outside the lock notices.
        var generation: UInt64
        /// Monotonic nanoseconds of the last full read.
        var readAt: UInt64
        var keyID: String
        var key: SecretBytes
        /// Seals already handed out from the stored counter (the next seal is `used + 1`).
        var used: UInt64
        /// The stored (reserved) counter; `used < limit` means a seal is available.
        var limit: UInt64
        /// The batch chunk (see ``beginBatchChunk()``) in which the token was last checked; 0: none.
        var checkedInChunk: UInt64 = 0
        /// Size of the current block (`limit` minus the counter before the reservation).
        var blockSize: UInt64 = ServerKeyring.reservationBlockSize
        /// Monotonic nanoseconds of the current block's reservation.
        var reservedAt: UInt64 = 0
    }

    fileprivate let lock = PosixLock()
    fileprivate let refillLock = PosixLock()
    fileprivate var entries: [Slot: Entry] = [:]
    /// The current batch chunk (guarded by `lock`); 0 until ``beginBatchChunk()`` is first called.
    fileprivate var chunk: UInt64 = 0
    /// The last entry generation handed out (guarded by `lock`).
    private var generations: UInt64 = 0

    /// Wraps an open key store.
    /// - Parameters:
    ///   - store: the server key store (``KeyStore`` for a file keychain).
    ///   - revalidationIntervalNanoseconds: see ``revalidationIntervalNanoseconds`` (default 1 s).
    public init(store: any ServerKeyStore, revalidationIntervalNanoseconds: UInt64 = ServerKeyring.defaultRevalidationIntervalNanoseconds) {
        self.store = store
        self.revalidationIntervalNanoseconds = revalidationIntervalNanoseconds
    }

    /// Opens the server keychain at `url` (identity ``KeyStore/serverIdentity`` by default).
    /// - Throws: `KeychainError` (`.keychainMissing`, `.insecurePermissions`, …), `KeysError`.
    public convenience init(keychainAt url: URL, identity: Entitlements = KeyStore.serverIdentity, audit: KeyAudit = .keychainFile) throws {
        self.init(store: try KeyStore(keychain: try Keychain(opening: url, as: identity), audit: audit))
    }

    /// Starts a new batch chunk: from now on, until the next call, each (app id, recipient)'s
    /// change token is checked only at its first seal (see "Batch chunks" above). Call it before
    /// each chunk of at most 2,048 lines. Safe to call from any thread.
    public func beginBatchChunk() {
        store.batchChunkWillBegin()
        lock.lock()
        chunk &+= 1
        if chunk == 0 { chunk = 1 }
        lock.unlock()
    }

    static func monotonicNanoseconds() -> UInt64 { PushSealSystem.monotonicNanoseconds() }

    /// The primary key to seal one message for (app id, recipient), counting the seal.
    ///
    /// Safe to call from several threads at once.
    /// - Parameters:
    ///   - appID: the app's bundle identifier (APNs topic).
    ///   - recipient: the app installation.
    /// - Returns: the key id to put in the payload's `key_id` and the 32-byte key.
    /// - Throws: `KeysError` `.unknownKeyset` (unknown recipient), `.noPrimaryKey` (revoked, not
    ///   yet rotated), `.sealLimitReached` (2^32 seals: rotate), `.invalidName`, `.corruptKeyset`;
    ///   the store's own errors (`KeychainError` for keychain failures).
    public func primaryKeyForSealing(appID: String, recipient: String) throws -> (keyID: String, key: SecretBytes) {
        let slot = Slot(appID: appID, recipient: recipient)
        if let hit = try fastPath(slot) { return hit }
        refillLock.lock()
        defer { refillLock.unlock() }
        // A rotation by another process between reading the primary and reserving its seals
        // makes the reservation refuse (`.noPrimaryKey` from reserveSeals): read again, a few times.
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try slowPath(slot)
            } catch is ReservationRaced where attempt < 4 {
                continue
            } catch let e as ReservationRaced {
                throw e.error
            }
        }
    }

    /// A reservation refused because the primary changed after it was read (retried).
    private struct ReservationRaced: Error { let error: KeysError }

    /// A seal from memory when the cached keyset is fresh and its block has room; else `nil`.
    private func fastPath(_ slot: Slot) throws -> (keyID: String, key: SecretBytes)? {
        lock.lock()
        guard var e = entries[slot], e.used < e.limit else { lock.unlock(); return nil }
        let current = chunk
        if current != 0, e.checkedInChunk == current {
            // Batch chunk: the token was checked at this recipient's first seal of the chunk.
            let now = Self.monotonicNanoseconds()
            if now &- e.readAt < revalidationIntervalNanoseconds {
                e.used += 1
                entries[slot] = e
                lock.unlock()
                return (e.keyID, e.key)
            }
        }
        lock.unlock()
        let now = Self.monotonicNanoseconds()
        guard now &- e.readAt < revalidationIntervalNanoseconds, try e.watch.isCurrent() else { return nil }
        lock.lock()
        defer { lock.unlock() }
        // Another thread may have replaced the entry or used the block up meanwhile.
        guard var f = entries[slot], f.generation == e.generation, f.keyID == e.keyID, f.used < f.limit else { return nil }
        f.used += 1
        f.checkedInChunk = current
        entries[slot] = f
        return (f.keyID, f.key)
    }

    /// Re-reads the keyset (token first), keeps a reservation that is still good, or reserves a
    /// new block durably. Runs under `refillLock`.
    private func slowPath(_ slot: Slot) throws -> (keyID: String, key: SecretBytes) {
        let (appID, recipient) = (slot.appID, slot.recipient)
        func drop() {
            lock.lock()
            entries[slot] = nil
            lock.unlock()
        }
        let watch: (any KeysetWatch)?
        let primary: SealingKey
        do {
            watch = try store.watchKeyset(appID: appID, recipient: recipient)
            primary = try store.sealingPrimary(appID: appID, recipient: recipient)
        } catch {
            drop()
            throw error
        }
        let readAt = Self.monotonicNanoseconds()
        guard let watch else {
            // Deleted (or created) between the watch and the read: as unknown as no keyset.
            drop()
            throw KeysError(.unknownKeyset, "no keyset for app id \(appID) and recipient \(recipient) in \(store.storeDescription)")
        }
        let (keyID, key) = (primary.keyID, primary.key)
        lock.lock()
        if var e = entries[slot], e.keyID == keyID, e.used < e.limit {
            // Same primary, block not used up: the reservation stands (it is durable and ours).
            e.used += 1
            e.watch = watch
            e.generation = nextGeneration()
            e.readAt = readAt
            e.key = key
            entries[slot] = e
            lock.unlock()
            return (keyID, key)
        }
        lock.unlock()
        // Reserve a new block durably before handing out a seal. In batch mode, a block used up
        // within a second is followed by one twice its size (see "Batch chunks").
        var blockSize = Self.reservationBlockSize
        lock.lock()
        if chunk != 0, let e = entries[slot], e.keyID == keyID, e.used >= e.limit, readAt &- e.reservedAt < 1_000_000_000 {
            blockSize = min(e.blockSize * 2, Self.maxBatchReservationBlockSize)
        }
        lock.unlock()
        let r: SealReservation
        do {
            r = try store.reserveSeals(appID: appID, recipient: recipient, keyID: keyID, count: blockSize)
        } catch let e as KeysError where e.code == .noPrimaryKey {
            drop()
            throw ReservationRaced(error: e)
        } catch {
            drop()
            throw error
        }
        // `watch` predates our own write, so the next seal re-reads once and then keeps the block.
        lock.lock()
        entries[slot] = Entry(watch: watch, generation: nextGeneration(), readAt: readAt, keyID: keyID, key: key,
                              used: r.previousCount + 1, limit: r.reservedCount, blockSize: blockSize, reservedAt: readAt)
        lock.unlock()
        return (keyID, key)
    }

    /// A fresh entry generation; call holding `lock`.
    fileprivate func nextGeneration() -> UInt64 {
        generations &+= 1
        return generations
    }
}

extension ServerKeyring {
    /// ``beginBatchChunk()`` for a chunk naming `recipients` of `appID`: with a
    /// ``BulkSealingKeyStore`` it then loads, in one read, every recipient not cached or whose
    /// cache is older than ``revalidationIntervalNanoseconds``, and reserves their blocks in one
    /// reservation, so the chunk's seals come from memory (no round trip per recipient). The
    /// staleness bound is the one above ("Batch chunks"): what is loaded here counts as checked
    /// in this chunk, is re-read after 1 s, and a change by another process is seen from the
    /// next chunk on. Loading errors are left to the seals (each then reads alone and reports
    /// its own error). With another store: ``beginBatchChunk()`` alone.
    public func beginBatchChunk(appID: String, recipients: [String]) {
        beginBatchChunk()
        guard let bulk = store as? any BulkSealingKeyStore, !recipients.isEmpty else { return }
        refillLock.lock()
        defer { refillLock.unlock() }
        let start = Self.monotonicNanoseconds()
        lock.lock()
        let current = chunk
        let need = recipients.filter { r in
            guard let e = entries[Slot(appID: appID, recipient: r)] else { return true }
            return e.used >= e.limit || start &- e.readAt >= revalidationIntervalNanoseconds
        }
        lock.unlock()
        guard !need.isEmpty, let loaded = try? bulk.sealingPrimaries(appID: appID, recipients: need) else { return }
        let readAt = Self.monotonicNanoseconds()
        var blocks: [(recipient: String, keyID: String, count: UInt64)] = []
        var sizes: [String: UInt64] = [:]
        lock.lock()
        for r in need {
            guard let l = loaded[r] else { continue }
            let slot = Slot(appID: appID, recipient: r)
            if var e = entries[slot], e.keyID == l.key.keyID, e.used < e.limit {
                // Same primary, block not used up: the reservation stands.
                e.watch = l.watch
                e.generation = nextGeneration()
                e.readAt = readAt
                e.key = l.key.key
                e.checkedInChunk = current
                entries[slot] = e
                continue
            }
            var size = Self.reservationBlockSize
            if let e = entries[slot], e.keyID == l.key.keyID, readAt &- e.reservedAt < 1_000_000_000 {
                size = min(e.blockSize * 2, Self.maxBatchReservationBlockSize)
            }
            sizes[r] = size
            blocks.append((r, l.key.keyID, size))
        }
        lock.unlock()
        guard !blocks.isEmpty, let granted = try? bulk.reserveSeals(appID: appID, blocks: blocks) else { return }
        lock.lock()
        for (r, g) in granted {
            guard let l = loaded[r], let size = sizes[r] else { continue }
            entries[Slot(appID: appID, recipient: r)] = Entry(watch: l.watch, generation: nextGeneration(), readAt: readAt, keyID: l.key.keyID, key: l.key.key,
                                                              used: g.previousCount, limit: g.reservedCount, checkedInChunk: current,
                                                              blockSize: size, reservedAt: readAt)
        }
        lock.unlock()
    }
}
