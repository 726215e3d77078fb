import Foundation
import PushSealCrypto
import Testing

/// Key text to and from `SecretBytes` (libsodium, in place): the decoders the key modules use
/// on spans of their record and file bytes, against Foundation's base64 and a plain hex reading.
@Suite struct SecretBytesTextTests {
    /// 32 bytes 200…231.
    static let key: [UInt8] = (0..<32).map { UInt8(200 + $0) }

    @Test func base64TextMatchesFoundationAtEveryLength() {
        for n in 0...40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            var text = SecretBytes(copying: bytes).base64Text()
            defer { SecretBytes.wipe(&text) }
            #expect(String(decoding: text, as: UTF8.self) == Data(bytes).base64EncodedString(), "length \(n)")
        }
    }

    @Test func decodesStrictStandardPaddedBase64() throws {
        let text = Array(Data(Self.key).base64EncodedString().utf8)
        // (Each result is bound first: the test macros cannot take a span argument.)
        let decoded = SecretBytes(decodingBase64: text.span, maxByteCount: 35)
        let secret = try #require(decoded)
        #expect(secret.copyBytes() == Self.key)
        // A near miss is decoded with its length, for the caller to report.
        let longer = Array(Data(Self.key + [1]).base64EncodedString().utf8)
        let nearMiss = SecretBytes(decodingBase64: longer.span, maxByteCount: 35)
        #expect(nearMiss?.byteCount == 33)
        let empty = [UInt8]()
        let none = SecretBytes(decodingBase64: empty.span, maxByteCount: 35)
        #expect(none?.byteCount == 0)
    }

    @Test func refusesOtherBase64AndTooLongText() {
        let standard = Data(Self.key).base64EncodedString()
        let refused: [String] = [
            String(standard.dropLast()),                                        // unpadded
            standard.replacingOccurrences(of: "y", with: "-"),                  // URL-safe alphabet
            " " + standard, standard + "\n",                                    // whitespace is not ignored
            String(standard.prefix(8)) + "*" + String(standard.dropFirst(9)),   // outside the alphabet
            Data(Self.key + [1, 2, 3, 4]).base64EncodedString(),                // 36 bytes > 35
        ]
        for text in refused {
            let bytes = Array(text.utf8)
            let decoded = SecretBytes(decodingBase64: bytes.span, maxByteCount: 35)
            #expect(decoded == nil, "\(text)")
        }
    }

    @Test func decodesExactlyTheDigitsOfOneKey() throws {
        let lower = Self.key.map { String(format: "%02x", $0) }.joined()
        for text in [lower, lower.uppercased(), String(lower.prefix(32)) + lower.dropFirst(32).uppercased()] {
            let bytes = Array(text.utf8)
            let decoded = SecretBytes(decodingHex: bytes.span, byteCount: 32)
            let secret = try #require(decoded)
            #expect(secret.copyBytes() == Self.key)
        }
        let refused: [String] = [
            String(lower.dropLast()),                        // 63 digits
            lower + "0",                                     // 65 digits
            String(lower.dropLast()) + "g",                  // not a digit at the end
            String(lower.prefix(10)) + " " + lower.dropFirst(11), // a space inside
            String(lower.dropLast(2)) + "\r\n",              // a line end counted as digits
        ]
        for text in refused {
            let bytes = Array(text.utf8)
            let decoded = SecretBytes(decodingHex: bytes.span, byteCount: 32)
            #expect(decoded == nil, "\(text)")
        }
        let empty = [UInt8]()
        let none = SecretBytes(decodingHex: empty.span, byteCount: 0)
        #expect(none == nil)
    }

    @Test func copiesAKeyOutOfASpan() {
        let record = [UInt8](repeating: 7, count: 5) + Self.key + [9, 9]
        let secret = SecretBytes(copying: record.span.extracting(5..<37))
        #expect(secret.copyBytes() == Self.key)
        var out: [UInt8] = [1]
        out.reserveCapacity(33)
        secret.appendBytes(to: &out)
        #expect(out == [1] + Self.key)
    }
}
