import PushSealSystem
import Foundation
import PushSealCrypto
import PushSealKeychain
@testable import PushSealServerKeys
import Testing
import PushSealKeyRecords
import PushSealTestSupport

/// The sender's cache of unlocked keysets and reserved counter blocks: changes made elsewhere
/// are seen at the next seal, the counter never under-counts, and threads share it safely.
@Suite struct ServerKeyringCacheTests {
    let alice = "alice-iphone"

    /// The directory holding the built executables (`push-keys`, `push-seal`), or `nil`.
    static var buildDirectory: URL? {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("push-keys").path) { return url }
        }
        return nil
    }

    static func run(_ tool: String, _ args: [String]) throws -> Int32 {
        let dir = try #require(buildDirectory, "push-keys and push-seal must be built (swift build --build-tests)")
        let exit = try TestChild([dir.appendingPathComponent(tool).path] + args, stdout: .null, stderr: .null).wait()
        return exit.signal ?? exit.status
    }

    /// `push-seal batch` on the keychain at `keychain`, its standard input and output piped
    /// (SIGPIPE ignored: a writer may still be writing when the child is killed).
    static func startBatch(keychain: URL) throws -> TestChild {
        let dir = try #require(Self.buildDirectory, "push-seal must be built")
        return try TestChild([dir.appendingPathComponent("push-seal").path, "batch", "--app-id", KeysFixture.appID, "--keychain", keychain.path, "-"],
                             stdinPipe: true, stderr: .null)
    }

    func storedCount(_ store: KeyStore, _ recipient: String) throws -> UInt64 {
        try store.keyset(appID: KeysFixture.appID, recipient: recipient).primary?.sealCount ?? 0
    }

    @Test func changesByAnotherStoreAreSeenAtTheNextSeal() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let first = try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        let sender = ServerKeyring(store: try KeyStore(keychain: try Keychain(opening: f.serverDir, as: KeyStore.serverIdentity), audit: .none))
        for _ in 0..<10 { #expect(try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice).keyID == first.keyID) }
        // A rotation through another KeyStore (its own Keychain instance): the next seal uses the new key.
        let r = try f.server.rotate(appID: KeysFixture.appID, recipient: alice)
        #expect(try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice).keyID == r.keyID)
        // Another sender reserving its own block does not disturb ours, and neither under-counts.
        let other = ServerKeyring(store: f.server)
        for n in 0..<3000 {
            _ = try (n % 2 == 0 ? sender : other).primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice)
        }
        #expect(try storedCount(f.server, alice) >= 3001)
        // A revoke: not one more seal with the revoked key.
        try f.server.revoke(appID: KeysFixture.appID, recipient: alice, keyID: r.keyID)
        expectKeys(.noPrimaryKey) { try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
        expectKeys(.noPrimaryKey) { try other.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
        // A deleted keyset item: unknown recipient at once.
        try f.server.keychain.delete(f.server.query(KeysFixture.appID, alice))
        expectKeys(.unknownKeyset) { try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
    }

    @Test func revokeAndRotateByPushKeysProcessAreSeenAtTheNextSeal() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let first = try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        let sender = ServerKeyring(store: f.server)
        #expect(try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice).keyID == first.keyID)
        let common = ["--keychain", f.serverDir.path, "--app-id", KeysFixture.appID, "--recipient", alice, "--audit-log", "/dev/null"]
        #expect(try Self.run("push-keys", ["rotate"] + common) == 0)
        let second = try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice).keyID
        #expect(second != first.keyID)
        #expect(try Self.run("push-keys", ["revoke"] + common + ["--key-id", second]) == 0)
        expectKeys(.noPrimaryKey) { try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
    }

    @Test func lockingTheKeychainIsSeenAtTheNextSeal() throws {
        // A whenUnlocked server keyset: the cached key must not outlive the device lock.
        let f = try KeysFixture()
        defer { f.cleanup() }
        let store = try KeyStore(keychain: f.server.keychain, accessibility: .whenUnlocked, audit: .none)
        try store.generate(appID: KeysFixture.appID, recipient: alice)
        let sender = ServerKeyring(store: store)
        _ = try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice)
        _ = try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice)
        try store.keychain.lock()
        expectOSStatus(-25308) { try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
        try store.keychain.unlock()
        _ = try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice)
    }

    @Test func concurrentSealsNeverUnderCount() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let recipients = ["a", "b", "c"]
        for r in recipients { try f.server.generate(appID: KeysFixture.appID, recipient: r) }
        let sender = ServerKeyring(store: try KeyStore(keychain: f.server.keychain, audit: .none))
        let threads = 4, perThread = 1500
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for n in 0..<perThread {
                do {
                    _ = try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: recipients[(n + t) % recipients.count])
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        var total: UInt64 = 0
        for r in recipients {
            let c = try storedCount(f.server, r)
            total += c
            // One open block per key and instance: at most one block above what was handed out.
            #expect(c % ServerKeyring.reservationBlockSize == 0)
        }
        let handedOut = UInt64(threads * perThread)
        #expect(total >= handedOut)
        #expect(total <= handedOut + UInt64(recipients.count) * ServerKeyring.reservationBlockSize)
    }

    @Test func concurrentSealsStopAtARevoke() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let k = try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        let sender = ServerKeyring(store: try KeyStore(keychain: f.server.keychain, audit: .none))
        let revoked = Locked(false)
        let seals = Locked(0)
        let lateSeals = Locked(0)
        let done = DispatchGroup()
        for _ in 0..<2 {
            done.enter()
            Thread {
                defer { done.leave() }
                for _ in 0..<100_000 {
                    let wasRevoked = revoked.withLock { $0 }
                    guard (try? sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice)) != nil else { break }
                    seals.withLock { $0 += 1 }
                    if wasRevoked { lateSeals.withLock { $0 += 1 } }
                    usleep(20)  // a block then lasts longer than the revoke takes
                }
            }.start()
        }
        // Revoke (through another KeyStore) while both threads are sealing inside a block.
        while seals.withLock({ $0 }) < 100 { usleep(100) }
        try f.server.revoke(appID: KeysFixture.appID, recipient: alice, keyID: k.keyID)
        revoked.withLock { $0 = true }
        done.wait()
        #expect(seals.withLock { $0 } >= 100)
        #expect(lateSeals.withLock { $0 } == 0, "a seal that started after the revoke returned the revoked key")
        expectKeys(.noPrimaryKey) { try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
    }

    @Test func batchChunksSeeRotationRevokeAndLockAtTheNextChunk() throws {
        // Batch mode: the token is checked at a recipient's first seal per chunk.
        let f = try KeysFixture()
        defer { f.cleanup() }
        let first = try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        let sender = ServerKeyring(store: try KeyStore(keychain: try Keychain(opening: f.serverDir, as: KeyStore.serverIdentity), audit: .none))
        sender.beginBatchChunk()
        for _ in 0..<10 { #expect(try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice).keyID == first.keyID) }
        // A rotation by another store: seen at the first seal of the next chunk.
        let r = try f.server.rotate(appID: KeysFixture.appID, recipient: alice)
        sender.beginBatchChunk()
        #expect(try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice).keyID == r.keyID)
        for _ in 0..<10 { #expect(try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice).keyID == r.keyID) }
        // A revoke: no seal in the next chunk.
        try f.server.revoke(appID: KeysFixture.appID, recipient: alice, keyID: r.keyID)
        sender.beginBatchChunk()
        expectKeys(.noPrimaryKey) { try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
        // A new primary, then the keychain locked (whenUnlocked item): refused in the next chunk.
        let store = try KeyStore(keychain: f.server.keychain, accessibility: .whenUnlocked, audit: .none)
        try store.generate(appID: KeysFixture.appID, recipient: "bob")
        sender.beginBatchChunk()
        _ = try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: "bob")
        _ = try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: "bob")
        try store.keychain.lock()
        sender.beginBatchChunk()
        expectOSStatus(-25308) { try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: "bob") }
        try store.keychain.unlock()
    }

    @Test func batchChunksStopConcurrentSealsAtARevokeWithinOneChunk() throws {
        // Two threads seal in chunks of 64 seals each; a seal that starts in a chunk begun after
        // the revoke never returns the revoked key.
        let f = try KeysFixture()
        defer { f.cleanup() }
        let k = try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        let sender = ServerKeyring(store: try KeyStore(keychain: f.server.keychain, audit: .none))
        let revoked = Locked(false)
        var seals = 0
        var lateSeals = 0
        var stopped = false
        for chunk in 0..<1000 where !stopped {
            let revokedBeforeChunk = revoked.withLock { $0 }
            sender.beginBatchChunk()
            let sealed = Locked(0)
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                for _ in 0..<32 {
                    guard (try? sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice)) != nil else { return }
                    sealed.withLock { $0 += 1 }
                }
            }
            let n = sealed.withLock { $0 }
            seals += n
            if revokedBeforeChunk { lateSeals += n }
            if n < 64 { stopped = true }
            if chunk == 5 {
                try f.server.revoke(appID: KeysFixture.appID, recipient: alice, keyID: k.keyID)
                revoked.withLock { $0 = true }
            }
        }
        #expect(stopped, "sealing went on after the revoke")
        #expect(seals >= 6 * 64)
        #expect(lateSeals == 0, "a seal in a chunk begun after the revoke returned the revoked key")
    }

    @Test func batchBlocksGrowAndNeverUnderCount() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        let sender = ServerKeyring(store: try KeyStore(keychain: f.server.keychain, audit: .none))
        let threads = 2, perThread = 20_000
        let failures = Locked(0)
        var handedOut: UInt64 = 0
        var maxOver: UInt64 = 0
        for _ in 0..<(perThread / 1000) {
            sender.beginBatchChunk()
            DispatchQueue.concurrentPerform(iterations: threads) { _ in
                for _ in 0..<1000 {
                    if (try? sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice)) == nil { failures.withLock { $0 += 1 } }
                }
            }
            handedOut += UInt64(threads * 1000)
            let stored = try storedCount(f.server, alice)
            // The stored counter is always at least what was handed out.
            #expect(stored >= handedOut)
            maxOver = max(maxOver, stored - handedOut)
        }
        #expect(failures.withLock { $0 } == 0)
        let stored = try storedCount(f.server, alice)
        #expect(stored % ServerKeyring.reservationBlockSize == 0)
        // One open block at most, and no block beyond the batch maximum.
        #expect(maxOver < ServerKeyring.maxBatchReservationBlockSize)
        #expect(stored - handedOut < ServerKeyring.maxBatchReservationBlockSize)
    }

    @Test func counterNeverUnderCountsAfterSIGKILLOfPushSealBatch() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        let p = try Self.startBatch(keychain: f.serverDir)
        let line = Array("{\"recipient\":\"\(alice)\",\"notification\":{\"title\":\"t\",\"body\":\"b\"}}\n".utf8)
        let written = DispatchSemaphore(value: 0)
        let writer = Thread {
            defer { written.signal() }
            let chunk = Array(repeating: line, count: 100).flatMap { $0 }
            for _ in 0..<200 { guard (try? p.write(chunk)) != nil else { return } }
        }
        writer.start()
        // Read payload lines until well past two blocks, then kill without warning.
        var seen = 0
        var pending = Data()
        while seen < 2500 {
            let d = p.readOutput()
            if d.isEmpty { break }
            pending.append(d)
            while let nl = pending.firstIndex(of: 0x0A) {
                if pending[pending.startIndex..<nl].contains(Array("\"payload\"".utf8)) { seen += 1 }
                pending.removeSubrange(pending.startIndex...nl)
            }
        }
        p.signal(SIGKILL)
        p.wait()
        // The writer ends at its first failed write (the reader is gone); only then is the input closed.
        written.wait()
        p.closeInput()
        #expect(seen >= 2500)
        #expect(try storedCount(f.server, alice) >= UInt64(seen))
    }
}
