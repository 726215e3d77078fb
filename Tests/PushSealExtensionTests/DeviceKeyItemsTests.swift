import Foundation
import PushSealCrypto
import PushSealJSON
@testable import PushSealKeyRecords
@testable import PushSealDeviceKeys
import PushSealDeviceKeyProviders
import PushSealKeychain
import PushSealSender
import PushSealWire
import PushSealTestSupport
import Testing
@testable import PushSealExtension

/// Version 2 from the device keychain (docs/keychain.md "Device key items"): the device key
/// stored as `push-keys device generate` stores it (``DeviceKeyItem/store``), sender keys pinned
/// as `device pin-sender` pins them, read by the real ``KeychainKeyProvider`` and
/// `WireFormatOpener(pinnedSenderKeys:)` in the real host, as the extension's identity.
@Suite struct DeviceKeyItemsTests {
    static let deviceKeyID = "dev-1"
    static let now: Int64 = 1_796_000_000

    /// A device keychain with the app's v2 device key; the extension opens from it.
    struct V2Device {
        let fixture: DeviceFixture
        let device: X25519.PrivateKey
        var app: Keychain { get throws { try Keychain(opening: fixture.keychainURL, as: DeviceFixture.appEntitlements) } }

        init() throws {
            fixture = try DeviceFixture()
            device = try X25519.PrivateKey()
            try DeviceKeyItem.store(device, keyID: DeviceKeyItemsTests.deviceKeyID, appID: casesAppID, in: try app,
                                    accessGroup: sharedGroup, now: DeviceKeyItemsTests.now - 100)
        }

        func pin(_ sender: V2EnvelopeSender) throws {
            try DeviceKeyItem.pinSender(try sender.pin, appID: casesAppID, in: try app, accessGroup: sharedGroup, now: DeviceKeyItemsTests.now)
        }

        /// Rewrites the item `keyID` of `kind` with a record (as a damaged or changed key),
        /// through the app's key manifest as every writer does (docs/keychain.md "The key manifest").
        func rewrite(_ kind: DeviceKeyKind, _ keyID: String, data: SecretBytes) throws {
            try DeviceKeyItem.writeItem(kind, keyID: keyID, appID: casesAppID, data: data, in: try app, accessGroup: sharedGroup)
        }

        /// Every run delivered exactly once, none dropped (waits on the watch, not on time).
        func expectOneDeliveryPerRun(sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(fixture.watch.waitUntilAllReleased(), sourceLocation: sourceLocation)
            #expect(fixture.logger.count("event=delivered") == fixture.watch.instanceCount, sourceLocation: sourceLocation)
            #expect(fixture.logger.count("event=dropped") == 0, sourceLocation: sourceLocation)
        }

        func host(entitlements: Entitlements = DeviceFixture.extensionEntitlements, keyGroup: String? = sharedGroup,
                  now: Int64 = DeviceKeyItemsTests.now) throws -> ExtensionHost {
            let keychain = try Keychain(opening: fixture.keychainURL, as: entitlements)
            let provider = KeychainKeyProvider(keychain: keychain, accessGroup: keyGroup, appID: casesAppID, now: { now })
            let config = DecryptingServiceConfiguration(appID: casesAppID, keyProvider: provider,
                                                        opener: WireFormatOpener(pinnedSenderKeys: provider), replayCapacity: 0, now: { now })
            return ExtensionHost(budgetSeconds: 5, logger: fixture.logger, makeExtension: fixture.watch.wrap(DecryptingServiceExtension.factory(config)))
        }

        func open(_ payload: JSONValue, host: ExtensionHost? = nil) throws -> ExtensionHost.Result {
            try (host ?? self.host()).run(UNNotificationRequest(identifier: UUID().uuidString, apnsPayload: payload))
        }

        /// A payload sealed to the device key (base mode, or auth mode by `sender`), `iat` given.
        func sealed(by sender: V2EnvelopeSender? = nil, keyID: String = DeviceKeyItemsTests.deviceKeyID, to key: X25519.PublicKey? = nil,
                    iat: Int64 = DeviceKeyItemsTests.now - 10) throws -> JSONObject {
            let alg = sender == nil ? HPKEBaseEnvelope.algorithmName : HPKEAuthEnvelope.algorithmName
            let sealing = SealingKey(keyID: keyID, key: SecretBytes(copying: (key ?? device.publicKey).rawRepresentation), algorithm: alg)
            let registry = try EnvelopeRegistry.standard.addingV2(sealingWithSenderKey: sender?.key, senderKeyID: sender?.id)
            let sealer = try NotificationSealer(appID: casesAppID, keys: InMemorySealingKeys([(casesAppID, "alice", sealing)]), registry: registry)
            let text = #"{"title":"Lunch?","body":"Noon","id":"\#(UUID().uuidString)","iat":\#(iat)}"#
            guard case .object(let o) = try JSONReader.parse(try sealer.seal(notificationJSON: Array(text.utf8), for: "alice").payload) else {
                throw FormatError(.missingField, "not an object")
            }
            return o
        }
    }

