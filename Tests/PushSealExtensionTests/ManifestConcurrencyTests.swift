import Foundation
import PushSealCrypto
import PushSealJSON
@testable import PushSealKeychain
import PushSealSystem
import PushSealTestSupport
import Testing
@testable import PushSealKeyRecords
@testable import PushSealDeviceKeys
@testable import PushSealExtension

/// Security review G3: the key manifest's read-modify-write is serialized (the emulation's lock
/// file, `device-keys.lock`), and a write killed between its manifest writes is finished at the
/// next open. Writers run on threads of their own, each with its own keychain instance (its own
/// descriptors, as separate processes have), released together.
@Suite struct ManifestConcurrencyTests {
    typealias V2Device = DeviceKeyItemsTests.V2Device
    typealias Sender = DeviceKeyItemsTests.V2EnvelopeSender

    /// Runs every job on its own thread, all started together; returns each job's error, if any.
    static func together(_ jobs: [@Sendable () throws -> Void]) -> [String?] {
        let errors = Locked<[Int: String]>([:])
        let ready = DispatchGroup(), go = DispatchSemaphore(value: 0), done = DispatchGroup()
        for (index, job) in jobs.enumerated() {
            ready.enter()
            done.enter()
            Thread {
                ready.leave()
                go.wait()
                do { try job() } catch { errors.withLock { $0[index] = String(describing: error) } }
                done.leave()
            }.start()
        }
        ready.wait()
        for _ in jobs { go.signal() }
        done.wait()
        return jobs.indices.map { index in errors.withLock { $0[index] } }
    }

    /// 12 concurrent writers (pins) all end up in the manifest, and every pin authenticates.
    @Test func twelveConcurrentWritersAreAllInTheManifest() throws {
        let d = try V2Device()
        defer { d.fixture.cleanUp() }
        let senders = try (0..<12).map { try Sender(String(format: "snd-%02d", $0)) }
        let url = d.fixture.keychainURL
        let pins = try senders.map { try $0.pin }
        let errors = Self.together(pins.map { pin in {
            let keychain = try Keychain(opening: url, as: DeviceFixture.appEntitlements)
            try DeviceKeyItem.pinSender(pin, appID: casesAppID, in: keychain, accessGroup: sharedGroup, now: DeviceKeyItemsTests.now)
        } })
        #expect(errors.allSatisfy { $0 == nil }, "\(errors)")
        let manifest = try #require(try DeviceKeyItem.manifest(appID: casesAppID, in: try d.app, accessGroup: sharedGroup))
        #expect(manifest.senderKeyIDs == senders.map(\.id).sorted())
        #expect(manifest.entries.allSatisfy { $0.previousDigest == nil })
        let keyring = DeviceKeyring(keychain: try d.app, accessGroup: sharedGroup)
        for sender in senders {
            #expect(throws: Never.self) { try keyring.pinnedSenderKey(sender.id, appID: casesAppID, now: DeviceKeyItemsTests.now) }
        }
    }

