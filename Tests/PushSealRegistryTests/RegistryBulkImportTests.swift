import PushSealWire
import PushSealSystem
import PushSealCrypto
import PushSealKeyRecords
import PushSealServerKeys
import PushSealRegistry
import Testing

/// `PostgresKeyStore.bulkCopyIn` (`push-keys registry import`): many keysets in batches, each
/// batch one transaction; resumable (a second run skips what is in and carries on) and atomic
/// per batch (a bad keyset leaves its whole batch out, the batches before it in).
@Suite struct RegistryBulkImportTests {
    static let app = "com.example.app"
    static let now: Int64 = 1_700_000_000

    /// `count` keysets r0…: a primary with `i` seals; every 10th also a decryptOnly key.
    static func states(_ count: Int, from start: Int = 0) -> [KeysetState] {
        (start..<start + count).map { i in
            var keys: [(info: KeyInfo, key: SecretBytes?)] = []
            if i % 10 == 0 {
                keys.append((KeyInfo(keyID: KeyID.generate(), status: .decryptOnly, createdAt: now - 100, promotedAt: now - 100,
                                     retiredAt: now - 10, notAfter: now + 1000, sealCount: 7), SecretBytes(randomByteCount: 32)))
            }
            keys.append((KeyInfo(keyID: KeyID.generate(avoiding: Set(keys.map(\.info.keyID))), status: .primary, createdAt: now - 10,
                                 promotedAt: now - 10, sealCount: UInt64(i)), SecretBytes(randomByteCount: 32)))
            return KeysetState(appID: app, recipient: "r\(i)", keys: keys, rotation: nil)
        }
    }

    static func same(_ a: KeysetState, _ b: KeysetState) -> Bool {
        a.appID == b.appID && a.recipient == b.recipient && a.keys.map(\.info) == b.keys.map(\.info) && a.keys.map(\.key) == b.keys.map(\.key)
    }

    @Test func aLargeImportIsBatchedResumableAndComplete() throws {
        let (store, _) = try Registry.store()
        let all = Self.states(1_200)
        // An import that stopped after 700 keysets, then the whole source again.
        let first = try store.bulkCopyIn(all.prefix(700), now: Self.now, batchSize: 256)
        #expect(first.keysets == 700 && first.created == 700 && first.merged == 0)
        let second = try store.bulkCopyIn(all, now: Self.now, batchSize: 256)
        #expect(second.keysets == 1_200 && second.created == 500 && second.merged == 0)
        #expect(second.changed.map(\.recipient) == (700..<1_200).map { "r\($0)" })
        let third = try store.bulkCopyIn(all, now: Self.now, batchSize: 256)
        #expect(third.created == 0 && third.merged == 0 && third.changed.isEmpty, "idempotent")
        // Every keyset is there, key bytes (unwrapped under the KEK), statuses and counters as in the source.
        let loaded = try store.loadAllStatesWithKeyBytes()
        #expect(loaded.count == 1_200)
        let byName = Dictionary(uniqueKeysWithValues: loaded.map { ($0.recipient, $0) })
        for s in all { #expect(byName[s.recipient].map { Self.same($0, s) } == true, "\(s.recipient)") }
        #expect(try store.sealingPrimary(appID: Self.app, recipient: "r999").keyID == all[999].keys.last?.info.keyID)
        // One import audit line per key, as copyIn writes them.
        let lines = try store.auditLines()
        #expect(lines.count == 1_200 + 120)
        #expect(lines.allSatisfy { $0.contains("\"event\":\"import\"") })
        // A seal reservation counts on from the imported counter.
        let r = try store.reserveSeals(appID: Self.app, recipient: "r1100", keyID: try #require(all[1_100].keys.last?.info.keyID), count: 10)
        #expect(r.previousCount == 1_100)
    }

    @Test func aBadKeysetLeavesItsWholeBatchOut() throws {
        let (store, _) = try Registry.store()
        var all = Self.states(250)
        // r160 holds one key id twice with different bytes: it cannot be copied.
        let dup = all[160].keys[0]
        all[160] = KeysetState(appID: Self.app, recipient: "r160",
                               keys: [dup, (dup.info, SecretBytes(randomByteCount: 32))], rotation: nil)
        #expect(throws: KeysError.self) { try store.bulkCopyIn(all, now: Self.now, batchSize: 100) }
        let names = Set(try store.loadAllStates().map(\.recipient))
        #expect(names == Set((0..<100).map { "r\($0)" }), "the first batch committed, the second (r100–r199) not at all")
        // Fixed, the import runs again and completes.
        all[160] = Self.states(1, from: 160)[0]
        let again = try store.bulkCopyIn(all, now: Self.now, batchSize: 100)
        #expect(again.created == 150)
        #expect(try store.loadAllStates().count == 250)
    }
}
