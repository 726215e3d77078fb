import Testing
@testable import PushSealCrypto

@Test func roundTrip() throws {
    let key = SecretBytes(randomByteCount: 32)
    let box = try AES256GCM.seal(Array("hello".utf8), with: key, authenticating: Array("aad".utf8))
    #expect(box.combined.count == 5 + 28)
    #expect(try AES256GCM.open(box, with: key, authenticating: Array("aad".utf8)) == Array("hello".utf8))
    #expect(throws: CryptoError(.authenticationFailed, "")) { try AES256GCM.open(box, with: key, authenticating: []) }
}
