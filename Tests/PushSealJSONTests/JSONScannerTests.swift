import PushSealSystem
import PushSealTestSupport
import Foundation
@testable import PushSealJSON
import Testing

/// `JSONReader.Scanner` accepts and rejects exactly what `JSONReader.parse` does, and its
/// `isMinimallyEscaped` flag is true exactly when the input text is `JSONWriter`'s output.
@Suite struct JSONScannerTests {
    /// Scans any object member by member (strings as spans, numbers, other values as trees).
    static func scanObject(_ bytes: [UInt8]) throws -> [(key: String, value: JSONValue)] {
        try bytes.withUnsafeBytes { raw in
            var s = try JSONReader.Scanner(raw)
            try s.beginObject()
            var out: [(key: String, value: JSONValue)] = []
            while let k = try s.nextKey() {
                let key = s.string(k)
                switch try s.peekKind() {
                case .string: out.append((key, .string(s.string(try s.readString()))))
                case .number: out.append((key, try s.readNumber()))
                default: out.append((key, try s.readValue()))
                }
            }
            try s.finish()
            return out
        }
    }

    /// A string literal for `s` with random legal but needless escapes (`\/`, `\uXXXX` in
    /// either case, surrogate pairs); `minimal` says whether any was used.
    static func looselyEscaped(_ s: String, _ rng: inout SeededGenerator) -> (text: [UInt8], minimal: Bool) {
        var out: [UInt8] = [0x22]
        var minimal = true
        for u in s.unicodeScalars {
            let writer = try? JSONWriter.serialize(.string(String(u)))
            let plain = Array((writer ?? [0x22, 0x22]).dropFirst().dropLast())
            if Int.random(in: 0..<4, using: &rng) != 0 { out += plain; continue }
            let upper = Bool.random(using: &rng)
            func hex4(_ v: UInt32) -> [UInt8] {
                let h = String(v, radix: 16)
                let padded = String(repeating: "0", count: 4 - h.count) + h
                return Array("\\u\(upper ? padded.uppercased() : padded)".utf8)
            }
            var escaped: [UInt8]
            if u.value == 0x2F { escaped = Array("\\/".utf8) }
            else if u.value >= 0x10000 {
                let v = u.value - 0x10000
                escaped = hex4(0xD800 + (v >> 10)) + hex4(0xDC00 + (v & 0x3FF))
            } else { escaped = hex4(u.value) }
            if escaped != plain { minimal = false }
            out += escaped
        }
        out.append(0x22)
        return (out, minimal)
    }

    @Test func writerOutputIsMinimalAndCopiesAsIs() throws {
        var rng = SeededGenerator(seed: testSeed &+ 7)
        for n in 0..<3000 {
            let s = RandomJSON.string(&rng, maxLength: 60)
            let literal = try JSONWriter.serialize(.string(s))
            let doc = Array("{\"k\":".utf8) + literal + [0x7D]
            try doc.withUnsafeBytes { raw in
                var sc = try JSONReader.Scanner(raw)
                try sc.beginObject()
                let key = try #require(try sc.nextKey())
                #expect(sc.rawEquals(key, "k"))
                let span = try sc.readString()
                #expect(span.isMinimallyEscaped, seedNote("string \(n)"))
                #expect(Array(sc.rawBytes(span)) == Array(literal.dropFirst().dropLast()), seedNote("string \(n)"))
                #expect(sc.string(span) == s, seedNote("string \(n)"))
                #expect(try sc.nextKey() == nil)
                try sc.finish()
            }
        }
    }

    @Test func needlessEscapesAreFlaggedAndDecoded() throws {
        var rng = SeededGenerator(seed: testSeed &+ 8)
        for n in 0..<3000 {
            let s = RandomJSON.string(&rng, maxLength: 30)
            let (literal, minimal) = Self.looselyEscaped(s, &rng)
            let doc = Array("{\"k\":".utf8) + literal + [0x7D]
            let members = try Self.scanObject(doc)
            #expect(members.count == 1 && members[0].value == .string(s), seedNote("string \(n)"))
            try doc.withUnsafeBytes { raw in
                var sc = try JSONReader.Scanner(raw)
                try sc.beginObject()
                _ = try sc.nextKey()
                #expect(try sc.readString().isMinimallyEscaped == minimal, seedNote("string \(n): \(String(decoding: literal, as: UTF8.self))"))
            }
        }
    }

    @Test func rejectsWhatTheReaderRejectsWithTheSameCode() throws {
        let bad: [[UInt8]] = [
            "{\"a\":\"\\u00\"}", "{\"a\":\"\\x\"}", "{\"a\":\"\u{01}\"}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00x\"}",
            "{\"a\" 1}", "{\"a\":1,}", "{\"a\":1} x", "{\"a\":01}", "{\"a\":1.}", "{\"a\":tru}", "{a:1}", "{\"a\":1",
            "{\"a\":\"x", "{\"a\":{\"b\":1,\"b\":2}}", "{\"a\":1e400}", "\u{FEFF}{\"a\":1}", "{\"a\":[1,]}", "{,}",
        ].map { Array($0.utf8) } + [
            [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D],  // ill-formed UTF-8
            [0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x7D],  // encoded surrogate
            [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D],  // bad byte in a key
        ]
        for doc in bad {
            let text = String(decoding: doc, as: UTF8.self)
            var parseCode: JSONError.Code?
            do { _ = try JSONReader.parse(doc) } catch let e as JSONError { parseCode = e.code }
            var scanCode: JSONError.Code?
            do { _ = try Self.scanObject(doc) } catch let e as JSONError { scanCode = e.code }
            #expect(parseCode != nil, "\(text)")
            #expect(scanCode == parseCode, "\(text): parse \(String(describing: parseCode)), scan \(String(describing: scanCode))")
        }
        let good = "{ \"a\" : \"x\\n\\u001f\" ,\"b\":[1,{\"c\":null}],\"d\":-0.5e3, \"e\":{},\"f\":true }\n"
        let scanned = try Self.scanObject(Array(good.utf8))
        guard case .object(let parsed) = try JSONReader.parse(good) else { Issue.record("not an object"); return }
        #expect(scanned.map(\.key) == parsed.map(\.key))
        #expect(scanned.map(\.value) == parsed.map(\.value))
    }
}
