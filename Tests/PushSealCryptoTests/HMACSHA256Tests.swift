import Testing
import PushSealCrypto
import PushSealSystem

/// ``HMACSHA256`` against RFC 4231's HMAC-SHA-256 test cases 1, 2, 4 and 6 (a key longer than a block).
@Suite struct HMACSHA256Tests {
    static func bytes(_ hex: String) -> [UInt8] { Hex.decode(hex) ?? [] }

    @Test(arguments: [
        ("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        ("4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ("0102030405060708090a0b0c0d0e0f10111213141516171819", String(repeating: "cd", count: 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        (String(repeating: "aa", count: 131), "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d2048617368204b6579204669727374",
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    ])
    func rfc4231(_ v: (String, String, String)) throws {
        let tag = try HMACSHA256.authenticate(Self.bytes(v.1), key: SecretBytes(copying: Self.bytes(v.0)))
        #expect(tag == Self.bytes(v.2))
    }

    @Test func anEmptyKeyIsRefused() {
        #expect(throws: CryptoError.self) { try HMACSHA256.authenticate([1], key: SecretBytes(copying: [UInt8]())) }
    }
}
