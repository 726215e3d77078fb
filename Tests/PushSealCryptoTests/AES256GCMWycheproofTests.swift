import Testing
@testable import PushSealCrypto

/// Wycheproof AEAD file (`aead_test_schema_v1.json`), the fields we use.
struct AeadTestFile: Decodable {
    let algorithm: String
    let numberOfTests: Int
    let testGroups: [Group]

    struct Group: Decodable {
        /// Bits.
        let ivSize: Int
        /// Bits.
        let keySize: Int
        /// Bits.
        let tagSize: Int
        let tests: [Case]
    }

    struct Case: Decodable {
        let tcId: Int
        let comment: String
        let key: String
        let iv: String
        let aad: String
        let msg: String
        let ct: String
        let tag: String
        let result: String
    }
}

@Suite("AES-256-GCM Wycheproof vectors")
struct AES256GCMWycheproofTests {
    static let file = "wycheproof/aes_gcm_256_test.json"

    @Test("96-bit nonce groups: valid seal to ct‖tag and open to msg, invalid are rejected")
    func ninetySixBitGroups() throws {
        let vectors = try SharedData.decode(AeadTestFile.self, vectors: Self.file)
        #expect(vectors.algorithm == "AES-GCM")
        let groups = vectors.testGroups.filter { $0.ivSize == 96 }
        // Expected counts, computed from the file.
        let expectedValid = groups.reduce(0) { $0 + $1.tests.filter { $0.result == "valid" }.count }
        let expectedInvalid = groups.reduce(0) { $0 + $1.tests.filter { $0.result == "invalid" }.count }
        let expectedTotal = groups.reduce(0) { $0 + $1.tests.count }
        #expect(expectedValid > 0)
        #expect(expectedInvalid > 0)

        var ranValid = 0, ranInvalid = 0
        for group in groups {
            #expect(group.keySize == 256 && group.tagSize == 128, "group keySize \(group.keySize) tagSize \(group.tagSize)")
            for test in group.tests {
                let key = SecretBytes(copying: try hex(test.key))
                let iv = try hex(test.iv), aad = try hex(test.aad), msg = try hex(test.msg)
                let ct = try hex(test.ct), tag = try hex(test.tag)
                #expect(iv.count == 12, "tcId \(test.tcId): iv is \(iv.count) bytes in a 96-bit group")
                switch test.result {
                case "valid":
                    let box = try sealKAT(msg, key: key, nonce: iv, aad: aad)
                    #expect(box.combined == iv + ct + tag, "tcId \(test.tcId) \(test.comment): seal differs")
                    #expect(Array(box.ciphertext) == ct && Array(box.tag) == tag, "tcId \(test.tcId)")
                    let opened = try AES256GCM.open(try SealedBox(combined: iv + ct + tag), with: key, authenticating: aad)
                    #expect(opened == msg, "tcId \(test.tcId) \(test.comment): open differs")
                    #expect(try openParts(nonce: iv, ciphertext: ct, tag: tag, key: key, aad: aad) == msg, "tcId \(test.tcId)")
                    ranValid += 1
                case "invalid":
                    #expect(seedOpenSSLError(), "tcId \(test.tcId): could not seed the OpenSSL error queue")
                    let code = cryptoErrorCode { _ = try openParts(nonce: iv, ciphertext: ct, tag: tag, key: key, aad: aad) }
                    #expect(code == .authenticationFailed, "tcId \(test.tcId) \(test.comment): got \(String(describing: code))")
                    #expect(openSSLErrorQueueIsEmpty(), "tcId \(test.tcId): OpenSSL error queue not drained")
                    if tag.count == AES256GCM.tagByteCount {
                        let combinedCode = cryptoErrorCode {
                            _ = try AES256GCM.open(try SealedBox(combined: iv + ct + tag), with: key, authenticating: aad)
                        }
                        #expect(combinedCode == .authenticationFailed, "tcId \(test.tcId) (combined)")
                    }
                    ranInvalid += 1
                default:
                    Issue.record("tcId \(test.tcId): unexpected result \(test.result)")
                }
            }
        }
        #expect(ranValid == expectedValid)
        #expect(ranInvalid == expectedInvalid)
        #expect(ranValid + ranInvalid == expectedTotal)
    }

    @Test("every non-96-bit nonce is rejected with invalidNonceSize before decrypting")
    func otherNonceSizesRejected() throws {
        let vectors = try SharedData.decode(AeadTestFile.self, vectors: Self.file)
        let groups = vectors.testGroups.filter { $0.ivSize != 96 }
        let expected = groups.reduce(0) { $0 + $1.tests.count }
        #expect(expected > 0)
        var ran = 0
        for group in groups {
            for test in group.tests {
                let key = SecretBytes(copying: try hex(test.key))
                let iv = try hex(test.iv), aad = try hex(test.aad)
                let ct = try hex(test.ct), tag = try hex(test.tag)
                #expect(iv.count * 8 == group.ivSize, "tcId \(test.tcId)")
                #expect(iv.count != AES256GCM.nonceByteCount, "tcId \(test.tcId)")
                // Valid or not under GCM's general IV rule, our profile refuses it.
                let code = cryptoErrorCode { _ = try openParts(nonce: iv, ciphertext: ct, tag: tag, key: key, aad: aad) }
                #expect(code == .invalidNonceSize, "tcId \(test.tcId) (\(group.ivSize)-bit IV): got \(String(describing: code))")
                // The nonce check comes first: even a wrong-size key reports the nonce.
                let shortKey = SecretBytes(copying: [UInt8](repeating: 1, count: 16))
                let first = cryptoErrorCode { _ = try openParts(nonce: iv, ciphertext: ct, tag: tag, key: shortKey, aad: aad) }
                #expect(first == .invalidNonceSize, "tcId \(test.tcId)")
                // The test-only seal entry point refuses it too.
                let sealCode = cryptoErrorCode { _ = try sealKAT(try hex(test.msg), key: key, nonce: iv, aad: aad) }
                #expect(sealCode == .invalidNonceSize, "tcId \(test.tcId) (seal)")
                #expect(openSSLErrorQueueIsEmpty(), "tcId \(test.tcId)")
                ran += 1
            }
        }
        #expect(ran == expected)
        // Every case in the file ran in one of the two tests.
        let ninetySix = vectors.testGroups.filter { $0.ivSize == 96 }.reduce(0) { $0 + $1.tests.count }
        #expect(ran + ninetySix == vectors.numberOfTests)
    }
}
