import Foundation
import PushSealCrypto
import PushSealKeychain
@testable import PushSealKeyRecords
@testable import PushSealDeviceKeys
@testable import PushSealServerKeys
import Testing

/// Keys at rest (security review F5, F11, F20): rollback of a keyset item, one key in one
/// sealing store, revoked keys' bytes.
@Suite struct KeysAtRestTests {
    let alice = "alice-iphone"

    // F5: an old keyset item put back is refused, not "revoked key primary again, seal count 0".
    @Test func oldKeysetItemPutBackIsRefused() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let t0: Int64 = 1_767_225_600
        let key = try f.server.generate(appID: KeysFixture.appID, recipient: alice, now: t0)
        let sender = ServerKeyring(store: f.server)
        _ = try KeysFixture.seal("one", keyring: sender, recipient: alice)
        // Save every item file (the keyset item among them), then revoke.
        let saved = try KeysFixture.items(f.serverDir)
        try f.server.revoke(appID: KeysFixture.appID, recipient: alice, keyID: key.keyID, now: t0 + 1)
        let afterRevoke = try KeysFixture.items(f.serverDir)
        let keysetNames = saved.keys.filter { saved[$0] != afterRevoke[$0] && afterRevoke[$0] != nil }
        #expect(!keysetNames.isEmpty)
        // Put the old keyset item back (only it: its generation counter stays current).
        var putBack = 0
        for name in keysetNames {
            let path = f.serverDir.path + "/items/" + name
            guard let old = saved[name] else { continue }
            // Item headers are clear text: the keyset item names service pushseal.keyset:<app>.
            guard String(decoding: old, as: UTF8.self).contains("pushseal.keyset:") else { continue }
            try Data(old).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            putBack += 1
        }
        #expect(putBack == 1)
        let store = try KeyStore(keychain: try Keychain(opening: f.serverDir, as: KeyStore.serverIdentity))
        expectKeys(.keysetRolledBack) { try store.keyset(appID: KeysFixture.appID, recipient: alice) }
        expectKeys(.keysetRolledBack) { try ServerKeyring(store: store).primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
    }

