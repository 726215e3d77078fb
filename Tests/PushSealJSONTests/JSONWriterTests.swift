import PushSealSystem
import PushSealTestSupport
import Foundation
import Testing
@testable import PushSealJSON

// MARK: - Seeded randomness

enum RandomJSON {
    static let specials: [Unicode.Scalar] = ["\"", "\\", "/", "\u{2028}", "\u{2029}", "\u{7F}", "\u{FEFF}", "\u{FFFD}", "\u{FFFF}", "\u{200D}", "\u{FE0F}", " "]

    /// A scalar from every plane and every troublesome class.
    static func scalar(_ rng: inout SeededGenerator) -> Unicode.Scalar {
        let v: UInt32
        switch Int.random(in: 0..<12, using: &rng) {
        case 0: v = UInt32.random(in: 0...0x1F, using: &rng)  // control characters
        case 1: return specials.randomElement(using: &rng) ?? "\""
        case 2, 3: v = UInt32.random(in: 0x20...0x7E, using: &rng)  // printable ASCII
        case 4: v = UInt32.random(in: 0x300...0x36F, using: &rng)  // combining marks
        case 5: v = UInt32.random(in: 0x80...0x7FF, using: &rng)  // two-byte
        case 6: v = UInt32.random(in: 0x800...0xFFFF, using: &rng)  // BMP (surrogates skipped below)
        case 7: v = UInt32.random(in: 0x10000...0x10FFFF, using: &rng)  // every astral plane
        case 8: v = UInt32.random(in: 0x1F300...0x1FAFF, using: &rng)  // emoji
        case 9: v = UInt32.random(in: 0x1F1E6...0x1F1FF, using: &rng)  // regional indicators
        case 10: v = UInt32.random(in: 0x4E00...0x9FFF, using: &rng)  // CJK
        default: v = UInt32.random(in: 0xE000...0xFFFF, using: &rng)  // private use, specials
        }
        return Unicode.Scalar(v) ?? "\u{FFFD}"  // nil only for surrogates
    }

    static func string(_ rng: inout SeededGenerator, maxLength: Int = 24) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...maxLength, using: &rng) { scalars.append(scalar(&rng)) }
        return String(scalars)
    }

    static func double(_ rng: inout SeededGenerator) -> Double {
        let fixed: [Double] = [0, -0.0, 0.1, 1, -1.5, 1e300, -1e-300, .leastNonzeroMagnitude, 2.2250738585072014e-308,
                               .greatestFiniteMagnitude, 9007199254740992, 1e16, 123456.789]
        if Bool.random(using: &rng) { return fixed.randomElement(using: &rng) ?? 0 }
        while true {
            let d = Double(bitPattern: rng.next())
            if d.isFinite { return d }
        }
    }

    static func integer(_ rng: inout SeededGenerator) -> Int64 {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return [Int64.min, .max, 0, -1, 1, 4096].randomElement(using: &rng) ?? 0
        case 1: return Int64.random(in: -1000...1000, using: &rng)
        default: return Int64(bitPattern: rng.next())
        }
    }

    static func value(_ rng: inout SeededGenerator, depth: Int = 0) -> JSONValue {
        let leafOnly = depth >= 4
        switch Int.random(in: 0..<(leafOnly ? 6 : 8), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .integer(integer(&rng))
        case 3: return .number(double(&rng))
        case 4, 5: return .string(string(&rng))
        case 6: return .array((0..<Int.random(in: 0...5, using: &rng)).map { _ in value(&rng, depth: depth + 1) })
        default:
            var object = JSONObject()
            for _ in 0..<Int.random(in: 0...5, using: &rng) {
                let key = string(&rng, maxLength: 8)
                if object[key] == nil { object[key] = value(&rng, depth: depth + 1) }
            }
            return .object(object)
        }
    }
}

// MARK: - Comparisons

/// Equality that is stricter than `==`: strings and keys byte for byte (not up to canonical
/// equivalence), doubles bit for bit (so -0.0 ≠ 0.0).
func strictlyEqual(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case let (.bool(x), .bool(y)): return x == y
    case let (.integer(x), .integer(y)): return x == y
    case let (.number(x), .number(y)): return x.bitPattern == y.bitPattern
    case let (.string(x), .string(y)): return x.utf8.elementsEqual(y.utf8)
    case let (.array(x), .array(y)): return x.count == y.count && zip(x, y).allSatisfy { strictlyEqual($0, $1) }
    case let (.object(x), .object(y)):
        return x.count == y.count
            && zip(x.members, y.members).allSatisfy { $0.key.utf8.elementsEqual($1.key.utf8) && strictlyEqual($0.value, $1.value) }
    default: return false
    }
}

