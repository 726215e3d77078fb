import PushSealCrypto
import PushSealWire

/// A test-only second algorithm, shaped like v2 HPKE (docs/DESIGN.md "Wire format, version 2")
/// but built from PushSeal's own primitives, so the seam is proven without HPKE: a 32-byte
/// random `enc` prefix instead of a bare nonce, an extra `sender_key_id` header field, an
/// empty AEAD AAD and an `info` string that binds the context. The box is
/// enc(32) ‖ nonce(12) ‖ ciphertext ‖ tag(16) under HKDF-SHA256(key, salt: enc, info).
/// Never registered outside this test target.
struct TestEnvelope: EnvelopeAlgorithm {
    static let encByteCount = 32
    let senderKeyID: String

    var name: String { "TEST-HKDF-A256GCM" }
    var headerFieldNames: [String] { ["sender_key_id"] }
    var keyByteCount: Int { 32 }
    var minimumBoxByteCount: Int { Self.encByteCount + AES256GCM.minimumCombinedByteCount }
    func boxByteCount(plaintextByteCount: Int) -> Int { minimumBoxByteCount + plaintextByteCount }
    func sealingHeaderValues(keyID: String, appID: String) throws -> [String] { [senderKeyID] }

    /// `pushseal:test|TEST-HKDF-A256GCM|<key_id>|<app_id>|<sender_key_id>`.
    func withBinding<R>(_ context: EnvelopeContext, _ body: (RawSpan) throws -> R) throws -> R {
        let info = binding(context)
        return try body(info.span.bytes)
    }

    private func binding(_ context: EnvelopeContext) -> [UInt8] {
        Array((["pushseal:test", name, context.keyID, context.appID] + context.headerValues).joined(separator: "|").utf8)
    }

    private func derivedKey(_ key: SecretBytes, enc: [UInt8], context: EnvelopeContext) throws -> SecretBytes {
        try HKDFSHA256.deriveKey(inputKeyMaterial: key, salt: enc, info: binding(context), outputByteCount: AES256GCM.keyByteCount)
    }

    func seal(_ plaintext: RawSpan, key: SecretBytes, context: EnvelopeContext,
              into box: inout MutableRawSpan) throws -> Int {
        guard key.byteCount == keyByteCount else { throw FormatError(.invalidKey, "a test key is 32 bytes") }
        guard box.byteCount >= boxByteCount(plaintextByteCount: plaintext.byteCount) else {
            throw CryptoError(.invalidParameter, "box too small")
        }
        let enc = SecureRandom.bytes(Self.encByteCount)
        let inner = try AES256GCM.seal(plaintext.withUnsafeBytes { Array($0) }, with: try derivedKey(key, enc: enc, context: context)).combined
        for (i, b) in (enc + inner).enumerated() { box.storeBytes(of: b, toByteOffset: i, as: UInt8.self) }
        return enc.count + inner.count
    }

    func open(_ box: [UInt8], key: SecretBytes, context: EnvelopeContext) throws -> [UInt8] {
        guard box.count >= minimumBoxByteCount else { throw FormatError(.truncatedBox, "short", field: WireFormat.encryptedDataField) }
        let enc = Array(box[0..<Self.encByteCount])
        do {
            return try AES256GCM.open(try SealedBox(combined: Array(box[Self.encByteCount...])),
                                      with: try derivedKey(key, enc: enc, context: context))
        } catch let e as CryptoError where e.code == .authenticationFailed {
            throw FormatError(.authenticationFailed, "the test box did not authenticate")
        }
    }
}