    // F5 for version 2 on the file keychain: an old registration item put back (a revoked
    // registration primary again) or an old sender key item (a rotated-out key the primary
    // again) is refused; a list item of layout 1 (no generation) still reads while no counter exists.
    @Test func oldV2ListItemsPutBackAreRefused() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let t0: Int64 = 1_767_225_600
        let app = KeysFixture.appID
        let device = try X25519.PrivateKey()
        let registration = try DeviceRegistration(appID: app, keyID: try DeviceKeyItem.keyID(for: device.publicKey), publicKey: device.publicKey, createdAt: t0)
        try f.server.register(registration, recipient: alice, now: t0)
        _ = try f.server.generateSenderKey(appID: app, now: t0)
        let saved = try KeysFixture.items(f.serverDir)
        try f.server.revokeRegistration(appID: app, recipient: alice, keyID: registration.keyID, now: t0 + 1)
        _ = try f.server.rotateSenderKey(appID: app, graceSeconds: 60, now: t0 + 2)
        let after = try KeysFixture.items(f.serverDir)
        var putBack: [String] = []
        for (name, old) in saved where after[name] != nil && after[name] != old {
            let text = String(decoding: old, as: UTF8.self)
            // Item headers are clear text: the list items name their services.
            guard text.contains("pushseal.registrations:") || text.contains("pushseal.sender-keys:") else { continue }
            let path = f.serverDir.path + "/items/" + name
            try Data(old).write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            putBack.append(name)
        }
        #expect(putBack.count == 2)
        let store = try KeyStore(keychain: try Keychain(opening: f.serverDir, as: KeyStore.serverIdentity))
        expectKeys(.keysetRolledBack) { try store.sealingRegistration(appID: app, recipient: alice) }
        expectKeys(.keysetRolledBack) { try store.sealingSenderKey(appID: app) }
        expectKeys(.keysetRolledBack) { try store.register(try DeviceRegistration(appID: app, keyID: "k2", publicKey: try X25519.PrivateKey().publicKey, createdAt: t0 + 3),
                                                          recipient: alice, now: t0 + 3) }
        // Layout 1 (before the generation) decodes as generation 0.
        var list = try store.loadV2List(.registrations, appID: app, owner: "bob", withSecrets: false) ?? V2KeyList(kind: .registrations, appID: app, owner: "bob")
        list.generation = 7
        var bytes = list.encode()  // "PSV2" | 2 | kind | generation (8) | …
        #expect(try V2KeyList.decode(bytes, kind: .registrations).generation == 7)
        bytes[4] = 1
        bytes.removeSubrange(6..<14)
        #expect(try V2KeyList.decode(bytes, kind: .registrations).generation == 0)
    }

    @Test func generationGrowsWithEverySave() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let key = try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        let g1 = try #require(try f.server.load(appID: KeysFixture.appID, recipient: alice)).generation
        try f.server.revoke(appID: KeysFixture.appID, recipient: alice, keyID: key.keyID)
        let g2 = try #require(try f.server.load(appID: KeysFixture.appID, recipient: alice)).generation
        #expect(g1 >= 1 && g2 == g1 + 1)
        #expect(try GenerationCounters.storedGeneration(f.server.keychain, accessGroup: f.server.accessGroup, appID: KeysFixture.appID, recipient: alice) == g2)
        // A keyset of before 0.2.0 (version 1, no generation) still reads while no counter exists.
        var v1 = try #require(try f.server.load(appID: KeysFixture.appID, recipient: alice))
        v1.generation = 0
        var bytes = v1.encode()  // "PSKS" | 2 | generation (8) | …
        bytes[4] = 1
        bytes.removeSubrange(5..<13)
        let decoded = try Keyset.decode(bytes)
        #expect(decoded.generation == 0 && decoded.keys.count == 1)
    }

    // F11: one key, one sealing store.
    @Test func importOfAUsedPrimaryIntoAServerIsRefusedUnlessAccepted() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        _ = try KeysFixture.seal("one", keyring: ServerKeyring(store: f.server), recipient: alice)
        let record = try f.server.exportRecord(appID: KeysFixture.appID, recipient: alice)
        #expect(record.keyInfos.first?.sealCount ?? 0 > 0)
        let otherDir = f.root.appendingPathComponent("server2")
        try Keychain.create(at: otherDir)
        let other = try KeyStore(keychain: try Keychain(opening: otherDir, as: KeyStore.serverIdentity))
        let before = try KeysFixture.items(otherDir)
        expectKeys(.sealCountInUse) { try record.checkOneSealingStore(existing: nil) }
        #expect(try KeysFixture.items(otherDir) == before)
        // Asked for explicitly (or a device store): imported.
        #expect(try other.importRecord(record).created)
        // Re-importing a key the store already has is not a new sealing domain.
        try record.checkOneSealingStore(existing: try other.keyset(appID: KeysFixture.appID, recipient: alice))
        // A fresh primary (no seals yet) is fine anywhere.
        try f.server.generate(appID: KeysFixture.appID, recipient: "bob")
        try f.server.exportRecord(appID: KeysFixture.appID, recipient: "bob").checkOneSealingStore(existing: nil)
    }

    // F20: prune drops a revoked key's bytes at once; it stays disabled.
    @Test func pruneDropsRevokedKeyBytes() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let key = try f.server.generate(appID: KeysFixture.appID, recipient: alice)
        try f.server.revoke(appID: KeysFixture.appID, recipient: alice, keyID: key.keyID)
        #expect(try f.server.load(appID: KeysFixture.appID, recipient: alice)?.keys.first?.secret != nil)
        let pruned = try f.server.prune()
        #expect(pruned.map(\.keyID) == [key.keyID])
        let ks = try #require(try f.server.load(appID: KeysFixture.appID, recipient: alice))
        #expect(ks.keys.first?.secret == nil && ks.keys.first?.info.status == .disabled)
        #expect(try f.server.prune().isEmpty)  // idempotent
    }
}

