import Foundation
import PushSealCrypto
import PushSealKeychain
@testable import PushSealKeyRecords
@testable import PushSealServerKeys
import Testing
import PushSealDeviceKeys

@Suite struct LifecycleTests {
    let alice = "alice-iphone"

    @Test func serverGeneratesDeviceImportsThenRotatePruneAndFallbacks() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let t0: Int64 = 1_767_225_600
        let first = try f.server.generate(appID: KeysFixture.appID, recipient: alice, now: t0)
        #expect(KeyID.isValid(first.keyID))
        // Provision: server exports, device (app identity) imports.
        let record = try KeyRecord(decoding: try f.server.exportRecord(appID: KeysFixture.appID, recipient: alice).encoded())
        let imported = try f.device.importRecord(record, now: t0)
        #expect(imported.created && imported.changedKeyIDs == [first.keyID])
        #expect(try f.device.importRecord(record, now: t0).changedKeyIDs.isEmpty)  // idempotent

        let sender = ServerKeyring(store: f.server)
        let ext = try f.extensionKeyring()
        let old = try KeysFixture.seal("before rotation", keyring: sender, recipient: alice)
        #expect(old.keyID == first.keyID)
        #expect(try KeysFixture.open(old, keyring: ext, now: t0) == "before rotation")

        // Rotate with the device: the new key is on the device before the server seals with it.
        var steps: [RotationStep] = []
        let r = try f.server.rotate(appID: KeysFixture.appID, recipient: alice, graceSeconds: 86_400, device: f.device, now: t0 + 10) { steps.append($0) }
        #expect(steps == [.added, .installed, .promoted, .devicePromoted, .finished])
        #expect(r.previousKeyID == first.keyID && r.notAfter == t0 + 10 + 86_400 && r.promoted && !r.resumed)
        let new = try KeysFixture.seal("after rotation", keyring: sender, recipient: alice)
        #expect(new.keyID == r.keyID && new.keyID != first.keyID)
        #expect(try KeysFixture.open(new, keyring: ext, now: t0 + 11) == "after rotation")
        // The old message opens during the grace window.
        #expect(try KeysFixture.open(old, keyring: ext, now: t0 + 20) == "before rotation")
        let serverSet = try f.server.keyset(appID: KeysFixture.appID, recipient: alice)
        let deviceSet = try f.device.keyset(appID: KeysFixture.appID, recipient: alice)
        #expect(serverSet.primary?.keyID == r.keyID && deviceSet.primary?.keyID == r.keyID)
        #expect(deviceSet.keys.first { $0.keyID == first.keyID }?.status == .decryptOnly)
        #expect(serverSet.rotationKeyID == nil)

