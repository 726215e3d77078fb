import Testing
@testable import PushSealCrypto

/// The span entries the wire module's envelopes call: the same boxes and errors as the array
/// and pointer forms.
struct SpanEntriesTests {
    let key = SecretBytes(randomByteCount: 32)
    let aad = Array("pushseal:v1|A256GCM|k1|com.example.app".utf8)

    @Test func aesSealIntoASpanOpensWithTheArrayFormAndOpenCombinedReadsIt() throws {
        for n in [0, 1, 255, 1024] {
            let plaintext = (0..<n).map { UInt8(truncatingIfNeeded: $0) }
            var box = [UInt8](repeating: 0xEE, count: n + AES256GCM.minimumCombinedByteCount + 3)
            let written: Int
            do {
                var span = box.mutableSpan
                var bytes = span.mutableBytes
                written = try AES256GCM.seal(plaintext.span.bytes, with: key, authenticating: aad.span.bytes, into: &bytes)
            }
            #expect(written == n + AES256GCM.minimumCombinedByteCount)
            #expect(box.suffix(3) == [0xEE, 0xEE, 0xEE])
            let sealed = Array(box[0..<written])
            #expect(try AES256GCM.open(try SealedBox(combined: sealed), with: key, authenticating: aad) == plaintext)
            #expect(try AES256GCM.open(combined: sealed.span.bytes, with: key, authenticating: aad.span.bytes) == plaintext)
            var tampered = sealed
            tampered[tampered.count - 1] ^= 1
            #expect(throws: CryptoError(.authenticationFailed, "")) {
                try AES256GCM.open(combined: tampered.span.bytes, with: key, authenticating: aad.span.bytes)
            }
        }
        let short = [UInt8](repeating: 0, count: AES256GCM.minimumCombinedByteCount - 1)
        #expect(throws: CryptoError(.truncatedBox, "")) { try AES256GCM.open(combined: short.span.bytes, with: key, authenticating: RawSpan()) }
    }

    @Test func aesSealIntoATooSmallSpanThrows() throws {
        let plaintext = [UInt8](repeating: 1, count: 10)
        var box = [UInt8](repeating: 0, count: 10 + AES256GCM.minimumCombinedByteCount - 1)
        var span = box.mutableSpan
        var bytes = span.mutableBytes
        #expect(throws: CryptoError(.invalidParameter, "")) {
            try AES256GCM.seal(plaintext.span.bytes, with: key, authenticating: RawSpan(), into: &bytes)
        }
    }

    @Test func hpkeSpanFormsRoundTripInBaseAndAuthMode() throws {
        let recipient = try X25519.PrivateKey()
        let sender = try X25519.PrivateKey()
        let info = Array("pushseal:v2|HPKE-AUTH-X25519-A256GCM|k1|com.example.app|s1".utf8)
        let plaintext = Array("{\"title\":\"hi\"}".utf8)
        let pair = try HPKE.AuthPairCache().pair(sender: sender, senderKeyID: "s1",
                                                 recipientPublicKey: SecretBytes(copying: recipient.publicKey.rawRepresentation), recipientKeyID: "k1")
        for mode in ["base", "auth", "pair"] {
            var box = [UInt8](repeating: 0, count: plaintext.count + HPKE.overheadByteCount)
            let written: Int
            do {
                var span = box.mutableSpan
                var bytes = span.mutableBytes
                switch mode {
                case "base": written = try HPKE.seal(plaintext.span.bytes, to: recipient.publicKey, info: info.span.bytes, into: &bytes)
                case "auth": written = try HPKE.seal(plaintext.span.bytes, to: recipient.publicKey, info: info.span.bytes, sender: sender, into: &bytes)
                default: written = try HPKE.seal(plaintext.span.bytes, for: pair, info: info.span.bytes, into: &bytes)
                }
            }
            #expect(written == box.count)
            let senderKey: X25519.PublicKey? = mode == "base" ? nil : sender.publicKey
            #expect(try HPKE.open(box, with: recipient, info: info, sender: senderKey) == plaintext)
            #expect(try HPKE.open(box.span.bytes, with: recipient, info: info.span.bytes, sender: senderKey) == plaintext)
            if mode != "base" {
                #expect(try HPKE.open(box.span.bytes, with: recipient, from: pair, info: info.span.bytes) == plaintext)
            }
        }
    }

    @Test func keyImportsFromSecretBytesMatchThePointerForms() throws {
        let device = try X25519.PrivateKey()
        let raw = SecretBytes(copying: device.publicKey.rawRepresentation)
        #expect(try X25519.PublicKey.imported(from: raw) == device.publicKey)
        let cache = X25519.PublicKeyCache()
        #expect(try cache.publicKey(for: "k1", rawRepresentation: raw) == device.publicKey)
        #expect(throws: CryptoError.self) { try X25519.PublicKey.imported(from: SecretBytes(copying: [1, 2, 3])) }
    }

    @Test func wipeZeroesTheSpan() {
        var bytes: [UInt8] = [1, 2, 3, 4]
        do {
            var span = bytes.mutableSpan
            var raw = span.mutableBytes
            SecretBytes.wipe(&raw)
        }
        #expect(bytes == [0, 0, 0, 0])
    }
}
