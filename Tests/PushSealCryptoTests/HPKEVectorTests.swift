import Testing
@testable import PushSealCrypto

/// One entry of the RFC 9180 `test-vectors.json` (the fields we use).
struct HPKEVector: Decodable {
    let mode: UInt8
    let kem_id: Int
    let kdf_id: Int
    let aead_id: Int
    let info: String
    let ikmE: String
    let ikmR: String
    let ikmS: String?
    let skEm: String
    let pkEm: String
    let skRm: String
    let pkRm: String
    let skSm: String?
    let pkSm: String?
    let psk: String?
    let psk_id: String?
    let enc: String
    let key: String
    let base_nonce: String
    let exporter_secret: String
    let encryptions: [Encryption]
    let exports: [Export]

    struct Encryption: Decodable {
        let aad: String
        let ct: String
        let nonce: String
        let pt: String
    }

    struct Export: Decodable {
        let exporter_context: String
        let L: Int
        let exported_value: String
    }
}

/// RFC 9180 Appendix A vectors for DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 (both files in
/// `vectors/hpke/`). Every entry's KEM keys are checked with DeriveKeyPair; the entries of our
/// suite (AES-256-GCM, aead_id 2: one per mode) are checked end to end — every encryption
/// sealed with the vector's fixed ephemeral key and opened, every export on both sides, and
/// the single-shot seal/open. The AES-128-GCM entries (aead_id 1) are outside the suite; only
/// their KEM part runs.
@Suite("HPKE RFC 9180 vectors")
struct HPKEVectorTests {
    static let files = ["hpke/rfc9180_x25519_sha256_aesgcm.json", "hpke/rfc9180_x25519_sha256_aesgcm_auth.json"]

    static func loadAll() throws -> [HPKEVector] {
        try files.flatMap { try SharedData.decode([HPKEVector].self, vectors: $0) }
    }

    static func psk(_ v: HPKEVector) throws -> HPKE.PresharedKey? {
        guard let key = v.psk, let id = v.psk_id else { return nil }
        return try HPKE.PresharedKey(key: SecretBytes(copying: try hex(key)), id: try hex(id))
    }

    static func privateKey(_ hexText: String) throws -> X25519.PrivateKey {
        try X25519.PrivateKey(rawRepresentation: SecretBytes(copying: try hex(hexText)))
    }

    @Test("the files hold 8 entries of the KEM/KDF, 4 of them (one per mode) AES-256-GCM")
    func inventory() throws {
        let all = try Self.loadAll()
        #expect(all.count == 8)
        #expect(all.allSatisfy { $0.kem_id == 0x20 && $0.kdf_id == 1 })
        let ours = all.filter { $0.aead_id == 2 }
        #expect(Set(ours.map(\.mode)) == [0, 1, 2, 3])
        #expect(ours.count == 4)
        #expect(ours.allSatisfy { $0.encryptions.count == 257 && $0.exports.count == 3 })
    }

    @Test("DeriveKeyPair (RFC 9180 §7.1.3) gives skEm/pkEm, skRm/pkRm, skSm/pkSm of every entry")
    func deriveKeyPair() throws {
        var checked = 0
        for v in try Self.loadAll() {
            var pairs = [(v.ikmE, v.skEm, v.pkEm), (v.ikmR, v.skRm, v.pkRm)]
            if let ikmS = v.ikmS, let skSm = v.skSm, let pkSm = v.pkSm { pairs.append((ikmS, skSm, pkSm)) }
            for (ikm, sk, pk) in pairs {
                let key = try HPKE.deriveKeyPair(inputKeyMaterial: SecretBytes(copying: try hex(ikm)))
                #expect(key.rawRepresentation.copyBytes() == (try hex(sk)), "mode \(v.mode) aead \(v.aead_id)")
                #expect(key.publicKey.rawRepresentation == (try hex(pk)))
                // Importing the raw private key gives the same public key.
                #expect(try Self.privateKey(sk).publicKey.rawRepresentation == (try hex(pk)))
                checked += 1
            }
        }
        #expect(checked == 20)  // 8 entries × (E, R) + 4 auth entries × S
    }

