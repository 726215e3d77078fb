import PushSealTestSupport
import Testing
@testable import PushSealCrypto

/// `hkdf/rfc5869_sha256.json`: RFC 5869 Appendix A.1–A.3.
struct RFC5869File: Decodable {
    let tests: [Case]
    struct Case: Decodable {
        let name: String
        let hash: String
        let IKM: String
        let salt: String
        let info: String
        let L: Int
        let OKM: String
    }
}

/// Wycheproof `hkdf_test_schema_v1.json`, the fields we use.
struct HkdfTestFile: Decodable {
    let algorithm: String
    let numberOfTests: Int
    let testGroups: [Group]
    struct Group: Decodable { let tests: [Case] }
    struct Case: Decodable {
        let tcId: Int
        let comment: String
        let ikm: String
        let salt: String
        let info: String
        let size: Int
        let okm: String
        let result: String
    }
}

@Suite("HKDF-SHA256")
struct HKDFTests {
    @Test("RFC 5869 test cases 1–3")
    func rfc5869() throws {
        let file = try SharedData.decode(RFC5869File.self, vectors: "hkdf/rfc5869_sha256.json")
        #expect(file.tests.count == 3)
        var ran = 0
        for test in file.tests {
            #expect(test.hash == "SHA-256")
            let okm = try HKDFSHA256.deriveKey(inputKeyMaterial: SecretBytes(copying: try hex(test.IKM)),
                                               salt: try hex(test.salt), info: try hex(test.info), outputByteCount: test.L)
            #expect(okm.byteCount == test.L)
            #expect(okm.copyBytes() == (try hex(test.OKM)), "\(test.name)")
            ran += 1
        }
        #expect(ran == file.tests.count)
        // Test case 3 has an empty salt.
        #expect(file.tests.contains { $0.salt.isEmpty })
    }

    @Test("Wycheproof hkdf_sha256_test.json: valid derive, invalid (size > 8160) throws invalidParameter")
    func wycheproof() throws {
        let file = try SharedData.decode(HkdfTestFile.self, vectors: "wycheproof/hkdf_sha256_test.json")
        #expect(file.algorithm == "HKDF-SHA-256")
        let all = file.testGroups.flatMap(\.tests)
        let expectedValid = all.filter { $0.result == "valid" }.count
        let expectedInvalid = all.filter { $0.result == "invalid" }.count
        let expectedEmptySalt = all.filter { $0.result == "valid" && $0.salt.isEmpty }.count
        let expectedEmptyIKM = all.filter { $0.result == "valid" && $0.ikm.isEmpty }.count
        #expect(expectedValid > 0 && expectedInvalid > 0)
        #expect(all.count == file.numberOfTests)

        var ranValid = 0, ranInvalid = 0, ranEmptySalt = 0, ranEmptyIKM = 0
        for test in all {
            let ikm = SecretBytes(copying: try hex(test.ikm))
            let salt = try hex(test.salt), info = try hex(test.info)
            switch test.result {
            case "valid":
                let okm = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: salt, info: info, outputByteCount: test.size)
                #expect(okm.copyBytes() == (try hex(test.okm)), "tcId \(test.tcId) \(test.comment)")
                let plain = try ikm.withUnsafeBytes { try HKDFSHA256.derive(ikm: $0, salt: salt, info: info, outputByteCount: test.size) }
                #expect(plain == (try hex(test.okm)), "tcId \(test.tcId) (derive)")
                ranValid += 1
                if salt.isEmpty { ranEmptySalt += 1 }
                if test.ikm.isEmpty { ranEmptyIKM += 1 }
            case "invalid":
                #expect(test.size > HKDFSHA256.maxOutputByteCount, "tcId \(test.tcId): an invalid case we do not model")
                let code = cryptoErrorCode {
                    _ = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: salt, info: info, outputByteCount: test.size)
                }
                #expect(code == .invalidParameter, "tcId \(test.tcId) \(test.comment)")
                #expect(openSSLErrorQueueIsEmpty(), "tcId \(test.tcId)")
                ranInvalid += 1
            default:
                Issue.record("tcId \(test.tcId): unexpected result \(test.result)")
            }
        }
        #expect(ranValid == expectedValid)
        #expect(ranInvalid == expectedInvalid)
        #expect(ranEmptySalt == expectedEmptySalt)
        #expect(ranEmptyIKM == expectedEmptyIKM)
        #expect(ranEmptySalt > 0, "the file is expected to contain empty-salt cases")
    }

    @Test("the output-size limit is exactly 8160 bytes; 0 gives empty output")
    func limits() throws {
        let ikm = SecretBytes(copying: [UInt8](repeating: 0x0b, count: 22))
        let max = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: [1], info: [2], outputByteCount: 8160)
        #expect(max.byteCount == 8160)
        #expect(cryptoErrorCode { _ = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, outputByteCount: 8161) } == .invalidParameter)
        #expect(cryptoErrorCode { _ = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, outputByteCount: -1) } == .invalidParameter)
        #expect(try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, outputByteCount: 0).byteCount == 0)
        // A longer output extends a shorter one (RFC 5869 §2.3: T(1) ‖ T(2) ‖ …).
        let short = try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: [1], info: [2], outputByteCount: 42)
        #expect(Array(max.copyBytes().prefix(42)) == short.copyBytes())
    }

    static let pythonHKDF = """
        import sys
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
        ikm, salt, info, n = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3]), int(sys.argv[4])
        print(HKDF(algorithm=hashes.SHA256(), length=n, salt=salt or None, info=info).derive(ikm).hex())
        """

    static let pythonHasHKDF = runPythonOutput(pythonHKDF, ["00", "", "", "32"]) != nil

    @Test("empty IKM works (the vector files have none): cross-checked against Python cryptography",
          .enabled(if: pythonHasHKDF, "python3 with the cryptography package is not available: the empty-IKM cross-check is skipped"))
    func emptyIKMMatchesPython() throws {
        let salt = Array("salt".utf8), info = Array("info".utf8)
        let ours = try HKDFSHA256.deriveKey(inputKeyMaterial: SecretBytes(copying: []), salt: salt, info: info, outputByteCount: 42)
        let theirs = try #require(runPythonOutput(Self.pythonHKDF, ["", hexString(salt), hexString(info), "42"]))
        #expect(hexString(ours.copyBytes()) == theirs)
        // Empty IKM and empty salt together.
        let both = try HKDFSHA256.deriveKey(inputKeyMaterial: SecretBytes(copying: []), outputByteCount: 32)
        let theirsBoth = try #require(runPythonOutput(Self.pythonHKDF, ["", "", "", "32"]))
        #expect(hexString(both.copyBytes()) == theirsBoth)
    }

    @Test("empty IKM derives without error and differs from a one-zero-byte IKM")
    func emptyIKM() throws {
        let empty = try HKDFSHA256.deriveKey(inputKeyMaterial: SecretBytes(copying: []), outputByteCount: 32)
        let zero = try HKDFSHA256.deriveKey(inputKeyMaterial: SecretBytes(copying: [0]), outputByteCount: 32)
        #expect(empty.byteCount == 32)
        #expect(empty != zero)
    }
}