    /// A revocation racing other writes, then the revoked key's old item put back: it stays
    /// revoked (0031154: a writer that read the manifest mid-revocation wrote the
    /// pre-revocation digest back, and the old item opened again).
    @Test func aRevocationRacingWritesStaysRevokedWhenTheOldItemIsPutBack() throws {
        for _ in 0..<3 {
            let d = try V2Device()
            defer { d.fixture.cleanUp() }
            let senders = try (0..<11).map { try Sender("snd-r\($0)") }
            let payload = try d.sealed(by: senders[0])  // auth mode: the pins do not refuse it
            let before = try DeviceKeyManifestTests.snapshot(d)
            let url = d.fixture.keychainURL
            let pins = try senders.map { try $0.pin }
            var jobs: [@Sendable () throws -> Void] = pins.map { pin in {
                let keychain = try Keychain(opening: url, as: DeviceFixture.appEntitlements)
                try DeviceKeyItem.pinSender(pin, appID: casesAppID, in: keychain, accessGroup: sharedGroup, now: DeviceKeyItemsTests.now)
            } }
            jobs.insert({
                let keychain = try Keychain(opening: url, as: DeviceFixture.appEntitlements)
                _ = try DeviceKeyItem.revoke(RevocationRecord(appID: casesAppID, keyIDs: [DeviceKeyItemsTests.deviceKeyID],
                                                              revokedAt: DeviceKeyItemsTests.now - 50), in: keychain, accessGroup: sharedGroup)
            }, at: 5)
            let errors = Self.together(jobs)
            #expect(errors.allSatisfy { $0 == nil }, "\(errors)")
            let itemName = ItemRecord.fileName(itemClass: .genericPassword, accessGroup: sharedGroup,
                                               service: DeviceKeyKind.v2DeviceKey.service(appID: casesAppID), account: DeviceKeyItemsTests.deviceKeyID)
            try DeviceKeyManifestTests.putBack(itemName, from: before, in: d)
            let r = try d.open(.object(payload), host: try d.host(now: DeviceKeyItemsTests.now))
            #expect(r.outcome != .decrypted)
            #expect(r.reason == "keyRolledBack", "\(r.detail)")
        }
    }

    /// A revocation killed after its item write and before its last manifest write (two
    /// digests accepted): the next open finishes it, so the old item put back afterwards is
    /// refused; a write killed before its item write keeps the old state.
    @Test func aHalfWrittenEntryIsFinishedAtTheNextOpen() throws {
        let d = try V2Device()
        defer { d.fixture.cleanUp() }
        let payload = try d.sealed()
        let keychain = try d.app
        let before = try DeviceKeyManifestTests.snapshot(d)
        let oldDigest = try #require(try DeviceKeyItem.manifest(appID: casesAppID, in: keychain, accessGroup: sharedGroup)?
            .entry(.v2DeviceKey, keyID: DeviceKeyItemsTests.deviceKeyID)?.digest)
        _ = try DeviceKeyItem.revoke(RevocationRecord(appID: casesAppID, keyIDs: [DeviceKeyItemsTests.deviceKeyID], revokedAt: DeviceKeyItemsTests.now - 50),
                                     in: keychain, accessGroup: sharedGroup)
        // The crash: the manifest as its first write left it (the old digest still accepted).
        var manifest = try #require(try DeviceKeyItem.manifest(appID: casesAppID, in: keychain, accessGroup: sharedGroup))
        let index = try #require(manifest.entries.firstIndex { $0.keyID == DeviceKeyItemsTests.deviceKeyID })
        manifest.entries[index].previousDigest = oldDigest
        manifest.generation += 1
        try keychain.update(ItemQuery(service: DeviceKeyManifest.service(appID: casesAppID), account: DeviceKeyManifest.account, accessGroup: sharedGroup),
                            with: ItemChanges(data: try manifest.encoded()))
        // The next open (the extension's read) finishes the revocation ...
        #expect(try d.open(.object(payload), host: try d.host(now: DeviceKeyItemsTests.now)).reason == "keyDisabled")
        let finished = try #require(try DeviceKeyItem.manifest(appID: casesAppID, in: keychain, accessGroup: sharedGroup))
        #expect(finished.entries.allSatisfy { $0.previousDigest == nil })
        // ... so the old item put back afterwards is refused.
        let itemName = ItemRecord.fileName(itemClass: .genericPassword, accessGroup: sharedGroup,
                                           service: DeviceKeyKind.v2DeviceKey.service(appID: casesAppID), account: DeviceKeyItemsTests.deviceKeyID)
        try DeviceKeyManifestTests.putBack(itemName, from: before, in: d)
        let r = try d.open(.object(payload), host: try d.host(now: DeviceKeyItemsTests.now))
        #expect(r.reason == "keyRolledBack", "\(r.detail)")
    }
}
