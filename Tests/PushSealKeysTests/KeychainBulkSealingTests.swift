import PushSealSystem
import PushSealWire
import Foundation
import PushSealCrypto
import PushSealKeychain
@testable import PushSealKeyRecords
@testable import PushSealServerKeys
import Testing
import PushSealTestSupport

/// The file keychain's batch path (`KeyStore` as a `BulkSealingKeyStore`): a chunk's
/// reservations written together, watches that survive the store's own reservation but not
/// another writer's, and counters that never under-count, even after SIGKILL of push-seal batch
/// over many distinct recipients.
@Suite struct KeychainBulkSealingTests {
    static let recipients = (0..<40).map { "r\($0)" }

    @Test func aChunkReservesEveryRecipientAtOnce() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        for r in Self.recipients { try f.server.generate(appID: KeysFixture.appID, recipient: r) }
        try f.server.setSealCount(appID: KeysFixture.appID, recipient: "r1", keyID: try f.server.keyset(appID: KeysFixture.appID, recipient: "r1").primary?.keyID ?? "", to: 77)
        let loaded = try f.server.sealingPrimaries(appID: KeysFixture.appID, recipients: Self.recipients + ["nobody", "bad/name"])
        #expect(Set(loaded.keys) == Set(Self.recipients), "unknown and malformed recipients are left out")
        let blocks = Self.recipients.compactMap { r in loaded[r].map { (recipient: r, keyID: $0.key.keyID, count: UInt64(1024)) } }
        let granted = try f.server.reserveSeals(appID: KeysFixture.appID, blocks: blocks + [(recipient: "r2", keyID: "AAAAAAAA", count: 5)])
        #expect(granted.count == Self.recipients.count)
        #expect(granted["r1"]?.previousCount == 77 && granted["r1"]?.reservedCount == 77 + 1024)
        for r in Self.recipients {
            let stored = try f.server.keyset(appID: KeysFixture.appID, recipient: r).primary?.sealCount
            #expect(stored == granted[r]?.reservedCount)
            // The store's own reservation leaves the watch current.
            #expect(try loaded[r]?.watch.isCurrent() == true)
        }
        // The keysets still read (generation counters written after the items), and a second
        // chunk raises them again.
        let again = try f.server.reserveSeals(appID: KeysFixture.appID, blocks: blocks)
        #expect(again["r0"]?.previousCount == 1024 && again["r0"]?.reservedCount == 2048)
        // A change by another writer makes the watch stale.
        let other = try KeyStore(keychain: f.server.keychain, audit: .none)
        _ = try other.reserveSeals(appID: KeysFixture.appID, recipient: "r3", keyID: try #require(loaded["r3"]).key.keyID, count: 1)
        #expect(try loaded["r3"]?.watch.isCurrent() == false)
        // A rotated keyset is refused (left out), the others granted.
        _ = try f.server.rotate(appID: KeysFixture.appID, recipient: "r4", graceSeconds: 60, device: nil, promote: true, now: KeyTime.now()) { _ in }
        let third = try f.server.reserveSeals(appID: KeysFixture.appID, blocks: blocks)
        #expect(third["r4"] == nil && third.count == Self.recipients.count - 1)
        // One reserveSeals audit line per grant.
        let audit = try String(contentsOf: f.serverDir.appendingPathComponent(KeyAudit.fileName), encoding: .utf8)
        #expect(audit.components(separatedBy: "\"event\":\"reserveSeals\"").count - 1 == 3 * Self.recipients.count - 1)
    }

