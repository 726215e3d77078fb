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
    func withBinding<R>(_ context: EnvelopeContext, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try Array((["pushseal:test", name, context.keyID, context.appID] + context.headerValues).joined(separator: "|").utf8).withUnsafeBytes(body)
    }

    private func derivedKey(_ key: SecretBytes, enc: [UInt8], context: EnvelopeContext) throws -> SecretBytes {
        try withBinding(context) { info in
            try HKDFSHA256.deriveKey(inputKeyMaterial: key, salt: enc, info: Array(info), outputByteCount: AES256GCM.keyByteCount)
        }
    }

    func seal(_ plaintext: UnsafeRawBufferPointer, key: SecretBytes, context: EnvelopeContext,
              into box: UnsafeMutableRawBufferPointer) throws -> Int {
        guard key.byteCount == keyByteCount else { throw FormatError(.invalidKey, "a test key is 32 bytes") }
        guard box.count >= boxByteCount(plaintextByteCount: plaintext.count), let base = box.baseAddress else {
            throw CryptoError(.invalidParameter, "box too small")
        }
        let enc = SecureRandom.bytes(Self.encByteCount)
        base.copyMemory(from: enc, byteCount: enc.count)
        let inner = try AES256GCM.seal(plaintext, with: try derivedKey(key, enc: enc, context: context),
                                       authenticating: UnsafeRawBufferPointer(start: nil, count: 0),
                                       into: UnsafeMutableRawBufferPointer(rebasing: box[Self.encByteCount...]))
        return Self.encByteCount + inner
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
