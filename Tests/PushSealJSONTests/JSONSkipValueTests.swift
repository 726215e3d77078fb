import PushSealSystem
import PushSealTestSupport
@testable import PushSealJSON
import Testing

/// `Scanner.skipValue()` accepts and rejects what `readValue()` does and stops at the same
/// offset; `JSONWriter.decimal` and `key(static:)` write what the tree writer would.
@Suite struct JSONSkipValueTests {
    /// The offset after the value of member `a` of `{"a":VALUE,"b":1}` (skipped or read), or
    /// the error code.
    static func member(_ value: String, skip: Bool) -> Result<Int, JSONError> {
        let bytes = Array("{\"a\":\(value),\"b\":1}".utf8)
        do {
            return .success(try bytes.withUnsafeBytes { raw in
                var s = try JSONReader.Scanner(raw)
                try s.beginObject()
                _ = try s.nextKey()
                if skip { try s.skipValue() } else { _ = try s.readValue() }
                let end = s.offset
                while try s.nextKey() != nil { _ = try s.readValue() }
                try s.finish()
                return end
            })
        } catch let e as JSONError {
            return .failure(e)
        } catch {
            return .failure(JSONError(.invalidJSON, "\(error)"))
        }
    }

    @Test("skipValue agrees with readValue on valid and invalid values (offset or error code)")
    func skipMatchesRead() {
        let cases = [
            "{\"aps\":{\"alert\":{\"title\":\"T\",\"body\":\"B\"},\"mutable-content\":1},\"encrypted_data\":\"AAAA+/==\"}",
            " [1, -2.5e3, true, false, null, \"\\u00e9\\n\", [], {}] ", "\"x\"", "0", "-0.25", "true", "null",
            "{\"k\":1,\"k\":2}", "{\"\\u006b\":1,\"k\":2}", "{\"e\\u0301\":1,\"\u{e9}\":2}", "[1,]", "{\"a\" 1}", "{\"a\":}",
            "\"\u{01}\"", "01", "tru", "[1 2]", "{1:2}", "\"\\x\"", "\"\\ud800\"", "[[[[[[[[[[1]]]]]]]]]]",
            "{" + (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + ",\"k7\":0}",
        ]
        for c in cases {
            let skipped = Self.member(c, skip: true), read = Self.member(c, skip: false)
            switch (skipped, read) {
            case (.success(let a), .success(let b)): #expect(a == b, "\(c)")
            case (.failure(let a), .failure(let b)): #expect(a.code == b.code, "\(c): \(a) vs \(b)")
            default: Issue.record("\(c): skip \(skipped), read \(read)")
            }
        }
        #expect(throws: JSONError.self) { try Self.member("{\"k\":1,\"k\":2}", skip: true).get() }
    }

    @Test("skipValue counts nesting like readValue")
    func skipNesting() throws {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        let skipped = Self.member(deep, skip: true), read = Self.member(deep, skip: false)
        guard case .failure(let a) = skipped, case .failure(let b) = read else {
            Issue.record("100 levels accepted: \(skipped) \(read)")
            return
        }
        #expect(a.code == .nestingTooDeep && b.code == .nestingTooDeep)
    }

    @Test("decimal: fixed-point numbers with exactly the digits asked, read back as the same value")
    func decimal() throws {
        let cases: [(Int64, Int, String)] = [(12345, 3, "12.345"), (5, 3, "0.005"), (-5, 2, "-0.05"), (0, 3, "0.000"),
                                             (1_000, 3, "1.000"), (42, 0, "42"), (Int64.min, 18, "-9.223372036854775808"),
                                             (Int64.max, 1, "922337203685477580.7")]
        for (units, digits, text) in cases {
            var w = JSONWriter()
            w.beginArray()
            w.decimal(units, fractionDigits: digits)
            w.integer(1)
            w.endArray()
            #expect(String(decoding: w.bytes, as: UTF8.self) == "[\(text),1]")
            guard case .array(let e) = try JSONReader.parse(w.bytes), let first = e.first else {
                Issue.record("not an array: \(w.bytes)")
                continue
            }
            switch first {
            case .number(let d): #expect(d == Double(text))
            case .integer(let i): #expect(digits == 0 && i == units)
            default: Issue.record("\(text) read back as \(first)")
            }
        }
    }

    @Test("key(static:) writes what key(_:) writes")
    func staticKey() {
        var a = JSONWriter(), b = JSONWriter()
        a.beginObject(); a.key(static: "deviceToken"); a.integer(1); a.key(static: "latencyMs"); a.null(); a.endObject()
        b.beginObject(); b.key("deviceToken"); b.integer(1); b.key("latencyMs"); b.null(); b.endObject()
        #expect(a.bytes == b.bytes && a.bytes == Array("{\"deviceToken\":1,\"latencyMs\":null}".utf8))
    }

    @Test("skipValue(ifEqualTo:) steps over a repeated object only when the bytes are the same")
    func skipIfEqual() throws {
        let headers = Array("{\"apns-topic\":\"t\",\"apns-priority\":\"10\"}".utf8)
        func run(_ member: String, _ raw: [UInt8]) throws -> (skipped: Bool, end: Int) {
            let bytes = Array("{\"headers\": \(member),\"b\":1}".utf8)
            return try bytes.withUnsafeBytes { buffer in
                var s = try JSONReader.Scanner(buffer)
                try s.beginObject()
                _ = try s.nextKey()
                let skipped = raw.withUnsafeBytes { s.skipValue(ifEqualTo: $0) }
                if !skipped { try s.skipValue() }
                let end = s.offset
                while try s.nextKey() != nil { _ = try s.readValue() }
                try s.finish()
                return (skipped, end)
            }
        }
        let same = try run(String(decoding: headers, as: UTF8.self), headers)
        #expect(same.skipped && same.end == 12 + headers.count)
        let other = try run("{\"apns-topic\":\"u\",\"apns-priority\":\"10\"}", headers)
        #expect(!other.skipped && other.end == same.end)
        #expect(try !run("12", Array("1".utf8)).skipped, "a number is not self-delimiting")
        #expect(throws: JSONError.self) { try run("{\"apns-topic\":\"t\",\"apns-priority\":\"10\"", headers) }
    }
}
