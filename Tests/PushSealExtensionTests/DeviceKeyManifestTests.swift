import Foundation
import PushSealCrypto
import PushSealJSON
import PushSealKeychain
import PushSealTestSupport
import Testing
@testable import PushSealKeyRecords
@testable import PushSealDeviceKeys
@testable import PushSealExtension

/// The rollback guard of the device key items (docs/keychain.md "The key manifest", security
/// review F5): item files of the real keychain emulation put back as an older copy, read by the
/// real ``KeychainKeyProvider`` in the real host.
@Suite struct DeviceKeyManifestTests {
    typealias V2Device = DeviceKeyItemsTests.V2Device
    static let now = DeviceKeyItemsTests.now

    /// The item files of the keychain (`items/<sha256>.item`), by name.
    static func snapshot(_ d: V2Device) throws -> [String: Data] {
        let dir = d.fixture.keychainURL.appendingPathComponent("items")
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name.hasSuffix(".item") {
            files[name] = try Data(contentsOf: dir.appendingPathComponent(name))
        }
        return files
    }

    /// Puts item file `name` back as it was in `files` (0600, as the keychain wants it), or
    /// deletes it when `files` has none.
    static func putBack(_ name: String, from files: [String: Data], in d: V2Device) throws {
        let url = d.fixture.keychainURL.appendingPathComponent("items").appendingPathComponent(name)
        try? FileManager.default.removeItem(at: url)
        guard let data = files[name] else { return }
        #expect(FileManager.default.createFile(atPath: url.path, contents: data, attributes: [.posixPermissions: 0o600]))
    }

    /// The names of the files that differ between two snapshots (changed, added or removed).
    static func changed(_ a: [String: Data], _ b: [String: Data]) -> [String] {
        Set(a.keys).union(b.keys).filter { a[$0] != b[$0] }.sorted()
    }

    func reason(_ d: V2Device, _ payload: JSONObject, now: Int64 = DeviceKeyManifestTests.now) throws -> String {
        let r = try d.open(.object(payload), host: try d.host(now: now))
        return r.outcome == .decrypted ? "decrypted" : r.reason
    }

