import PushSealFormat

// INTERIM: a small strict JSON reader used until PushSealFormat's `JSONReader` (branch `json`)
// lands on main. DELETE this file then and call `JSONReader.parse`.
enum InterimJSONReader {
    struct Failure: Error { let reason: String }

    static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        guard String(validating: bytes, as: UTF8.self) != nil else { throw Failure(reason: "the input is not valid UTF-8") }
        return try bytes.withUnsafeBufferPointer { b in
            var p = Parser(b: b, i: 0)
            p.ws()
            let v = try p.value(depth: 0)
            p.ws()
            guard p.i == b.count else { throw p.bad("trailing data") }
            return v
        }
    }

    struct Parser {
        let b: UnsafeBufferPointer<UInt8>
        var i: Int
        func bad(_ what: String) -> Failure { Failure(reason: "\(what) at byte \(i)") }
        mutating func ws() { while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 } }
        mutating func literal(_ s: StaticString, _ v: JSONValue) throws -> JSONValue {
            let ok = s.withUTF8Buffer { u in
                for c in u { guard i < b.count, b[i] == c else { return false }; i += 1 }
                return true
            }
            guard ok else { throw bad("invalid literal") }
            return v
        }
        mutating func value(depth: Int) throws -> JSONValue {
            guard depth < 64 else { throw bad("nesting too deep") }
            guard i < b.count else { throw bad("unexpected end") }
            switch b[i] {
            case UInt8(ascii: "{"):
                i += 1; ws()
                var members: [(key: String, value: JSONValue)] = []
                var seen = Set<String>()
                if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return .object(JSONObject(members)) }
                while true {
                    ws()
                    guard i < b.count, b[i] == 0x22 else { throw bad("expected a key") }
                    let k = try string()
                    ws()
                    guard i < b.count, b[i] == UInt8(ascii: ":") else { throw bad("expected ':'") }
                    i += 1; ws()
                    guard seen.insert(k).inserted else { throw bad("duplicate key") }
                    members.append((k, try value(depth: depth + 1)))
                    ws()
                    guard i < b.count else { throw bad("unexpected end") }
                    if b[i] == UInt8(ascii: ",") { i += 1; continue }
                    if b[i] == UInt8(ascii: "}") { i += 1; return .object(JSONObject(members)) }
                    throw bad("expected ',' or '}'")
                }
            case UInt8(ascii: "["):
                i += 1; ws()
                var a: [JSONValue] = []
                if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
                while true {
                    ws(); a.append(try value(depth: depth + 1)); ws()
                    guard i < b.count else { throw bad("unexpected end") }
                    if b[i] == UInt8(ascii: ",") { i += 1; continue }
                    if b[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
                    throw bad("expected ',' or ']'")
                }
            case 0x22: return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default: return try number()
            }
        }
        mutating func number() throws -> JSONValue {
            let start = i
            var isInteger = true
            if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
            guard i < b.count, (0x30...0x39).contains(b[i]) else { throw bad("invalid value") }
            if b[i] == 0x30 { i += 1 } else { while i < b.count, (0x30...0x39).contains(b[i]) { i += 1 } }
            if i < b.count, b[i] == UInt8(ascii: ".") {
                isInteger = false; i += 1
                guard i < b.count, (0x30...0x39).contains(b[i]) else { throw bad("invalid number") }
                while i < b.count, (0x30...0x39).contains(b[i]) { i += 1 }
            }
            if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
                isInteger = false; i += 1
                if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
                guard i < b.count, (0x30...0x39).contains(b[i]) else { throw bad("invalid number") }
                while i < b.count, (0x30...0x39).contains(b[i]) { i += 1 }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
            if isInteger, let v = Int64(text) { return .integer(v) }
            guard let d = Double(text), d.isFinite else { throw bad("number out of range") }
            return .number(d)
        }
        mutating func hex4() throws -> UInt32 {
            guard i + 4 <= b.count else { throw bad("truncated escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = b[i]
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                default: throw bad("invalid \\u escape")
                }
                v = v << 4 | d
                i += 1
            }
            return v
        }
        mutating func string() throws -> String {
            i += 1
            let start = i
            i = PayloadWriter.firstEscapeIndex(b, from: i)
            guard i >= b.count || b[i] >= 0x20 else { throw bad("control character in string") }
            guard i < b.count else { throw bad("unterminated string") }
            if b[i] == 0x22 {
                let s = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
                i += 1
                return s
            }
            var out = Array(UnsafeBufferPointer(rebasing: b[start..<i]))
            while true {
                guard i < b.count else { throw bad("unterminated string") }
                let c = b[i]
                if c == 0x22 { i += 1; break }
                if c < 0x20 { throw bad("control character in string") }
                if c != 0x5C { out.append(c); i += 1; continue }
                i += 1
                guard i < b.count else { throw bad("unterminated escape") }
                let e = b[i]
                i += 1
                switch e {
                case 0x22, 0x5C, 0x2F: out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard i + 2 <= b.count, b[i] == 0x5C, b[i + 1] == UInt8(ascii: "u") else { throw bad("unpaired surrogate") }
                        i += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw bad("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw bad("unpaired surrogate")
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw bad("invalid scalar") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw bad("invalid escape")
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
    }
}
