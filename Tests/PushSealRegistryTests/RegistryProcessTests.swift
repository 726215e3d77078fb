import PushSealWire
import PushSealSystem
import Foundation
import PushSealCrypto
import PushSealKeychain
import PushSealKeyRecords
import PushSealServerKeys
import PushSealRegistry
import Testing

/// Several sealing processes on one registry (the `registry-stress` helper), rotations running
/// meanwhile, SIGKILL mid-reservation, and the database restarted under a sealer.
@Suite struct RegistryProcessTests {
    static let app = "com.example.app"

    static var helper: String { Registry.buildDirectory.appendingPathComponent("registry-stress").path }

    /// Opens every sealed line with the key its key id names; returns seals per key id.
    static func verify(_ lines: [String], store: PostgresKeyStore) throws -> [String: UInt64] {
        var keys: [String: SecretBytes] = [:]
        for ks in try store.keysets() {
            for k in try store.exportRecord(appID: app, recipient: ks.recipient, keyID: nil).keysWithBytes { keys[k.info.keyID] = k.key }
        }
        var counts: [String: UInt64] = [:]
        for l in lines {
            let parts = l.split(separator: " ").map(String.init)
            try #require(parts.count == 3, "\(l)")
            let key = try #require(keys[parts[1]], "key \(parts[1]) of a payload is in the registry")
            var bytes: [UInt8] = []
            var i = parts[2].startIndex
            while i < parts[2].endIndex {
                let j = parts[2].index(i, offsetBy: 2)
                bytes.append(UInt8(parts[2][i..<j], radix: 16) ?? 0)
                i = j
            }
            let plain = try AES256GCM.open(try SealedBox(combined: bytes), with: key, authenticating: Array(parts[0].utf8))
            #expect(String(decoding: plain, as: UTF8.self).hasPrefix(parts[0] + "|"))
            counts[parts[1], default: 0] += 1
        }
        return counts
    }

    /// Every key's stored counter is at least the seals made with it.
    static func expectNoUnderCount(_ counts: [String: UInt64], store: PostgresKeyStore, sourceLocation: SourceLocation = #_sourceLocation) throws {
        var stored: [String: UInt64] = [:]
        for ks in try store.keysets() { for k in ks.keys { stored[k.keyID] = k.sealCount } }
        for (id, n) in counts { #expect((stored[id] ?? 0) >= n, "key \(id): counter \(stored[id] ?? 0) < \(n) seals", sourceLocation: sourceLocation) }
    }

    @Test(arguments: [2, 4])
    func processesSealWhileRotationsRun(_ processes: Int) throws {
        let kek = KeyEncryptionKey.generate()
        let kekFile = try Registry.kekFile(kek)
        let (store, cs) = try Registry.store(kek: kek)
        let recipients = ["alice", "bob", "carol"]
        for r in recipients { try store.generate(appID: Self.app, recipient: r, now: KeyTime.now()) }
        let children = try (0..<processes).map { _ in
            try PipedChild([Self.helper, "seal", cs, kekFile, Self.app, "3000"] + recipients)
        }
        // Rotate every recipient while the sealers run (a long grace: old payloads still open).
        var rotations = 0
        for _ in 0..<4 {
            for r in recipients {
                _ = try store.rotate(appID: Self.app, recipient: r, graceSeconds: 86_400, device: nil, promote: true, now: KeyTime.now(), afterStep: { _ in })
                rotations += 1
            }
        }
        var lines: [String] = []
        for c in children {
            let (l, status) = c.finish()
            #expect(status == 0)
            lines += l
        }
        #expect(lines.count == 3000 * processes && rotations == 12)
        let counts = try Self.verify(lines, store: store)
        try Self.expectNoUnderCount(counts, store: store)
        #expect(try store.keysets().allSatisfy { $0.keys.count == 5 })
    }

    @Test func aSealerKilledMidReservationLeavesNoUnderCount() throws {
        let kek = KeyEncryptionKey.generate()
        let kekFile = try Registry.kekFile(kek)
        let (store, cs) = try Registry.store(kek: kek)
        for r in ["alice", "bob"] { try store.generate(appID: Self.app, recipient: r, now: KeyTime.now()) }
        let child = try PipedChild([Self.helper, "seal", cs, kekFile, Self.app, "1000000", "alice", "bob"])
        var lines: [String] = []
        // Past the first blocks, so reservations are happening when the kill lands.
        while lines.count < 5000, let l = child.readLine() { lines.append(l) }
        kill(child.pid, SIGKILL)
        let (rest, status) = child.finish()
        lines += rest
        #expect(status == 128 + SIGKILL)
        let counts = try Self.verify(lines, store: store)
        try Self.expectNoUnderCount(counts, store: store)
        // Nothing is left locked: another sealer reserves at once.
        let k = try store.sealingPrimary(appID: Self.app, recipient: "alice")
        let r = try store.reserveSeals(appID: Self.app, recipient: "alice", keyID: k.keyID, count: 1)
        #expect(r.previousCount >= counts[k.keyID] ?? 0)
    }

    @Test func aSealerWaitsForARestartingDatabaseAndCarriesOn() throws {
        // Its own server: the shared one must not restart under other tests.
        let server = try PostgresServer()
        defer { server.stop() }
        let cs = try server.createDatabase()
        _ = try PostgresKeyStore.migrate(connectionString: cs)
        let kek = KeyEncryptionKey.generate()
        let store = try PostgresKeyStore(connectionString: cs, kek: kek, reconnectWaitSeconds: 60)
        let keyring = ServerKeyring(store: store)
        try store.generate(appID: Self.app, recipient: "alice", now: KeyTime.now())
        try store.generate(appID: Self.app, recipient: "bob", now: KeyTime.now())
        keyring.beginBatchChunk()
        let first = try keyring.primaryKeyForSealing(appID: Self.app, recipient: "alice")
        try server.stopServer()
        // The next recipient needs the database: the seal waits (back-off) until the server is back.
        let result = Locked<Result<String, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            result.withLock { $0 = Result { try keyring.primaryKeyForSealing(appID: Self.app, recipient: "bob").keyID } }
            done.signal()
        }
        try server.start()
        done.wait()
        let bob = try #require(result.withLock { $0 }).get()
        #expect(try bob == store.sealingPrimary(appID: Self.app, recipient: "bob").keyID)
        keyring.beginBatchChunk()
        #expect(try keyring.primaryKeyForSealing(appID: Self.app, recipient: "alice").keyID == first.keyID)
        // Down for longer than the wait: a clear error, not a hang.
        let impatient = try PostgresKeyStore(connectionString: cs, kek: kek, reconnectWaitSeconds: 0.5)
        try server.stopServer()
        do {
            _ = try impatient.keysets()
            Issue.record("expected .unavailable")
        } catch let e as RegistryError {
            #expect(e.code == .unavailable)
        }
    }
}