    struct V2EnvelopeSender {
        let key: X25519.PrivateKey
        let id: String
        init(_ id: String) throws { (key, self.id) = (try X25519.PrivateKey(), id) }
        var pin: PinnedSenderKey { get throws { try PinnedSenderKey(keyID: id, publicKey: key.publicKey) } }
    }

    /// `o` with its decoded `encrypted_data` passed through `change` (a damaged payload).
    static func withBox(_ o: JSONObject, _ change: (inout [UInt8]) -> Void) throws -> JSONValue {
        var bytes = [UInt8](try #require(Data(base64Encoded: o["encrypted_data"]?.stringValue ?? "")))
        change(&bytes)
        var damaged = o
        damaged["encrypted_data"] = .string(Data(bytes).base64EncodedString())
        return .object(damaged)
    }

    @Test func baseAndAuthOpenFromTheKeychainAndTheDowngradeIsRefusedOncePinned() throws {
        let d = try V2Device()
        defer { d.fixture.cleanUp() }
        let sender = try V2EnvelopeSender("snd-1")
        // Nothing pinned: base mode opens, auth mode has no key to authenticate it with.
        let base = try d.sealed()
        let r1 = try d.open(.object(base))
        #expect(r1.outcome == .decrypted, "\(r1.reason): \(r1.detail)")
        #expect(r1.content?.title == "Lunch?")
        #expect(try d.open(.object(try d.sealed(by: sender))).reason == "unknownSenderKey")
        // Pinned: auth mode opens, base mode is a downgrade.
        try d.pin(sender)
        let auth = try d.open(.object(try d.sealed(by: sender)))
        #expect(auth.outcome == .decrypted, "\(auth.reason): \(auth.detail)")
        let downgrade = try d.open(.object(try d.sealed()))
        #expect(downgrade.outcome == .original)
        #expect(downgrade.reason == "downgradeRefused")
        let unknown = try d.open(.object(try d.sealed(by: try V2EnvelopeSender("other"))))
        #expect(unknown.reason == "unknownSenderKey")
        // Each reason has its own detail: neither is called a malformed envelope.
        #expect(downgrade.detail.hasPrefix("refused a base-mode payload: the app pinned a sender key"), "\(downgrade.detail)")
        #expect(unknown.detail.hasPrefix("the payload's sender key is not pinned for this app"), "\(unknown.detail)")
        #expect(unknown.detail.contains("\"other\""), "\(unknown.detail)")
        for r in [downgrade, unknown] { #expect(!r.detail.contains("malformed"), "\(r.reason): \(r.detail)") }
        var noKeyID = try d.sealed(by: sender)
        noKeyID["key_id"] = nil
        let malformed = try d.open(.object(noKeyID))
        #expect(malformed.reason == "missingField:key_id")
        #expect(malformed.detail.hasPrefix("the payload's envelope is malformed: "), "\(malformed.detail)")
        d.expectOneDeliveryPerRun()
    }

    @Test func everyVersion2FallbackReasonThroughTheHostAndKeychain() throws {
        let d = try V2Device()
        defer { d.fixture.cleanUp() }
        let sender = try V2EnvelopeSender("snd-1")
        try d.pin(sender)
        let good = try d.sealed(by: sender)
        func reason(_ payload: JSONValue, host: ExtensionHost? = nil) throws -> String {
            let r = try d.open(payload, host: host)
            #expect(r.outcome == .original)
            #expect(r.content?.title != "Lunch?", "the original alert on a fallback, never the sealed text")
            return r.reason
        }
        #expect(try reason(try Self.withBox(good) { $0 = Array($0.prefix(31)) }) == "invalidEnc")
        #expect(try reason(try Self.withBox(good) { $0 = Array($0.prefix(40)) }) == "truncatedBox")
        #expect(try reason(try Self.withBox(good) { $0.replaceSubrange(0..<32, with: [UInt8](repeating: 0, count: 32)) }) == "zeroSharedSecret")
        #expect(try reason(try Self.withBox(good) { $0[$0.count - 1] ^= 1 }) == "authenticationFailed")
        // A key id the device does not hold; a v1 payload never reads the v2 key of the same id.
        #expect(try reason(.object(try d.sealed(by: sender, keyID: "dev-2"))) == "unknownKey")
        var v1 = good
        v1["enc_alg"] = .string("A256GCM")
        #expect(try reason(.object(v1)) == "unknownKey")
        // Sealed to another public key under the right key id.
        #expect(try reason(.object(try d.sealed(by: sender, to: try X25519.PrivateKey().publicKey))) == "authenticationFailed")
        // Device key status (docs/keychain.md reader rules).
        let raw = d.device.rawRepresentation
        let created = Self.now - 100
        try d.rewrite(.v2DeviceKey, Self.deviceKeyID, data: try DeviceKeyRecord(kind: .v2DeviceKey, status: .decryptOnly, createdAt: created,
                                                                                retiredAt: Self.now - 50, notAfter: Self.now + 100, key: raw).encoded())
        #expect(try reason(.object(try d.sealed(by: sender, iat: Self.now - 20))) == "keys:keyRetired")
        let withinGrace = try d.open(.object(try d.sealed(by: sender, iat: Self.now - 60)))
        #expect(withinGrace.outcome == .decrypted, "\(withinGrace.reason)")
        #expect(try reason(.object(try d.sealed(by: sender, iat: Self.now - 60)), host: try d.host(now: Self.now + 100)) == "keyExpired")
        try d.rewrite(.v2DeviceKey, Self.deviceKeyID, data: try DeviceKeyRecord(kind: .v2DeviceKey, status: .disabled, createdAt: created,
                                                                                retiredAt: Self.now - 50, key: raw).encoded())
        #expect(try reason(.object(good)) == "keyDisabled")
        try d.rewrite(.v2DeviceKey, Self.deviceKeyID, data: SecretBytes(copying: [UInt8](repeating: 7, count: 58)))
        #expect(try reason(.object(good)) == "corruptKey")
        try d.rewrite(.v2DeviceKey, Self.deviceKeyID, data: try DeviceKeyRecord(kind: .v2DeviceKey, status: .primary, createdAt: created, key: raw).encoded())
        #expect(try d.open(.object(try d.sealed(by: sender))).outcome == .decrypted)
        // The pinned sender key's status and record.
        let pinnedRaw = SecretBytes(copying: sender.key.publicKey.rawRepresentation)
        try d.rewrite(.senderKey, sender.id, data: try DeviceKeyRecord(kind: .senderKey, status: .disabled, createdAt: created,
                                                                       retiredAt: Self.now - 50, key: pinnedRaw).encoded())
        #expect(try reason(.object(good)) == "keyDisabled")
        try d.rewrite(.senderKey, sender.id, data: try DeviceKeyRecord(kind: .senderKey, status: .decryptOnly, createdAt: created,
                                                                       retiredAt: Self.now - 50, notAfter: Self.now + 100, key: pinnedRaw).encoded())
        #expect(try reason(.object(try d.sealed(by: sender, iat: Self.now - 20))) == "keys:keyRetired")
        try d.rewrite(.senderKey, sender.id, data: try DeviceKeyRecord(kind: .v2DeviceKey, status: .primary, createdAt: created, key: pinnedRaw).encoded())
        #expect(try reason(.object(good)) == "corruptKey")
        // A damaged pin still counts as pinned: base mode stays refused.
        #expect(try reason(.object(try d.sealed())) == "downgradeRefused")
        try d.rewrite(.senderKey, sender.id, data: try DeviceKeyRecord(kind: .senderKey, status: .primary, createdAt: created, key: pinnedRaw).encoded())
        #expect(try d.open(.object(try d.sealed(by: sender))).outcome == .decrypted)
        // The keychain's own refusals: before first unlock (-25308), a group the extension lacks (-34018).
        let other = Entitlements(applicationIdentifier: "TEAM.other", keychainAccessGroups: ["TEAM.other"], applicationGroups: [])
        #expect(try reason(.object(good), host: try d.host(entitlements: other)) == "keychain:errSecMissingEntitlement(-34018)")
        try d.fixture.setDeviceState(.beforeFirstUnlock)
        #expect(try reason(.object(good)) == "keychain:errSecInteractionNotAllowed(-25308)")
        d.expectOneDeliveryPerRun()
    }

    @Test func theReaderRefusesWhatBreaksTheLayout() throws {
        let d = try V2Device()
        defer { d.fixture.cleanUp() }
        let keyring = DeviceKeyring(keychain: try d.app, accessGroup: sharedGroup)
        let record = try #require(try keyring.record(.v2DeviceKey, keyID: Self.deviceKeyID, appID: casesAppID))
        #expect(record.kind == .v2DeviceKey && record.status == .primary && record.createdAt == Self.now - 100)
        #expect(record.retiredAt == nil && record.notAfter == nil)
        #expect(record.key == d.device.rawRepresentation)
        #expect(try keyring.record(.v1Key, keyID: Self.deviceKeyID, appID: casesAppID) == nil)
        var bytes = try record.encoded().copyBytes()
        #expect(bytes.count == 59)
        for (offset, value) in [(0, UInt8(2)), (1, 0), (1, 4), (2, 0), (2, 5)] {
            var bad = bytes
            bad[offset] = value
            try d.rewrite(.v2DeviceKey, Self.deviceKeyID, data: SecretBytes(copying: bad))
            expectCode(KeysError.Code.corruptKey) { _ = try keyring.record(.v2DeviceKey, keyID: Self.deviceKeyID, appID: casesAppID) }
        }
        bytes.append(0)
        try d.rewrite(.v2DeviceKey, Self.deviceKeyID, data: SecretBytes(copying: bytes))
        expectCode(KeysError.Code.corruptKey) { _ = try keyring.record(.v2DeviceKey, keyID: Self.deviceKeyID, appID: casesAppID) }
    }
}
