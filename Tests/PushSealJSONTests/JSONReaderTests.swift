import PushSealSystem
import PushSealTestSupport
import Foundation
import Testing
@testable import PushSealJSON

/// One input the reader must reject, and the code it must reject it with.
struct Rejection: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let code: JSONError.Code
    var testDescription: String { name }

    init(_ name: String, _ text: String, _ code: JSONError.Code) {
        self.name = name
        self.bytes = Array(text.utf8)
        self.code = code
    }

    init(_ name: String, bytes: [UInt8], _ code: JSONError.Code) {
        self.name = name
        self.bytes = bytes
        self.code = code
    }
}

private func quoted(_ inner: [UInt8]) -> [UInt8] { [0x22] + inner + [0x22] }

@Suite("JSONReader")
struct JSONReaderTests {
    static let rejections: [Rejection] = [
        // Invalid UTF-8 inside strings.
        Rejection("overlong 2-byte C0 80", bytes: quoted([0xC0, 0x80]), .invalidUTF8),
        Rejection("overlong 2-byte C1 BF", bytes: quoted([0xC1, 0xBF]), .invalidUTF8),
        Rejection("overlong 3-byte E0 80 AF", bytes: quoted([0xE0, 0x80, 0xAF]), .invalidUTF8),
        Rejection("overlong 4-byte F0 8F BF BF", bytes: quoted([0xF0, 0x8F, 0xBF, 0xBF]), .invalidUTF8),
        Rejection("UTF-8-encoded high surrogate ED A0 80", bytes: quoted([0xED, 0xA0, 0x80]), .invalidUTF8),
        Rejection("UTF-8-encoded low surrogate ED BF BF", bytes: quoted([0xED, 0xBF, 0xBF]), .invalidUTF8),
        Rejection("above U+10FFFF F4 90 80 80", bytes: quoted([0xF4, 0x90, 0x80, 0x80]), .invalidUTF8),
        Rejection("byte F5", bytes: quoted([0xF5, 0x80, 0x80, 0x80]), .invalidUTF8),
        Rejection("byte FF", bytes: quoted([0xFF]), .invalidUTF8),
        Rejection("stray continuation byte", bytes: quoted([0x41, 0x80]), .invalidUTF8),
        Rejection("truncated 3-byte sequence", bytes: quoted([0xE2, 0x82]), .invalidUTF8),
        Rejection("truncated at end of input", bytes: [0x22, 0xF0, 0x9F], .invalidUTF8),
        // Unpaired surrogate escapes.
        Rejection("lone high surrogate escape", #""\uD800""#, .invalidJSON),
        Rejection("lone low surrogate escape", #""\uDC00""#, .invalidJSON),
        Rejection("high surrogate then letter", #""\uD83Dx""#, .invalidJSON),
        Rejection("high surrogate then non-surrogate escape", #""\uD83D\u0041""#, .invalidJSON),
        Rejection("two high surrogates", #""\uD83D\uD83D""#, .invalidJSON),
        // Control characters in strings.
        Rejection("raw U+0000 in string", bytes: quoted([0x00]), .invalidJSON),
        Rejection("raw line feed in string", bytes: quoted([0x61, 0x0A, 0x62]), .invalidJSON),
        Rejection("raw U+001F in string", bytes: quoted([0x1F]), .invalidJSON),
        Rejection("raw tab in string", bytes: quoted([0x09]), .invalidJSON),
        // Trailing garbage.
        Rejection("trailing letter", "{} x", .invalidJSON),
        Rejection("two values", "1 2", .invalidJSON),
        Rejection("extra closing brace", "{}}", .invalidJSON),
        Rejection("trailing NUL", "null\u{0}", .invalidJSON),
        // Leading zeros.
        Rejection("leading zero", "01", .invalidJSON),
        Rejection("negative leading zero", "-01", .invalidJSON),
        Rejection("double zero", "[00]", .invalidJSON),
        // NaN and Infinity.
        Rejection("NaN", "NaN", .invalidJSON),
        Rejection("Infinity", "Infinity", .invalidJSON),
        Rejection("-Infinity", "-Infinity", .invalidJSON),
        Rejection("number beyond Double range", "1e400", .invalidJSON),
        // Other number syntax.
        Rejection("plus sign", "+1", .invalidJSON),
        Rejection("bare minus", "-", .invalidJSON),
        Rejection("no digit after point", "1.", .invalidJSON),
        Rejection("leading point", ".5", .invalidJSON),
        Rejection("empty exponent", "1e", .invalidJSON),
        Rejection("hex number", "0x10", .invalidJSON),
        // Whitespace and byte order mark.
        Rejection("UTF-8 byte order mark", bytes: [0xEF, 0xBB, 0xBF] + Array("{}".utf8), .invalidJSON),
        Rejection("form feed as whitespace", "\u{0C}{}", .invalidJSON),
        Rejection("vertical tab as whitespace", "{}\u{0B}", .invalidJSON),
        Rejection("no-break space as whitespace", "{\u{A0}}", .invalidJSON),
        // Structure.
        Rejection("empty input", "", .invalidJSON),
        Rejection("only whitespace", " \n", .invalidJSON),
        Rejection("trailing comma in array", "[1,]", .invalidJSON),
        Rejection("trailing comma in object", #"{"a":1,}"#, .invalidJSON),
        Rejection("missing colon", #"{"a" 1}"#, .invalidJSON),
        Rejection("key without value", #"{"a"}"#, .invalidJSON),
        Rejection("non-string key", "{1:2}", .invalidJSON),
        Rejection("single quotes", "['a']", .invalidJSON),
        Rejection("unterminated string", #""abc"#, .invalidJSON),
        Rejection("unterminated array", "[1,2", .invalidJSON),
        Rejection("truncated literal", "tru", .invalidJSON),
        Rejection("capitalised literal", "True", .invalidJSON),
        Rejection("invalid escape", #""\x41""#, .invalidJSON),
        Rejection("short unicode escape", #""\u12""#, .invalidJSON),
        Rejection("non-hex unicode escape", #""\u12G4""#, .invalidJSON),
        Rejection("comment", "[1/*c*/]", .invalidJSON),
        // Duplicate keys.
        Rejection("duplicate key", #"{"a":1,"a":2}"#, .duplicateKey),
        Rejection("duplicate key spelled with an escape", #"{"a":1,"\u0061":2}"#, .duplicateKey),
        Rejection("duplicate key, canonically equivalent", #"{"\u00e9":1,"e\u0301":2}"#, .duplicateKey),
        Rejection("duplicate nested key", #"{"aps":{"alert":1,"alert":2}}"#, .duplicateKey),
        Rejection(
            "duplicate key in a large object (set path)",
            "{" + (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + ",\"k7\":0}",
            .duplicateKey),
        // Nesting.
        Rejection("arrays 65 deep", String(repeating: "[", count: 65) + String(repeating: "]", count: 65), .nestingTooDeep),
        Rejection(
            "objects 65 deep",
            String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65),
            .nestingTooDeep),
        Rejection("100000 open brackets", String(repeating: "[", count: 100_000), .nestingTooDeep),
        // Size.
        Rejection("input over 1 MiB", "\"" + String(repeating: "a", count: 1 << 20) + "\"", .inputTooLarge),
    ]

    @Test("rejects", arguments: rejections)
    func rejects(_ case_: Rejection) {
        #expect(throws: JSONError(case_.code, "")) { try JSONReader.parse(case_.bytes) }
    }

    @Test func invalidJSONReasonNamesTheByteOffset() throws {
        let error = #expect(throws: JSONError.self) { try JSONReader.parse("[1,]") }
        #expect(error?.code == .invalidJSON)
        #expect(error?.reason.contains("byte offset 3") == true, "\(String(describing: error))")
        let utf8Error = #expect(throws: JSONError.self) { try JSONReader.parse(quoted([0x41, 0xFF])) }
        #expect(utf8Error?.reason.contains("byte offset 2") == true, "\(String(describing: utf8Error))")
    }

    @Test func mutableContentFourWays() throws {
        let cases: [(String, JSONValue)] = [
            ("true", .bool(true)),
            ("1", .integer(1)),
            ("1.0", .number(1.0)),
            ("\"1\"", .string("1")),
        ]
        var seen: [JSONValue] = []
        for (text, expected) in cases {
            let value = try JSONReader.parse(#"{"aps":{"mutable-content":"# + text + "}}")
            let field = try #require(value["aps"]?["mutable-content"])
            #expect(field == expected, "\(text)")
            #expect(!seen.contains(field), "\(text) collides with an earlier case")
            seen.append(field)
        }
        #expect(try JSONReader.parse("true").integerValue == nil)
        #expect(try JSONReader.parse("1").integerValue == 1)
        #expect(try JSONReader.parse("1.0").integerValue == nil)
    }

    @Test func integerBoundaries() throws {
        #expect(try JSONReader.parse("9223372036854775807") == .integer(.max))
        #expect(try JSONReader.parse("-9223372036854775808") == .integer(.min))
        #expect(try JSONReader.parse("9223372036854775808") == .number(9223372036854775808.0))
        #expect(try JSONReader.parse("-9223372036854775809") == .number(-9223372036854775809.0))
        #expect(try JSONReader.parse("123456789012345678901234567890") == .number(1.2345678901234568e29))
        #expect(try JSONReader.parse("0") == .integer(0))
        #expect(try JSONReader.parse("-0") == .integer(0))
        #expect(try JSONReader.parse("1e2") == .number(100))
        #expect(try JSONReader.parse("1E+2") == .number(100))
        #expect(try JSONReader.parse("-0.5e-3") == .number(-0.0005))
        #expect(try JSONReader.parse("0.1") == .number(0.1))
        #expect(try JSONReader.parse("1e-400") == .number(0))
    }

    @Test func escapesDecode() throws {
        let value = try JSONReader.parse(#""\u00e9\ud83d\ude00\/\b\f\n\r\t\"\\\u0000x""#)
        #expect(value.stringValue.map { Array($0.unicodeScalars) } == Array("é😀/\u{8}\u{C}\n\r\t\"\\\u{0}x".unicodeScalars))
    }

    @Test func rawUnicodeAndDELAreAllowedInStrings() throws {
        let text = "a\u{7F}\u{2028}\u{2029}é😀👨‍👩‍👧🇫🇷e\u{301}\u{FEFF}"
        let value = try JSONReader.parse(Array(("\"" + text + "\"").utf8))
        #expect(value.stringValue.map { Array($0.utf8) } == Array(text.utf8))
    }

    @Test func whitespaceAndOrder() throws {
        let value = try JSONReader.parse(" \t\r\n{ \"b\" : [ 1 , true , null ] , \"a\" : { } } \n")
        let object = try #require(value.objectValue)
        #expect(object.members.map(\.key) == ["b", "a"])
        #expect(object["b"] == .array([.integer(1), .bool(true), .null]))
        #expect(object["a"] == .object([:]))
    }

    @Test func limitsAreExactAndConfigurable() throws {
        let deep64 = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONReader.parse(deep64) }
        #expect(throws: JSONError(.nestingTooDeep, "")) {
            try JSONReader.parse("[[[]]]", limits: .init(maxDepth: 2))
        }
        let doc = "\"" + String(repeating: "a", count: 98) + "\""  // 100 bytes
        #expect(throws: Never.self) { try JSONReader.parse(doc, limits: .init(maxByteCount: 100)) }
        #expect(throws: JSONError(.inputTooLarge, "")) {
            try JSONReader.parse(doc, limits: .init(maxByteCount: 99))
        }
        var large = "{"
        for k in 0..<1000 { large += "\"k\(k)\":\(k)," }
        large += "\"end\":0}"
        #expect(try JSONReader.parse(large).objectValue?.count == 1001)
    }

    @Test func overloadsAgree() throws {
        let text = #"{"aps":{"alert":{"title":"Hi","body":"é"},"mutable-content":1},"key_id":"k1"}"#
        let fromString = try JSONReader.parse(text)
        let fromBytes = try JSONReader.parse(Array(text.utf8))
        let fromBuffer = try Array(text.utf8).withUnsafeBytes { try JSONReader.parse($0) }
        #expect(fromString == fromBytes)
        #expect(fromBytes == fromBuffer)
        #expect(fromString["aps"]?["alert"]?["body"]?.stringValue == "é")
    }

    /// Every JSON file of the shared cases parses, agrees with Foundation, and round-trips.
    @Test
    func sharedCasesParse() throws {
        let root = try requireSharedData("cases")
        let files = try #require(FileManager.default.enumerator(atPath: root.path)?.allObjects as? [String])
            .filter { $0.hasSuffix(".json") }
        #expect(!files.isEmpty)
        for file in files {
            let bytes = try [UInt8](Data(contentsOf: root.appendingPathComponent(file)))
            let value = try JSONReader.parse(bytes)
            let foundation = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
            #expect(matchesFoundation(value, foundation), "\(file)")
            #expect(try strictlyEqual(JSONReader.parse(JSONWriter.serialize(value)), value), "\(file)")
        }
    }
}
