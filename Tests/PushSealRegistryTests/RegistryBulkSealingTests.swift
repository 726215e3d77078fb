import Foundation
import PushSealCrypto
import PushSealKeyRecords
import PushSealServerKeys
import PushSealServerKeyProviders
import PushSealSystem
import PushSealWire
@testable import PushSealRegistry
import Testing

/// The batch path's bulk loading (issue 15, "loaded in bulk for a batch"): a chunk's recipients
/// cost a few database round trips in all, not a few each, with the same keys, counters and
/// audit lines as one recipient at a time, and the same staleness bound.
@Suite struct RegistryBulkSealingTests {
    static let app = "com.example.app"
    static let now: Int64 = 1_800_000_000

    @Test func aChunkLoadsItsRecipientsKeysInBulk() throws {
        let (store, _) = try Registry.store()
        // Names that need quoting in an array literal, and plain ones.
        let recipients = ["r\"quote", "r\\backslash", "r,comma", "r space", "r{brace}"] + (0..<195).map { "r\($0)" }
        var primaries: [String: String] = [:]
        for r in recipients { primaries[r] = try store.generate(appID: Self.app, recipient: r, now: Self.now).keyID }
        let keyring = ServerKeyring(store: store)
        let before = store.poolBodyRuns
        keyring.beginBatchChunk(appID: Self.app, recipients: recipients + ["nobody", "a/b"])
        for r in recipients {
            let (keyID, key) = try keyring.primaryKeyForSealing(appID: Self.app, recipient: r)
            #expect(keyID == primaries[r])
            #expect(key == (try store.sealingPrimary(appID: Self.app, recipient: r)).key)
        }
        let bulkRuns = store.poolBodyRuns - before - recipients.count  // the sealingPrimary checks above: one each
        #expect(bulkRuns <= 4, "\(bulkRuns) round trips for a chunk of \(recipients.count) recipients")
        // Counted as one recipient at a time would: one block each, audited.
        for r in recipients { #expect(try store.keyset(appID: Self.app, recipient: r).primary?.sealCount == ServerKeyring.reservationBlockSize) }
        let reserved = try store.auditLines().filter { $0.contains("\"event\":\"reserveSeals\"") }
        #expect(reserved.count == recipients.count)
        #expect(reserved.contains { $0.contains("\"recipient\":\"r\\\"quote\"") && $0.hasSuffix("\"sealCount\":\(ServerKeyring.reservationBlockSize)}") })
        // What did not load reports its own error at its seal.
        #expect(throws: KeysError(.unknownKeyset, "")) { try keyring.primaryKeyForSealing(appID: Self.app, recipient: "nobody") }
        #expect(throws: KeysError(.invalidName, "")) { try keyring.primaryKeyForSealing(appID: Self.app, recipient: "a/b") }
    }

    /// An app with v2 registrations: `push-seal batch`'s provider reads a chunk's registrations
    /// in one query, so sealing 150 v2 and 50 v1 recipients costs a few round trips in all, not
    /// one or two per recipient; each recipient still gets its own version and key.
    @Test func aChunkOfV2RecipientsCostsNoRoundTripPerSeal() throws {
        let (store, _) = try Registry.store()
        let v2 = (0..<150).map { "v2-\($0)" } + ["r\"quote"], v1 = (0..<50).map { "v1-\($0)" }
        var registered: [String: String] = [:]
        for r in v2 { registered[r] = try store.register(try RegistrationStoreContract.registration(Self.now), recipient: r, now: Self.now).info.keyID }
        for r in v1 { try store.generate(appID: Self.app, recipient: r, now: Self.now) }
        let keys = try RegistrationSealingKeys(store: store, appID: Self.app)
        let before = store.poolBodyRuns
        keys.beginBatch(appID: Self.app, recipients: v2 + v1 + ["nobody"])
        for r in v2 {
            let key = try keys.primaryKey(appID: Self.app, recipient: r)
            #expect(key.keyID == registered[r] && key.algorithm == HPKEBaseEnvelope.algorithmName)
        }
        for r in v1 { #expect(try keys.primaryKey(appID: Self.app, recipient: r).algorithm == WireFormat.algorithm) }
        let runs = store.poolBodyRuns - before
        #expect(runs <= 8, "\(runs) round trips for a chunk of \(v2.count + v1.count) recipients")
        // Neither version: its own error at its seal.
        #expect(throws: SealingKeyError(.unknownRecipient, "")) { try keys.primaryKey(appID: Self.app, recipient: "nobody") }
    }

    @Test func aRotationByAnotherProcessIsSeenAtTheNextChunk() throws {
        let kek = KeyEncryptionKey.generate()
        let (store, cs) = try Registry.store(kek: kek)
        let other = try PostgresKeyStore(connectionString: cs, kek: kek, reconnectWaitSeconds: 10)
        let recipients = ["alice", "bob", "carol"]
        for r in recipients { try store.generate(appID: Self.app, recipient: r, now: Self.now) }
        let keyring = ServerKeyring(store: store)
        keyring.beginBatchChunk(appID: Self.app, recipients: recipients)
        let first = try keyring.primaryKeyForSealing(appID: Self.app, recipient: "alice").keyID
        let rotated = try other.rotate(appID: Self.app, recipient: "alice", graceSeconds: 60, device: nil, promote: true, now: Self.now, afterStep: { _ in })
        #expect(rotated.keyID != first)
        keyring.beginBatchChunk(appID: Self.app, recipients: recipients)
        #expect(try keyring.primaryKeyForSealing(appID: Self.app, recipient: "alice").keyID == rotated.keyID)
        #expect(try keyring.primaryKeyForSealing(appID: Self.app, recipient: "bob").keyID == (try store.sealingPrimary(appID: Self.app, recipient: "bob")).keyID)
        // A revoke is seen likewise: no seal with a revoked key after the next chunk starts.
        _ = try other.revoke(appID: Self.app, recipient: "bob", keyID: try other.sealingPrimary(appID: Self.app, recipient: "bob").keyID, now: Self.now)
        keyring.beginBatchChunk(appID: Self.app, recipients: recipients)
        #expect(throws: KeysError(.noPrimaryKey, "")) { try keyring.primaryKeyForSealing(appID: Self.app, recipient: "bob") }
    }

    /// A chunk start asks the database nothing (a chunk of v2 recipients uses no v1 watch); the
    /// first watch used after it refreshes, once, and sees another process's change.
    @Test func aChunkStartRefreshesAtTheFirstWatchUsedNotBefore() throws {
        let kek = KeyEncryptionKey.generate()
        let (store, cs) = try Registry.store(kek: kek)
        let other = try PostgresKeyStore(connectionString: cs, kek: kek, reconnectWaitSeconds: 10)
        try store.generate(appID: Self.app, recipient: "alice", now: Self.now)
        let watch = try #require(try store.watchKeyset(appID: Self.app, recipient: "alice"))
        #expect(try watch.isCurrent())
        _ = try other.rotate(appID: Self.app, recipient: "alice", graceSeconds: 60, device: nil, promote: true, now: Self.now, afterStep: { _ in })
        let before = store.poolBodyRuns
        store.batchChunkWillBegin()
        store.batchChunkWillBegin()
        #expect(store.poolBodyRuns == before, "a chunk start made a round trip")
        #expect(try !watch.isCurrent(), "the rotation by another process is seen after the chunk start")
        #expect(store.poolBodyRuns == before + 1, "one refresh for the chunk")
        // Eight sealing threads asking their first watch of a chunk together: one refresh, not
        // eight (a refresh is one at a time, and one that waited finds it done; a second is
        // allowed only if the 250 ms poll interval passes meanwhile on a slow machine).
        _ = try other.rotate(appID: Self.app, recipient: "alice", graceSeconds: 60, device: nil, promote: true, now: Self.now, afterStep: { _ in })
        let fresh = try #require(try store.watchKeyset(appID: Self.app, recipient: "alice"))
        _ = try other.rotate(appID: Self.app, recipient: "alice", graceSeconds: 60, device: nil, promote: true, now: Self.now, afterStep: { _ in })
        store.batchChunkWillBegin()
        let start = store.poolBodyRuns
        let stale = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            if (try? fresh.isCurrent()) == false { stale.withLock { $0 += 1 } }
        }
        #expect(stale.withLock { $0 } == 8, "every thread sees the rotation")
        #expect(store.poolBodyRuns - start <= 2, "\(store.poolBodyRuns - start) refreshes for one chunk start")
    }

    @Test func bulkReservationsNeverUnderCountAcrossStores() throws {
        let kek = KeyEncryptionKey.generate()
        let (store, cs) = try Registry.store(kek: kek)
        let other = try PostgresKeyStore(connectionString: cs, kek: kek, reconnectWaitSeconds: 10)
        let recipients = (0..<50).map { "r\($0)" }
        for r in recipients { try store.generate(appID: Self.app, recipient: r, now: Self.now) }
        let loaded = try store.sealingPrimaries(appID: Self.app, recipients: recipients)
        let blocks = recipients.map { (recipient: $0, keyID: loaded[$0]?.key.keyID ?? "", count: UInt64(100)) }
        let a = try store.reserveSeals(appID: Self.app, blocks: blocks)
        let b = try other.reserveSeals(appID: Self.app, blocks: blocks.reversed())
        for r in recipients {
            let (x, y) = (try #require(a[r]), try #require(b[r]))
            // Disjoint ranges, and the counter covers both.
            #expect(x.reservedCount <= y.previousCount || y.reservedCount <= x.previousCount)
            #expect(try store.keyset(appID: Self.app, recipient: r).primary?.sealCount == 200)
        }
        // A key that is no longer the primary gets nothing.
        let r0 = try store.rotate(appID: Self.app, recipient: "r0", graceSeconds: 60, device: nil, promote: true, now: Self.now, afterStep: { _ in })
        #expect(r0.keyID != loaded["r0"]?.key.keyID)
        #expect(try store.reserveSeals(appID: Self.app, blocks: [blocks[0]])["r0"] == nil)
    }
}
