import PushSealTestSupport
import Testing
@testable import PushSealCrypto

/// `HPKE.AuthPair` and `HPKE.AuthPairCache`: the auth modes with the static-static DH computed
/// once per (sender, recipient) pair give the bytes of the two-DH computation — the RFC 9180
/// vectors of mode_auth and mode_auth_psk through the pair path, byte-identical seals with the
/// same ephemeral key whether the pair came from the cache or not — and a cache never serves a
/// pair made for other keys (a rotated sender key, a new registration under a known key id),
/// holds at most its capacity and releases what it drops.
@Suite("HPKE auth pairs and their cache")
struct HPKEAuthPairTests {
    static let info = Array("pushseal:v2|HPKE-AUTH-X25519-A256GCM|key-1|com.example.app|sender-1".utf8)

    static func seeded(_ rng: inout SeededGenerator) throws -> X25519.PrivateKey {
        try HPKE.deriveKeyPair(inputKeyMaterial: SecretBytes(copying: rng.bytes(32)))
    }

    @Test("RFC 9180 auth and auth_psk vectors through a pair: enc, key, base_nonce, exporter_secret, every encryption and export")
    func vectorsThroughAPair() throws {
        var checked = 0
        for v in try HPKEVectorTests.loadAll() where v.aead_id == 2 && v.mode & 2 != 0 {
            let recipient = try HPKEVectorTests.privateKey(v.skRm)
            let sender = try HPKEVectorTests.privateKey(try #require(v.skSm))
            let senderPublic = try X25519.PublicKey(rawRepresentation: try hex(try #require(v.pkSm)))
            let psk = try HPKEVectorTests.psk(v)
            let info = try hex(v.info)
            let sealing = try HPKE.AuthPair(sender: sender, recipient: recipient.publicKey)
            let opening = try HPKE.AuthPair(recipient: recipient, sender: senderPublic)
            #expect(sealing.staticSecret == opening.staticSecret, "mode \(v.mode): DH(skS, pkR) = DH(skR, pkS)")

            let (enc, s) = try HPKE.setupSender(recipient: recipient.publicKey, info: info, sender: nil, pair: sealing, psk: psk,
                                                ephemeral: try HPKEVectorTests.privateKey(v.skEm))
            #expect(enc == (try hex(v.enc)))
            #expect(s.mode.rawValue == v.mode)
            #expect(s.key.copyBytes() == (try hex(v.key)))
            #expect(s.baseNonce.copyBytes() == (try hex(v.base_nonce)))
            #expect(s.exporterSecret.copyBytes() == (try hex(v.exporter_secret)))
            let r = try HPKE.setupRecipient(enc: enc, recipient: recipient, info: info, sender: nil, pair: opening, psk: psk)
            #expect(r.mode.rawValue == v.mode && r.key == s.key && r.baseNonce == s.baseNonce && r.exporterSecret == s.exporterSecret)
            for (seq, e) in v.encryptions.enumerated() {
                let pt = try hex(e.pt), aad = try hex(e.aad), ct = try hex(e.ct)
                #expect(try s.seal(pt, authenticating: aad, sequenceNumber: UInt64(seq)) == ct, "mode \(v.mode) seq \(seq)")
                #expect(try r.open(ct, authenticating: aad, sequenceNumber: UInt64(seq)) == pt)
            }
            for x in v.exports {
                #expect(try r.export(try hex(x.exporter_context), outputByteCount: x.L).copyBytes() == (try hex(x.exported_value)))
            }
            // Single shot: the vector's first encryption, sealed and opened with the pair.
            let first = v.encryptions[0]
            let pt = try hex(first.pt), aad = try hex(first.aad)
            let sealed = try HPKE.seal(pt, to: recipient.publicKey, info: info, authenticating: aad, sender: nil, pair: sealing, psk: psk,
                                       ephemeral: try HPKEVectorTests.privateKey(v.skEm))
            #expect(sealed == (try hex(v.enc)) + (try hex(first.ct)))
            #expect(try HPKE.open(sealed, with: recipient, from: opening, info: info, authenticating: aad, psk: psk) == pt)
            checked += 1
        }
        #expect(checked == 2)  // mode_auth and mode_auth_psk
    }

    /// The same ephemeral key sealed three ways — sender key (two DHs), a cache miss, a cache
    /// hit — gives the same bytes; each opens through the cache and without it.
    @Test("a cached seal and open are byte-identical to uncached ones with the same ephemeral key", arguments: [false, true])
    func cachedEqualsUncached(withPSK: Bool) throws {
        var rng = SeededGenerator(seed: withPSK ? 0xA0_75 : 0xA0_70)
        let recipient = try Self.seeded(&rng), sender = try Self.seeded(&rng)
        let psk = withPSK ? try HPKE.PresharedKey(key: SecretBytes(copying: rng.bytes(32)), id: rng.bytes(5)) : nil
        let sealing = HPKE.AuthPairCache(), opening = HPKE.AuthPairCache()
        let raw = recipient.publicKey.rawRepresentation
        for size in [0, 1, 255, 1024, 2048] {
            let plaintext = rng.bytes(size), aad = rng.bytes(size % 7), ephemeral = try Self.seeded(&rng)
            let uncached = try HPKE.seal(plaintext, to: recipient.publicKey, info: Self.info, authenticating: aad, sender: sender, psk: psk,
                                         ephemeral: ephemeral)
            for round in 0..<2 {  // 0: the cache makes the pair; 1: it serves the one it holds
                let pair = try raw.withUnsafeBytes {
                    try sealing.pair(sender: sender, senderKeyID: "sender-1", recipientPublicKey: $0, recipientKeyID: "key-1")
                }
                let cached = try HPKE.seal(plaintext, to: pair.recipientPublicKey, info: Self.info, authenticating: aad, sender: nil,
                                           pair: pair, psk: psk, ephemeral: ephemeral)
                #expect(cached == uncached, "size \(size) round \(round)")
                let opener = try opening.pair(recipient: recipient, recipientKeyID: "key-1", sender: sender.publicKey, senderKeyID: "sender-1")
                #expect(try HPKE.open(cached, with: recipient, from: opener, info: Self.info, authenticating: aad, psk: psk) == plaintext)
                #expect(try HPKE.open(cached, with: recipient, info: Self.info, authenticating: aad, sender: sender.publicKey, psk: psk) == plaintext)
            }
        }
        #expect(sealing.count == 1 && opening.count == 1)
        // The public pair forms (fresh ephemeral key) open with the sender-key form, and back.
        let pair = try HPKE.AuthPair(sender: sender, recipient: recipient.publicKey)
        let fresh = try HPKE.seal([1, 2, 3], for: pair, info: Self.info, psk: psk)
        #expect(try HPKE.open(fresh, with: recipient, info: Self.info, sender: sender.publicKey, psk: psk) == [1, 2, 3])
        let classic = try HPKE.seal([4, 5], to: recipient.publicKey, info: Self.info, sender: sender, psk: psk)
        #expect(try HPKE.open(classic, with: recipient, from: HPKE.AuthPair(recipient: recipient, sender: sender.publicKey), info: Self.info, psk: psk) == [4, 5])
    }

    /// The sender key rotates under the same key id, or a new registration (device key)
    /// arrives under a known key id: the cache makes a new pair, and a message sealed with it
    /// authenticates only with the new keys.
    @Test func aRotatedSenderKeyOrANewRegistrationIsNeverServedAStalePair() throws {
        var rng = SeededGenerator(seed: 0x5_7A1E)
        let device1 = try Self.seeded(&rng), device2 = try Self.seeded(&rng)
        let sender1 = try Self.seeded(&rng), sender2 = try Self.seeded(&rng)
        let cache = HPKE.AuthPairCache()
        func pair(_ sender: X25519.PrivateKey, _ device: X25519.PrivateKey) throws -> HPKE.AuthPair {
            try device.publicKey.rawRepresentation.withUnsafeBytes {
                try cache.pair(sender: sender, senderKeyID: "sender-1", recipientPublicKey: $0, recipientKeyID: "key-1")
            }
        }
        weak var released: HPKE.AuthPair?
        do {
            let old = try pair(sender1, device1)
            released = old
            #expect(try pair(sender1, device1) === old)
        }
        // Sender rotation under the same id.
        let rotated = try pair(sender2, device1)
        #expect(rotated !== released && rotated.senderPublicKey == sender2.publicKey)
        let sealed = try HPKE.seal([9], for: rotated, info: Self.info)
        #expect(try HPKE.open(sealed, with: device1, info: Self.info, sender: sender2.publicKey) == [9])
        #expect(throws: CryptoError(.authenticationFailed, "")) { try HPKE.open(sealed, with: device1, info: Self.info, sender: sender1.publicKey) }
        // New registration under the same key id.
        let renewed = try pair(sender2, device2)
        #expect(renewed !== rotated && renewed.recipientPublicKey == device2.publicKey)
        let toNew = try HPKE.seal([8], for: renewed, info: Self.info)
        #expect(try HPKE.open(toNew, with: device2, info: Self.info, sender: sender2.publicKey) == [8])
        #expect(throws: CryptoError(.authenticationFailed, "")) { try HPKE.open(toNew, with: device1, info: Self.info, sender: sender2.publicKey) }
        #expect(cache.count == 1)
        // The replaced pair was released by the cache (its secret zeroed with it).
        #expect(released == nil)

        // The device side: a pinned sender key replaced under its id gives a new pair too.
        let opening = HPKE.AuthPairCache()
        let first = try opening.pair(recipient: device2, recipientKeyID: "key-1", sender: sender1.publicKey, senderKeyID: "sender-1")
        let second = try opening.pair(recipient: device2, recipientKeyID: "key-1", sender: sender2.publicKey, senderKeyID: "sender-1")
        #expect(first !== second && second.senderPublicKey == sender2.publicKey)
        #expect(try HPKE.open(toNew, with: device2, from: second, info: Self.info) == [8])
        #expect(throws: CryptoError(.authenticationFailed, "")) { try HPKE.open(toNew, with: device2, from: first, info: Self.info) }
        // A pair for another device key is refused outright.
        #expect(throws: CryptoError(.invalidParameter, "")) { try HPKE.open(toNew, with: device1, from: second, info: Self.info) }
    }

    @Test func atMostCapacityPairsLeastRecentlyUsedDroppedAndReleased() throws {
        var rng = SeededGenerator(seed: 0x1_2_3)
        let sender = try Self.seeded(&rng)
        let devices = try (0..<4).map { _ in try Self.seeded(&rng) }
        let cache = HPKE.AuthPairCache(capacity: 2)
        func pair(_ i: Int) throws -> HPKE.AuthPair {
            try devices[i].publicKey.rawRepresentation.withUnsafeBytes {
                try cache.pair(sender: sender, senderKeyID: "s", recipientPublicKey: $0, recipientKeyID: "k\(i)")
            }
        }
        let a = try pair(0)
        weak let b = try pair(1)
        #expect(try pair(0) === a)  // a is now the most recent
        _ = try pair(2)              // drops b, the least recently used
        #expect(b == nil && cache.count == 2)
        #expect(try pair(0) === a)
        cache.removeAll(recipientKeyID: "k0")
        #expect(cache.count == 1)
        #expect(try pair(0) !== a)
        cache.removeAll(senderKeyID: "s")
        #expect(cache.count == 0)
        _ = try pair(3)
        cache.retainOnly(senderKeyIDs: ["other"])
        #expect(cache.count == 0)
        #expect(HPKE.AuthPairCache(capacity: 0).capacity == 1)
    }

    @Test func aLowOrderOrMisSizedRecipientIsRefusedAndNotCached() throws {
        let sender = try X25519.PrivateKey()
        let cache = HPKE.AuthPairCache()
        #expect(throws: CryptoError(.zeroSharedSecret, "")) {
            try [UInt8](repeating: 0, count: 32).withUnsafeBytes {
                try cache.pair(sender: sender, senderKeyID: "s", recipientPublicKey: $0, recipientKeyID: "k")
            }
        }
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try [UInt8](repeating: 9, count: 31).withUnsafeBytes {
                try cache.pair(sender: sender, senderKeyID: "s", recipientPublicKey: $0, recipientKeyID: "k")
            }
        }
        #expect(cache.count == 0)
        #expect("\(try HPKE.AuthPair(sender: sender, recipient: X25519.PrivateKey().publicKey))".hasPrefix("HPKE.AuthPair(sender "))
    }

    @Test func thePublicKeyCacheImportsOncePerKeyIDAndBytes() throws {
        let cache = X25519.PublicKeyCache(capacity: 2)
        let one = try X25519.PrivateKey().publicKey.rawRepresentation, two = try X25519.PrivateKey().publicKey.rawRepresentation
        let first = try one.withUnsafeBytes { try cache.publicKey(for: "k", rawBytes: $0) }
        #expect(try one.withUnsafeBytes { try cache.publicKey(for: "k", rawBytes: $0) } === first)
        let replaced = try two.withUnsafeBytes { try cache.publicKey(for: "k", rawBytes: $0) }
        #expect(replaced !== first && replaced.rawRepresentation == two && cache.count == 1)
        cache.remove(keyID: "k")
        #expect(cache.count == 0)
        #expect(throws: CryptoError(.invalidPublicKey, "")) { try [UInt8](repeating: 1, count: 5).withUnsafeBytes { try cache.publicKey(for: "k", rawBytes: $0) } }
    }
}