/// Whether Foundation's `JSONSerialization` result holds the same strings (byte for byte)
/// and numbers.
func matchesFoundation(_ value: JSONValue, _ any: Any) -> Bool {
    switch value {
    case .null: return any is NSNull
    case .bool(let b): return (any as? NSNumber)?.boolValue == b
    case .integer(let i): return (any as? NSNumber)?.int64Value == i
    case .number(let d):
        // swift-corelibs-foundation's number parser is not correctly rounded: it can land a few
        // ulps away (e.g. 3.0418597259552123e-77 → 3.041859725955213e-77). Allow 16 ulps
        // here; the Python test and our own reader check the exact double.
        guard let f = (any as? NSNumber)?.doubleValue, f.sign == d.sign || f == d else { return false }
        return f == d || (f.bitPattern > d.bitPattern ? f.bitPattern - d.bitPattern : d.bitPattern - f.bitPattern) <= 16
    case .string(let s):
        guard let t = any as? String else { return false }
        if t.utf8.elementsEqual(s.utf8) { return true }
        // swift-corelibs-foundation drops U+FEFF at the start of a string and right after an
        // escape (it decodes each unescaped run as if it could start with a byte order mark).
        // Compare without U+FEFF; the Python test and our own reader check those exactly.
        return s.unicodeScalars.filter { $0 != "\u{FEFF}" }.elementsEqual(t.unicodeScalars.filter { $0 != "\u{FEFF}" })
    case .array(let elements):
        guard let other = any as? [Any], other.count == elements.count else { return false }
        return zip(elements, other).allSatisfy { matchesFoundation($0, $1) }
    case .object(let object):
        guard let other = any as? [String: Any] else { return false }
        if other.count != object.count {
            // Keys that differ only by U+FEFF collide in Foundation (see `.string`): tolerated.
            return object.members.contains { $0.key.unicodeScalars.contains("\u{FEFF}") }
        }
        return object.members.allSatisfy { m in
            // Foundation drops a leading U+FEFF from keys too (see `.string` above), so two
            // keys can match one member ("" and "\u{FEFF}\u{FEFF}" → "\u{FEFF}"): the exact
            // key is preferred, and otherwise any key that matches with a matching value.
            if let exact = other[m.key] { return matchesFoundation(m.value, exact) }
            return other.contains { matchesFoundation(.string(m.key), $0.key) && matchesFoundation(m.value, $0.value) }
        }
    }
}

/// The first way `output` breaks the writer's promises (whitespace outside strings, a raw
/// control character, a needless escape such as `\/`), or `nil`.
func compactnessViolation(_ output: [UInt8]) -> String? {
    var inString = false
    var k = 0
    while k < output.count {
        let b = output[k]
        if inString {
            if b == 0x22 {
                inString = false
            } else if b < 0x20 {
                return "raw control byte \(b) at \(k)"
            } else if b == 0x5C {
                guard k + 1 < output.count else { return "dangling backslash at \(k)" }
                switch output[k + 1] {
                case 0x22, 0x5C, 0x62, 0x66, 0x6E, 0x72, 0x74:
                    k += 2
                    continue
                case 0x75:
                    guard k + 6 <= output.count,
                          let v = UInt32(String(decoding: output[(k + 2)..<(k + 6)], as: UTF8.self), radix: 16)
                    else { return "bad \\u escape at \(k)" }
                    if v >= 0x20 || [0x08, 0x09, 0x0A, 0x0C, 0x0D].contains(v) { return "needless \\u escape of \(v) at \(k)" }
                    k += 6
                    continue
                default:
                    return "needless escape \\\(Character(Unicode.Scalar(output[k + 1]))) at \(k)"
                }
            }
        } else if b == 0x22 {
            inString = true
        } else if b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D {
            return "whitespace byte \(b) outside strings at \(k)"
        }
        k += 1
    }
    return inString ? "unterminated string" : nil
}

