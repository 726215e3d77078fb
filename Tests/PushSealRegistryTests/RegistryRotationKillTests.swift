import PushSealWire
import PushSealSystem
import Foundation
import PushSealCrypto
import PushSealKeyRecords
import PushSealRegistry
import Testing
import PushSealServerKeys

/// `kill -9` of a rotation (issue 15): between its transactions (after each step), and while a
/// change holds the keyset's row locks with its transaction open. The keyset keeps exactly one
/// primary to seal with, nothing stays locked, running the rotation again completes it, and a
/// payload sealed with the old key before the rotation still opens.
@Suite struct RegistryRotationKillTests {
    static let app = "com.example.app"

    /// A keyset for alice and a payload sealed with its first primary.
    static func setUp() throws -> (store: PostgresKeyStore, cs: String, kekFile: String, oldKeyID: String, box: SealedBox) {
        let kek = KeyEncryptionKey.generate()
        let kekFile = try Registry.kekFile(kek)
        let (store, cs) = try Registry.store(kek: kek)
        let old = try store.generate(appID: app, recipient: "alice", now: KeyTime.now())
        let primary = try store.sealingPrimary(appID: app, recipient: "alice")
        let box = try AES256GCM.seal(Array("sealed before the rotation".utf8), with: primary.key, authenticating: Array("alice".utf8))
        return (store, cs, kekFile, old.keyID, box)
    }

    /// The keyset after the rotation was run again to the end: one primary (`newKeyID`), no
    /// journal, the old key decryptOnly and still opening `box`.
    static func expectRotated(_ store: PostgresKeyStore, to newKeyID: String, oldKeyID: String, box: SealedBox) throws {
        let info = try store.keyset(appID: app, recipient: "alice")
        #expect(info.rotationKeyID == nil)
        #expect(info.keys.filter { $0.status == .primary }.map(\.keyID) == [newKeyID])
        #expect(info.keys.first { $0.keyID == oldKeyID }?.status == .decryptOnly)
        #expect(try store.sealingPrimary(appID: app, recipient: "alice").keyID == newKeyID)
        let record = try store.exportRecord(appID: app, recipient: "alice", keyID: nil)
        let oldKey = try #require(record.keysWithBytes.first { $0.info.keyID == oldKeyID }?.key)
        #expect(try AES256GCM.open(box, with: oldKey, authenticating: Array("alice".utf8)) == Array("sealed before the rotation".utf8))
    }

    @Test(arguments: ["added", "promoted", "finished"])
    func aRotationKilledAfterAStepResumes(_ step: String) throws {
        let (store, cs, kekFile, oldKeyID, box) = try Self.setUp()
        let child = try PipedChild([RegistryProcessTests.helper, "rotate-stop", cs, kekFile, Self.app, "alice", step])
        #expect(child.readLine() == "at \(step)")
        kill(child.pid, SIGKILL)
        #expect(child.finish().status == 128 + SIGKILL)
        // Killed: exactly one primary, and sealing carries on.
        let killed = try store.keyset(appID: Self.app, recipient: "alice")
        #expect(killed.keys.filter { $0.status == .primary }.count == 1)
        _ = try store.sealingPrimary(appID: Self.app, recipient: "alice")
        // Run again: an interrupted rotation resumes with its own key; a finished one starts another.
        let r = try store.rotate(appID: Self.app, recipient: "alice", graceSeconds: 3600, device: nil, promote: true,
                                 now: KeyTime.now(), afterStep: { _ in })
        if step == "finished" {
            #expect(killed.rotationKeyID == nil)
            #expect(!r.resumed)
        } else {
            #expect(killed.rotationKeyID != nil)
            #expect(r.resumed && r.keyID == killed.rotationKeyID)
        }
        try Self.expectRotated(store, to: r.keyID, oldKeyID: oldKeyID, box: box)
    }

    @Test func aProcessKilledHoldingTheKeysetsLocksLeavesItUnchanged() throws {
        let (store, cs, kekFile, oldKeyID, box) = try Self.setUp()
        let before = try store.keyset(appID: Self.app, recipient: "alice")
        let child = try PipedChild([RegistryProcessTests.helper, "lock-stop", cs, kekFile, Self.app, "alice"])
        #expect(child.readLine() == "locked")
        kill(child.pid, SIGKILL)
        #expect(child.finish().status == 128 + SIGKILL)
        // The transaction died with its connection: nothing changed, nothing stays locked, so a
        // rotation (which locks the same rows) runs to the end.
        #expect(try store.keyset(appID: Self.app, recipient: "alice") == before)
        let r = try store.rotate(appID: Self.app, recipient: "alice", graceSeconds: 3600, device: nil, promote: true,
                                 now: KeyTime.now(), afterStep: { _ in })
        #expect(!r.resumed)
        try Self.expectRotated(store, to: r.keyID, oldKeyID: oldKeyID, box: box)
    }
}
