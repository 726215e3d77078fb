internal import PushSealSystem

/// A strict, fast JSON reader (RFC 8259) that produces ``JSONValue``.
///
/// Strict means it accepts exactly RFC 8259 JSON in well-formed UTF-8 and nothing else:
/// - whitespace is space, tab, CR and LF only; a UTF-8 byte order mark is rejected (§8.1);
/// - no trailing bytes after the value, no leading zeros, no `NaN` or `Infinity`, no trailing
///   commas, no comments, no single quotes;
/// - strings contain no raw control characters (U+0000–U+001F) and no unpaired `\u`
///   surrogate escapes; the bytes are well-formed UTF-8 (Unicode Table 3-7: no overlong
///   forms, no encoded surrogates, nothing above U+10FFFF);
/// - an object never has the same key twice (compared as Swift strings, that is up to Unicode
///   canonical equivalence, the way ``JSONObject`` looks keys up): readers disagree on which
///   duplicate wins, and that ambiguity is a security problem;
/// - nesting and input size are bounded by ``Limits``.
///
/// Numbers written without fraction or exponent that fit in `Int64` become
/// ``JSONValue/integer(_:)``; every other number becomes ``JSONValue/number(_:)`` (the nearest
/// `Double` to the exact text). A number beyond the range of `Double` (e.g. `1e400`) is rejected.
///
/// The reader works on bytes without Foundation; it recurses once per nesting level.
public enum JSONReader {
    /// Bounds that protect the reader from hostile input.
    public struct Limits: Sendable, Hashable {
        /// Longest accepted input in bytes; default 1 MiB (1,048,576 bytes).
        public var maxByteCount: Int
        /// Deepest accepted nesting of arrays and objects (a top-level `[]` is depth 1);
        /// default 64. The reader recurses once per level, so keep it below a few thousand.
        public var maxDepth: Int

        /// Limits with the given bounds (defaults: 1 MiB, depth 64).
        public init(maxByteCount: Int = 1 << 20, maxDepth: Int = 64) {
            self.maxByteCount = maxByteCount
            self.maxDepth = maxDepth
        }

        /// 1 MiB of input, nesting depth 64.
        public static let `default` = Limits()
    }

    /// Parses one JSON document from raw bytes.
    ///
    /// - Parameters:
    ///   - bytes: the complete document, UTF-8 without byte order mark.
    ///   - limits: size and depth bounds; ``Limits/default`` when omitted.
    /// - Returns: the document's value.
    /// - Throws: ``JSONError`` with code `.invalidJSON` (the reason names what and the byte
    ///   offset, counted from 0), `.invalidUTF8`, `.nestingTooDeep`, `.duplicateKey` or
    ///   `.inputTooLarge`.
    public static func parse(_ bytes: UnsafeRawBufferPointer, limits: Limits = .default) throws -> JSONValue {
        guard bytes.count <= limits.maxByteCount else {
            throw JSONError(.inputTooLarge, "JSON input of \(bytes.count) bytes exceeds the limit of \(limits.maxByteCount) bytes")
        }
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw JSONError(.invalidJSON, "empty input at byte offset 0, expected a JSON value")
        }
        var parser = Parser(base: base.assumingMemoryBound(to: UInt8.self), end: bytes.count, maxDepth: limits.maxDepth)
        return try parser.parseDocument()
    }

    /// Parses one JSON document from a byte array (see ``parse(_:limits:)-(UnsafeRawBufferPointer,_)``).
    ///
    /// - Throws: ``JSONError`` (`.invalidJSON`, `.invalidUTF8`, `.nestingTooDeep`,
    ///   `.duplicateKey`, `.inputTooLarge`).
    public static func parse(_ bytes: [UInt8], limits: Limits = .default) throws -> JSONValue {
        try bytes.withUnsafeBytes { try parse($0, limits: limits) }
    }

    /// Parses one JSON document from a string's UTF-8 bytes (a leading U+FEFF is rejected as
    /// a byte order mark).
    ///
    /// - Throws: ``JSONError`` (`.invalidJSON`, `.nestingTooDeep`, `.duplicateKey`,
    ///   `.inputTooLarge`; never `.invalidUTF8`, a `String` is always well-formed).
    public static func parse(_ string: String, limits: Limits = .default) throws -> JSONValue {
        var string = string
        return try string.withUTF8 { try parse(UnsafeRawBufferPointer($0), limits: limits) }
    }
}

