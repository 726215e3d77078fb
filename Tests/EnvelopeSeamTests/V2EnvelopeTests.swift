import Foundation
import Testing
import PushSealCrypto
import PushSealJSON
import PushSealSystem
import PushSealWire
import PushSealSender
import PushSealExtension

/// Wire format v2 (FORMAT.md §V) through the real sender and the real extension: the HPKE
/// entries are registry entries and nothing else changes.
@Suite struct V2EnvelopeTests {
    static let appID = "com.example.app"
    static let deviceKeyID = "dev-v2"

    /// A device: its private keys by key id.
    struct DeviceKeys: NotificationKeyProvider {
        let keys: [String: X25519.PrivateKey]
        func key(for keyID: String) throws -> SecretBytes {
            guard let k = keys[keyID] else { throw FormatError(.invalidKeyID, "no device key \(keyID)") }
            return SecretBytes(copying: k.rawRepresentation.copyBytes())
        }
    }

    struct Sender {
        let key: X25519.PrivateKey
        let id: String
        var pin: PinnedSenderKey { get throws { try PinnedSenderKey(keyID: id, publicKey: key.publicKey) } }
    }

    static func sender(_ id: String) throws -> Sender { Sender(key: try X25519.PrivateKey(), id: id) }

    /// A sealer for `alice` = `device` under `deviceKeyID`, in auth mode with `sender`, else base mode.
    static func sealer(to device: X25519.PrivateKey, sender: Sender?, appID: String = appID) throws -> NotificationSealer {
        let alg = sender == nil ? HPKEBaseEnvelope.algorithmName : HPKEAuthEnvelope.algorithmName
        let key = SealingKey(keyID: deviceKeyID, key: SecretBytes(copying: device.publicKey.rawRepresentation), algorithm: alg)
        let registry = try EnvelopeRegistry.standard.addingV2(sealingWithSenderKey: sender?.key, senderKeyID: sender?.id)
        return try NotificationSealer(appID: appID, keys: InMemorySealingKeys([(appID, "alice", key)]), registry: registry)
    }

    static func open(_ payload: JSONValue, device: X25519.PrivateKey, pinned: [PinnedSenderKey]) -> ExtensionHost.Result {
        let config = DecryptingServiceConfiguration(appID: appID, keyProvider: DeviceKeys(keys: [deviceKeyID: device]),
                                                    opener: WireFormatOpener(registry: .opening(pinnedSenders: pinned)), replayCapacity: 0)
        let host = ExtensionHost(budgetSeconds: 5, makeExtension: DecryptingServiceExtension.factory(config))
        return host.run(UNNotificationRequest(identifier: "v2", apnsPayload: payload))
    }