/// Runs `python3` once: each line of `documents` goes through `json.loads` and comes back
/// re-encoded by `json.dumps(ensure_ascii=True)`, one per line.
func echoThroughPython(_ documents: [[UInt8]]) throws -> [String] {
    let script = """
    import sys, json
    out = []
    for line in sys.stdin.buffer:
        out.append(json.dumps(json.loads(line.rstrip(b"\\n").decode("utf-8")), ensure_ascii=True))
    sys.stdout.write("\\n".join(out) + "\\n")
    """
    var data = Data()
    for d in documents { data.append(contentsOf: d); data.append(0x0A) }
    guard let result = runPython(script, input: data) else { throw JSONError(.invalidJSON, "python3 cannot be started") }
    guard result.status == 0 else { throw JSONError(.invalidJSON, "python3 failed (\(result.status)): \(result.errors)") }
    return result.output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
}

// MARK: - Tests

@Suite("JSONWriter")
struct JSONWriterTests {
    /// The bytes the writer writes for `s` as a string value, counted by a ``ByteCounter`` sink
    /// (the same writer: sizing by writing, no separate escaped-length counter).
    static func counted(_ s: String) -> Int {
        var w = JSONSinkWriter(into: ByteCounter())
        w.string(s)
        return w.sink.count
    }

    @Test func escapesOnlyWhatItMust() throws {
        let text = "a\"b\\c/d\u{0}\u{1}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1F}\u{7F}\u{2028}\u{2029}é😀"
        let bytes = try JSONWriter.serialize(.string(text))
        let expected = "\"a\\\"b\\\\c/d\\u0000\\u0001\\b\\t\\n\\f\\r\\u001f\u{7F}\u{2028}\u{2029}é😀\""
        #expect(bytes == Array(expected.utf8), "\(String(decoding: bytes, as: UTF8.self))")
        #expect(Self.counted(text) == bytes.count)
    }

    @Test func compactStructureAndCommas() throws {
        let value: JSONValue = .object([
            "aps": .object(["alert": .object(["title": .string("T"), "body": .string("B")]), "mutable-content": .integer(1)]),
            "list": .array([.integer(-1), .number(1.0), .bool(false), .null, .array([]), .object([:])]),
            "key_id": .string("k1"),
        ])
        let text = try JSONWriter.serializeToString(value)
        #expect(text == #"{"aps":{"alert":{"title":"T","body":"B"},"mutable-content":1},"list":[-1,1.0,false,null,[],{}],"key_id":"k1"}"#)
    }

    @Test func lowLevelCallsMatchTreeWriting() throws {
        var w = JSONWriter(reservingCapacity: 64)
        w.beginObject()
        w.key("aps"); w.beginObject()
        w.key("alert"); w.beginObject()
        w.key("title"); w.string("Hi")
        w.key("body"); try w.string(utf8: Array("there".utf8))
        w.endObject()
        w.key("mutable-content"); w.integer(1)
        w.endObject()
        w.key("n"); try w.number(0.5)
        w.key("a"); w.beginArray(); w.integer(Int(2)); w.bool(true); w.null(); w.endArray()
        w.endObject()
        let tree: JSONValue = .object([
            "aps": .object(["alert": .object(["title": .string("Hi"), "body": .string("there")]), "mutable-content": .integer(1)]),
            "n": .number(0.5), "a": .array([.integer(2), .bool(true), .null]),
        ])
        #expect(w.bytes == (try JSONWriter.serialize(tree)))
        #expect(w.byteCount == w.bytes.count)
        w.reset()
        w.integer(7)
        #expect(w.bytes == Array("7".utf8))
    }

    @Test func refusesNonFiniteNumbersAndInvalidUTF8() {
        var w = JSONWriter()
        for d in [Double.infinity, -.infinity, .nan] {
            #expect(throws: JSONError(.nonFiniteNumber, "")) { try w.number(d) }
            #expect(throws: JSONError(.nonFiniteNumber, "")) { try JSONWriter.serialize(.array([.number(d)])) }
        }
        #expect(w.bytes.isEmpty)
        for bad: [UInt8] in [[0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0x61, 0xE2, 0x82]] {
            #expect(throws: JSONError(.invalidUTF8, "")) { try w.string(utf8: bad) }
        }
        #expect(w.bytes.isEmpty)
    }

    @Test func integersAndDoublesRoundTrip() throws {
        for i: Int64 in [.min, .min + 1, -10, -9, -1, 0, 1, 9, 10, 99, 100, 4096, .max - 1, .max] {
            let bytes = try JSONWriter.serialize(.integer(i))
            #expect(String(decoding: bytes, as: UTF8.self) == String(i))
            #expect(try JSONReader.parse(bytes) == .integer(i))
        }
        for d in [0.0, -0.0, 1.0, 0.1, 1e16, 1e-7, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -123.456] {
            let value = try JSONReader.parse(JSONWriter.serialize(.number(d)))
            #expect(strictlyEqual(value, .number(d)), "\(d)")
        }
    }