// MARK: - UTF-8 validation (shared with JSONWriter)

enum UTF8Validation {
    /// Length (1...4) of the well-formed UTF-8 sequence starting at `p[i]`, or 0 when the bytes
    /// there are ill-formed or truncated before `end` (Unicode 15, Table 3-7).
    @inline(__always)
    static func sequenceLength(_ p: UnsafePointer<UInt8>, at i: Int, end: Int) -> Int {
        let b0 = p[i]
        if b0 < 0x80 { return 1 }
        if b0 < 0xC2 { return 0 }  // stray continuation byte, or overlong C0/C1
        if b0 < 0xE0 {
            guard i + 1 < end, p[i + 1] & 0xC0 == 0x80 else { return 0 }
            return 2
        }
        if b0 < 0xF0 {
            guard i + 2 < end else { return 0 }
            let b1 = p[i + 1]
            let low: UInt8 = b0 == 0xE0 ? 0xA0 : 0x80  // E0 80..9F would be overlong
            let high: UInt8 = b0 == 0xED ? 0x9F : 0xBF  // ED A0..BF would be a surrogate
            guard b1 >= low, b1 <= high, p[i + 2] & 0xC0 == 0x80 else { return 0 }
            return 3
        }
        if b0 < 0xF5 {
            guard i + 3 < end else { return 0 }
            let b1 = p[i + 1]
            let low: UInt8 = b0 == 0xF0 ? 0x90 : 0x80  // F0 80..8F would be overlong
            let high: UInt8 = b0 == 0xF4 ? 0x8F : 0xBF  // F4 90.. would be above U+10FFFF
            guard b1 >= low, b1 <= high, p[i + 2] & 0xC0 == 0x80, p[i + 3] & 0xC0 == 0x80 else { return 0 }
            return 4
        }
        return 0  // F5...FF never appear in UTF-8
    }

    /// Offset of the first ill-formed byte in `bytes`, or `nil` when all of it is well-formed.
    static func firstInvalidOffset(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let p = base.assumingMemoryBound(to: UInt8.self)
        let end = bytes.count
        var i = 0
        while i < end {
            if p[i] < 0x80 { i += 1; continue }
            let n = sequenceLength(p, at: i, end: end)
            if n == 0 { return i }
            i += n
        }
        return nil
    }
}

// MARK: - Parser

enum Byte {
    static let quote: UInt8 = 0x22  // "
    static let backslash: UInt8 = 0x5C
    static let slash: UInt8 = 0x2F
    static let comma: UInt8 = 0x2C
    static let colon: UInt8 = 0x3A
    static let minus: UInt8 = 0x2D
    static let plus: UInt8 = 0x2B
    static let dot: UInt8 = 0x2E
    static let zero: UInt8 = 0x30
    static let openBrace: UInt8 = 0x7B
    static let closeBrace: UInt8 = 0x7D
    static let openBracket: UInt8 = 0x5B
    static let closeBracket: UInt8 = 0x5D
}

/// Objects with more members than this switch from linear duplicate checks to a `Set`.
private let linearKeyCheckLimit = 16

struct Parser {
    let p: UnsafePointer<UInt8>
    let end: Int
    let maxDepth: Int
    var i = 0
    var depth = 0
    /// Reused buffer for strings that contain escapes.
    var scratch: [UInt8] = []

