import Foundation
import PushSealCrypto
import PushSealJSON
import PushSealKeyRecords
import PushSealDeviceKeys
import PushSealKeychain
import PushSealSender
import PushSealTestSupport
import PushSealWire
import Testing
@testable import PushSealExtension

/// Version 1 keys as kind 1 items of the one device layout (``DeviceKeyItem/importV1``, the
/// iOS reference's `importV1`), read by the real ``KeychainKeyProvider`` in the real host; a
/// keyset item (the legacy device form) is read only for a key id without a kind 1 item.
@Suite struct DeviceKeyItemsV1Tests {
    static let now: Int64 = 1_796_000_000
    static let otherKey = SecretBytes(copying: (0..<32).map { UInt8(0x40 + $0) })

    static func record(_ entries: String) throws -> KeyRecord {
        let text = #"{"format":"pushseal-key-record","version":1,"appId":"\#(casesAppID)","recipient":"device","keys":[\#(entries)]}"#
        return try KeyRecord(decoding: Array(text.utf8))
    }

    static func entry(_ keyID: String, _ status: String, key: SecretBytes? = DeviceKeyItemsV1Tests.otherKey, extra: String = "") -> String {
        let bytes = key.map { #","key":"\#(Data($0.copyBytes()).base64EncodedString())""# } ?? ""
        return #"{"keyId":"\#(keyID)","status":"\#(status)","createdAt":1700000000,"sealCount":0\#(extra)\#(bytes)}"#
    }

    static func payload(keyID: String, key: SecretBytes, iat: Int64 = now - 10) throws -> JSONValue {
        let sealing = SealingKey(keyID: keyID, key: key)
        let sealer = try NotificationSealer(appID: casesAppID, keys: InMemorySealingKeys([(casesAppID, "alice", sealing)]))
        let text = #"{"title":"Lunch?","body":"Noon","id":"\#(UUID().uuidString)","iat":\#(iat)}"#
        return try JSONReader.parse(try sealer.seal(notificationJSON: Array(text.utf8), for: "alice").payload)
    }

    @Test func kindOneItemsOpenV1AndDecideOverTheLegacyKeyset() throws {
        let fixture = try DeviceFixture()  // also holds the legacy keyset with k1 = the cases' key
        defer { fixture.cleanUp() }
        let app = try Keychain(opening: fixture.keychainURL, as: DeviceFixture.appEntitlements)
        func reason(_ keyID: String, _ key: SecretBytes, now: Int64 = Self.now, iat: Int64 = Self.now - 10) throws -> String {
            let r = try fixture.run(try Self.payload(keyID: keyID, key: key, iat: iat), host: try fixture.host(now: now))
            return r.outcome == .decrypted ? "decrypted" : r.reason
        }
        // The legacy keyset still opens; a kind 1 item opens a key the keyset does not hold.
        #expect(try reason("k1", casesKey) == "decrypted")
        #expect(try reason("k2", Self.otherKey) == "unknownKey")
        #expect(try DeviceKeyItem.importV1(try Self.record(Self.entry("k2", "primary")), in: app, accessGroup: sharedGroup) == ["k2"])
        let item = try #require(try app.copyMatching(ItemQuery(service: "pushseal.key:" + casesAppID, account: "k2"), returning: [.attributes, .data]).first)
        #expect(item.attributes.label == "PushSeal v1 key" && item.attributes.accessibility == .afterFirstUnlockThisDeviceOnly)
        #expect(try #require(item.data).copyBytes()[0..<3] == [1, 1, 2])
        #expect(try reason("k2", Self.otherKey) == "decrypted")
        // Idempotent; statuses only move forward; a decryptOnly key opens until notAfter.
        #expect(try DeviceKeyItem.importV1(try Self.record(Self.entry("k2", "primary")), in: app, accessGroup: sharedGroup).isEmpty)
        let retired = Self.entry("k2", "decryptOnly", extra: #","retiredAt":\#(Self.now - 5),"notAfter":\#(Self.now + 100)"#)
        #expect(try DeviceKeyItem.importV1(try Self.record(retired), in: app, accessGroup: sharedGroup) == ["k2"])
        #expect(try DeviceKeyItem.importV1(try Self.record(Self.entry("k2", "primary")), in: app, accessGroup: sharedGroup).isEmpty)
        #expect(try reason("k2", Self.otherKey, iat: Self.now - 10) == "decrypted")
        #expect(try reason("k2", Self.otherKey, iat: Self.now - 1) == "keys:keyRetired")
        #expect(try reason("k2", Self.otherKey, now: Self.now + 100) == "keyExpired")
        // Another key's bytes under a held id are refused, and nothing changes.
        expectCode(KeysError.Code.duplicateKeyID) {
            try DeviceKeyItem.importV1(try Self.record(Self.entry("k3", "pending") + "," + Self.entry("k2", "decryptOnly", key: casesKey)),
                                       in: app, accessGroup: sharedGroup)
        }
        #expect(try reason("k3", Self.otherKey) == "unknownKey")
        // A kind 1 item decides for its key id: disabled k1 no longer opens, though the keyset's k1 is primary.
        #expect(try DeviceKeyItem.importV1(try Self.record(Self.entry("k1", "disabled", key: nil, extra: #","retiredAt":\#(Self.now - 5)"#)),
                                           in: app, accessGroup: sharedGroup) == ["k1"])
        #expect(try reason("k1", casesKey) == "keyDisabled")
        // destroyed deletes the item.
        #expect(try DeviceKeyItem.importV1(try Self.record(Self.entry("k2", "destroyed", key: nil)), in: app, accessGroup: sharedGroup) == ["k2"])
        #expect(try reason("k2", Self.otherKey) == "unknownKey")
        // A v1 key never takes the id of a v2 device key (they share the service).
        try DeviceKeyItem.store(try X25519.PrivateKey(), keyID: "dev-1", appID: casesAppID, in: app, accessGroup: sharedGroup, now: Self.now)
        expectCode(KeysError.Code.duplicateKeyID) {
            try DeviceKeyItem.importV1(try Self.record(Self.entry("dev-1", "primary")), in: app, accessGroup: sharedGroup)
        }
        #expect(try reason("dev-1", Self.otherKey) == "unknownKey")
        expectCode(KeysError.Code.wrongAppID) {
            try DeviceKeyItem.importV1(try Self.record(Self.entry("k4", "primary")), expectedAppID: "com.example.other", in: app, accessGroup: sharedGroup)
        }
    }

