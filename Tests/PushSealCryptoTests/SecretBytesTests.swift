import Testing
@testable import PushSealCrypto

@Suite("SecretBytes, ConstantTime, SecureRandom")
struct SecretBytesTests {
    /// 32 bytes 200…231: every decimal rendering is three digits and none equals the length (32).
    let secretBytes: [UInt8] = (0..<32).map { UInt8(200 + $0) }

    @Test("description, debugDescription, interpolation, dump and Mirror never show the bytes")
    func neverPrints() {
        let secret = SecretBytes(copying: secretBytes)
        var dumped = ""
        dump(secret, to: &dumped)
        var dumpedInArray = ""
        dump([secret], to: &dumpedInArray)
        let mirrorText = Mirror(reflecting: secret).children.map { "\(String(describing: $0.label)) \($0.value)" }.joined(separator: "\n")
        let renderings = [
            secret.description, secret.debugDescription, "\(secret)", String(describing: secret),
            String(reflecting: secret), dumped, dumpedInArray, mirrorText, "\([secret])", String(reflecting: [secret]),
        ]
        // Forbidden: the array as Swift prints it, hex (both cases), and any single byte in decimal.
        let forbidden = [
            "\(secretBytes)", String(reflecting: secretBytes),
            hexString(secretBytes), hexString(secretBytes, uppercase: true),
            hexString(secretBytes.prefix(4)), hexString(secretBytes.prefix(4), uppercase: true),
        ] + secretBytes.map { String($0) }
        for text in renderings {
            #expect(text.contains("32"), "the length is shown: \(text)")
            for bad in forbidden {
                #expect(!text.contains(bad), "a rendering contains \(bad): \(text)")
            }
        }
        #expect(secret.description == "SecretBytes(32 bytes, redacted)")
    }

    @Test("equality: same bytes equal; any differing byte, length or prefix unequal")
    func equality() {
        let a = SecretBytes(copying: secretBytes)
        #expect(a == SecretBytes(copying: secretBytes))
        #expect(a == a)
        for index in [0, 15, 31] {
            var other = secretBytes
            other[index] ^= 0x01
            #expect(a != SecretBytes(copying: other), "differs at \(index)")
        }
        #expect(a != SecretBytes(copying: secretBytes.dropLast()))
        #expect(a != SecretBytes(copying: secretBytes + [0]))
        #expect(SecretBytes(copying: []) == SecretBytes(copying: []))
        #expect(SecretBytes(copying: []) != SecretBytes(copying: [0]))
        #expect(SecretBytes(randomByteCount: 32) != SecretBytes(randomByteCount: 32))
    }

    @Test("ConstantTime.equals: same semantics on arrays and pointers")
    func constantTime() {
        #expect(ConstantTime.equals(secretBytes, secretBytes))
        #expect(ConstantTime.equals([], []))
        #expect(!ConstantTime.equals([], [0]))
        #expect(!ConstantTime.equals(secretBytes, Array(secretBytes.dropLast())))
        var last = secretBytes
        last[31] ^= 0x80
        #expect(!ConstantTime.equals(secretBytes, last))
        var first = secretBytes
        first[0] ^= 0x01
        #expect(!ConstantTime.equals(secretBytes, first))
        secretBytes.withUnsafeBytes { a in
            last.withUnsafeBytes { b in
                #expect(!ConstantTime.equals(a, b))
                #expect(ConstantTime.equals(UnsafeRawBufferPointer(rebasing: a[0..<31]), UnsafeRawBufferPointer(rebasing: b[0..<31])))
            }
        }
    }

    @Test("copyBytes and withUnsafeBytes give the bytes back; wipe zeroes an array in place, and exactly a raw buffer")
    func copyAndWipe() {
        let secret = SecretBytes(copying: secretBytes)
        #expect(secret.byteCount == 32)
        var copy = secret.copyBytes()
        #expect(copy == secretBytes)
        secret.withUnsafeBytes { #expect(Array($0) == secretBytes) }
        SecretBytes.wipe(&copy)
        #expect(copy == [UInt8](repeating: 0, count: 32))
        // The secret itself is unaffected by wiping a copy.
        #expect(secret.copyBytes() == secretBytes)
        var empty: [UInt8] = []
        SecretBytes.wipe(&empty)
        #expect(empty.isEmpty)
        // A raw buffer: exactly its bytes, nothing around them.
        var region = [UInt8](repeating: 0xAB, count: 48)
        region.withUnsafeMutableBytes { SecretBytes.wipe(UnsafeMutableRawBufferPointer(rebasing: $0[8..<40])) }
        #expect(region[..<8].allSatisfy { $0 == 0xAB } && region[8..<40].allSatisfy { $0 == 0 } && region[40...].allSatisfy { $0 == 0xAB })
        SecretBytes.wipe(UnsafeMutableRawBufferPointer(start: nil, count: 0))
    }

    @Test("SecureRandom gives the asked length and different draws")
    func random() {
        #expect(SecureRandom.bytes(0).isEmpty)
        let a = SecureRandom.bytes(32), b = SecureRandom.bytes(32)
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
        #expect(a != [UInt8](repeating: 0, count: 32))
        let key = SecretBytes(randomByteCount: 32)
        #expect(key.byteCount == 32)
        #expect(key.copyBytes() != [UInt8](repeating: 0, count: 32))
    }
}

@Test("an empty secret has byteCount 0 (its storage is padded to one byte internally)")
func emptySecretByteCount() {
    let empty = SecretBytes(copying: [])
    #expect(empty.byteCount == 0)
    #expect(empty.copyBytes() == [])
    #expect(SecretBytes(randomByteCount: 0).byteCount == 0)
}