    init(base: UnsafePointer<UInt8>, end: Int, maxDepth: Int) {
        self.p = base
        self.end = end
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws -> JSONValue {
        if end >= 3, p[0] == 0xEF, p[1] == 0xBB, p[2] == 0xBF {
            throw JSONError(.invalidJSON, "byte order mark at byte offset 0 (RFC 8259 §8.1 forbids it)")
        }
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        if i != end { throw unexpected("end of input after the JSON value") }
        return value
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while i < end {
            let b = p[i]
            guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
            i += 1
        }
    }

    /// An `invalidJSON` error describing the byte at `i` (or the end of input).
    func unexpected(_ expected: String) -> JSONError {
        guard i < end else {
            return JSONError(.invalidJSON, "unexpected end of input at byte offset \(i), expected \(expected)")
        }
        let b = p[i]
        let shown = b >= 0x21 && b < 0x7F ? " '\(Character(Unicode.Scalar(b)))'" : ""
        return JSONError(.invalidJSON, "unexpected byte 0x\(hex2(b))\(shown) at byte offset \(i), expected \(expected)")
    }

    func hex2(_ b: UInt8) -> String { Hex.byte(b, uppercase: true) }

    mutating func parseValue() throws -> JSONValue {
        guard i < end else { throw unexpected("a JSON value") }
        switch p[i] {
        case Byte.quote: return .string(try parseString())
        case Byte.openBrace: return try parseObject()
        case Byte.openBracket: return try parseArray()
        case 0x74: try expectLiteral("true"); return .bool(true)
        case 0x66: try expectLiteral("false"); return .bool(false)
        case 0x6E: try expectLiteral("null"); return .null
        case Byte.minus, 0x30...0x39: return try parseNumber()
        default: throw unexpected("a JSON value")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        let start = i
        let l = literal.utf8Start
        for k in 0..<count {
            guard i < end, p[i] == l[k] else {
                throw unexpected("'\(literal)' (started at byte offset \(start))")
            }
            i += 1
        }
    }

    mutating func enter() throws {
        depth += 1
        if depth > maxDepth {
            throw JSONError(.nestingTooDeep, "nesting deeper than \(maxDepth) levels at byte offset \(i)")
        }
    }

    /// After an array element or object member: whitespace, then `,` (and the whitespace after
    /// it: `true`, another follows) or `closing` (consumed: `false`).
    /// - Throws: `JSONError` `.invalidJSON` expecting `expected`.
    @inline(__always)
    mutating func another(closing: UInt8, _ expected: String) throws -> Bool {
        skipWhitespace()
        guard i < end else { throw unexpected(expected) }
        let b = p[i]
        i += 1
        if b == Byte.comma {
            skipWhitespace()
            return true
        }
        if b == closing { return false }
        i -= 1
        throw unexpected(expected)
    }

    mutating func parseArray() throws -> JSONValue {
        try enter()
        i += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if i < end, p[i] == Byte.closeBracket {
            i += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue())
            if try !another(closing: Byte.closeBracket, "',' or ']'") { break }
        }
        depth -= 1
        return .array(elements)
    }

    mutating func parseObject() throws -> JSONValue {
        try enter()
        i += 1
        var members: [(key: String, value: JSONValue)] = []
        var keySet: Set<String>?
        skipWhitespace()
        if i < end, p[i] == Byte.closeBrace {
            i += 1
            depth -= 1
            return .object(JSONObject(uniqueMembers: members))
        }
        while true {
            guard i < end, p[i] == Byte.quote else { throw unexpected("a string key") }
            let keyOffset = i
            let key = try parseString()
            let duplicate: Bool
            if let keySet {
                duplicate = keySet.contains(key)
            } else {
                duplicate = members.contains { $0.key == key }
            }
            if duplicate {
                throw JSONError(.duplicateKey, "duplicate key at byte offset \(keyOffset): an object has the key \"\(key.prefix(64))\" twice")
            }
            skipWhitespace()
            guard i < end, p[i] == Byte.colon else { throw unexpected("':'") }
            i += 1
            skipWhitespace()
            let value = try parseValue()
            members.append((key: key, value: value))
            if keySet != nil {
                keySet?.insert(key)
            } else if members.count > linearKeyCheckLimit {
                keySet = Set(members.map(\.key))
            }
            if try !another(closing: Byte.closeBrace, "',' or '}'") { break }
        }
        depth -= 1
        return .object(JSONObject(uniqueMembers: members))
    }

    /// Checks the value at `p[i]` as ``parseValue()`` would (the same errors: syntax,
    /// UTF-8, escapes, nesting, duplicate keys compared as `String`s) without building it:
    /// string values are scanned, not made. Leaves `i` after the value.
    mutating func skipValue() throws {
        guard i < end else { throw unexpected("a JSON value") }
        switch p[i] {
        case Byte.quote: _ = try scanString()
        case Byte.openBrace: try skipObject()
        case Byte.openBracket:
            try enter()
            i += 1
            skipWhitespace()
            if i < end, p[i] == Byte.closeBracket {
                i += 1
                depth -= 1
                return
            }
            while true {
                try skipValue()
                if try !another(closing: Byte.closeBracket, "',' or ']'") { break }
            }
            depth -= 1
        case 0x74: try expectLiteral("true")
        case 0x66: try expectLiteral("false")
        case 0x6E: try expectLiteral("null")
        case Byte.minus, 0x30...0x39: _ = try parseNumber()
        default: throw unexpected("a JSON value")
        }
    }

    /// Keys of one object compared as raw bytes while they are plain ASCII without escapes
    /// (equal bytes then mean equal `String`s), at most this many; past that, or at the first
    /// other key, the keys so far become `String`s and the rest are compared as ``parseObject()``
    /// compares them.
    private static let rawKeyLimit = 16

    private mutating func skipObject() throws {
        try enter()
        i += 1
        skipWhitespace()
        if i < end, p[i] == Byte.closeBrace {
            i += 1
            depth -= 1
            return
        }
        try withUnsafeTemporaryAllocation(of: (start: Int, count: Int).self, capacity: Self.rawKeyLimit) { raw in
            var rawCount = 0
            var keys: [String]?
            var keySet: Set<String>?
            while true {
                guard i < end, p[i] == Byte.quote else { throw unexpected("a string key") }
                let keyOffset = i
                let span = try scanString()
                if keys == nil, rawCount < Self.rawKeyLimit, !span.hasEscapes, isASCII(span.start, span.byteCount) {
                    for k in 0..<rawCount where raw[k].count == span.byteCount && (span.byteCount == 0 || memoryEqual(raw[k].start, span.start, span.byteCount)) {
                        throw duplicateKey(String(decoding: UnsafeBufferPointer(start: p + span.start, count: span.byteCount), as: UTF8.self), at: keyOffset)
                    }
                    raw[rawCount] = (span.start, span.byteCount)
                    rawCount += 1
                } else {
                    if keys == nil {
                        keys = (0..<rawCount).map { String(decoding: UnsafeBufferPointer(start: p + raw[$0].start, count: raw[$0].count), as: UTF8.self) }
                    }
                    let key = span.hasEscapes ? String(decoding: scratch, as: UTF8.self)
                        : String(decoding: UnsafeBufferPointer(start: p + span.start, count: span.byteCount), as: UTF8.self)
                    let duplicate = if let keySet { keySet.contains(key) } else { keys?.contains(key) ?? false }
                    if duplicate { throw duplicateKey(key, at: keyOffset) }
                    if keySet != nil {
                        keySet?.insert(key)
                    } else {
                        keys?.append(key)
                        if let k = keys, k.count > linearKeyCheckLimit { keySet = Set(k) }
                    }
                }
                skipWhitespace()
                guard i < end, p[i] == Byte.colon else { throw unexpected("':'") }
                i += 1
                skipWhitespace()
                try skipValue()
                if try !another(closing: Byte.closeBrace, "',' or '}'") { break }
            }
        }
        depth -= 1
    }

    private func isASCII(_ start: Int, _ count: Int) -> Bool {
        for k in start..<(start + count) where p[k] >= 0x80 { return false }
        return true
    }

    private func memoryEqual(_ a: Int, _ b: Int, _ count: Int) -> Bool {
        for k in 0..<count where p[a + k] != p[b + k] { return false }
        return true
    }

    private func duplicateKey(_ key: String, at offset: Int) -> JSONError {
        JSONError(.duplicateKey, "duplicate key at byte offset \(offset): an object has the key \"\(key.prefix(64))\" twice")
    }

    // MARK: Strings

    /// Parses a string; `p[i]` is its opening quote. Leaves `i` after the closing quote.
    mutating func parseString() throws -> String {
        i += 1
        let start = i
        // Fast path: printable ASCII without escapes, decoded straight from the input.
        while i + 8 <= end, !ByteScan.leavesPlainASCII(ByteScan.load(p, at: i)) { i += 8 }
        while i < end {
            let b = p[i]
            if b == Byte.quote {
                let s = String(decoding: UnsafeBufferPointer(start: p + start, count: i - start), as: UTF8.self)
                i += 1
                return s
            }
            if b == Byte.backslash || b < 0x20 || b >= 0x80 { break }
            i += 1
        }
        // The general case (escapes, UTF-8 validation, errors): `scanString` checks it and
        // collects the decoded bytes of an escaped string in `scratch`.
        i = start - 1
        let span = try scanString()
        if span.hasEscapes { return String(decoding: scratch, as: UTF8.self) }
        return String(decoding: UnsafeBufferPointer(start: p + span.start, count: span.byteCount), as: UTF8.self)
    }

    /// Parses one escape at `p[i]` (a backslash), appending its UTF-8 to `scratch`.
    mutating func parseEscape() throws {
        let escapeOffset = i
        guard i + 1 < end else {
            throw JSONError(.invalidJSON, "unterminated escape at byte offset \(i)")
        }
        let c = p[i + 1]
        i += 2
        switch c {
        case Byte.quote: scratch.append(Byte.quote)
        case Byte.backslash: scratch.append(Byte.backslash)
        case Byte.slash: scratch.append(Byte.slash)
        case 0x62: scratch.append(0x08)  // \b
        case 0x66: scratch.append(0x0C)  // \f
        case 0x6E: scratch.append(0x0A)  // \n
        case 0x72: scratch.append(0x0D)  // \r
        case 0x74: scratch.append(0x09)  // \t
        case 0x75:  // \uXXXX
            var scalar = try hex4()
            if scalar >= 0xD800, scalar <= 0xDBFF {
                guard i + 1 < end, p[i] == Byte.backslash, p[i + 1] == 0x75 else {
                    throw JSONError(.invalidJSON, "unpaired high surrogate escape at byte offset \(escapeOffset)")
                }
                i += 2
                let low = try hex4()
                guard low >= 0xDC00, low <= 0xDFFF else {
                    throw JSONError(.invalidJSON, "unpaired high surrogate escape at byte offset \(escapeOffset)")
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if scalar >= 0xDC00, scalar <= 0xDFFF {
                throw JSONError(.invalidJSON, "unpaired low surrogate escape at byte offset \(escapeOffset)")
            }
            appendUTF8(scalar)
        default:
            i -= 1
            throw JSONError(.invalidJSON, "invalid escape at byte offset \(escapeOffset) (allowed: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
        }
    }

    /// Reads four hex digits at `p[i]`.
    mutating func hex4() throws -> UInt32 {
        guard i + 4 <= end else {
            i = end
            throw unexpected("four hex digits after \\u")
        }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = p[i]
            let d: UInt8
            switch b {
            case 0x30...0x39: d = b - 0x30
            case 0x41...0x46: d = b - 0x41 + 10
            case 0x61...0x66: d = b - 0x61 + 10
            default: throw unexpected("four hex digits after \\u")
            }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }

    mutating func appendUTF8(_ v: UInt32) {
        switch v {
        case 0..<0x80:
            scratch.append(UInt8(v))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | v >> 6))
            scratch.append(UInt8(0x80 | v & 0x3F))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | v >> 12))
            scratch.append(UInt8(0x80 | v >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | v & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | v >> 18))
            scratch.append(UInt8(0x80 | v >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | v >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | v & 0x3F))
        }
    }

