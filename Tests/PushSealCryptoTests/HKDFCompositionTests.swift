import Testing
@testable import PushSealCrypto

/// HPKE's HKDF steps (`MACContext.extract` / `expand`: RFC 5869 over OpenSSL's HMAC-SHA256)
/// against the RFC 5869 and Wycheproof HKDF vectors, and against ``HKDFSHA256`` (`EVP_KDF`).
@Suite("HKDF composed from HMAC (HPKE's extract/expand)")
struct HKDFCompositionTests {
    /// Extract-then-expand through the composition, with IKM and info each split in two parts
    /// at `split` (the parts API must equal the concatenation).
    static func derive(ikm: [UInt8], salt: [UInt8], info: [UInt8], byteCount: Int, split: Int = 0) -> [UInt8]? {
        var prk = [UInt8](repeating: 0, count: 32)
        var out = [UInt8](repeating: 0, count: max(byteCount, 1))
        let i1 = Array(ikm.prefix(split)), i2 = Array(ikm.dropFirst(split))
        let n1 = Array(info.prefix(split)), n2 = Array(info.dropFirst(split))
        let ok = salt.withUnsafeBytes { s in
            i1.withUnsafeBytes { a in
                i2.withUnsafeBytes { b in
                    n1.withUnsafeBytes { c in
                        n2.withUnsafeBytes { d in
                            prk.withUnsafeMutableBytes { p in
                                out.withUnsafeMutableBytes { o in
                                    MACContext.extract(salt: s, a, b, into: p.baseAddress!)
                                        && MACContext.expand(prk: UnsafeRawBufferPointer(p), c, d, byteCount: byteCount, into: o.baseAddress!)
                                }
                            }
                        }
                    }
                }
            }
        }
        MACContext.scrub()
        return ok ? Array(out.prefix(byteCount)) : nil
    }

    @Test("RFC 5869 A.1–A.3 (PRK and OKM)")
    func rfc5869() throws {
        let file = try SharedData.decode(RFC5869File.self, vectors: "hkdf/rfc5869_sha256.json")
        for test in file.tests {
            let okm = Self.derive(ikm: try hex(test.IKM), salt: try hex(test.salt), info: try hex(test.info), byteCount: test.L, split: 3)
            #expect(okm == (try hex(test.OKM)), "\(test.name)")
        }
        #expect(file.tests.count == 3)
    }

    @Test("Wycheproof hkdf_sha256_test.json: valid cases match, sizes over 8160 are refused")
    func wycheproof() throws {
        let file = try SharedData.decode(HkdfTestFile.self, vectors: "wycheproof/hkdf_sha256_test.json")
        var valid = 0, invalid = 0
        for test in file.testGroups.flatMap(\.tests) {
            let okm = Self.derive(ikm: try hex(test.ikm), salt: try hex(test.salt), info: try hex(test.info), byteCount: test.size,
                                  split: test.tcId % 7)
            if test.result == "valid" {
                #expect(okm == (try hex(test.okm)), "tcId \(test.tcId)")
                valid += 1
            } else {
                #expect(okm == nil, "tcId \(test.tcId)")
                #expect(openSSLErrorQueueIsEmpty())
                invalid += 1
            }
        }
        #expect(valid == 83 && invalid == 3)
    }

    @Test("agrees with HKDFSHA256 (EVP_KDF) on random inputs, including empty salt, IKM and info")
    func agreesWithEVPKDF() throws {
        var rng = SystemRandomNumberGenerator()
        for round in 0..<200 {
            let ikm = SecureRandom.bytes(round % 5 == 0 ? 0 : Int.random(in: 1...80, using: &rng))
            let salt = SecureRandom.bytes(round % 3 == 0 ? 0 : Int.random(in: 1...100, using: &rng))
            let info = SecureRandom.bytes(round % 4 == 0 ? 0 : Int.random(in: 1...120, using: &rng))
            let size = [1, 12, 32, 33, 64, 65, 200][round % 7]
            let theirs = try ikm.withUnsafeBytes { try HKDFSHA256.derive(ikm: $0, salt: salt, info: info, outputByteCount: size) }
            #expect(Self.derive(ikm: ikm, salt: salt, info: info, byteCount: size, split: round % 9) == theirs, "round \(round)")
        }
    }
}