/// Security review G10: a missing generation counter beside a keyset (or v2 list) item above
/// generation 0 is a rollback, not 0 (0031154: the old keyset item put back with its counter
/// removed brought the revoked key back as primary, seal count 0).
@Suite struct MissingCounterTests {
    let alice = "alice-iphone"

    static func putBack(_ saved: [String: [UInt8]], _ after: [String: [UInt8]], in dir: URL, services: [String], removing counters: [String]) throws -> (putBack: Int, removed: Int) {
        var counts = (putBack: 0, removed: 0)
        for (name, data) in after {
            let text = String(decoding: data, as: UTF8.self)
            let path = dir.path + "/items/" + name
            if counters.contains(where: { text.contains($0) }) {
                try FileManager.default.removeItem(atPath: path)
                counts.removed += 1
            } else if let old = saved[name], old != data, services.contains(where: { text.contains($0) }) {
                try Data(old).write(to: URL(fileURLWithPath: path))
                chmod(path, 0o600)
                counts.putBack += 1
            }
        }
        return counts
    }

    @Test func anOldKeysetPutBackWithItsCounterRemovedIsRefused() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let t0: Int64 = 1_767_225_600
        let key = try f.server.generate(appID: KeysFixture.appID, recipient: alice, now: t0)
        let saved = try KeysFixture.items(f.serverDir)
        try f.server.revoke(appID: KeysFixture.appID, recipient: alice, keyID: key.keyID, now: t0 + 1)
        let counts = try Self.putBack(saved, try KeysFixture.items(f.serverDir), in: f.serverDir,
                                      services: ["pushseal.keyset:"], removing: ["pushseal.keyset-generation:"])
        #expect(counts.putBack == 1 && counts.removed == 1)
        let store = try KeyStore(keychain: try Keychain(opening: f.serverDir, as: KeyStore.serverIdentity))
        expectKeys(.keysetRolledBack) { try store.keyset(appID: KeysFixture.appID, recipient: alice) }
        expectKeys(.keysetRolledBack) { try ServerKeyring(store: store).primaryKeyForSealing(appID: KeysFixture.appID, recipient: alice) }
    }

    @Test func oldV2ListsPutBackWithTheirCountersRemovedAreRefused() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let t0: Int64 = 1_767_225_600
        let app = KeysFixture.appID
        let device = try X25519.PrivateKey()
        let registration = try DeviceRegistration(appID: app, keyID: try DeviceKeyItem.keyID(for: device.publicKey), publicKey: device.publicKey, createdAt: t0)
        try f.server.register(registration, recipient: alice, now: t0)
        _ = try f.server.generateSenderKey(appID: app, now: t0)
        let saved = try KeysFixture.items(f.serverDir)
        try f.server.revokeRegistration(appID: app, recipient: alice, keyID: registration.keyID, now: t0 + 1)
        _ = try f.server.rotateSenderKey(appID: app, graceSeconds: 60, now: t0 + 2)
        let counts = try Self.putBack(saved, try KeysFixture.items(f.serverDir), in: f.serverDir,
                                      services: ["pushseal.registrations:", "pushseal.sender-keys:"],
                                      removing: ["pushseal.registrations-generation:", "pushseal.sender-keys-generation:"])
        #expect(counts.putBack == 2 && counts.removed == 2)
        let store = try KeyStore(keychain: try Keychain(opening: f.serverDir, as: KeyStore.serverIdentity))
        expectKeys(.keysetRolledBack) { try store.sealingRegistration(appID: app, recipient: alice) }
        expectKeys(.keysetRolledBack) { try store.sealingSenderKey(appID: app) }
    }

    /// A new keyset's counter exists before its first item above generation 0, so a crash
    /// between the two never leaves an item that reads as rolled back.
    @Test func aNewKeysetHasItsCounterFromTheStart() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        _ = try f.server.generate(appID: KeysFixture.appID, recipient: alice, now: 1_767_225_600)
        let items = try KeysFixture.items(f.serverDir)
        #expect(items.values.contains { String(decoding: $0, as: UTF8.self).contains("pushseal.keyset-generation:") })
    }
}