    // MARK: Numbers

    @inline(__always)
    func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }

    /// Parses a number (RFC 8259 §6); `p[i]` is `-` or a digit.
    mutating func parseNumber() throws -> JSONValue {
        let start = i
        let negative = p[i] == Byte.minus
        if negative { i += 1 }
        guard i < end, isDigit(p[i]) else { throw unexpected("a digit") }
        var magnitude: UInt64 = 0
        var overflow = false
        if p[i] == Byte.zero {
            i += 1
            if i < end, isDigit(p[i]) {
                throw JSONError(.invalidJSON, "leading zero in a number at byte offset \(start)")
            }
        } else {
            while i < end, isDigit(p[i]) {
                let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (m2, o2) = m1.addingReportingOverflow(UInt64(p[i] &- Byte.zero))
                overflow = overflow || o1 || o2
                magnitude = m2
                i += 1
            }
        }
        var isInteger = true
        if i < end, p[i] == Byte.dot {
            isInteger = false
            i += 1
            guard i < end, isDigit(p[i]) else { throw unexpected("a digit after the decimal point") }
            while i < end, isDigit(p[i]) { i += 1 }
        }
        if i < end, p[i] | 0x20 == 0x65 {  // e or E
            isInteger = false
            i += 1
            if i < end, p[i] == Byte.plus || p[i] == Byte.minus { i += 1 }
            guard i < end, isDigit(p[i]) else { throw unexpected("a digit in the exponent") }
            while i < end, isDigit(p[i]) { i += 1 }
        }
        if isInteger, !overflow {
            if !negative, magnitude <= UInt64(Int64.max) { return .integer(Int64(magnitude)) }
            if negative, magnitude <= Int64.min.magnitude { return .integer(Int64(truncatingIfNeeded: 0 &- magnitude)) }
        }
        let text = String(decoding: UnsafeBufferPointer(start: p + start, count: i - start), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONError(.invalidJSON, "number at byte offset \(start) is outside the range of a 64-bit float")
        }
        return .number(value)
    }
}
