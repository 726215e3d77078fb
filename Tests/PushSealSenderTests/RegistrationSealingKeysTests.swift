import PushSealTestSupport
import Foundation
import PushSealCrypto
import PushSealJSON
import PushSealWire
import PushSealKeyRecords
import PushSealDeviceKeys
import PushSealServerKeys
import PushSealServerKeyProviders
import PushSealKeychain
import PushSealSender
import Testing

/// ``RegistrationSealingKeys`` through the real sealer and batch sealer: v2 for a registered
/// recipient (auth mode with a sender key), v1 for a keyset, the cache seeing a new registration
/// and a revocation, and every v2 payload opened by the wire module's own v2 entries.
@Suite struct RegistrationSealingKeysTests {
    static let appID = "com.example.app"

    struct Scratch {
        let temporary: TemporaryDirectory
        let store: KeyStore
        init() throws {
            temporary = try TemporaryDirectory("registration-keys")
            let dir = temporary.appending("server")
            try Keychain.create(at: dir)
            store = try KeyStore(keychain: try Keychain(opening: dir, as: KeyStore.serverIdentity), audit: .none)
        }
    }

    /// Registers a fresh device key for `recipient`; returns its private key and key id.
    static func register(_ store: KeyStore, _ recipient: String, createdAt: Int64 = 1_800_000_000) throws -> (key: X25519.PrivateKey, keyID: String) {
        let key = try X25519.PrivateKey()
        let keyID = try DeviceKeyItem.keyID(for: key.publicKey)
        try store.register(try DeviceRegistration(appID: appID, keyID: keyID, publicKey: key.publicKey, createdAt: createdAt),
                           recipient: recipient, now: createdAt)
        return (key, keyID)
    }

    /// Opens a payload as a device holding `device` and pinning `pinned`.
    static func open(_ payload: [UInt8], device: X25519.PrivateKey, pinned: [PinnedSenderKey]) throws -> PushSealWire.PushNotification {
        let registry = EnvelopeRegistry.opening(pinnedSenders: pinned)
        let sealed = try SealedPayload(payload: try JSONReader.parse(payload), registry: registry)
        return try sealed.open(with: device.rawRepresentation, appID: appID)
    }

