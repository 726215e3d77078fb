import Testing
import PushSealCrypto
import PushSealJSON
import PushSealSystem
import PushSealWire
import PushSealSender
@testable import PushSealExtension

/// `WireFormatOpener(pinnedSenderKeys:)` keeps its device key imports and auth pairs (the
/// static-static DH per pinned sender key × device key) across payloads — and never opens with
/// a pair of a sender key that is no longer the one pinned under its id, nor keeps the pairs
/// of a sender key that was unpinned.
@Suite struct WireFormatOpenerCacheTests {
    /// Pinned sender keys the test changes between payloads.
    final class Pins: PinnedSenderKeySource {
        let keys = Locked<[PinnedSenderKey]>([])
        func set(_ list: [PinnedSenderKey]) { keys.withLock { $0 = list } }
        func pinnedSenderKeyIDs() throws -> [String] { keys.withLock { $0.map(\.keyID) } }
        func pinnedSenderKey(_ keyID: String) throws -> PinnedSenderKey {
            guard let key = keys.withLock({ $0.first { $0.keyID == keyID } }) else { throw FormatError(.unknownSenderKey, "not pinned") }
            return key
        }
    }

    static func payload(from sender: X25519.PrivateKey, id: String, to device: X25519.PrivateKey, body: String) throws -> JSONValue {
        let key = SealingKey(keyID: "dev-1", key: SecretBytes(copying: device.publicKey.rawRepresentation), algorithm: HPKEAuthEnvelope.algorithmName)
        let registry = try EnvelopeRegistry.standard.addingV2(sealingWithSenderKey: sender, senderKeyID: id)
        let sealer = try NotificationSealer(appID: casesAppID, keys: InMemorySealingKeys([(casesAppID, "alice", key)]), registry: registry)
        return try JSONReader.parse(try sealer.seal(notificationJSON: Array(#"{"title":"t","body":"\#(body)"}"#.utf8), for: "alice").payload)
    }

    static func open(_ opener: WireFormatOpener, _ payload: JSONValue, device: X25519.PrivateKey) throws -> String? {
        try opener.open(try opener.envelope(in: payload), with: device.rawRepresentation, appID: casesAppID).body
    }

    @Test func pairsAreReusedAcrossPayloadsAndNeverStaleAfterARepin() throws {
        let device = try X25519.PrivateKey(), sender1 = try X25519.PrivateKey(), sender2 = try X25519.PrivateKey()
        let pins = Pins()
        pins.set([try PinnedSenderKey(keyID: "sender-1", publicKey: sender1.publicKey)])
        let opener = WireFormatOpener(pinnedSenderKeys: pins)
        for i in 0..<3 {
            #expect(try Self.open(opener, try Self.payload(from: sender1, id: "sender-1", to: device, body: "b\(i)"), device: device) == "b\(i)")
        }
        #expect(opener.pairCache?.count == 1 && opener.keyCache?.count == 1)

        // The app pins another key under the same id: sender1's payloads no longer authenticate
        // (the cached pair was made for sender1's key), sender2's do.
        pins.set([try PinnedSenderKey(keyID: "sender-1", publicKey: sender2.publicKey)])
        let fromOld = try Self.payload(from: sender1, id: "sender-1", to: device, body: "old")
        #expect(throws: FormatError(.authenticationFailed, "")) { try Self.open(opener, fromOld, device: device) }
        #expect(try Self.open(opener, try Self.payload(from: sender2, id: "sender-1", to: device, body: "new"), device: device) == "new")
        #expect(opener.pairCache?.count == 1)

        // Unpinned (another id pinned instead): the former id's pairs are dropped at the next
        // version 2 payload, which is refused as from an unknown sender key.
        pins.set([try PinnedSenderKey(keyID: "sender-2", publicKey: sender2.publicKey)])
        #expect(throws: FormatError(.unknownSenderKey, "")) {
            try Self.open(opener, try Self.payload(from: sender2, id: "sender-1", to: device, body: "x"), device: device)
        }
        #expect(opener.pairCache?.count == 0)
        #expect(try Self.open(opener, try Self.payload(from: sender2, id: "sender-2", to: device, body: "two"), device: device) == "two")
    }
}
