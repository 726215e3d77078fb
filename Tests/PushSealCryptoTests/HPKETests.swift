import Testing
@testable import PushSealCrypto

/// HPKE single-shot behaviour beyond the vectors: every mismatch fails one way, `enc` checks
/// come first, caller-memory forms, sizes.
@Suite("HPKE seal/open")
struct HPKETests {
    /// Low-order X25519 points (RFC 7748 §6.1; the Wycheproof `LowOrderPublic` inputs): 0, 1,
    /// a point of order 8, and p − 1 (u = −1).
    static let lowOrderPoints: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),
        [1] + [UInt8](repeating: 0, count: 31),
        (try? hex("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800")) ?? [],
        [0xec] + [UInt8](repeating: 0xff, count: 30) + [0x7f],
    ]

    struct Setup {
        let recipient: X25519.PrivateKey
        let sender: X25519.PrivateKey?
        let psk: HPKE.PresharedKey?
        var senderPublic: X25519.PublicKey? { sender?.publicKey }
    }

    static func setup(_ mode: HPKE.Mode) throws -> Setup {
        let hasSender = mode == .auth || mode == .authPSK
        let hasPSK = mode == .psk || mode == .authPSK
        return Setup(recipient: try X25519.PrivateKey(), sender: hasSender ? try X25519.PrivateKey() : nil,
                     psk: hasPSK ? try HPKE.PresharedKey(key: SecretBytes(randomByteCount: 32), id: Array("psk-1".utf8)) : nil)
    }

    @Test("round trip in every mode and size; each seal has a fresh enc", arguments: HPKE.Mode.allCases)
    func roundTrip(mode: HPKE.Mode) throws {
        let s = try Self.setup(mode)
        let info = Array("pushseal:v2|HPKE-BASE-X25519-A256GCM|key-1|com.example.app".utf8)
        var encs: Set<[UInt8]> = []
        for size in [0, 1, 15, 16, 17, 255, 1024, 4000] {
            let plaintext = SecureRandom.bytes(size)
            let sealed = try HPKE.seal(plaintext, to: s.recipient.publicKey, info: info, sender: s.sender, psk: s.psk)
            #expect(sealed.count == size + HPKE.overheadByteCount)
            encs.insert(Array(sealed.prefix(HPKE.encByteCount)))
            #expect(try HPKE.open(sealed, with: s.recipient, info: info, sender: s.senderPublic, psk: s.psk) == plaintext)
        }
        #expect(encs.count == 8)
    }

    @Test("wrong info, AAD, key, sender, PSK, mode, enc or a flipped bit: one error, authenticationFailed",
          arguments: HPKE.Mode.allCases)
    func mismatchesFailOneWay(mode: HPKE.Mode) throws {
        let s = try Self.setup(mode)
        let info = Array("info".utf8), aad = Array("aad".utf8)
        let plaintext = Array("a notification".utf8)
        let sealed = try HPKE.seal(plaintext, to: s.recipient.publicKey, info: info, authenticating: aad, sender: s.sender, psk: s.psk)
        #expect(try HPKE.open(sealed, with: s.recipient, info: info, authenticating: aad, sender: s.senderPublic, psk: s.psk) == plaintext)

        func code(_ message: [UInt8], recipient: X25519.PrivateKey? = nil, info i: [UInt8]? = nil, aad a: [UInt8]? = nil,
                  sender: X25519.PublicKey?? = nil, psk: HPKE.PresharedKey?? = nil) -> CryptoError.Code? {
            let c = cryptoErrorCode {
                _ = try HPKE.open(message, with: recipient ?? s.recipient, info: i ?? info, authenticating: a ?? aad,
                                  sender: sender ?? s.senderPublic, psk: psk ?? s.psk)
            }
            #expect(openSSLErrorQueueIsEmpty())
            return c
        }
        #expect(code(sealed, info: info + [0]) == .authenticationFailed)
        #expect(code(sealed, info: []) == .authenticationFailed)
        #expect(code(sealed, aad: []) == .authenticationFailed)
        #expect(code(sealed, recipient: try X25519.PrivateKey()) == .authenticationFailed)
        // Another sender key, or none (a base-mode open of an auth message), or one when there was none.
        let other = try X25519.PrivateKey().publicKey
        #expect(code(sealed, sender: .some(s.sender == nil ? other : nil)) == .authenticationFailed)
        if s.sender != nil { #expect(code(sealed, sender: .some(other)) == .authenticationFailed) }
        let otherPSK = try HPKE.PresharedKey(key: SecretBytes(randomByteCount: 32), id: Array("psk-2".utf8))
        #expect(code(sealed, psk: .some(s.psk == nil ? otherPSK : nil)) == .authenticationFailed)
        if s.psk != nil { #expect(code(sealed, psk: .some(otherPSK)) == .authenticationFailed) }
        // Another valid enc.
        var swapped = sealed
        swapped.replaceSubrange(0..<32, with: try X25519.PrivateKey().publicKey.rawRepresentation)
        #expect(code(swapped) == .authenticationFailed)
        // Every single-bit flip in the enc (where it stays a usable point), ciphertext or tag.
        for index in [0, 17, 31, 32, 40, sealed.count - 16, sealed.count - 1] {
            var flipped = sealed
            flipped[index] ^= 0x01
            #expect(code(flipped) == .authenticationFailed, "byte \(index)")
        }
    }

    @Test("truncated enc → invalidPublicKey; short message → truncatedBox; low-order enc → zeroSharedSecret")
    func encChecks() throws {
        let s = try Self.setup(.base)
        let sealed = try HPKE.seal(Array("x".utf8), to: s.recipient.publicKey, info: [])
        for count in [0, 1, 31] {
            #expect(cryptoErrorCode { _ = try HPKE.open(Array(sealed.prefix(count)), with: s.recipient, info: []) } == .invalidPublicKey)
        }
        for count in [32, 47] {
            #expect(cryptoErrorCode { _ = try HPKE.open(Array(sealed.prefix(count)), with: s.recipient, info: []) } == .truncatedBox)
        }
        #expect(try HPKE.open(sealed, with: s.recipient, info: []) == Array("x".utf8))
        for point in Self.lowOrderPoints {
            #expect(point.count == 32)
            let forged = point + Array(sealed.dropFirst(32))
            #expect(cryptoErrorCode { _ = try HPKE.open(forged, with: s.recipient, info: []) } == .zeroSharedSecret)
            #expect(openSSLErrorQueueIsEmpty())
            #expect(cryptoErrorCode { _ = try HPKE.receiveExport(enc: point, with: s.recipient, info: [], exporterContext: [],
                                                                 outputByteCount: 32) } == .zeroSharedSecret)
        }
        #expect(cryptoErrorCode { _ = try HPKE.receiveExport(enc: Array(sealed.prefix(31)), with: s.recipient, info: [],
                                                             exporterContext: [], outputByteCount: 32) } == .invalidPublicKey)
    }

    @Test("sealing to, or authenticating with, a low-order key is refused (zeroSharedSecret)")
    func lowOrderKeys() throws {
        let r = try X25519.PrivateKey()
        for point in Self.lowOrderPoints {
            let bad = try X25519.PublicKey(rawRepresentation: point)
            #expect(cryptoErrorCode { _ = try HPKE.seal([1, 2, 3], to: bad, info: []) } == .zeroSharedSecret)
            let sealed = try HPKE.seal([1, 2, 3], to: r.publicKey, info: [], sender: try X25519.PrivateKey())
            #expect(cryptoErrorCode { _ = try HPKE.open(sealed, with: r, info: [], sender: bad) } == .zeroSharedSecret)
            #expect(openSSLErrorQueueIsEmpty())
        }
    }

    @Test("the caller-memory seal writes exactly enc ‖ ct ‖ tag and refuses a short buffer")
    func sealInto() throws {
        let s = try Self.setup(.auth)
        let plaintext = SecureRandom.bytes(100), info = Array("i".utf8)
        var output = [UInt8](repeating: 0xAA, count: 200)
        let written = try plaintext.withUnsafeBytes { p in
            try info.withUnsafeBytes { i in
                try output.withUnsafeMutableBytes { o in
                    try HPKE.seal(p, to: s.recipient.publicKey, info: i, authenticating: HPKE.empty, sender: s.sender, psk: nil, into: o)
                }
            }
        }
        #expect(written == 148)
        #expect(output[148...].allSatisfy { $0 == 0xAA })
        let opened = try Array(output.prefix(written)).withUnsafeBytes { m in
            try info.withUnsafeBytes { i in
                try HPKE.open(m, with: s.recipient, info: i, authenticating: HPKE.empty, sender: s.senderPublic, psk: nil)
            }
        }
        #expect(opened == plaintext)
        var small = [UInt8](repeating: 0, count: 147)
        let code = cryptoErrorCode {
            _ = try plaintext.withUnsafeBytes { p in
                try small.withUnsafeMutableBytes { o in
                    try HPKE.seal(p, to: s.recipient.publicKey, info: HPKE.empty, authenticating: HPKE.empty, sender: nil, psk: nil, into: o)
                }
            }
        }
        #expect(code == .invalidParameter)
    }

    @Test("PSK and export limits: short PSK, empty id, export over 8160 bytes are invalidParameter")
    func limits() throws {
        #expect(cryptoErrorCode { _ = try HPKE.PresharedKey(key: SecretBytes(randomByteCount: 31), id: [1]) } == .invalidParameter)
        #expect(cryptoErrorCode { _ = try HPKE.PresharedKey(key: SecretBytes(randomByteCount: 32), id: []) } == .invalidParameter)
        let r = try X25519.PrivateKey()
        let (enc, longest) = try HPKE.sendExport(to: r.publicKey, info: [], exporterContext: [1], outputByteCount: HPKE.maxExportByteCount)
        #expect(longest.byteCount == 8160)
        #expect(try HPKE.receiveExport(enc: enc, with: r, info: [], exporterContext: [1], outputByteCount: 8160) == longest)
        #expect(try HPKE.receiveExport(enc: enc, with: r, info: [], exporterContext: [2], outputByteCount: 8160) != longest)
        #expect(cryptoErrorCode { _ = try HPKE.sendExport(to: r.publicKey, info: [], exporterContext: [], outputByteCount: 8161) } == .invalidParameter)
        #expect(cryptoErrorCode { _ = try HPKE.deriveKeyPair(inputKeyMaterial: SecretBytes(randomByteCount: 31)) } == .invalidParameter)
    }

    @Test("seal and open from many threads at once agree (per-thread contexts)")
    func concurrent() async throws {
        let s = try Self.setup(.auth)
        let recipient = s.recipient, sender = s.sender
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for round in 0..<50 {
                        let plaintext = SecureRandom.bytes(task * 10 + round)
                        let info = Array("t\(task)".utf8)
                        let sealed = try HPKE.seal(plaintext, to: recipient.publicKey, info: info, sender: sender)
                        guard try HPKE.open(sealed, with: recipient, info: info, sender: sender?.publicKey) == plaintext else { return false }
                    }
                    return true
                }
            }
            for try await ok in group { #expect(ok) }
        }
    }
}
