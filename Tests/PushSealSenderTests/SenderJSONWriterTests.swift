import PushSealTestSupport
import PushSealJSON
import Foundation
import Testing
import PushSealWire
@testable import PushSealSender

/// The sender's JSON output goes through PushSealJSON's one writer (`JSONWriter`, the escaper
/// and `DecimalText`): its headers object, strings, integers and values.
@Suite struct SenderJSONWriterTests {
    /// `APNsHeaders.write(to:)` writes its fields directly: the same JSON object as ``fields``
    /// serialized in order, for every combination of optional headers and awkward values.
    @Test func headersWriteTheirFieldsInOrder() throws {
        for pushType in ["alert", "background"] {
            for topic in ["com.example.app", "com.ex\"ample\\é"] {
                for priority in [10, 5, 1] {
                    for expiration: Int64? in [nil, 0, 1_764_000_000] {
                        for collapseID: String? in [nil, "", "id-1", "\u{1}😀"] {
                            let h = APNsHeaders(pushType: pushType, topic: topic, priority: priority, expiration: expiration, collapseID: collapseID)
                            var w = JSONWriter()
                            h.write(to: &w)
                            var expected = JSONWriter()
                            expected.beginObject()
                            for f in h.fields {
                                expected.key(f.name)
                                expected.string(f.value)
                            }
                            expected.endObject()
                            #expect(w.bytes == expected.bytes, "\(h.fields)")
                            #expect((try? JSONReader.parse(w.bytes)) != nil)
                        }
                    }
                }
            }
        }
    }

    @Test func writesMinimalEscapesAndNoSlashEscape() {
        var w = JSONWriter()
        w.string("a/b\"c\\d\n\u{1}é😀\u{7F}")
        let text = String(decoding: w.bytes, as: UTF8.self)
        #expect(text == "\"a/b\\\"c\\\\d\\n\\u0001é😀\u{7F}\"")
        #expect(!text.contains("\\/"))
    }

    @Test func integersAndBase64() {
        var w = JSONWriter()
        w.beginArray()
        for i: Int64 in [0, 7, -7, 1234567890, .max, .min] { w.integer(i) }
        w.endArray()
        #expect(String(decoding: w.bytes, as: UTF8.self) == "[0,7,-7,1234567890,9223372036854775807,-9223372036854775808]")
        // Every power of ten and its neighbours, both signs, and random values: Swift's own text.
        var values: [Int64] = [.max, .min, .max - 1, .min + 1]
        var p: Int64 = 1
        for _ in 0...18 {
            values += [p - 1, p, p + 1, -(p - 1), -p, -(p + 1)]
            if p <= Int64.max / 10 { p *= 10 }
        }
        var random = SeededGenerator(seed: 8)
        values += (0..<2_000).map { _ in Int64(bitPattern: random.next() >> UInt64.random(in: 0...63, using: &random)) }
        for v in values {
            var one = JSONWriter()
            one.integer(v)
            #expect(String(decoding: one.bytes, as: UTF8.self) == String(v))
        }
        var rng = SeededGenerator(seed: 7)
        for n in 0..<200 {
            let data = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let text = WireBase64.encode(data)
            #expect(text.utf8.count == WireBase64.encodedByteCount(n))
            #expect(text == Data(data).base64EncodedString())
        }
    }

    /// Property: for random strings over every plane, Foundation's JSON parser reads back
    /// exactly the string written, and the byte count is exact.
    /// (swift-corelibs-foundation drops a U+FEFF that starts a string or follows an escape
    /// sequence, a reader bug; U+FEFF is left out here and covered by the Python test.)
    @Test func randomStringsRoundTripThroughJSONSerialization() throws {
        var rng = SeededGenerator(seed: 0x5EED)
        for _ in 0..<3000 {
            let s = String(String.UnicodeScalarView(randomString(&rng).unicodeScalars.filter { $0 != "\u{FEFF}" }))
            var w = JSONWriter()
            w.beginObject()
            w.key(static: "k")
            w.string(s)
            w.endObject()
            // Counted by the same writer into a counting sink: the bytes the array got.
            var counted = JSONSinkWriter(into: ByteCounter())
            counted.string(s)
            #expect(w.bytes.count == counted.sink.count + 6)
            let o = try Fixture.json(w.bytes)
            let back = try #require(o["k"] as? String)
            #expect(Array(back.unicodeScalars) == Array(s.unicodeScalars), "seed string \(s.unicodeScalars.map { String($0.value, radix: 16) })")
            // Nothing but control characters, quotes and backslashes is escaped: never `\/`.
            #expect(escapes(in: w.bytes).allSatisfy { [0x22, 0x5C, 0x6E, 0x72, 0x74, 0x62, 0x66, 0x75].contains($0) })
            #expect(escapes(in: w.bytes).count == s.utf8.filter { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }.count)
        }
    }

    /// Property: Python's json module reads back the same scalars (an independent parser).
    @Test func randomStringsRoundTripThroughPythonJSON() throws {
        var rng = SeededGenerator(seed: 0xC0FFEE)
        var lines: [UInt8] = []
        for _ in 0..<3000 {
            let s = randomString(&rng)
            var w = JSONWriter()
            w.beginArray()
            w.string(s)
            w.string(s.utf8.map { String(format: "%02x", $0) }.joined())
            w.endArray()
            w.endLine()
            lines += w.bytes
        }
        let file = try Fixture.temporaryFile(lines)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = """
        import json, sys
        bad = 0
        n = 0
        for line in open(sys.argv[1], 'rb'):
            v = json.loads(line.decode('utf-8'))
            n += 1
            if v[0].encode('utf-8').hex() != v[1]: bad += 1
        print(n, bad)
        """
        guard let r = try Fixture.python(script, [file.path]) else {
            Issue.record("python3 is missing: cannot run the Python json property test")
            return
        }
        #expect(r.status == 0)
        #expect(r.out.trimmingCharacters(in: .whitespacesAndNewlines) == "3000 0")
    }

    /// The byte after each backslash escape in `bytes`.
    func escapes(in bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == 0x5C, i + 1 < bytes.count { out.append(bytes[i + 1]); i += 2 } else { i += 1 }
        }
        return out
    }

    @Test func writesJSONValuesThatParseBack() throws {
        let v: JSONValue = .object(["a": .array([.integer(1), .bool(true), .null, .number(0.5), .string("x/y")]), "b": .object([:])])
        var w = JSONWriter()
        try w.write(v)
        #expect(String(decoding: w.bytes, as: UTF8.self) == "{\"a\":[1,true,null,0.5,\"x/y\"],\"b\":{}}")
        #expect(throws: JSONError.self) { try w.number(.nan) }
    }
}
