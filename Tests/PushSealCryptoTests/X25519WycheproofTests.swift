import Testing
@testable import PushSealCrypto

/// Wycheproof `xdh_comp_schema` (x25519_test.json), the fields we use.
struct XdhTestFile: Decodable {
    let algorithm: String
    let numberOfTests: Int
    let testGroups: [Group]
    struct Group: Decodable {
        let curve: String
        let tests: [Case]
    }
    struct Case: Decodable {
        let tcId: Int
        let comment: String
        let flags: [String]
        let `public`: String
        let `private`: String
        let shared: String
        let result: String
    }
}

@Suite("X25519")
struct X25519Tests {
    /// `PrivateKey.derive(rawPeer:into:)`, the derive HPKE open runs on `enc`.
    static func pooledDerive(_ key: X25519.PrivateKey, _ publicHex: String) throws -> [UInt8] {
        var out = [UInt8](repeating: 0xAA, count: 32)
        try hex(publicHex).withUnsafeBytes { peer in
            try out.withUnsafeMutableBytes { o in
                guard let base = o.baseAddress else { return }
                do {
                    try key.derive(rawPeer: peer, into: base)
                } catch {
                    #expect(o.allSatisfy { $0 == 0 }, "a failed derive leaves zeros")
                    throw error
                }
            }
        }
        return out
    }

    /// Every case of the file drives `X25519.PrivateKey.sharedSecret(with:)`:
    /// - `valid`: the shared secret equals `shared`.
    /// - `acceptable` (all carry flags such as `Twist`, `LowOrderPublic`, `NonCanonicalPublic`):
    ///   our policy is RFC 7748's — any 32-byte public key is used as given (top bit ignored,
    ///   non-canonical values reduced), so the result must equal `shared` — except an all-zero
    ///   result (`ZeroSharedSecret`, a low-order point), which must be refused with
    ///   `.zeroSharedSecret` (RFC 9180 §7.1.4) and leave OpenSSL's error queue empty.
    /// - `invalid`: none in this file; one would have to fail.
    @Test("Wycheproof x25519_test.json: valid match, acceptable match or (zero shared secret) refused")
    func wycheproof() throws {
        let file = try SharedData.decode(XdhTestFile.self, vectors: "wycheproof/x25519_test.json")
        #expect(file.algorithm == "XDH")
        let all = file.testGroups.flatMap(\.tests)
        #expect(all.count == file.numberOfTests)
        #expect(file.testGroups.allSatisfy { $0.curve == "curve25519" })
        var matched = 0, refused = 0, valid = 0, acceptable = 0
        for test in all {
            let privateKey = try X25519.PrivateKey(rawRepresentation: SecretBytes(copying: try hex(test.private)))
            let peer = try X25519.PublicKey(rawRepresentation: try hex(test.public))
            let expected = try hex(test.shared)
            let zero = expected.allSatisfy { $0 == 0 }
            #expect(zero == test.flags.contains("ZeroSharedSecret"), "tcId \(test.tcId)")
            switch test.result {
            case "valid", "acceptable":
                if test.result == "valid" { valid += 1 } else { acceptable += 1 }
                // validate() refuses exactly the public keys that give a zero shared secret.
                #expect(cryptoErrorCode { try peer.validate() } == (zero ? .zeroSharedSecret : nil), "tcId \(test.tcId): validate")
                if zero {
                    #expect(test.result == "acceptable", "tcId \(test.tcId): a valid zero result we would refuse")
                    let code = cryptoErrorCode { _ = try privateKey.sharedSecret(with: peer) }
                    #expect(code == .zeroSharedSecret, "tcId \(test.tcId) \(test.comment)")
                    #expect(cryptoErrorCode { _ = try Self.pooledDerive(privateKey, test.public) } == .zeroSharedSecret, "tcId \(test.tcId): pooled")
                    #expect(openSSLErrorQueueIsEmpty(), "tcId \(test.tcId)")
                    refused += 1
                } else {
                    let shared = try privateKey.sharedSecret(with: peer)
                    #expect(shared.copyBytes() == expected, "tcId \(test.tcId) \(test.comment)")
                    // The open path's derive (a kept context, the peer written into a kept key object).
                    #expect(try Self.pooledDerive(privateKey, test.public) == expected, "tcId \(test.tcId): pooled")
                    matched += 1
                }
            case "invalid":
                #expect(cryptoErrorCode { _ = try privateKey.sharedSecret(with: peer) } != nil, "tcId \(test.tcId)")
            default:
                Issue.record("tcId \(test.tcId): unexpected result \(test.result)")
            }
        }
        #expect(valid == 264 && acceptable == 254)
        #expect(refused == 31)
        #expect(matched == all.count - 31)
    }

    @Test("generated keys agree on the shared secret; raw export/import round-trips; sizes are checked")
    func roundTrip() throws {
        let a = try X25519.PrivateKey(), b = try X25519.PrivateKey()
        let ab = try a.sharedSecret(with: b.publicKey), ba = try b.sharedSecret(with: a.publicKey)
        #expect(ab == ba && ab.byteCount == 32)
        #expect(a.publicKey != b.publicKey)
        let again = try X25519.PrivateKey(rawRepresentation: a.rawRepresentation)
        #expect(again.publicKey == a.publicKey)
        #expect(try again.sharedSecret(with: b.publicKey) == ab)
        let viaPointer = try a.publicKey.rawRepresentation.withUnsafeBytes { try X25519.PublicKey(rawBytes: $0) }
        #expect(viaPointer == a.publicKey)
        try a.publicKey.validate()
        for point in HPKETests.lowOrderPoints {
            #expect(cryptoErrorCode { try X25519.PublicKey(rawRepresentation: point).validate() } == .zeroSharedSecret)
        }
        #expect(cryptoErrorCode { _ = try X25519.PublicKey(rawRepresentation: [UInt8](repeating: 9, count: 31)) } == .invalidPublicKey)
        #expect(cryptoErrorCode { _ = try X25519.PublicKey(rawRepresentation: [UInt8](repeating: 9, count: 33)) } == .invalidPublicKey)
        #expect(cryptoErrorCode { _ = try X25519.PrivateKey(rawRepresentation: SecretBytes(copying: [UInt8](repeating: 1, count: 31))) } == .invalidKeySize)
        // Descriptions never show private bytes.
        let raw = hexString(a.rawRepresentation.copyBytes())
        #expect(!a.description.contains(raw) && !String(reflecting: a).contains(raw))
    }
}
