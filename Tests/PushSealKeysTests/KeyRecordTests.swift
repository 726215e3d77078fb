import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
@testable import PushSealKeyRecords
import Testing

/// The key record format (version 1): read with JSONReader's scanner, written with JSONWriter,
/// byte for byte what earlier versions wrote.
@Suite struct KeyRecordTests {
    /// A record as the first implementation wrote it (key bytes 0x00...0x1F).
    static let v1 = #"{"format":"pushseal-key-record","version":1,"appId":"com.example.app","recipient":"alice-iphone","keys":[{"keyId":"q3Zk_9Ab","status":"decryptOnly","createdAt":1767225600,"promotedAt":1767225600,"retiredAt":1767225700,"notAfter":1769817700,"sealCount":1024,"key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="},{"keyId":"Xy12ab-_","status":"primary","createdAt":1767225650,"promotedAt":1767225700,"sealCount":0,"key":"//////////////////////////////////////////8="},{"keyId":"gone_123","status":"destroyed","createdAt":1767000000,"promotedAt":1767000000,"retiredAt":1767225600,"sealCount":5}]}"# + "\n"

    @Test func readsAndRewritesTheV1FormatByteForByte() throws {
        let record = try KeyRecord(decoding: Array(Self.v1.utf8))
        #expect(record.appID == "com.example.app" && record.recipient == "alice-iphone")
        #expect(record.keyInfos.map(\.keyID) == ["q3Zk_9Ab", "Xy12ab-_", "gone_123"])
        #expect(record.keyInfos.map(\.status) == [.decryptOnly, .primary, .destroyed])
        #expect(record.keyInfos[0].notAfter == 1_769_817_700 && record.keyInfos[0].sealCount == 1024)
        #expect(record.keys[0].secret?.copyBytes() == Array(0..<32))
        #expect(record.keys[1].secret?.copyBytes() == Array(repeating: 0xFF, count: 32))
        #expect(record.keys[2].secret == nil)
        var out = record.encoded()
        defer { SecretBytes.wipe(&out) }
        #expect(String(decoding: out, as: UTF8.self) == Self.v1)
        // A real JSON parser agrees with the writer.
        let tree = try JSONReader.parse(Array(out.dropLast()))
        guard case .array(let keys)? = tree.objectValue?["keys"] else { Issue.record("no keys array"); return }
        #expect(keys.count == 3)
    }

    @Test func wipingInitZeroesTheInput() throws {
        var bytes = Array(Self.v1.utf8)
        let record = try KeyRecord(wiping: &bytes)
        #expect(record.keys.count == 3)
        #expect(bytes.allSatisfy { $0 == 0 })
        var broken = Array(Self.v1.utf8.dropLast(10))
        expectKeys(.malformedRecord) { try KeyRecord(wiping: &broken) }
        #expect(broken.allSatisfy { $0 == 0 })
    }

    @Test func toleratesWhitespaceAndUnknownMembers() throws {
        let spaced = Self.v1.replacingOccurrences(of: ",\"keys\":", with: " ,\n \"comment\": {\"x\": [1, 2]}, \"keys\" : ")
        #expect(try KeyRecord(decoding: Array(spaced.utf8)).keys.count == 3)
    }

    @Test func refusesWhatTheStrictReaderRefuses() {
        let cases: [String] = [
            Self.v1.replacingOccurrences(of: "\"version\":1,", with: "\"version\":1,\"version\":1,"),        // duplicate member
            Self.v1.replacingOccurrences(of: "\"sealCount\":0,", with: "\"sealCount\":0,\"sealCount\":9,"),  // duplicate in a key
            Self.v1.replacingOccurrences(of: "AAECAwQF", with: "AAECAwQ\\u0046"),                          // escaped key text
            Self.v1.replacingOccurrences(of: "//////////", with: "\\/\\/\\/\\/\\/"),                        // escaped '/'
            Self.v1.replacingOccurrences(of: "Hh8=", with: "Hh8"),                                         // unpadded
            Self.v1.replacingOccurrences(of: "AAECAwQF", with: "AAEC AwQF"),                                // space in base64
            Self.v1.replacingOccurrences(of: "\"sealCount\":1024", with: "\"sealCount\":1.5"),              // fraction
            Self.v1.replacingOccurrences(of: "\"sealCount\":1024", with: "\"sealCount\":true"),             // boolean
            Self.v1.replacingOccurrences(of: "\"keys\":[", with: "\"keys\":[,"),                            // bad array
            Self.v1.replacingOccurrences(of: "}]}", with: "},]}"),                                         // trailing comma
            Self.v1.replacingOccurrences(of: "\"keyId\":\"gone_123\",\"status\":\"destroyed\"",
                                         with: "\"keyId\":\"gone_123\",\"status\":\"destroyed\",\"key\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\""),
            Self.v1 + "x",
            "[]", "{}",
        ]
        for (n, text) in cases.enumerated() {
            #expect(text != Self.v1, "case \(n) did not change the record")
            expectKeys(.malformedRecord) { try KeyRecord(decoding: Array(text.utf8)) }
        }
    }
}
