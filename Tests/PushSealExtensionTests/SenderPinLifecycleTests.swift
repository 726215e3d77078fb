import Foundation
import PushSealCrypto
import PushSealJSON
@testable import PushSealKeyRecords
@testable import PushSealDeviceKeys
import PushSealDeviceKeyProviders
import PushSealKeychain
import PushSealServerKeys
import PushSealSender
import PushSealWire
import PushSealTestSupport
import Testing
@testable import PushSealExtension

/// Security review G2, G14, G15 on the emulated device (the iOS reference's LinuxCheck
/// `senderPins` checks the same rules): a pin ends version 1 with a dated window and a v1 key
/// kept for ever is a downgrade once a sender key is pinned; a pin carries its record's status
/// and an end the device measures; a retired pin is unpinned after it while another remains.
@Suite struct SenderPinLifecycleTests {
    typealias D = DeviceKeyItemsTests
    static let now = D.now
    static let day: Int64 = 86_400

    /// A v1 payload sealed with `key` under `keyID`, `iat` given.
    static func sealedV1(_ key: [UInt8], keyID: String, iat: Int64) throws -> JSONValue {
        let sealing = SealingKey(keyID: keyID, key: SecretBytes(copying: key))
        let sealer = try NotificationSealer(appID: casesAppID, keys: InMemorySealingKeys([(casesAppID, "alice", sealing)]))
        let text = #"{"title":"Lunch?","body":"Noon","id":"\#(UUID().uuidString)","iat":\#(iat)}"#
        return try JSONReader.parse(try sealer.seal(notificationJSON: Array(text.utf8), for: "alice").payload)
    }

    @Test("G2: pinning ends v1 with a 30-day window; v1 sealed before the pin opens in it, after it or later not; a v1 key kept without an end is a downgrade")
    func versionOneEndsWithThePin() throws {
        let d = try D.V2Device()
        defer { d.fixture.cleanUp() }
        let v1 = [UInt8](repeating: 7, count: 32)
        try d.rewrite(.v1Key, "v1-1", data: try DeviceKeyItem.record(kind: 1, status: .primary, createdAt: Self.now - 1000, key: SecretBytes(copying: v1)))
        let before = try Self.sealedV1(v1, keyID: "v1-1", iat: Self.now - 10)
        #expect(try d.open(before).outcome == .decrypted)
        try d.pin(try D.V2EnvelopeSender("snd-1"))
        let item = try #require(try DeviceKeyring(keychain: try d.app, accessGroup: sharedGroup).record(.v1Key, keyID: "v1-1", appID: casesAppID))
        #expect(item.status == .decryptOnly && item.retiredAt == Self.now && item.notAfter == Self.now + 30 * Self.day)
        let inWindow = try d.open(before, host: try d.host(now: Self.now + 29 * Self.day))
        #expect(inWindow.outcome == .decrypted, "\(inWindow.reason): \(inWindow.detail)")
        #expect(try d.open(try Self.sealedV1(v1, keyID: "v1-1", iat: Self.now + 5), host: try d.host(now: Self.now + 10)).reason == "keys:keyRetired")
        #expect(try d.open(before, host: try d.host(now: Self.now + 30 * Self.day)).reason == "keyExpired")
        // A v1 key kept for ever (written back primary, around pin-sender) opens nothing once a sender is pinned.
        try d.rewrite(.v1Key, "v1-1", data: try DeviceKeyItem.record(kind: 1, status: .primary, createdAt: Self.now - 1000, key: SecretBytes(copying: v1)))
        let downgrade = try d.open(before)
        #expect(downgrade.outcome == .original && downgrade.reason == "downgradeRefused", "\(downgrade.reason): \(downgrade.detail)")
    }

    @Test("G15, G14: a retired sender key is pinned decryptOnly until the earlier of its notAfter and first sight + 30 days; iat after retirement refused; unpinned after it while another pin remains")
    func retiredSenderPins() throws {
        let d = try D.V2Device()
        defer { d.fixture.cleanUp() }
        let old = try D.V2EnvelopeSender("snd-old"), next = try D.V2EnvelopeSender("snd-new")
        try d.pin(old)
        let beforeRetirement = try d.sealed(by: old, iat: Self.now - 60)
        // The server retires it (retiredAt now - 50) and publishes a far notAfter: the device keeps 30 days from now.
        var retired = try old.pin
        retired.status = .decryptOnly
        retired.retiredAt = Self.now - 50
        retired.notAfter = Self.now + 400 * Self.day
        let app = try d.app
        try DeviceKeyItem.pinSender(retired, appID: casesAppID, in: app, accessGroup: sharedGroup, now: Self.now)
        let pin = try #require(try DeviceKeyring(keychain: app, accessGroup: sharedGroup).record(.senderKey, keyID: "snd-old", appID: casesAppID))
        #expect(pin.status == .decryptOnly && pin.retiredAt == Self.now - 50 && pin.notAfter == Self.now + 30 * Self.day)
        #expect(try d.open(.object(beforeRetirement)).outcome == .decrypted)
        #expect(try d.open(.object(try d.sealed(by: old, iat: Self.now - 40))).reason == "keys:keyRetired")
        #expect(try d.open(.object(beforeRetirement), host: try d.host(now: Self.now + 30 * Self.day)).reason == "keyExpired")
        // Published again as primary (a stale list): the pin does not move back.
        try d.pin(old)
        #expect(try DeviceKeyring(keychain: app, accessGroup: sharedGroup).record(.senderKey, keyID: "snd-old", appID: casesAppID)?.status == .decryptOnly)
        // The last pin stays (the downgrade check stays on); with the next key pinned it goes.
        let end = Self.now + 30 * Self.day
        #expect(!(try DeviceKeyItem.prune(appID: casesAppID, in: app, accessGroup: sharedGroup, now: end)).contains("snd-old"))
        try d.pin(next)
        #expect(try DeviceKeyItem.prune(appID: casesAppID, in: app, accessGroup: sharedGroup, now: end).contains("snd-old"))
        #expect(try DeviceKeyring(keychain: app, accessGroup: sharedGroup).pinnedSenderKeyIDs(appID: casesAppID) == ["snd-new"])
    }

    @Test("G15: a sender key record carries status, retiredAt and notAfter; bad values are refused")
    func senderRecordStatus() throws {
        let key = try X25519.PrivateKey().publicKey
        let info = SenderKeyInfo(appID: casesAppID, keyID: "snd-1", publicKey: key, status: .decryptOnly, createdAt: 1, retiredAt: 5, notAfter: 9)
        let parsed = try PinnedSenderKey(record: try JSONWriter.serialize(.object(info.record)), appID: casesAppID)
        #expect(parsed.status == .decryptOnly && parsed.retiredAt == 5 && parsed.notAfter == 9)
        let plain = #"{"format":"pushseal-sender-key","version":2,"appId":"\#(casesAppID)","senderKeyId":"s","publicKey":"\#(WireBase64.encode(key.rawRepresentation))""#
        #expect(try PinnedSenderKey(record: Array((plain + "}").utf8), appID: casesAppID).status == .primary)
        #expect(throws: FormatError.self) { try PinnedSenderKey(record: Array((plain + #","status":"retired"}"#).utf8), appID: casesAppID) }
        #expect(throws: FormatError.self) { try PinnedSenderKey(record: Array((plain + #","notAfter":"soon"}"#).utf8), appID: casesAppID) }
    }
}
