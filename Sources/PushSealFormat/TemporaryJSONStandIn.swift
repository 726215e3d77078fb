// TEMPORARY stand-in for JSONReader, JSONWriter and FormatError while the `json` branch is
// being written. DELETE this file when merging main (their real types replace it).
// Not part of the public API contract: minimal, slow, internal-quality code.

/// Stand-in for the real `FormatError` (worktree `json`).
public struct FormatError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Stand-in code type.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The stable name.
        public let name: String
        init(_ name: String) { self.name = name }
        /// Stand-in.
        public static let invalidJSON = Code("invalidJSON")
        /// Stand-in.
        public static let invalidUTF8 = Code("invalidUTF8")
        /// Stand-in.
        public static let nestingTooDeep = Code("nestingTooDeep")
        /// Stand-in.
        public static let duplicateKey = Code("duplicateKey")
        public var description: String { name }
    }
    /// Stand-in.
    public let code: Code
    /// Stand-in.
    public let reason: String
    /// Stand-in.
    public init(_ code: Code, _ reason: String) { self.code = code; self.reason = reason }
    public static func == (lhs: FormatError, rhs: FormatError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { "\(code): \(reason)" }
}

/// Stand-in for the real `JSONReader`.
public enum JSONReader {
    /// Stand-in: parses one JSON text.
    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        guard String(validating: bytes, as: UTF8.self) != nil else { throw FormatError(.invalidUTF8, "not UTF-8") }
        var p = StandInParser(b: bytes, i: 0)
        p.ws()
        let v = try p.value(depth: 0)
        p.ws()
        guard p.i == bytes.count else { throw FormatError(.invalidJSON, "trailing data") }
        return v
    }
}

struct StandInParser {
    let b: [UInt8]
    var i: Int
    mutating func ws() { while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 } }
    func bad() -> FormatError { FormatError(.invalidJSON, "invalid JSON at \(i)") }
    mutating func lit(_ s: String) throws { for c in s.utf8 { guard i < b.count, b[i] == c else { throw bad() }; i += 1 } }
    mutating func value(depth: Int) throws -> JSONValue {
        guard depth < 64 else { throw FormatError(.nestingTooDeep, "too deep") }
        guard i < b.count else { throw bad() }
        switch b[i] {
        case UInt8(ascii: "{"):
            i += 1; ws(); var o = JSONObject()
            if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return .object(o) }
            while true {
                ws(); guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw bad() }
                let k = try string(); ws(); try lit(":"); ws()
                guard o[k] == nil else { throw FormatError(.duplicateKey, "duplicate \(k)") }
                o[k] = try value(depth: depth + 1); ws()
                guard i < b.count else { throw bad() }
                if b[i] == UInt8(ascii: ",") { i += 1; continue }
                if b[i] == UInt8(ascii: "}") { i += 1; return .object(o) }
                throw bad()
            }
        case UInt8(ascii: "["):
            i += 1; ws(); var a: [JSONValue] = []
            if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
            while true {
                ws(); a.append(try value(depth: depth + 1)); ws()
                guard i < b.count else { throw bad() }
                if b[i] == UInt8(ascii: ",") { i += 1; continue }
                if b[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
                throw bad()
            }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try lit("true"); return .bool(true)
        case UInt8(ascii: "f"): try lit("false"); return .bool(false)
        case UInt8(ascii: "n"): try lit("null"); return .null
        default:
            let start = i
            var isInt = true
            while i < b.count, let c = Optional(b[i]), (c >= 0x30 && c <= 0x39) || c == UInt8(ascii: "-") || c == UInt8(ascii: "+") || c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
                if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") { isInt = false }
                i += 1
            }
            let s = String(decoding: b[start..<i], as: UTF8.self)
            if isInt, let v = Int64(s) { return .integer(v) }
            guard let d = Double(s) else { throw bad() }
            return .number(d)
        }
    }
    mutating func hex4() throws -> UInt32 {
        guard i + 4 <= b.count, let v = UInt32(String(decoding: b[i..<(i + 4)], as: UTF8.self), radix: 16) else { throw bad() }
        i += 4; return v
    }
    mutating func string() throws -> String {
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < b.count else { throw bad() }
            let c = b[i]
            if c == UInt8(ascii: "\"") { i += 1; break }
            guard c >= 0x20 else { throw bad() }
            if c == UInt8(ascii: "\\") {
                i += 1; guard i < b.count else { throw bad() }
                let e = b[i]; i += 1
                switch e {
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "u"):
                    var u = try hex4()
                    if u >= 0xD800, u < 0xDC00 {
                        try lit("\\u"); let lo = try hex4()
                        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
                    }
                    guard let sc = Unicode.Scalar(u) else { throw bad() }
                    out.append(contentsOf: Array(String(Character(sc)).utf8))
                default: out.append(e)
                }
            } else { out.append(c); i += 1 }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Stand-in for the real `JSONWriter`.
public enum JSONWriter {
    /// Stand-in: compact JSON.
    public static func serialize(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        write(value, into: &out)
        return out
    }
    static func write(_ v: JSONValue, into out: inout [UInt8]) {
        switch v {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += Array((b ? "true" : "false").utf8)
        case .integer(let n): out += Array(String(n).utf8)
        case .number(let d): out += Array("\(d)".utf8)
        case .string(let s): str(s, into: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (n, e) in a.enumerated() { if n > 0 { out.append(UInt8(ascii: ",")) }; write(e, into: &out) }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            for (n, m) in o.members.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                str(m.key, into: &out); out.append(UInt8(ascii: ":")); write(m.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
    static func str(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""): out += [0x5C, 0x22]
            case UInt8(ascii: "\\"): out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case 0..<0x20:
                let h = Array("0123456789abcdef".utf8)
                out += [0x5C, UInt8(ascii: "u"), 0x30, 0x30, h[Int(c >> 4)], h[Int(c & 15)]]
            default: out.append(c)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