    @Test func anOlderCopyOfARevokedKeysItemOrOfTheManifestPutBackDoesNotOpen() throws {
        let d = try V2Device()
        defer { d.fixture.cleanUp() }
        let sender = try DeviceKeyItemsTests.V2EnvelopeSender("snd-1")
        try d.pin(sender)
        let payload = try d.sealed(by: sender)
        #expect(try reason(d, payload) == "decrypted")
        let before = try Self.snapshot(d)
        // Revoke the device key, as the app does when the server says so.
        try DeviceKeyItem.revoke(RevocationRecord(appID: casesAppID, keyIDs: [DeviceKeyItemsTests.deviceKeyID], revokedAt: Self.now - 50),
                                 in: try d.app, accessGroup: sharedGroup)
        #expect(try reason(d, payload) == "keyDisabled")
        let after = try Self.snapshot(d)
        let files = Self.changed(before, after)
        #expect(files.count == 2, "the key item and the manifest: \(files)")
        // Either file alone put back from before the revoke: the key does not open.
        for name in files {
            try Self.putBack(name, from: before, in: d)
            #expect(try reason(d, payload) == "keyRolledBack", "\(name) put back")
            // device list names it, without opening anything.
            let listed = try DeviceKeyItem.list(appID: casesAppID, in: try d.app, accessGroup: sharedGroup)
            #expect(listed.first { $0.kind == .v2DeviceKey }?.rolledBack == true && listed.first { $0.kind == .senderKey }?.rolledBack == false, "\(listed)")
            let r = try d.open(.object(payload))
            #expect(r.detail.contains("key manifest"), "\(r.detail)")
            try Self.putBack(name, from: after, in: d)
        }
        #expect(try reason(d, payload) == "keyDisabled")
        #expect(try DeviceKeyItem.list(appID: casesAppID, in: try d.app, accessGroup: sharedGroup).allSatisfy { !$0.rolledBack })
        // A later write never blesses a rolled-back item: the app's next write is refused too.
        for name in files { try Self.putBack(name, from: before, in: d) }
        try Self.putBack(try #require(files.first), from: after, in: d)
        expectCode(KeysError.Code.keyRolledBack) {
            try DeviceKeyItem.revoke(RevocationRecord(appID: casesAppID, keyIDs: [DeviceKeyItemsTests.deviceKeyID], revokedAt: Self.now - 60),
                                     in: try d.app, accessGroup: sharedGroup)
        }
        d.expectOneDeliveryPerRun()
    }

    @Test func aPrunedKeyOrARemovedPinPutBackIsRefusedAndADeletedPinStillCounts() throws {
        let d = try V2Device()
        defer { d.fixture.cleanUp() }
        let old = try d.sealed(iat: Self.now - 10)
        // Rotate and promote (the server accepted dev-2), then prune the old key after its grace window.
        let next = try X25519.PrivateKey()
        _ = try DeviceKeyItem.rotate(to: next, keyID: "dev-2", appID: casesAppID, in: try d.app, accessGroup: sharedGroup, now: Self.now)
        _ = try DeviceKeyItem.promote(keyID: "dev-2", appID: casesAppID, in: try d.app, accessGroup: sharedGroup, now: Self.now, graceSeconds: 100)
        #expect(try reason(d, old) == "decrypted")
        let beforePrune = try Self.snapshot(d)
        #expect(try DeviceKeyItem.prune(appID: casesAppID, in: try d.app, accessGroup: sharedGroup, now: Self.now + 100) == [DeviceKeyItemsTests.deviceKeyID])
        #expect(try reason(d, old, now: Self.now + 100) == "unknownKey")
        let afterPrune = try Self.snapshot(d)
        // The pruned key's item file put back (an older copy of the keychain): not in the manifest.
        let pruned = try #require(Set(beforePrune.keys).subtracting(afterPrune.keys).first)
        try Self.putBack(pruned, from: beforePrune, in: d)
        #expect(try reason(d, old, now: Self.now + 99) == "keyRolledBack")
        #expect(try reason(d, try d.sealed(keyID: "dev-2", to: next.publicKey), now: Self.now + 99) == "decrypted")
        expectCode(KeysError.Code.keyRolledBack) {
            _ = try DeviceKeyItem.prune(appID: casesAppID, in: try d.app, accessGroup: sharedGroup, now: Self.now + 200)
        }
        try Self.putBack(pruned, from: afterPrune, in: d)
        // Two pins; one pin item deleted behind the toolkit's back: still counted (base mode
        // stays refused), its payloads do not open.
        let a = try DeviceKeyItemsTests.V2EnvelopeSender("snd-a"), b = try DeviceKeyItemsTests.V2EnvelopeSender("snd-b")
        try d.pin(a)
        let onePin = try Self.snapshot(d)
        try d.pin(b)
        let twoPins = try Self.snapshot(d)
        let pinB = try #require(Set(twoPins.keys).subtracting(onePin.keys).first)
        try Self.putBack(pinB, from: [:], in: d)
        func toNext(_ s: DeviceKeyItemsTests.V2EnvelopeSender?) throws -> JSONObject { try d.sealed(by: s, keyID: "dev-2", to: next.publicKey) }
        #expect(try reason(d, try toNext(nil)) == "downgradeRefused")
        #expect(try reason(d, try toNext(b)) == "unknownSenderKey")
        #expect(try reason(d, try toNext(a)) == "decrypted")
        // The manifest from before pin b put back with pin b gone: b's item restored later is not listed.
        for name in Self.changed(onePin, twoPins) where name != pinB { try Self.putBack(name, from: onePin, in: d) }
        try Self.putBack(pinB, from: twoPins, in: d)
        #expect(try reason(d, try toNext(b)) == "keyRolledBack")
        d.expectOneDeliveryPerRun()
    }

    @Test func keyItemsWithoutAManifestNeitherOpenNorGetWritten() throws {
        let d = try V2Device()
        defer { d.fixture.cleanUp() }
        let payload = try d.sealed()
        #expect(try reason(d, payload) == "decrypted")
        try (try d.app).delete(ItemQuery(service: DeviceKeyManifest.service(appID: casesAppID), account: DeviceKeyManifest.account))
        #expect(try reason(d, payload) == "keyRolledBack")
        expectCode(KeysError.Code.keyRolledBack) {
            try DeviceKeyItem.pinSender(try DeviceKeyItemsTests.V2EnvelopeSender("snd-1").pin, appID: casesAppID, in: try d.app,
                                        accessGroup: sharedGroup, now: Self.now)
        }
        d.expectOneDeliveryPerRun()
    }

    @Test func theManifestBytesFollowTheLayoutAndDamageIsRefused() throws {
        let d = try V2Device()
        defer { d.fixture.cleanUp() }
        let kc = try d.app
        let m = try #require(try DeviceKeyItem.manifest(appID: casesAppID, in: kc, accessGroup: sharedGroup))
        // One write of one item is two manifest writes (both digests, then the new one alone).
        #expect(m.generation == 2)
        let item = try kc.copyData(ItemQuery(service: DeviceKeyKind.v2DeviceKey.service(appID: casesAppID), account: DeviceKeyItemsTests.deviceKeyID))
        #expect(m.entries == [DeviceKeyManifest.Entry(kind: .v2DeviceKey, keyID: DeviceKeyItemsTests.deviceKeyID,
                                                      digest: try DeviceKeyManifest.digest(of: item))])
        let bytes = try kc.copyData(ItemQuery(service: DeviceKeyManifest.service(appID: casesAppID), account: DeviceKeyManifest.account)).copyBytes()
        let id = Array(DeviceKeyItemsTests.deviceKeyID.utf8)
        let expected: [UInt8] = [1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 2, UInt8(id.count)] + id + (try SHA256Hasher.hash(item.copyBytes()))
            + [UInt8](repeating: 0, count: 32)
        #expect(bytes == expected)
        // A write in progress: both digests are accepted, and the entry round-trips.
        let pending = DeviceKeyManifest(generation: 7, entries: [DeviceKeyManifest.Entry(kind: .senderKey, keyID: "s", digest: nil, previousDigest: [UInt8](repeating: 9, count: 32)),
                                                                 DeviceKeyManifest.Entry(kind: .v1Key, keyID: "k", digest: [UInt8](repeating: 1, count: 32),
                                                                                         previousDigest: [UInt8](repeating: 2, count: 32))])
        let decoded = try DeviceKeyManifest(decoding: try pending.encoded())
        #expect(decoded.entries.map(\.keyID) == ["k", "s"] && decoded.generation == 7)
        #expect(decoded.entry(.v2DeviceKey, keyID: "k")?.accepts([UInt8](repeating: 2, count: 32)) == true)
        #expect(decoded.entry(.v1Key, keyID: "k")?.accepts([UInt8](repeating: 3, count: 32)) == false)
        #expect(decoded.senderKeyIDs == ["s"])
        // Damaged manifests are refused, never guessed.
        for damage: ([UInt8]) -> [UInt8] in [{ $0 + [0] }, { Array($0.dropLast()) }, { var b = $0; b[0] = 2; return b },
                                             { var b = $0; b[1...8] = [0, 0, 0, 0, 0, 0, 0, 0]; return b }, { var b = $0; b[11] = 9; return b },
                                             { var b = $0; b[13] = UInt8(ascii: " "); return b }] {
            expectCode(KeysError.Code.corruptKey) { _ = try DeviceKeyManifest(decoding: SecretBytes(copying: damage(bytes))) }
        }
        var reversed = try pending.encoded().copyBytes()
        let first = Array(reversed[11..<(11 + 2 + 1 + 64)]), second = Array(reversed[(11 + 67)...])
        reversed = Array(reversed[..<11]) + second + first
        expectCode(KeysError.Code.corruptKey) { _ = try DeviceKeyManifest(decoding: SecretBytes(copying: reversed)) }
    }
}
