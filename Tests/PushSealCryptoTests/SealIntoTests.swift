import Testing
@testable import PushSealCrypto

/// `AES256GCM.seal(_:with:authenticating:into:)`: the combined box written into caller memory.
@Suite("AES-256-GCM seal into caller memory")
struct SealIntoTests {
    let key = SecretBytes(randomByteCount: 32)
    let aad = Array("pushseal:v1|A256GCM|k1|com.example.app".utf8)

    /// Seals `plaintext` into a buffer of `capacity` bytes (filled with 0xEE first); returns
    /// the count written and the whole buffer.
    func sealInto(_ plaintext: [UInt8], capacity: Int, key: SecretBytes? = nil, aad: [UInt8]? = nil) throws -> (Int, [UInt8]) {
        var out = [UInt8](repeating: 0xEE, count: capacity)
        let written = try plaintext.withUnsafeBytes { p in
            try (aad ?? self.aad).withUnsafeBytes { a in
                try out.withUnsafeMutableBytes { o in try AES256GCM.seal(p, with: key ?? self.key, authenticating: a, into: o) }
            }
        }
        return (written, out)
    }

    @Test("writes nonce(12) ‖ ciphertext ‖ tag(16) that the one-shot open accepts", arguments: [0, 1, 15, 16, 17, 255, 1024, 2048, 3000])
    func roundTrip(byteCount: Int) throws {
        let plaintext = SecureRandom.bytes(byteCount)
        let (written, out) = try sealInto(plaintext, capacity: byteCount + 28 + 5)
        #expect(written == byteCount + 28)
        // Bytes past the box are untouched.
        #expect(out[written...].allSatisfy { $0 == 0xEE })
        let box = try SealedBox(combined: Array(out[0..<written]))
        #expect(try AES256GCM.open(box, with: key, authenticating: aad) == plaintext)
        // A wrong AAD fails: the AAD is bound.
        #expect(cryptoErrorCode { _ = try AES256GCM.open(box, with: key, authenticating: []) } == .authenticationFailed)
        #expect(openSSLErrorQueueIsEmpty())
    }

    @Test("an exactly sized buffer works; one byte short is invalidParameter and nothing is written")
    func outputSize() throws {
        let plaintext = Array("hi, Bob".utf8)
        let (written, out) = try sealInto(plaintext, capacity: plaintext.count + 28)
        #expect(written == out.count)
        #expect(try AES256GCM.open(SealedBox(combined: out), with: key, authenticating: aad) == plaintext)
        var short = [UInt8](repeating: 0xEE, count: plaintext.count + 27)
        #expect(cryptoErrorCode {
            _ = try plaintext.withUnsafeBytes { p in
                try aad.withUnsafeBytes { a in try short.withUnsafeMutableBytes { o in try AES256GCM.seal(p, with: key, authenticating: a, into: o) } }
            }
        } == .invalidParameter)
        #expect(short.allSatisfy { $0 == 0xEE })
        #expect(cryptoErrorCode { _ = try sealInto([], capacity: 0) } == .invalidParameter)
    }

    @Test("wrong key sizes are invalidKeySize", arguments: [0, 16, 31, 33])
    func wrongKeySize(byteCount: Int) {
        let badKey = SecretBytes(copying: [UInt8](repeating: 7, count: byteCount))
        #expect(cryptoErrorCode { _ = try sealInto([1, 2, 3], capacity: 64, key: badKey) } == .invalidKeySize)
        #expect(openSSLErrorQueueIsEmpty())
    }

    @Test("10,000 seals into the same buffer draw 10,000 distinct nonces")
    func distinctNonces() throws {
        var nonces = Set<[UInt8]>()
        var out = [UInt8](repeating: 0, count: 64)
        let message = Array("same message".utf8)
        var boxes = Set<[UInt8]>()
        for i in 0..<10_000 {
            let written = try message.withUnsafeBytes { p in
                try aad.withUnsafeBytes { a in try out.withUnsafeMutableBytes { o in try AES256GCM.seal(p, with: key, authenticating: a, into: o) } }
            }
            nonces.insert(Array(out[0..<12]))
            if i < 100 { boxes.insert(Array(out[0..<written])) }
        }
        #expect(nonces.count == 10_000)
        #expect(boxes.count == 100)
    }
}
