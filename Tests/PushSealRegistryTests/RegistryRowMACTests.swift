import PushSealCrypto
import PushSealRegistry
import Testing

/// ``RegistryRowMAC``, the row authentication every routing table uses (G1): a tag verifies only
/// for the same table, the same KEK and the same fields; a missing tag is refused.
@Suite struct RegistryRowMACTests {
    static let fields: [RegistryRowField] = [.text("com.example.app"), .text("alice"), .text("k1"), .bytes([1, 2, 3]), .int(1_800_000_000), .null]

    @Test func aTagVerifiesOnlyForItsTableKEKAndFields() throws {
        let kek = KeyEncryptionKey.generate()
        let mac = try kek.rowMAC(table: "pushseal_registrations")
        let tag = try mac.tag(Self.fields)
        #expect(tag.count == RegistryRowMAC.byteCount)
        try mac.verify(tag, Self.fields, row: "com.example.app/alice/k1")
        // Same key, same table: the same tag (stable across processes: HKDF of the KEK).
        #expect(try KeyEncryptionKey(key: SecretBytes(copying: kek.hexLineBytes()), source: "copy").rowMAC(table: "pushseal_registrations").tag(Self.fields) == tag)
        // Another table, another KEK: refused.
        #expect(throws: RegistryError.self) { try kek.rowMAC(table: "pushseal_sender_keys").verify(tag, Self.fields, row: "x") }
        #expect(throws: RegistryError.self) { try KeyEncryptionKey.generate().rowMAC(table: "pushseal_registrations").verify(tag, Self.fields, row: "x") }
        // Every field counts, and so does its type.
        for i in Self.fields.indices {
            var changed = Self.fields
            changed[i] = changed[i] == .null ? .int(0) : .null
            #expect(throws: RegistryError.self) { try mac.verify(tag, changed, row: "x") }
        }
        var typed = Self.fields
        typed[4] = .text("1800000000")
        #expect(throws: RegistryError.self) { try mac.verify(tag, typed, row: "x") }
    }

    @Test func theMessageIsUnambiguous() {
        #expect(RegistryRowMAC.encode([.text("ab"), .text("c")]) != RegistryRowMAC.encode([.text("a"), .text("bc")]))
        #expect(RegistryRowMAC.encode([.text("")]) != RegistryRowMAC.encode([.null]))
        #expect(RegistryRowMAC.encode([.bytes([])]) != RegistryRowMAC.encode([.text("")]))
        #expect(RegistryRowMAC.encode([.int(1)]) == [3, 0, 0, 0, 0, 0, 0, 0, 1])
    }

    @Test func aMissingOrAlteredTagIsCorruptNamingTableAndRow() throws {
        let mac = try KeyEncryptionKey.generate().rowMAC(table: "pushseal_device_tokens")
        do {
            try mac.verify(nil, Self.fields, row: "com.example.app/alice/production")
            Issue.record("a missing tag verified")
        } catch let e as RegistryError {
            #expect(e.code == .corrupt && e.reason.contains("pushseal_device_tokens") && e.reason.contains("com.example.app/alice/production"))
        }
        var tag = try mac.tag(Self.fields)
        tag[0] ^= 1
        #expect(throws: RegistryError.self) { try mac.verify(tag, Self.fields, row: "x") }
    }
}

extension KeyEncryptionKey {
    /// The raw 32 bytes (tests: decoded from ``hexLine()``).
    func hexLineBytes() -> [UInt8] {
        let line = hexLine().dropLast()
        return stride(from: 0, to: line.count, by: 2).map { i in
            let s = String(decoding: line[line.startIndex + i ..< line.startIndex + i + 2], as: UTF8.self)
            return UInt8(s, radix: 16) ?? 0
        }
    }
}
