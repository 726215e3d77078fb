import Foundation
import Testing
import PushSealCrypto
import PushSealWire
import PushSealJSON
import PushSealSender
import PushSealExtension

/// The envelope seam: a second `enc_alg`, registered only here, goes through the real sender
/// (`NotificationSealer`, `BatchSealer`) and the real extension (`DecryptingServiceExtension`
/// in the `ExtensionHost`), which take the registry and nothing else about the algorithm.
@Suite struct EnvelopeSeamTests {
    static let appID = "com.example.app"
    static let key = SecretBytes(randomByteCount: 32)
    static let algorithm = TestEnvelope(senderKeyID: "sender-1")

    static func registry() throws -> EnvelopeRegistry { try EnvelopeRegistry.standard.adding(algorithm) }

    struct Keys: NotificationKeyProvider {
        func key(for keyID: String) throws -> SecretBytes {
            guard keyID == "dev-1" else { throw FormatError(.invalidKeyID, "unknown key id") }
            return EnvelopeSeamTests.key
        }
    }

    static func sealer(algorithm: String) throws -> NotificationSealer {
        let keys = InMemorySealingKeys([(appID, "alice", SealingKey(keyID: "dev-1", key: key, algorithm: algorithm))])
        return try NotificationSealer(appID: appID, keys: keys, registry: try registry())
    }

    static func open(_ payload: JSONValue, registry: EnvelopeRegistry) -> ExtensionHost.Result {
        let config = DecryptingServiceConfiguration(appID: appID, keyProvider: Keys(), opener: WireFormatOpener(registry: registry),
                                                    replayCapacity: 0)  // no App Group here: the replay guard is not under test
        let host = ExtensionHost(budgetSeconds: 5, makeExtension: DecryptingServiceExtension.factory(config))
        return host.run(UNNotificationRequest(identifier: "seam", apnsPayload: payload))
    }

    static let notification = Array(#"{"title":"Seam","body":"sealed by a test-only algorithm","id":"n-1"}"#.utf8)

    @Test func aSecondAlgorithmSealsAndOpensThroughTheRealSenderAndExtension() throws {
        let sealed = try Self.sealer(algorithm: Self.algorithm.name).seal(notificationJSON: Self.notification, for: "alice")
        let payload = try JSONReader.parse(sealed.payload)
        #expect(payload["enc_alg"]?.stringValue == "TEST-HKDF-A256GCM")
        #expect(payload["sender_key_id"]?.stringValue == "sender-1")
        #expect(payload["key_id"]?.stringValue == "dev-1")
        // enc(32) ‖ nonce(12) ‖ ciphertext ‖ tag(16): 32 bytes more than an A256GCM box.
        let box = try WireBase64.decode(try #require(payload["encrypted_data"]?.stringValue))
        #expect(box.count >= Self.algorithm.minimumBoxByteCount)

        let result = Self.open(payload, registry: try Self.registry())
        #expect(result.outcome == .decrypted, "\(result.reason): \(result.detail)")
        #expect(result.content?.title == "Seam")
        #expect(result.content?.body == "sealed by a test-only algorithm")

        // The production table does not know it: the extension falls back, naming why.
        let standard = Self.open(payload, registry: .standard)
        #expect(standard.outcome == .original)
        #expect(standard.reason == "unknownAlgorithm")
    }

    @Test func theAlgorithmsHeaderFieldIsBoundAndReportedByName() throws {
        let sealed = try Self.sealer(algorithm: Self.algorithm.name).seal(notificationJSON: Self.notification, for: "alice")
        guard case .object(var o) = try JSONReader.parse(sealed.payload) else { Issue.record("not an object"); return }
        o["sender_key_id"] = .string("sender-2")
        let relabeled = Self.open(.object(o), registry: try Self.registry())
        #expect(relabeled.reason == "authenticationFailed")
        o["sender_key_id"] = nil
        let missing = Self.open(.object(o), registry: try Self.registry())
        #expect(missing.reason == "missingField:sender_key_id")
        o["sender_key_id"] = .integer(7)
        #expect(Self.open(.object(o), registry: try Self.registry()).reason == "wrongFieldType:sender_key_id")
    }

    @Test func theBatchPathSealsWithTheSameEntry() throws {
        let batch = BatchSealer(sealer: try Self.sealer(algorithm: Self.algorithm.name), concurrency: 1)
        let line = Array(#"{"recipient":"alice","notification":{"title":"Batch","body":"via the batch path"}}"#.utf8)
        let (bytes, failed) = batch.sealLine(BatchSealer.Line(number: 1, bytes: line))
        #expect(!failed, "\(String(decoding: bytes, as: UTF8.self))")
        let out = try JSONReader.parse(Array(bytes.dropLast()))
        let payload = try #require(out["payload"])
        #expect(payload["enc_alg"]?.stringValue == "TEST-HKDF-A256GCM")
        let result = Self.open(payload, registry: try Self.registry())
        #expect(result.outcome == .decrypted, "\(result.reason): \(result.detail)")
        #expect(result.content?.title == "Batch")
    }

    @Test func version1StillSealsBesideIt() throws {
        let sealed = try Self.sealer(algorithm: WireFormat.algorithm).seal(notificationJSON: Self.notification, for: "alice")
        let payload = try JSONReader.parse(sealed.payload)
        #expect(payload["enc_alg"]?.stringValue == "A256GCM")
        #expect(payload["sender_key_id"] == nil)
        #expect(Self.open(payload, registry: try Self.registry()).outcome == .decrypted)
        #expect(Self.open(payload, registry: .standard).outcome == .decrypted)
    }

    @Test func aKeyForAnUnregisteredAlgorithmIsRefusedBeforeSealing() throws {
        #expect(throws: SenderError(.keyUnavailable, "")) {
            try Self.sealer(algorithm: "NOT-REGISTERED").seal(notificationJSON: Self.notification, for: "alice")
        }
    }

    @Test func theRegistryRefusesNamesThatWouldNeedEscaping() throws {
        struct Bad: EnvelopeAlgorithm {
            let name: String
            var headerFieldNames: [String]
            var keyByteCount: Int { 32 }
            var minimumBoxByteCount: Int { 28 }
            func boxByteCount(plaintextByteCount: Int) -> Int { 28 + plaintextByteCount }
            func withBinding<R>(_ context: EnvelopeContext, _ body: (RawSpan) throws -> R) throws -> R { try body(RawSpan()) }
            func seal(_ plaintext: RawSpan, key: SecretBytes, context: EnvelopeContext, into box: inout MutableRawSpan) throws -> Int { 0 }
            func open(_ box: [UInt8], key: SecretBytes, context: EnvelopeContext) throws -> [UInt8] { [] }
        }
        #expect(throws: FormatError(.unknownAlgorithm, "")) { try EnvelopeRegistry.standard.adding(Bad(name: "A\"B", headerFieldNames: [])) }
        #expect(throws: FormatError(.unknownAlgorithm, "")) { try EnvelopeRegistry.standard.adding(Bad(name: "X", headerFieldNames: ["key_id"])) }
        #expect(throws: FormatError(.unknownAlgorithm, "")) { try EnvelopeRegistry.standard.adding(Bad(name: "X", headerFieldNames: ["Sender"])) }
        let replaced = try EnvelopeRegistry.standard.adding(Bad(name: "A256GCM", headerFieldNames: []))
        #expect(replaced.names == ["A256GCM"])
        #expect(EnvelopeRegistry.standard.names == ["A256GCM"])
    }
}
