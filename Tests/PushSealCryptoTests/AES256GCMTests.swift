import Testing
@testable import PushSealCrypto

@Suite("AES-256-GCM seal/open behaviour")
struct AES256GCMTests {
    let key = SecretBytes(randomByteCount: 32)
    let message = Array("hi, Bob".utf8)
    let aad = Array("pushseal:v1|A256GCM|k1|com.example.app".utf8)

    @Test("round trip; layout is nonce(12) ‖ ciphertext ‖ tag(16)")
    func roundTrip() throws {
        let box = try AES256GCM.seal(message, with: key, authenticating: aad)
        #expect(box.combined.count == 12 + message.count + 16)
        #expect(box.nonce.count == 12 && box.tag.count == 16 && box.ciphertext.count == message.count)
        #expect(Array(box.ciphertext) != message)
        #expect(try AES256GCM.open(box, with: key, authenticating: aad) == message)
        let rebuilt = try SealedBox(nonce: Array(box.nonce), ciphertext: Array(box.ciphertext), tag: Array(box.tag))
        #expect(rebuilt == box)
        // The pointer forms agree with the array forms.
        let viaPointers = try message.withUnsafeBytes { p in try aad.withUnsafeBytes { a in try AES256GCM.seal(p, with: key, authenticating: a) } }
        #expect(try AES256GCM.open(viaPointers, with: key, authenticating: aad) == message)
    }

    @Test("empty plaintext round-trips (28-byte box), with and without AAD")
    func emptyPlaintext() throws {
        let box = try AES256GCM.seal([], with: key, authenticating: aad)
        #expect(box.combined.count == AES256GCM.minimumCombinedByteCount)
        #expect(try AES256GCM.open(box, with: key, authenticating: aad) == [])
        let bare = try AES256GCM.seal([], with: key)
        #expect(try AES256GCM.open(try SealedBox(combined: bare.combined), with: key) == [])
        // Even an empty box authenticates the AAD.
        #expect(cryptoErrorCode { _ = try AES256GCM.open(box, with: key, authenticating: []) } == .authenticationFailed)
        #expect(openSSLErrorQueueIsEmpty())
    }

    @Test("every single-bit flip of nonce, ciphertext and tag fails with authenticationFailed")
    func everyBitFlip() throws {
        let box = try AES256GCM.seal(message, with: key, authenticating: aad)
        let bits = box.combined.count * 8
        #expect(bits == (12 + message.count + 16) * 8)
        var failedAsExpected = 0
        for bit in 0..<bits {
            var bytes = box.combined
            bytes[bit / 8] ^= UInt8(1) << UInt8(bit % 8)
            let tampered = try SealedBox(combined: bytes)
            #expect(seedOpenSSLError(), "could not seed the OpenSSL error queue")
            let code = cryptoErrorCode { _ = try AES256GCM.open(tampered, with: key, authenticating: aad) }
            #expect(code == .authenticationFailed, "bit \(bit) (byte \(bit / 8)): got \(String(describing: code))")
            #expect(openSSLErrorQueueIsEmpty(), "bit \(bit): OpenSSL error queue not drained")
            if code == .authenticationFailed { failedAsExpected += 1 }
        }
        #expect(failedAsExpected == bits)
        // The untouched box still opens (the flips were the cause).
        #expect(try AES256GCM.open(box, with: key, authenticating: aad) == message)
    }

    @Test("wrong key and wrong AAD fail exactly like a flipped bit")
    func wrongKeyAndAAD() throws {
        let box = try AES256GCM.seal(message, with: key, authenticating: aad)
        let otherKey = SecretBytes(randomByteCount: 32)
        seedOpenSSLError()
        let wrongKey = cryptoErrorCode { _ = try AES256GCM.open(box, with: otherKey, authenticating: aad) }
        #expect(wrongKey == .authenticationFailed)
        #expect(openSSLErrorQueueIsEmpty())
        var otherAAD = aad
        otherAAD[otherAAD.count - 1] ^= 1
        for wrong in [otherAAD, [], Array(aad.dropLast()), aad + [0]] {
            seedOpenSSLError()
            let code = cryptoErrorCode { _ = try AES256GCM.open(box, with: key, authenticating: wrong) }
            #expect(code == .authenticationFailed)
            #expect(openSSLErrorQueueIsEmpty())
        }
        // The same error value (equality on code), and the reason says nothing specific.
        var errors: [CryptoError] = []
        for attempt in [{ _ = try AES256GCM.open(box, with: otherKey, authenticating: aad) },
                        { _ = try AES256GCM.open(box, with: key, authenticating: otherAAD) }] as [() throws -> Void] {
            do { try attempt() } catch let error as CryptoError { errors.append(error) }
        }
        #expect(errors.count == 2)
        #expect(Set(errors.map(\.reason)).count == 1, "wrong key and wrong AAD must be indistinguishable")
    }