    /// Random strings over every plane: the writer is compact, `utf8ByteCount` is exact, and
    /// our reader and Foundation read back the same bytes.
    @Test func randomStringsRoundTrip() throws {
        var rng = SeededGenerator(seed: testSeed)
        for n in 0..<5000 {
            let s = RandomJSON.string(&rng, maxLength: 40)
            let bytes = try JSONWriter.serialize(.string(s))
            if let violation = compactnessViolation(bytes) {
                Issue.record(seedNote("string \(n): \(violation)"))
                return
            }
            #expect(Self.counted(s) == bytes.count, seedNote("string \(n)"))
            let back = try JSONReader.parse(bytes)
            #expect(strictlyEqual(back, .string(s)), seedNote("string \(n)"))
            let foundation = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
            #expect(matchesFoundation(.string(s), foundation), seedNote("Foundation, string \(n)"))
        }
    }

    /// `terminalSafe` against a reference over scalars (the escaper PushSealCLI had, on
    /// `String`): random strings with the risky characters and their UTF-8 neighbours
    /// (U+0080…U+00A0, U+2027…U+202F, U+2065…U+2070) give the same text, and it reads back as
    /// the same value.
    @Test func terminalSafeEscapesExactlyTheRiskyCharacters() throws {
        func reference(_ json: String) -> String {
            var out = ""
            for scalar in json.unicodeScalars {
                switch scalar.value {
                case 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069:
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default:
                    out.unicodeScalars.append(scalar)
                }
            }
            return out
        }
        let near: [ClosedRange<UInt32>] = [0x7E...0xA0, 0x2026...0x2030, 0x2064...0x2070]
        var rng = SeededGenerator(seed: testSeed &+ 7)
        for n in 0..<3000 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...30, using: &rng) {
                if Bool.random(using: &rng), let range = near.randomElement(using: &rng), let s = Unicode.Scalar(UInt32.random(in: range, using: &rng)) {
                    scalars.append(s)
                } else {
                    scalars.append(RandomJSON.scalar(&rng))
                }
            }
            let value = JSONValue.object(JSONObject([("k", .string(String(scalars)))]))
            let bytes = try JSONWriter.serialize(value)
            let safe = JSONWriter.terminalSafe(bytes)
            #expect(String(decoding: safe, as: UTF8.self) == reference(String(decoding: bytes, as: UTF8.self)), seedNote("string \(n)"))
            #expect(strictlyEqual(try JSONReader.parse(safe), value), seedNote("string \(n)"))
        }
        #expect(JSONWriter.terminalSafe(Array("{\"k\":\"plain é €\"}".utf8)) == Array("{\"k\":\"plain é €\"}".utf8))
    }

    /// Random nested values: write → our reader gives the same value; Foundation agrees.
    @Test func randomValuesRoundTrip() throws {
        var rng = SeededGenerator(seed: testSeed &+ 1)
        for n in 0..<2000 {
            let value = RandomJSON.value(&rng)
            let bytes = try JSONWriter.serialize(value)
            if let violation = compactnessViolation(bytes) {
                Issue.record(seedNote("value \(n): \(violation)"))
                return
            }
            let back = try JSONReader.parse(bytes)
            #expect(strictlyEqual(back, value), seedNote("value \(n)"))
            let foundation = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
            #expect(matchesFoundation(value, foundation), seedNote("Foundation, value \(n): \(String(decoding: bytes, as: UTF8.self))"))
        }
    }

    /// Python's `json` (an independent parser) reads our output to the same strings and
    /// numbers: its ASCII-only re-encoding parses back to exactly what we wrote.
    @Test func pythonReadsWhatWeWrite() throws {
        var rng = SeededGenerator(seed: testSeed &+ 2)
        var values: [JSONValue] = (0..<2000).map { _ in .string(RandomJSON.string(&rng, maxLength: 40)) }
        values += (0..<1000).map { _ in RandomJSON.value(&rng) }
        let documents = try values.map { try JSONWriter.serialize($0) }
        let echoed = try echoThroughPython(documents)
        try #require(echoed.count == values.count, seedNote("python returned \(echoed.count) lines for \(values.count)"))
        for (n, (value, line)) in zip(values, echoed).enumerated() {
            let back = try JSONReader.parse(line)
            #expect(strictlyEqual(back, value), seedNote("document \(n): python echoed \(line)"))
        }
    }
}
