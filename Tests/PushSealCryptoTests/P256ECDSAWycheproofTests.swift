import Foundation
import Testing
@testable import PushSealCrypto
import PushSealTestSupport

/// Wycheproof ECDSA P1363 verify file (`ecdsa_p1363_verify_schema_v1.json`), the fields we use.
struct EcdsaP1363TestFile: Decodable {
    let algorithm: String
    let numberOfTests: Int
    let testGroups: [Group]

    struct Group: Decodable {
        let publicKey: PublicKey
        let publicKeyDer: String
        let sha: String
        let tests: [Case]
    }

    struct PublicKey: Decodable {
        let curve: String
        let uncompressed: String
    }

    struct Case: Decodable {
        let tcId: Int
        let comment: String
        let msg: String
        let sig: String
        let result: String
    }
}

@Suite("ECDSA P-256 (ES256) Wycheproof P1363 vectors and signing")
struct P256ECDSAWycheproofTests {
    static let file = "wycheproof/ecdsa_p256_sha256_p1363_test.json"

    @Test("every vector: valid verifies, invalid is refused, from the uncompressed point and the SPKI DER alike")
    func vectors() throws {
        let vectors = try SharedData.decode(EcdsaP1363TestFile.self, vectors: Self.file)
        #expect(vectors.algorithm == "ECDSA")
        var ran = 0, valid = 0, invalid = 0
        for group in vectors.testGroups {
            #expect(group.publicKey.curve == "secp256r1" && group.sha == "SHA-256")
            let fromPoint = try P256VerifyingKey(uncompressedPoint: try hex(group.publicKey.uncompressed))
            let fromDER = try P256VerifyingKey(subjectPublicKeyInfo: try hex(group.publicKeyDer))
            for test in group.tests {
                let msg = try hex(test.msg), sig = try hex(test.sig)
                let a = fromPoint.isValidSignature(sig, for: msg)
                let b = fromDER.isValidSignature(sig, for: msg)
                #expect(a == b, "tcId \(test.tcId): the two key forms disagree")
                switch test.result {
                case "valid":
                    #expect(a, "tcId \(test.tcId) \(test.comment): a valid signature was refused")
                    valid += 1
                case "invalid":
                    #expect(!a, "tcId \(test.tcId) \(test.comment): an invalid signature verified")
                    invalid += 1
                default:
                    break // "acceptable": either answer is allowed
                }
                ran += 1
            }
        }
        #expect(ran == vectors.numberOfTests)
        #expect(valid > 0 && invalid > 0)
    }

    @Test("a signature from a .p8 key is 64 raw bytes that verify, and fail for another message")
    func signVerify() throws {
        let key = try P256SigningKey(pkcs8: SecretBytes(copying: Array(try TestKeys.p8PEM().utf8)))
        let message = Array("header.claims".utf8)
        let sig = try key.sign(message)
        #expect(sig.count == P256SigningKey.signatureByteCount)
        let pub = try key.publicKey()
        #expect(pub.isValidSignature(sig, for: message))
        #expect(!pub.isValidSignature(sig, for: Array("header.claimz".utf8)))
        var flipped = sig
        flipped[63] ^= 1
        #expect(!pub.isValidSignature(flipped, for: message))
        #expect(!pub.isValidSignature(Array(sig.prefix(63)), for: message))
        // DER round trip of the raw form.
        #expect(try P256SigningKey.rawSignature(fromDER: try P256SigningKey.derSignature(fromRaw: sig)) == sig)
        #expect(!"\(key)".contains("BEGIN"))
    }

    @Test("keys that are not PKCS#8 P-256 are refused with invalidKey")
    func wrongKeys() throws {
        for bad in [try TestKeys.pem(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]),
                    try TestKeys.pem(["genpkey", "-algorithm", "ED25519"]),
                    "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "not a key"] {
            #expect(throws: CryptoError(.invalidKey, "")) { try P256SigningKey(pkcs8: SecretBytes(copying: Array(bad.utf8))) }
        }
    }
}

/// Keys made with the `openssl` command line (an implementation independent of our code path).
enum TestKeys {
    /// A fresh P-256 key as PKCS#8 PEM, like an Apple `.p8` file.
    static func p8PEM() throws -> String {
        try pem(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
    }

    /// The standard output of `openssl ARGS`.
    static func pem(_ arguments: [String]) throws -> String {
        try runTool(URL(fileURLWithPath: "/usr/bin/env"), ["openssl"] + arguments).stdout
    }
}