    @Test("boxes shorter than 28 bytes are truncatedBox; 28 bytes parse")
    func truncated() throws {
        let box = try AES256GCM.seal(message, with: key, authenticating: aad)
        for length in 0..<AES256GCM.minimumCombinedByteCount {
            let code = cryptoErrorCode { _ = try SealedBox(combined: Array(box.combined.prefix(length))) }
            #expect(code == .truncatedBox, "length \(length)")
        }
        // A 28-byte prefix parses but does not authenticate (it is not the box that was sealed).
        let prefix = try SealedBox(combined: Array(box.combined.prefix(28)))
        #expect(cryptoErrorCode { _ = try AES256GCM.open(prefix, with: key, authenticating: aad) } == .authenticationFailed)
        // Dropping the last byte of a longer box fails to authenticate, too.
        let shorter = try SealedBox(combined: Array(box.combined.dropLast()))
        #expect(cryptoErrorCode { _ = try AES256GCM.open(shorter, with: key, authenticating: aad) } == .authenticationFailed)
        #expect(openSSLErrorQueueIsEmpty())
    }

    @Test("wrong key sizes are invalidKeySize for seal and open", arguments: [0, 1, 16, 24, 31, 33, 64])
    func wrongKeySize(byteCount: Int) throws {
        let badKey = SecretBytes(copying: [UInt8](repeating: 7, count: byteCount))
        #expect(cryptoErrorCode { _ = try AES256GCM.seal(message, with: badKey, authenticating: aad) } == .invalidKeySize)
        let box = try AES256GCM.seal(message, with: key, authenticating: aad)
        #expect(cryptoErrorCode { _ = try AES256GCM.open(box, with: badKey, authenticating: aad) } == .invalidKeySize)
        #expect(openSSLErrorQueueIsEmpty())
    }

    @Test("nonce and tag sizes are checked on the parts form and in SealedBox(nonce:ciphertext:tag:)")
    func partSizes() throws {
        let box = try AES256GCM.seal(message, with: key, authenticating: aad)
        let n = Array(box.nonce), c = Array(box.ciphertext), t = Array(box.tag)
        #expect(cryptoErrorCode { _ = try openParts(nonce: n + [0, 0, 0, 0], ciphertext: c, tag: t, key: key, aad: aad) } == .invalidNonceSize)
        #expect(cryptoErrorCode { _ = try openParts(nonce: Array(n.dropLast()), ciphertext: c, tag: t, key: key, aad: aad) } == .invalidNonceSize)
        #expect(cryptoErrorCode { _ = try openParts(nonce: n, ciphertext: c, tag: Array(t.dropLast()), key: key, aad: aad) } == .invalidTagSize)
        #expect(cryptoErrorCode { _ = try openParts(nonce: n, ciphertext: c, tag: t + [0], key: key, aad: aad) } == .invalidTagSize)
        #expect(cryptoErrorCode { _ = try SealedBox(nonce: n + [0, 0, 0, 0], ciphertext: c, tag: t) } == .invalidNonceSize)
        #expect(cryptoErrorCode { _ = try SealedBox(nonce: n, ciphertext: c, tag: Array(t.prefix(12))) } == .invalidTagSize)
        #expect(try openParts(nonce: n, ciphertext: c, tag: t, key: key, aad: aad) == message)
        #expect(openSSLErrorQueueIsEmpty())
    }

    @Test("10,000 seals draw 10,000 distinct nonces")
    func distinctNonces() throws {
        var nonces = Set<[UInt8]>()
        for _ in 0..<10_000 {
            let box = try AES256GCM.seal([], with: key)
            #expect(box.nonce.count == 12)
            nonces.insert(Array(box.nonce))
        }
        #expect(nonces.count == 10_000)
        // Sealing the same message twice gives different boxes that both open.
        let a = try AES256GCM.seal(message, with: key, authenticating: aad)
        let b = try AES256GCM.seal(message, with: key, authenticating: aad)
        #expect(a != b)
        #expect(try AES256GCM.open(a, with: key, authenticating: aad) == AES256GCM.open(b, with: key, authenticating: aad))
    }

    @Test("longer messages (block boundaries and 2 KiB) round-trip", arguments: [1, 15, 16, 17, 255, 256, 1024, 2048, 4096])
    func sizes(byteCount: Int) throws {
        let plaintext = SecureRandom.bytes(byteCount)
        let box = try AES256GCM.seal(plaintext, with: key, authenticating: aad)
        #expect(box.combined.count == byteCount + 28)
        #expect(try AES256GCM.open(box, with: key, authenticating: aad) == plaintext)
    }
}