        // Past the grace window: prune on both sides; the old key is a tombstone.
        #expect(try f.server.prune(now: t0 + 5).isEmpty)
        let pruned = try f.server.prune(now: t0 + 10 + 86_400)
        #expect(pruned.map(\.keyID) == [first.keyID])
        #expect(try f.device.prune(now: t0 + 10 + 86_400).map(\.keyID) == [first.keyID])
        #expect(try f.server.prune(now: t0 + 10 + 86_400).isEmpty)  // idempotent
        expectKeys(.keyDestroyed) { try KeysFixture.open(old, keyring: ext, now: t0 + 10 + 86_401) }
        expectKeys(.unknownKey) { try ext.key(for: "neverSeen", appID: KeysFixture.appID) }
        #expect(try KeysFixture.open(new, keyring: ext) == "after rotation")
        // Export never carries bytes of a destroyed key.
        let rec = try f.server.exportRecord(appID: KeysFixture.appID, recipient: alice)
        #expect(rec.keys.first { $0.info.keyID == first.keyID }?.secret == nil)
    }

    @Test func deviceGeneratesServerImports() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let k = try f.device.generate(appID: KeysFixture.appID, recipient: alice)
        let bytes = try f.device.exportRecord(appID: KeysFixture.appID, recipient: alice).encoded()
        try f.server.importRecord(try KeyRecord(decoding: bytes), expectedAppID: KeysFixture.appID)
        let sender = ServerKeyring(store: f.server)
        let sealed = try KeysFixture.seal("hello", keyring: sender, recipient: alice)
        #expect(sealed.keyID == k.keyID)
        #expect(try KeysFixture.open(sealed, keyring: try f.extensionKeyring()) == "hello")
    }

    @Test func newKeyOpensAsSoonAsPromotedAndRevokeDisables() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        try f.device.importRecord(try f.server.exportRecord(appID: KeysFixture.appID, recipient: alice))
        // Stage: added and installed, not promoted; the sender keeps the old primary.
        let staged = try f.server.rotate(appID: KeysFixture.appID, recipient: alice, device: f.device, promote: false)
        let sender = ServerKeyring(store: f.server)
        #expect(try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice).keyID != staged.keyID)
        #expect(try f.device.keyset(appID: KeysFixture.appID, recipient: alice).keys.contains { $0.keyID == staged.keyID && $0.status == .pending })
        try f.server.promote(appID: KeysFixture.appID, recipient: alice, keyID: staged.keyID)
        let sealed = try KeysFixture.seal("promoted", keyring: sender, recipient: alice)
        #expect(sealed.keyID == staged.keyID)
        #expect(try KeysFixture.open(sealed, keyring: try f.extensionKeyring()) == "promoted")
        // Revoke on the device: the extension reports "disabled", not "unknown".
        try f.device.revoke(appID: KeysFixture.appID, recipient: alice, keyID: staged.keyID)
        expectKeys(.keyDisabled) { try KeysFixture.open(sealed, keyring: try f.extensionKeyring()) }
        // Revoke the server primary: nothing can be sealed until a rotation.
        try f.server.revoke(appID: KeysFixture.appID, recipient: alice, keyID: staged.keyID)
        expectKeys(.noPrimaryKey) { try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
        #expect(try f.server.due().first?.reasons == ["noPrimary"])
    }

    @Test func keychainErrorsAreNeverUnknownKey() throws {
        // whenUnlocked keyset (what push-keys warns about) read while locked: -25308.
        let f = try KeysFixture(deviceAccessibility: .whenUnlocked)
        defer { f.cleanup() }
        let k = try f.device.generate(appID: KeysFixture.appID, recipient: alice)
        let ext = try f.extensionKeyring()
        #expect(try ext.key(for: k.keyID, appID: KeysFixture.appID).byteCount == 32)
        try f.device.keychain.lock()
        expectOSStatus(-25308) { try ext.key(for: k.keyID, appID: KeysFixture.appID) }
        try f.device.keychain.unlock()
        // An extension without the shared group, naming the group: -34018.
        expectOSStatus(-34018) { try f.extensionKeyring(KeysFixture.brokenExt, accessGroup: KeysFixture.shared).key(for: k.keyID, appID: KeysFixture.appID) }
        // ... and not naming it: its own groups hold nothing: -25300.
        expectOSStatus(-25300) { try f.extensionKeyring(KeysFixture.brokenExt).key(for: k.keyID, appID: KeysFixture.appID) }
        // Another app id with no keyset: -25300, not "unknown key".
        expectOSStatus(-25300) { try ext.key(for: k.keyID, appID: "com.example.other") }
    }

    @Test func defaultAccessibilityIsReadableWhileLocked() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let k = try f.device.generate(appID: KeysFixture.appID, recipient: alice)
        try f.device.keychain.lock()
        #expect(try f.extensionKeyring().key(for: k.keyID, appID: KeysFixture.appID).byteCount == 32)
        let attrs = try f.device.keychain.copyMatching(ItemQuery(service: KeychainNames.service(appID: KeysFixture.appID)))
        #expect(attrs.first?.attributes.accessibility == .afterFirstUnlockThisDeviceOnly)
        #expect(attrs.first?.attributes.accessGroup == KeysFixture.shared)
    }

    @Test func sealCounterIsPersistedMonotonicAndLimited() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let k = try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        var last: UInt64 = 0
        for round in 0..<3 {
            // A fresh keyring models a restarted (or crashed) sender: it reserves a new block.
            let sender = ServerKeyring(store: f.server)
            for _ in 0..<5 { _ = try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
            let stored = try f.server.keyset(appID: KeysFixture.appID, recipient: alice).primary?.sealCount ?? 0
            #expect(stored > last, "round \(round)")
            #expect(stored >= UInt64(5 * (round + 1)))
            last = stored
        }
        // Near the limit: one seal left, then a clear refusal.
        try f.server.setSealCount(appID: KeysFixture.appID, recipient: alice, keyID: k.keyID, to: KeyInfo.sealLimit - 1)
        let sender = ServerKeyring(store: f.server)
        _ = try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice)
        #expect(try f.server.keyset(appID: KeysFixture.appID, recipient: alice).primary?.sealCount == KeyInfo.sealLimit)
        expectKeys(.sealLimitReached) { try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
        expectKeys(.sealLimitReached) { try ServerKeyring(store: f.server).primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
        // After a rotation sealing works again.
        try f.server.rotate(appID: KeysFixture.appID, recipient: alice)
        #expect(try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice).keyID != k.keyID)
    }

    @Test func dueReportsAgeAndCount() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let t0: Int64 = 1_700_000_000
        let young = try f.server.generate(appID: KeysFixture.appID, recipient: "young", now: t0)
        try f.server.generate(appID: KeysFixture.appID, recipient: "old", now: t0 - 31 * 86_400)
        try f.server.generate(appID: KeysFixture.appID, recipient: "busy", now: t0)
        #expect(try f.server.due(now: t0).map(\.recipient) == ["old"])
        let busy = try f.server.keyset(appID: KeysFixture.appID, recipient: "busy").primary?.keyID ?? ""
        try f.server.setSealCount(appID: KeysFixture.appID, recipient: "busy", keyID: busy, to: KeyStore.dueSealThreshold)
        let due = try f.server.due(now: t0)
        #expect(due.map(\.recipient) == ["busy", "old"])
        #expect(due[0].reasons == ["seals"] && due[0].sealCount == KeyStore.dueSealThreshold)
        #expect(due[1].reasons == ["age"] && due[1].ageSeconds == 31 * 86_400)
        #expect(!due.contains { $0.keyID == young.keyID })
    }

    @Test func wrongInputsChangeNothing() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        try f.device.importRecord(try f.server.exportRecord(appID: KeysFixture.appID, recipient: alice))
        let sender = ServerKeyring(store: f.server)
        expectKeys(.unknownKeyset) { try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: "bob") }
        expectKeys(.keysetExists) { try f.server.generate(appID: KeysFixture.appID, recipient: alice) }
        let good = try f.server.exportRecord(appID: KeysFixture.appID, recipient: alice).encoded()
        let before = try KeysFixture.items(f.deviceDir)
        // Malformed and truncated records.
        for n in [0, 1, good.count / 2, good.count - 3] {
            expectKeys(.malformedRecord) { try KeyRecord(decoding: Array(good.prefix(n))) }
        }
        let text = String(decoding: good, as: UTF8.self)
        expectKeys(.malformedRecord) { try KeyRecord(decoding: Array(text.replacingOccurrences(of: "\"version\":1", with: "\"version\":true").utf8)) }
        expectKeys(.malformedRecord) { try KeyRecord(decoding: Array(text.replacingOccurrences(of: "\"key\":\"", with: "\"key\":\"AAAA").utf8)) }
        // A record for another app id.
        let other = try KeyRecord(decoding: Array(text.replacingOccurrences(of: KeysFixture.appID, with: "com.example.other").utf8))
        expectKeys(.wrongAppID) { try f.device.importRecord(other) }
        expectKeys(.wrongAppID) { try f.server.importRecord(other, expectedAppID: KeysFixture.appID) }
        // The same key id with other bytes.
        let keyField = text.range(of: "\"key\":\"")
        let start = try #require(keyField).upperBound
        var forged = text
        forged.replaceSubrange(start..<text.index(start, offsetBy: 4), with: text[start..<text.index(start, offsetBy: 4)] == "AAAA" ? "BBBB" : "AAAA")
        expectKeys(.duplicateKeyID) { try f.device.importRecord(try KeyRecord(decoding: Array(forged.utf8))) }
        #expect(try KeysFixture.items(f.deviceDir) == before)
        // A record listing one key id twice.
        let twice = text.replacingOccurrences(of: "}]}", with: "}," + String(text[text.range(of: "{\"keyId\"")!.lowerBound...].dropLast(3)) + "]}")
        expectKeys(.duplicateKeyID) { try KeyRecord(decoding: Array(twice.utf8)) }
        expectKeys(.invalidName) { try f.server.generate(appID: "com.example|x", recipient: alice) }
    }
}