    static let notification = Array(#"{"title":"Lunch?","body":"Noon at the usual place","id":"v2-1"}"#.utf8)

    static func sealed(_ sealer: NotificationSealer) throws -> JSONObject {
        let payload = try JSONReader.parse(try sealer.seal(notificationJSON: notification, for: "alice").payload)
        guard case .object(let o) = payload else { throw FormatError(.missingField, "not an object") }
        return o
    }

    static func withBox(_ o: JSONObject, _ change: (inout [UInt8]) -> Void) throws -> JSONValue {
        var copy = o
        var box = try WireBase64.decode(o["encrypted_data"]?.stringValue ?? "")
        change(&box)
        copy["encrypted_data"] = .string(WireBase64.encode(box))
        return .object(copy)
    }

    @Test func authModeSealsAndOpensThroughTheRealExtension() throws {
        let device = try X25519.PrivateKey(), s = try Self.sender("snd-1")
        let o = try Self.sealed(try Self.sealer(to: device, sender: s))
        #expect(o["enc_alg"]?.stringValue == "HPKE-AUTH-X25519-A256GCM")
        #expect(o["sender_key_id"]?.stringValue == "snd-1")
        #expect(o["key_id"]?.stringValue == Self.deviceKeyID)
        let r = Self.open(.object(o), device: device, pinned: [try s.pin])
        #expect(r.outcome == .decrypted, "\(r.reason): \(r.detail)")
        #expect(r.content?.title == "Lunch?")
        #expect(r.content?.body == "Noon at the usual place")
        // A version-1-only extension shows the original content (FORMAT.md §V.10).
        let config = DecryptingServiceConfiguration(appID: Self.appID, keyProvider: DeviceKeys(keys: [Self.deviceKeyID: device]), replayCapacity: 0)
        let v1 = ExtensionHost(budgetSeconds: 5, makeExtension: DecryptingServiceExtension.factory(config))
            .run(UNNotificationRequest(identifier: "v1", apnsPayload: .object(o)))
        #expect(v1.outcome == .original)
        #expect(v1.reason == "unknownAlgorithm")
    }

    @Test func baseModeOpensOnAnAppThatPinnedNothing() throws {
        let device = try X25519.PrivateKey()
        let o = try Self.sealed(try Self.sealer(to: device, sender: nil))
        #expect(o["enc_alg"]?.stringValue == "HPKE-BASE-X25519-A256GCM")
        #expect(o["sender_key_id"] == nil)
        let r = Self.open(.object(o), device: device, pinned: [])
        #expect(r.outcome == .decrypted, "\(r.reason): \(r.detail)")
        #expect(r.content?.title == "Lunch?")
    }

    /// The downgrade: a base-mode payload (which anyone with the device's public key can make)
    /// on an app that pinned a sender key is refused before any key lookup.
    @Test func baseModeIsRefusedOnAnAppThatPinnedASender() throws {
        let device = try X25519.PrivateKey(), s = try Self.sender("snd-1")
        let o = try Self.sealed(try Self.sealer(to: device, sender: nil))
        let r = Self.open(.object(o), device: device, pinned: [try s.pin])
        #expect(r.outcome == .original)
        #expect(r.reason == "downgradeRefused")
        #expect(r.content?.title != "Lunch?")
    }

    @Test func fallbackReasonsOfVersion2() throws {
        let device = try X25519.PrivateKey(), s = try Self.sender("snd-1"), other = try Self.sender("snd-2")
        let auth = try Self.sealed(try Self.sealer(to: device, sender: s))
        let pinned = [try s.pin]
        func reason(_ p: JSONValue, pinned: [PinnedSenderKey] = pinned) -> String {
            let r = Self.open(p, device: device, pinned: pinned)
            #expect(r.outcome == .original, "\(r.reason)")
            #expect(r.content?.title != "Lunch?")
            return r.reason
        }
        #expect(reason(try Self.withBox(auth) { $0 = Array($0.prefix(31)) }) == "invalidEnc")
        #expect(reason(try Self.withBox(auth) { $0 = Array($0.prefix(47)) }) == "truncatedBox")
        #expect(reason(try Self.withBox(auth) { $0.replaceSubrange(0..<32, with: [UInt8](repeating: 0, count: 32)) }) == "zeroSharedSecret")
        #expect(reason(try Self.withBox(auth) { $0[$0.count - 1] ^= 1 }) == "authenticationFailed")
        #expect(reason(try Self.withBox(auth) { $0[0] ^= 0x40 }) == "authenticationFailed")
        #expect(reason(.object(auth), pinned: []) == "unknownSenderKey")
        #expect(reason(.object(auth), pinned: [try other.pin]) == "unknownSenderKey")
        // Sealed by another sender key under the pinned sender key id: the auth DH differs.
        let forged = try Self.sealed(try Self.sealer(to: device, sender: Sender(key: other.key, id: "snd-1")))
        #expect(reason(.object(forged)) == "authenticationFailed")
        var o = auth
        o["sender_key_id"] = nil
        #expect(reason(.object(o)) == "missingField:sender_key_id")
        o["sender_key_id"] = .integer(1)
        #expect(reason(.object(o)) == "wrongFieldType:sender_key_id")
        o["sender_key_id"] = .string("")
        #expect(reason(.object(o)) == "emptyField:sender_key_id")
        o["sender_key_id"] = .string("a|b")
        #expect(reason(.object(o)) == "invalidKeyID")
        // A low-order pinned sender key.
        let zeroPin = try PinnedSenderKey(keyID: "snd-1", publicKey: try X25519.PublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32)))
        #expect(reason(.object(auth), pinned: [zeroPin]) == "zeroSharedSecret")
        // A device key of the wrong size from the provider.
        struct Short: NotificationKeyProvider { func key(for keyID: String) throws -> SecretBytes { SecretBytes(copying: [1, 2, 3]) } }
        let config = DecryptingServiceConfiguration(appID: Self.appID, keyProvider: Short(), opener: WireFormatOpener(registry: .opening(pinnedSenders: pinned)),
                                                    replayCapacity: 0)
        let short = ExtensionHost(budgetSeconds: 5, makeExtension: DecryptingServiceExtension.factory(config))
            .run(UNNotificationRequest(identifier: "short", apnsPayload: .object(auth)))
        #expect(short.reason == "invalidKey")
    }

    /// A registration for another app: the server sealed to this device key with another app
    /// id; the `info` differs, so the tag fails.
    @Test func aRegistrationForAnotherAppFailsToAuthenticate() throws {
        let device = try X25519.PrivateKey(), s = try Self.sender("snd-1")
        for sender in [s, nil] as [Sender?] {
            let o = try Self.sealed(try Self.sealer(to: device, sender: sender, appID: "com.example.other"))
            let r = Self.open(.object(o), device: device, pinned: sender == nil ? [] : [try s.pin])
            #expect(r.outcome == .original)
            #expect(r.reason == "authenticationFailed")
        }
    }

    /// A sender key rotation: with both keys pinned, payloads of both open; once the old key is
    /// unpinned its payloads are refused.
    @Test func senderKeyRotationWithBothKeysPinned() throws {
        let device = try X25519.PrivateKey(), old = try Self.sender("snd-old"), new = try Self.sender("snd-new")
        let byOld = try Self.sealed(try Self.sealer(to: device, sender: old))
        let byNew = try Self.sealed(try Self.sealer(to: device, sender: new))
        let both = [try old.pin, try new.pin]
        for p in [byOld, byNew] {
            let r = Self.open(.object(p), device: device, pinned: both)
            #expect(r.outcome == .decrypted, "\(r.reason): \(r.detail)")
        }
        #expect(Self.open(.object(byOld), device: device, pinned: [try new.pin]).reason == "unknownSenderKey")
        #expect(Self.open(.object(byNew), device: device, pinned: [try new.pin]).outcome == .decrypted)
    }

    /// One extension configuration (one opener, so one device key cache) across a device key
    /// replaced under the same key id: the new key opens what is sealed to it, the old key's
    /// payloads no longer open, and nothing opens with a stale cached key.
    @Test func aDeviceKeyReplacedUnderItsKeyIDIsNotServedFromTheCache() throws {
        final class ReplaceableKeys: NotificationKeyProvider {
            let current: Locked<X25519.PrivateKey>
            init(_ key: X25519.PrivateKey) { current = Locked(key) }
            func key(for keyID: String) throws -> SecretBytes {
                SecretBytes(copying: current.withLock { $0 }.rawRepresentation.copyBytes())
            }
        }
        let old = try X25519.PrivateKey(), new = try X25519.PrivateKey(), s = try Self.sender("snd-1")
        let keys = ReplaceableKeys(old)
        let config = DecryptingServiceConfiguration(appID: Self.appID, keyProvider: keys,
                                                    opener: WireFormatOpener(registry: .opening(pinnedSenders: [try s.pin])), replayCapacity: 0)
        func open(_ o: JSONObject) -> ExtensionHost.Result {
            ExtensionHost(budgetSeconds: 5, makeExtension: DecryptingServiceExtension.factory(config))
                .run(UNNotificationRequest(identifier: "rotate", apnsPayload: .object(o)))
        }
        let toOld = try Self.sealed(try Self.sealer(to: old, sender: s)), toNew = try Self.sealed(try Self.sealer(to: new, sender: s))
        #expect(open(toOld).outcome == .decrypted)
        #expect(open(toOld).outcome == .decrypted)  // the second open uses the cached import
        #expect(open(toNew).reason == "authenticationFailed")
        keys.current.withLock { $0 = new }
        #expect(open(toNew).outcome == .decrypted)
        #expect(open(toOld).reason == "authenticationFailed")
    }

    @Test func anEntryConfiguredForOpeningCannotSeal() throws {
        let device = try X25519.PrivateKey()
        let key = SealingKey(keyID: Self.deviceKeyID, key: SecretBytes(copying: device.publicKey.rawRepresentation), algorithm: HPKEAuthEnvelope.algorithmName)
        let sealer = try NotificationSealer(appID: Self.appID, keys: InMemorySealingKeys([(Self.appID, "alice", key)]),
                                            registry: try EnvelopeRegistry.standard.addingV2())
        #expect(throws: SenderError(.sealFailed, "")) { try sealer.seal(notificationJSON: Self.notification, for: "alice") }
        #expect(EnvelopeRegistry.standard.names == ["A256GCM"])
        #expect(EnvelopeRegistry.opening(pinnedSenders: []).names == ["A256GCM", "HPKE-BASE-X25519-A256GCM", "HPKE-AUTH-X25519-A256GCM"])
    }

    @Test func senderKeyRecordIsRead() throws {
        let pk = try #require(WireBase64.decode("NYBy1jZYgNGu6jKa35EhODhR7SGijjt16WXQ0s0WYlQ=") as [UInt8]?)
        let record = Array(#"{"format":"pushseal-sender-key","version":2,"appId":"com.example.app","senderKeyId":"oCiYEAMutBcnTuvE","publicKey":"NYBy1jZYgNGu6jKa35EhODhR7SGijjt16WXQ0s0WYlQ=","extra":1}"#.utf8)
        let pin = try PinnedSenderKey(record: record, appID: Self.appID)
        #expect(pin.keyID == "oCiYEAMutBcnTuvE")
        #expect(pin.publicKey.rawRepresentation == pk)
        #expect(throws: FormatError(.invalidKey, "")) { try PinnedSenderKey(record: record, appID: "com.example.other") }
        let v1 = Array(String(decoding: record, as: UTF8.self).replacingOccurrences(of: "\"version\":2", with: "\"version\":1").utf8)
        #expect(throws: FormatError(.invalidKey, "")) { try PinnedSenderKey(record: v1, appID: Self.appID) }
    }
}
