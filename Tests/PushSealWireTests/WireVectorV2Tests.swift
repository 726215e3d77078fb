import Foundation
import Testing
import PushSealJSON
import PushSealSystem
@testable import PushSealWire
import PushSealCrypto

/// Runs a Tests/Vectors/v2 file (FORMAT.md §V.11) as a receiver: the device private key
/// `device-key` held under `key-id`, app `app-id`, and (when given) the pinned sender key
/// `sender-key-id` / `sender-public-key`, through `SealedPayload` and the v2 registry.
struct WireVectorV2: CustomStringConvertible, Sendable {
    let vector: WireVector
    var description: String { vector.name }

    static let directory = WireVector.directory.appendingPathComponent("v2")

    static func all() -> [WireVectorV2] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".vector") }.sorted().compactMap { file in
            guard let bytes = try? WireTestSupport.read(directory.appendingPathComponent(file)) else { return nil }
            return WireVector.parse(name: file, bytes).map(WireVectorV2.init)
        }
    }

    /// `open` or `error <code>` (``WireVector/run(keyHeader:registry:)`` with the device key
    /// and the v2 registry opening for the vector's pinned sender, if any).
    func run() throws -> (outcome: String, plaintext: [UInt8]?) {
        let h = vector.headers
        var pinned: [PinnedSenderKey] = []
        if let sid = h["sender-key-id"] {
            guard let hex = h["sender-public-key"], let pk = WireTestSupport.hex(hex) else { return ("malformed vector header", nil) }
            pinned.append(try PinnedSenderKey(keyID: sid, publicKey: try X25519.PublicKey(rawRepresentation: pk)))
        }
        return try vector.run(keyHeader: "device-key", registry: .opening(pinnedSenders: pinned))
    }
}

@Suite("Wire format v2: Tests/Vectors/v2")
struct WireVectorV2Tests {
    @Test func vectorsArePresent() {
        let all = WireVectorV2.all()
        #expect(all.count >= 18, "Tests/Vectors/v2 should hold the generated vectors (python3 Tests/Interop/pushseal_ref.py vectors-v2 --out Tests/Vectors/v2)")
        let expected = Set(all.compactMap { $0.vector.headers["expect"] })
        for outcome in ["open", "error downgradeRefused", "error unknownSenderKey", "error invalidEnc", "error zeroSharedSecret",
                        "error truncatedBox", "error authenticationFailed", "error unknownKeyID"] {
            #expect(expected.contains(outcome), "no v2 vector expects \(outcome)")
        }
    }

    @Test(arguments: WireVectorV2.all())
    func vectorGivesItsExpectation(_ v: WireVectorV2) throws {
        let result = try v.run()
        #expect(result.outcome == v.vector.headers["expect"], "\(v.vector.name): \(v.vector.headers["comment"] ?? "")")
        if result.outcome == "open", let hex = v.vector.headers["plaintext-hex"] {
            #expect(result.plaintext == WireTestSupport.hex(hex), "\(v.vector.name): opened bytes differ from plaintext-hex")
        }
    }

    /// A v1-only receiver (the standard registry) refuses every v2 payload with unknownAlgorithm (§V.10).
    @Test func standardRegistryRefusesV2() throws {
        for v in WireVectorV2.all() where v.vector.headers["expect"] == "open" {
            #expect(throws: FormatError(.unknownAlgorithm, "")) { try SealedPayload(payload: try JSONReader.parse(v.vector.payload)) }
        }
    }

    /// The worked example of FORMAT.md §V.9, from its listed inputs.
    @Test func workedExampleOpens() throws {
        let device = try #require(WireTestSupport.hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"))
        let senderPK = try #require(WireTestSupport.hex("358072d6365880d1aeea329adf9121383851ed21a28e3b75e965d0d2cd166254"))
        let pinned = [try PinnedSenderKey(keyID: "oCiYEAMutBcnTuvE", publicKey: try X25519.PublicKey(rawRepresentation: senderPK))]
        let sealed = try SealedPayload(encryptedData: "8C3uTM6n7rE0FEHcEzSxK8elaLkokI3AIaMp5eB1+yLyIg8dcSDvMSGbX9Ir+ogKfTCOuyo6JIoC6QdwxsjFa5qygTL68uTIVDule5hA9B9gm3Q5GDDBeHVC1SpJvOUwW7Dr3gSNbBHTpTynsdna1Q==",
                                       keyID: "7t2IPaCpRRWT3Ao4", algorithm: HPKEAuthEnvelope.algorithmName,
                                       headerValues: ["oCiYEAMutBcnTuvE"], registry: .opening(pinnedSenders: pinned))
        #expect(try sealed.aad(appID: "com.example.app") == Array("pushseal:v2|HPKE-AUTH-X25519-A256GCM|7t2IPaCpRRWT3Ao4|com.example.app|oCiYEAMutBcnTuvE".utf8))
        let n = try sealed.open(with: SecretBytes(copying: device), appID: "com.example.app")
        #expect(n.title == "Hello")
        #expect(n.body == "Your code is 123456")
        #expect(sealed.box.count == 112)
    }
}
