import PushSealSystem
import Testing

/// `TemporaryBytes`: the buffers the wire module builds its AAD and `info` in and seals into.
struct TemporaryBytesTests {
    @Test func joiningAPrefixAndTwoPartsGivesTheirBytes() {
        for (a, b) in [("k1", "com.example.app"), ("", ""), (String(repeating: "K", count: 64), String(repeating: "b", count: 255)), ("é", "ü")] {
            let joined = TemporaryBytes.joining("pushseal:v1|A256GCM|", a, UInt8(ascii: "|"), b) { TemporaryBytes.array($0) }
            #expect(joined == Array("pushseal:v1|A256GCM|\(a)|\(b)".utf8))
        }
        #expect(TemporaryBytes.joining("", "", UInt8(ascii: "|"), "") { $0.byteCount } == 1)
    }

    @Test func joiningPartsPutsTheSeparatorBetweenThem() {
        for parts in [["pushseal:v2", "HPKE-AUTH-X25519-A256GCM", "k1", "com.example.app", "s1"], ["one"], ["", ""], []] {
            let joined = TemporaryBytes.joining(parts, separator: UInt8(ascii: "|")) { TemporaryBytes.array($0) }
            #expect(joined == Array(parts.joined(separator: "|").utf8))
        }
    }

    @Test func withLendsWritableBytesOfTheSizeAsked() {
        for n in [0, 1, 28, 1024, 5000] {
            let seen = TemporaryBytes.with(byteCount: n) { bytes -> [UInt8] in
                #expect(bytes.byteCount == n)
                for i in 0..<bytes.byteCount { bytes.storeBytes(of: UInt8(truncatingIfNeeded: i * 7), toByteOffset: i, as: UInt8.self) }
                return TemporaryBytes.array(bytes.bytes)
            }
            #expect(seen == (0..<n).map { UInt8(truncatingIfNeeded: $0 * 7) })
        }
    }
}