    /// `Keychain.addItems` and `updateData`: all checked before anything is written.
    @Test func batchWritesCheckEverythingFirst() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let kc = f.server.keychain
        let group = f.server.accessGroup
        func item(_ a: String, _ byte: UInt8) -> NewItem {
            NewItem(service: "test.batch", account: a, label: nil, accessGroup: group, accessibility: .afterFirstUnlockThisDeviceOnly, data: SecretBytes(copying: [byte]))
        }
        func query(_ a: String) -> ItemQuery { ItemQuery(itemClass: .genericPassword, service: "test.batch", account: a, accessGroup: group) }
        try kc.addItems([item("a", 1), item("b", 2)])
        #expect(try kc.copyData(query("b")).copyBytes() == [2])
        let before = try KeysFixture.items(f.serverDir)
        expectOSStatus(-25299) { try kc.addItems([item("c", 3), item("a", 9)]) }
        expectOSStatus(-25300) { try kc.updateData([(query("a"), SecretBytes(copying: [7])), (query("zz"), SecretBytes(copying: [8]))]) }
        #expect(try KeysFixture.items(f.serverDir) == before, "a refused batch writes nothing")
        try kc.updateData([(query("a"), SecretBytes(copying: [7])), (query("b"), SecretBytes(copying: [8]))])
        #expect(try kc.copyData(query("a")).copyBytes() == [7] && kc.copyData(query("b")).copyBytes() == [8])
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.serverDir.path + "/tmp").isEmpty, "no temp file left")
    }

    @Test func aBatchKeyringHandsOutFromChunkReservations() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        for r in Self.recipients { try f.server.generate(appID: KeysFixture.appID, recipient: r) }
        let keyring = ServerKeyring(store: try KeyStore(keychain: f.server.keychain, audit: .none))
        var made: [String: UInt64] = [:]
        for _ in 0..<3 {
            keyring.beginBatchChunk(appID: KeysFixture.appID, recipients: Self.recipients)
            for r in Self.recipients {
                let sealed = try KeysFixture.seal("hi", keyring: keyring, recipient: r)
                #expect(!sealed.box.isEmpty)
                made[r, default: 0] += 1
            }
        }
        for r in Self.recipients {
            let stored = try #require(try f.server.keyset(appID: KeysFixture.appID, recipient: r).primary).sealCount
            #expect(stored >= made[r] ?? 0)
            #expect(stored == ServerKeyring.reservationBlockSize, "one block per recipient: the chunks after the first use it from memory")
        }
    }

    @Test func counterNeverUnderCountsAfterSIGKILLOfABatchOverManyRecipients() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let many = (0..<300).map { "m\($0)" }
        for r in many { try f.server.generate(appID: KeysFixture.appID, recipient: r) }
        let p = try ServerKeyringCacheTests.startBatch(keychain: f.serverDir)
        // Round-robin over the recipients: every chunk of 2,048 lines names all 300.
        let lines = Array(many.map { "{\"recipient\":\"\($0)\",\"notification\":{\"title\":\"t\",\"body\":\"b\"}}\n" }.joined().utf8)
        let written = DispatchSemaphore(value: 0)
        let writer = Thread {
            defer { written.signal() }
            for _ in 0..<100 { guard (try? p.write(lines)) != nil else { return } }
        }
        writer.start()
        // Read payload lines well into the third chunk, then kill without warning.
        var seen: [String: UInt64] = [:]
        var total = 0
        var pending = Data()
        while total < 5_000 {
            let d = p.readOutput()
            if d.isEmpty { break }
            pending.append(d)
            while let nl = pending.firstIndex(of: 0x0A) {
                let line = pending[pending.startIndex..<nl]
                pending.removeSubrange(pending.startIndex...nl)
                guard let o = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], o["payload"] != nil,
                      let n = o["line"] as? Int else { continue }
                seen[many[(n - 1) % many.count], default: 0] += 1
                total += 1
            }
        }
        p.signal(SIGKILL)
        p.wait()
        // The writer ends at its first failed write (the reader is gone); only then is the input closed.
        written.wait()
        p.closeInput()
        #expect(total >= 5_000)
        for r in many {
            let stored = try f.server.keyset(appID: KeysFixture.appID, recipient: r).primary?.sealCount ?? 0
            #expect(stored >= seen[r] ?? 0, "\(r): \(stored) stored for \(seen[r] ?? 0) payloads written")
        }
    }
}