    @Test("every encryption and export of the AES-256-GCM entries, all four modes, sender and recipient side")
    func everyEncryptionAndExport() throws {
        var encryptions = 0, exports = 0, modes: Set<UInt8> = []
        for v in try Self.loadAll() where v.aead_id == 2 {
            let recipient = try Self.privateKey(v.skRm)
            let ephemeral = try Self.privateKey(v.skEm)
            let senderKey = try v.skSm.map(Self.privateKey)
            let senderPublic = try v.pkSm.map { try X25519.PublicKey(rawRepresentation: try hex($0)) }
            let psk = try Self.psk(v)
            let info = try hex(v.info)
            #expect((v.mode & 2 != 0) == (senderKey != nil) && (v.mode & 1 != 0) == (psk != nil), "mode \(v.mode)")

            let (enc, s) = try HPKE.setupSender(recipient: recipient.publicKey, info: info, sender: senderKey, psk: psk, ephemeral: ephemeral)
            #expect(enc == (try hex(v.enc)), "mode \(v.mode): enc")
            #expect(s.mode.rawValue == v.mode)
            #expect(s.key.copyBytes() == (try hex(v.key)), "mode \(v.mode): key")
            #expect(s.baseNonce.copyBytes() == (try hex(v.base_nonce)), "mode \(v.mode): base_nonce")
            #expect(s.exporterSecret.copyBytes() == (try hex(v.exporter_secret)), "mode \(v.mode): exporter_secret")
            let r = try HPKE.setupRecipient(enc: enc, recipient: recipient, info: info, sender: senderPublic, psk: psk)
            #expect(r.key == s.key && r.baseNonce == s.baseNonce && r.exporterSecret == s.exporterSecret)

            for (seq, e) in v.encryptions.enumerated() {
                let pt = try hex(e.pt), aad = try hex(e.aad), ct = try hex(e.ct)
                #expect(s.nonce(UInt64(seq)) == (try hex(e.nonce)), "mode \(v.mode) seq \(seq): nonce")
                #expect(try s.seal(pt, authenticating: aad, sequenceNumber: UInt64(seq)) == ct, "mode \(v.mode) seq \(seq): seal")
                #expect(try r.open(ct, authenticating: aad, sequenceNumber: UInt64(seq)) == pt, "mode \(v.mode) seq \(seq): open")
                encryptions += 1
            }
            for x in v.exports {
                let context = try hex(x.exporter_context), expected = try hex(x.exported_value)
                #expect(try s.export(context, outputByteCount: x.L).copyBytes() == expected, "mode \(v.mode): export L=\(x.L)")
                #expect(try r.export(context, outputByteCount: x.L).copyBytes() == expected)
                exports += 1
            }
            modes.insert(v.mode)
        }
        #expect(encryptions == 4 * 257)
        #expect(exports == 4 * 3)
        #expect(modes == [0, 1, 2, 3])
    }

    @Test("single-shot seal with the vector's ephemeral key gives enc ‖ encryptions[0].ct; open recovers pt")
    func singleShot() throws {
        var ran = 0
        for v in try Self.loadAll() where v.aead_id == 2 {
            let recipient = try Self.privateKey(v.skRm)
            let senderKey = try v.skSm.map(Self.privateKey)
            let senderPublic = try v.pkSm.map { try X25519.PublicKey(rawRepresentation: try hex($0)) }
            let psk = try Self.psk(v)
            let info = try hex(v.info)
            let first = v.encryptions[0]
            let pt = try hex(first.pt), aad = try hex(first.aad)
            let sealed = try HPKE.seal(pt, to: recipient.publicKey, info: info, authenticating: aad, sender: senderKey, psk: psk,
                                       ephemeral: try Self.privateKey(v.skEm))
            #expect(sealed == (try hex(v.enc)) + (try hex(first.ct)), "mode \(v.mode)")
            #expect(try HPKE.open(sealed, with: recipient, info: info, authenticating: aad, sender: senderPublic, psk: psk) == pt)
            // The public seal (fresh ephemeral key) opens too, and its enc differs from the vector's.
            let fresh = try HPKE.seal(pt, to: recipient.publicKey, info: info, authenticating: aad, sender: senderKey, psk: psk)
            #expect(Array(fresh.prefix(32)) != (try hex(v.enc)))
            #expect(try HPKE.open(fresh, with: recipient, info: info, authenticating: aad, sender: senderPublic, psk: psk) == pt)
            // Exports through the public single-shot interface agree between the two sides.
            for x in v.exports {
                let context = try hex(x.exporter_context)
                let (enc, secret) = try HPKE.sendExport(to: recipient.publicKey, info: info, exporterContext: context,
                                                        outputByteCount: x.L, sender: senderKey, psk: psk)
                let received = try HPKE.receiveExport(enc: enc, with: recipient, info: info, exporterContext: context,
                                                      outputByteCount: x.L, sender: senderPublic, psk: psk)
                #expect(secret == received && secret.byteCount == x.L)
            }
            ran += 1
        }
        #expect(ran == 4)
    }
}