    /// Security review G9: a key the manifest lists whose kind 1 item was removed around the
    /// toolkit is missing (`keyRolledBack`), never looked up in the legacy keyset (0031154: the
    /// keyset's copy of the revoked key opened again).
    @Test func theLegacyKeysetIsSubjectToTheManifest() throws {
        let fixture = try DeviceFixture()  // holds the legacy keyset with k1 = the cases' key, primary
        defer { fixture.cleanUp() }
        let app = try Keychain(opening: fixture.keychainURL, as: DeviceFixture.appEntitlements)
        func reason(_ keyID: String, _ key: SecretBytes) throws -> String {
            let r = try fixture.run(try Self.payload(keyID: keyID, key: key), host: try fixture.host(now: Self.now))
            return r.outcome == .decrypted ? "decrypted" : r.reason
        }
        #expect(try reason("k1", casesKey) == "decrypted")
        // Revoked as a kind 1 item (the converted form) ...
        #expect(try DeviceKeyItem.importV1(try Self.record(Self.entry("k1", "disabled", key: nil, extra: #","retiredAt":\#(Self.now - 5)"#)),
                                           in: app, accessGroup: sharedGroup) == ["k1"])
        #expect(try reason("k1", casesKey) == "keyDisabled")
        // ... then its item deleted around the toolkit: the keyset's primary k1 must not answer.
        try app.delete(ItemQuery(service: DeviceKeyKind.v1Key.service(appID: casesAppID), account: "k1", accessGroup: sharedGroup))
        #expect(try reason("k1", casesKey) == "keyRolledBack")
        // A key id the manifest never listed still reads the legacy keyset (devices of before 0.2.0).
        #expect(try reason("k9", Self.otherKey) == "unknownKey")
    }
}

