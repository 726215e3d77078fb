import Testing
@testable import PushSealCrypto

@Suite struct StreamingTests {
    /// Chunked sealing produces a box the one-shot open accepts, and chunked opening of a
    /// one-shot box gives the plaintext back, for chunk sizes that do and don't divide the length.
    @Test(arguments: [1, 7, 16, 4096, 100_000])
    func streamingMatchesOneShot(chunk: Int) throws {
        let key = SecretBytes(randomByteCount: 32)
        let plaintext = SecureRandom.bytes(50_001)
        let aad = Array("media".utf8)

        let sealer = try AES256GCM.Stream.sealing(with: key, authenticating: aad)
        var box = sealer.nonce
        for start in stride(from: 0, to: plaintext.count, by: chunk) {
            let end = min(start + chunk, plaintext.count)
            box += try plaintext[start..<end].withUnsafeBytes { try sealer.update($0) }
        }
        box += try sealer.finish()
        #expect(try AES256GCM.open(SealedBox(combined: box), with: key, authenticating: aad) == plaintext)

        let oneShot = try AES256GCM.seal(plaintext, with: key, authenticating: aad).combined
        let opener = try AES256GCM.Stream.opening(with: key, nonce: Array(oneShot[0..<12]), authenticating: aad)
        var out: [UInt8] = []
        let body = oneShot[12..<(oneShot.count - 16)]
        for start in stride(from: body.startIndex, to: body.endIndex, by: chunk) {
            let end = min(start + chunk, body.endIndex)
            out += try oneShot[start..<end].withUnsafeBytes { try opener.update($0) }
        }
        try opener.finish(tag: Array(oneShot[(oneShot.count - 16)...]))
        #expect(out == plaintext)
    }

    @Test func streamingOpenRejectsAFlippedTagOrByteOrWrongAAD() throws {
        let key = SecretBytes(randomByteCount: 32)
        let box = try AES256GCM.seal(SecureRandom.bytes(1000), with: key, authenticating: []).combined
        for (position, aad) in [(box.count - 1, [UInt8]()), (500, []), (20, []), (-1, Array("x".utf8))] {
            var damaged = box
            if position >= 0 { damaged[position] ^= 0x01 }
            let opener = try AES256GCM.Stream.opening(with: key, nonce: Array(damaged[0..<12]), authenticating: aad)
            _ = try damaged[12..<(damaged.count - 16)].withUnsafeBytes { try opener.update($0) }
            #expect(throws: CryptoError(.authenticationFailed, "")) { try opener.finish(tag: Array(damaged[(damaged.count - 16)...])) }
        }
    }

    @Test func streamingChecksSizesAndState() throws {
        let key = SecretBytes(randomByteCount: 32)
        #expect(throws: CryptoError(.invalidNonceSize, "")) { try AES256GCM.Stream.opening(with: key, nonce: [0, 1, 2]) }
        #expect(throws: CryptoError(.invalidKeySize, "")) { try AES256GCM.Stream.sealing(with: SecretBytes(randomByteCount: 16)) }
        let sealer = try AES256GCM.Stream.sealing(with: key)
        _ = try sealer.finish()
        #expect(throws: CryptoError(.internalFailure, "")) { try [UInt8](repeating: 1, count: 4).withUnsafeBytes { try sealer.update($0) } }
        let opener = try AES256GCM.Stream.opening(with: key, nonce: SecureRandom.bytes(12))
        #expect(throws: CryptoError(.invalidTagSize, "")) { try opener.finish(tag: [1, 2, 3]) }
    }
}