    static func note(_ text: String) -> [UInt8] { Array(#"{"title":"t","body":"\#(text)"}"#.utf8) }

    @Test func sealsV2InAuthModeAndV1ForKeysets() throws {
        let s = try Scratch()
        let alice = try Self.register(s.store, "alice")
        try s.store.generate(appID: Self.appID, recipient: "bob")
        let sender = try s.store.generateSenderKey(appID: Self.appID)
        let keys = try RegistrationSealingKeys(store: s.store, appID: Self.appID)
        #expect(keys.senderKeyID == sender.keyID)
        let sealer = try NotificationSealer(appID: Self.appID, keys: keys, registry: keys.registry)
        let sealed = try sealer.seal(notificationJSON: Self.note("hello"), for: "alice")
        #expect(sealed.keyID == alice.keyID)
        let pinned = try PinnedSenderKey(keyID: sender.keyID, publicKey: sender.publicKey)
        #expect(try Self.open(sealed.payload, device: alice.key, pinned: [pinned]).body == "hello")
        let object = try #require(try JSONReader.parse(sealed.payload).objectValue)
        #expect(object["enc_alg"]?.stringValue == HPKEAuthEnvelope.algorithmName && object["sender_key_id"]?.stringValue == sender.keyID)
        // bob: v1, counted as before.
        let v1 = try sealer.seal(notificationJSON: Self.note("v1"), for: "bob")
        #expect(try JSONReader.parse(v1.payload).objectValue?["enc_alg"]?.stringValue == "A256GCM")
        #expect(try s.store.keyset(appID: Self.appID, recipient: "bob").primary?.sealCount ?? 0 >= 1)
    }

    @Test func baseModeWithoutASenderKeyAndTheFormatPolicy() throws {
        let s = try Scratch()
        let alice = try Self.register(s.store, "alice")
        try s.store.generate(appID: Self.appID, recipient: "bob")
        let keys = try RegistrationSealingKeys(store: s.store, appID: Self.appID, policy: .v2)
        #expect(keys.senderKeyID == nil)
        let sealed = try NotificationSealer(appID: Self.appID, keys: keys, registry: keys.registry).seal(notificationJSON: Self.note("base"), for: "alice")
        #expect(try Self.open(sealed.payload, device: alice.key, pinned: []).body == "base")
        #expect(throws: SealingKeyError(.unknownRecipient, "")) { try keys.primaryKey(appID: Self.appID, recipient: "bob") }
        let v1Only = try RegistrationSealingKeys(store: s.store, appID: Self.appID, policy: .v1)
        #expect(throws: SealingKeyError(.unknownRecipient, "")) { try v1Only.primaryKey(appID: Self.appID, recipient: "alice") }
        #expect(try v1Only.primaryKey(appID: Self.appID, recipient: "bob").algorithm == "A256GCM")
    }

    /// A new registration or a revocation by another writer is seen at the next seal; in a
    /// batch, at the first seal of the next chunk.
    @Test func theCacheSeesNewRegistrationsAndRevocations() throws {
        let s = try Scratch()
        let first = try Self.register(s.store, "alice", createdAt: 1_800_000_000)
        let keys = try RegistrationSealingKeys(store: s.store, appID: Self.appID)
        #expect(try keys.primaryKey(appID: Self.appID, recipient: "alice").keyID == first.keyID)
        let second = try Self.register(s.store, "alice", createdAt: 1_800_000_100)
        #expect(try keys.primaryKey(appID: Self.appID, recipient: "alice").keyID == second.keyID)
        keys.beginBatch()
        #expect(try keys.primaryKey(appID: Self.appID, recipient: "alice").keyID == second.keyID)
        try s.store.revokeRegistration(appID: Self.appID, recipient: "alice", keyID: second.keyID, now: 1_800_000_200)
        keys.beginBatch()
        #expect(throws: SealingKeyError(.keyUnavailable, "")) { try keys.primaryKey(appID: Self.appID, recipient: "alice") }
    }

    /// The auth pair of a registration (static-static DH with the sender key) is cached per
    /// key id; when the recipient registers a new key, the former key id's pair is dropped and
    /// seals go to the new key only; a revocation drops it too.
    @Test func aNewRegistrationDropsTheFormerCachedPair() throws {
        let s = try Scratch()
        let first = try Self.register(s.store, "alice", createdAt: 1_800_000_000)
        let sender = try s.store.generateSenderKey(appID: Self.appID)
        let pinned = [try PinnedSenderKey(keyID: sender.keyID, publicKey: sender.publicKey)]
        let keys = try RegistrationSealingKeys(store: s.store, appID: Self.appID)
        let sealer = try NotificationSealer(appID: Self.appID, keys: keys, registry: keys.registry)
        for i in 0..<3 {
            let sealed = try sealer.seal(notificationJSON: Self.note("one \(i)"), for: "alice")
            #expect(try Self.open(sealed.payload, device: first.key, pinned: pinned).body == "one \(i)")
        }
        #expect(keys.pairCache.count == 1)
        let second = try Self.register(s.store, "alice", createdAt: 1_800_000_100)
        let sealed = try sealer.seal(notificationJSON: Self.note("two"), for: "alice")
        #expect(sealed.keyID == second.keyID)
        #expect(try Self.open(sealed.payload, device: second.key, pinned: pinned).body == "two")
        #expect(throws: FormatError(.authenticationFailed, "")) { try Self.open(sealed.payload, device: first.key, pinned: pinned) }
        #expect(keys.pairCache.count == 1)  // the new registration's pair only: the former one was dropped
        try s.store.revokeRegistration(appID: Self.appID, recipient: "alice", keyID: second.keyID, now: 1_800_000_200)
        #expect(throws: SealingKeyError(.keyUnavailable, "")) { try keys.primaryKey(appID: Self.appID, recipient: "alice") }
        #expect(keys.pairCache.count == 0)
    }

    /// A rotated sender key: the next provider (the next `push-seal` run) seals as the new key;
    /// its payload authenticates with the new pinned key only, never the former's cached pair.
    @Test func aRotatedSenderKeySealsAsTheNewKey() throws {
        let s = try Scratch()
        let alice = try Self.register(s.store, "alice")
        let old = try s.store.generateSenderKey(appID: Self.appID)
        let before = try RegistrationSealingKeys(store: s.store, appID: Self.appID)
        let oldPayload = try NotificationSealer(appID: Self.appID, keys: before, registry: before.registry)
            .seal(notificationJSON: Self.note("old"), for: "alice").payload
        let new = try s.store.rotateSenderKey(appID: Self.appID)
        #expect(new.keyID != old.keyID)
        let after = try RegistrationSealingKeys(store: s.store, appID: Self.appID)
        #expect(after.senderKeyID == new.keyID)
        let payload = try NotificationSealer(appID: Self.appID, keys: after, registry: after.registry).seal(notificationJSON: Self.note("new"), for: "alice").payload
        let newPin = try PinnedSenderKey(keyID: new.keyID, publicKey: new.publicKey), oldPin = try PinnedSenderKey(keyID: old.keyID, publicKey: old.publicKey)
        #expect(try Self.open(payload, device: alice.key, pinned: [newPin]).body == "new")
        #expect(throws: FormatError(.unknownSenderKey, "")) { try Self.open(payload, device: alice.key, pinned: [oldPin]) }
        // The same key id pinned with the former key's bytes does not authenticate it either.
        #expect(throws: FormatError(.authenticationFailed, "")) {
            try Self.open(payload, device: alice.key, pinned: [try PinnedSenderKey(keyID: new.keyID, publicKey: old.publicKey)])
        }
        #expect(try Self.open(oldPayload, device: alice.key, pinned: [oldPin, newPin]).body == "old")
    }

    /// `BatchSealer` with two workers: every line sealed for its recipient's version, in order.
    @Test func batchSealsBothVersionsInParallel() throws {
        let s = try Scratch()
        let alice = try Self.register(s.store, "alice")
        try s.store.generate(appID: Self.appID, recipient: "bob")
        let sender = try s.store.generateSenderKey(appID: Self.appID)
        let keys = try RegistrationSealingKeys(store: s.store, appID: Self.appID)
        let batch = BatchSealer(sealer: try NotificationSealer(appID: Self.appID, keys: keys, registry: keys.registry), concurrency: 2)
        let lines = (0..<200).map { i in
            BatchSealer.Line(number: i + 1, bytes: Array(#"{"recipient":"\#(i % 3 == 0 ? "bob" : "alice")","notification":{"title":"t","body":"n\#(i)"}}"#.utf8))
        }
        let chunk = batch.seal(lines)
        #expect(chunk.failureCount == 0)
        let out = chunk.output.split(separator: UInt8(ascii: "\n"))
        #expect(out.count == lines.count)
        let pinned = try PinnedSenderKey(keyID: sender.keyID, publicKey: sender.publicKey)
        for (i, line) in out.enumerated() {
            let row = try #require(try JSONReader.parse(Array(line)).objectValue)
            let payload = try #require(row["payload"])
            let bytes = try JSONWriter.serialize(payload)
            if i % 3 == 0 {
                #expect(payload["enc_alg"]?.stringValue == "A256GCM")
            } else {
                #expect(try Self.open(bytes, device: alice.key, pinned: [pinned]).body == "n\(i)")
            }
        }
    }
}

/// A batch chunk's v1 keys load in bulk through ``RegistrationSealingKeys`` (the provider
/// `push-seal batch` uses): the chunk's blocks are reserved before its first seal when every seal
/// is v1, and no v1 block is reserved when the policy is v2 only.
@Suite struct RegistrationSealingKeysBulkTests {
    @Test func aChunkOfV1RecipientsLoadsInBulk() throws {
        let s = try RegistrationSealingKeysTests.Scratch()
        let app = RegistrationSealingKeysTests.appID
        for r in ["r0", "r1", "r2"] { try s.store.generate(appID: app, recipient: r) }
        let v1 = KeychainSealingKeys(store: s.store)
        let automatic = try RegistrationSealingKeys(keys: v1, appID: app, policy: .automatic)
        #expect(automatic.loadsBatchRecipientsInBulk)
        #expect(!(try RegistrationSealingKeys(keys: v1, appID: app, policy: .v2)).loadsBatchRecipientsInBulk)
        automatic.beginBatch(appID: app, recipients: ["r0", "r1", "r2"])
        for r in ["r0", "r1", "r2"] {
            #expect(try s.store.keyset(appID: app, recipient: r).primary?.sealCount == ServerKeyring.reservationBlockSize, "reserved before any seal")
        }
        #expect(try automatic.primaryKey(appID: app, recipient: "r1").algorithm == WireFormat.algorithm)
        // A recipient with a registration (sealed v2) reserves no v1 block; one without does.
        _ = try RegistrationSealingKeysTests.register(s.store, "r9")
        try s.store.generate(appID: app, recipient: "r9")
        try s.store.generate(appID: app, recipient: "r3")
        let mixed = try RegistrationSealingKeys(keys: KeychainSealingKeys(store: s.store), appID: app, policy: .automatic)
        mixed.beginBatch(appID: app, recipients: ["r3", "r9"])
        #expect(try s.store.keyset(appID: app, recipient: "r3").primary?.sealCount == ServerKeyring.reservationBlockSize)
        #expect(try s.store.keyset(appID: app, recipient: "r9").primary?.sealCount == 0)
        #expect(try mixed.primaryKey(appID: app, recipient: "r9").algorithm != WireFormat.algorithm, "r9 seals v2")
    }
}
