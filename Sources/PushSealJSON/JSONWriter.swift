/// A compact JSON writer (RFC 8259) that appends UTF-8 to a byte buffer.
///
/// Output has no whitespace outside strings and no needless escapes: inside strings only `"`,
/// `\` and the control characters U+0000–U+001F are escaped (`\b \f \n \r \t` short forms,
/// `\u00XX` for the rest, lower-case hex); `/`, U+2028, U+2029 and every other character are
/// written as raw UTF-8. Integers are written in decimal; doubles in their shortest
/// round-trip form (Swift's `description`, always with a `.` or an exponent so they read back
/// as numbers, not integers). Infinity and NaN are refused (`.nonFiniteNumber`).
///
/// Use ``write(_:)`` for a ``JSONValue`` tree, or the low-level calls to stream a document
/// field by field without building a tree; commas are inserted automatically:
///
/// ```swift
/// var w = JSONWriter(reservingCapacity: 4096)
/// w.beginObject()
/// w.key("aps"); w.beginObject()
/// w.key("mutable-content"); w.integer(1)
/// w.endObject()
/// w.key("key_id"); w.string(keyID)
/// w.endObject()
/// let payload = w.bytes  // {"aps":{"mutable-content":1},"key_id":"…"}
/// ```
///
/// The low-level calls do not check the document's structure (a `key` outside an object, or a
/// missing `end…`, produce invalid JSON): the caller writes a fixed shape.
public struct JSONWriter: Sendable {
    /// The UTF-8 bytes written so far.
    public private(set) var bytes: [UInt8]
    /// Whether the next value or key needs a `,` before it.
    private var needsComma = false

    /// An empty writer.
    /// - Parameter reservingCapacity: bytes to reserve up front (e.g. 4096 for an APNs payload).
    public init(reservingCapacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(reservingCapacity)
    }

    /// Number of bytes written so far.
    public var byteCount: Int { bytes.count }

    /// Empties the buffer (keeping its capacity) to write another document.
    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        needsComma = false
    }

    // MARK: Structure

    /// Writes `{` (preceded by `,` when needed).
    public mutating func beginObject() {
        comma()
        bytes.append(0x7B)
        needsComma = false
    }

    /// Writes `}`.
    public mutating func endObject() {
        bytes.append(0x7D)
        needsComma = true
    }

    /// Writes `[` (preceded by `,` when needed).
    public mutating func beginArray() {
        comma()
        bytes.append(0x5B)
        needsComma = false
    }

    /// Writes `]`.
    public mutating func endArray() {
        bytes.append(0x5D)
        needsComma = true
    }

    /// Writes an object member's key and the `:` (preceded by `,` when needed); write its
    /// value next.
    public mutating func key(_ key: String) {
        comma()
        appendQuoted(key)
        bytes.append(0x3A)
        needsComma = false
    }

    /// ``key(_:)`` for a key fixed in the program, copied as it is: for keys that need no
    /// escaping (no `"`, `\\` or control character — member names such as `deviceToken`).
    public mutating func key(static key: StaticString) {
        comma()
        bytes.append(0x22)
        bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        bytes.append(0x22)
        bytes.append(0x3A)
        needsComma = false
    }

    // MARK: Values

    /// Writes a string value, escaped as described on ``JSONWriter``.
    public mutating func string(_ value: String) {
        comma()
        appendQuoted(value)
        needsComma = true
    }

    /// Writes a string value given as UTF-8 bytes (e.g. base64 output) without making a
    /// `String` first. Nothing is written when the bytes are not well-formed UTF-8.
    /// - Throws: ``JSONError`` `.invalidUTF8` naming the offending byte offset.
    public mutating func string(utf8 value: UnsafeRawBufferPointer) throws {
        if let offset = UTF8Validation.firstInvalidOffset(value) {
            throw JSONError(.invalidUTF8, "ill-formed UTF-8 at byte offset \(offset) of a string to write")
        }
        comma()
        bytes.append(0x22)
        appendEscaped(value.assumingMemoryBound(to: UInt8.self))
        bytes.append(0x22)
        needsComma = true
    }

    /// Writes a string value given as UTF-8 bytes (see ``string(utf8:)-(UnsafeRawBufferPointer)``).
    /// - Throws: ``JSONError`` `.invalidUTF8`.
    public mutating func string(utf8 value: [UInt8]) throws {
        try value.withUnsafeBytes { try string(utf8: $0) }
    }

    /// Writes an integer in decimal.
    public mutating func integer(_ value: Int64) {
        comma()
        appendInteger(value)
        needsComma = true
    }

    /// Writes an integer in decimal.
    public mutating func integer(_ value: Int) {
        integer(Int64(value))
    }

    /// Writes `units / 10^fractionDigits` as a decimal number with exactly `fractionDigits`
    /// digits after the point (`decimal(12345, fractionDigits: 3)` writes `12.345`,
    /// `decimal(-5, fractionDigits: 2)` writes `-0.05`): fixed-point values such as
    /// milliseconds kept in microseconds, without a `Double`. `fractionDigits` is clamped to
    /// 0…18; 0 writes an integer.
    public mutating func decimal(_ units: Int64, fractionDigits: Int) {
        let digits = max(0, min(18, fractionDigits))
        guard digits > 0 else { return integer(units) }
        comma()
        if units < 0 { bytes.append(0x2D) }
        var scale: UInt64 = 1
        for _ in 0..<digits { scale *= 10 }
        let m = units.magnitude
        appendInteger(Int64(m / scale))
        bytes.append(0x2E)
        var fraction = m % scale
        let at = bytes.count
        bytes.append(contentsOf: repeatElement(0x30, count: digits))
        for i in stride(from: at + digits - 1, through: at, by: -1) {
            bytes[i] = 0x30 &+ UInt8(truncatingIfNeeded: fraction % 10)
            fraction /= 10
        }
        needsComma = true
    }

    /// Writes a double in its shortest round-trip form (e.g. `0.1`, `1.0`, `1e+100`).
    /// Nothing is written when it is infinite or NaN.
    /// - Throws: ``JSONError`` `.nonFiniteNumber` for infinity and NaN.
    public mutating func number(_ value: Double) throws {
        guard value.isFinite else {
            throw JSONError(.nonFiniteNumber, "cannot write \(value) as JSON")
        }
        comma()
        bytes.append(contentsOf: value.description.utf8)
        needsComma = true
    }

    /// Writes `true` or `false`.
    public mutating func bool(_ value: Bool) {
        comma()
        if value {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65])
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])
        }
        needsComma = true
    }

    /// Writes `null`.
    public mutating func null() {
        comma()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        needsComma = true
    }

    /// Writes a whole value (objects keep their member order).
    /// - Throws: ``JSONError`` `.nonFiniteNumber` when the tree holds an infinite or NaN
    ///   number; the buffer then holds a partial document.
    public mutating func write(_ value: JSONValue) throws {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .integer(let i): integer(i)
        case .number(let d): try number(d)
        case .string(let s): string(s)
        case .array(let elements):
            beginArray()
            for e in elements { try write(e) }
            endArray()
        case .object(let object):
            beginObject()
            for m in object.members {
                key(m.key)
                try write(m.value)
            }
            endObject()
        }
    }

    // MARK: One-shot helpers

    /// The compact UTF-8 serialization of `value`.
    /// - Throws: ``JSONError`` `.nonFiniteNumber` when it holds an infinite or NaN number.
    public static func serialize(_ value: JSONValue) throws -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 256)
        try writer.write(value)
        return writer.bytes
    }

    /// How ``serialize(_:style:)`` lays a document out.
    public enum Style: Sendable, Hashable {
        /// No whitespace outside strings, members in their order (payloads, `--json`, logs).
        case compact
        /// For files people read (`keychain.meta`): members sorted by key (Swift string order),
        /// two-space indent, one member or element a line, `"key" : value` (the layout of
        /// Foundation's `.prettyPrinted, .sortedKeys`); empty objects and arrays as `{}`, `[]`.
        /// Strings are escaped as in compact output.
        case prettySortedKeys
    }

    /// The serialization of `value` in `style`, as UTF-8.
    /// - Throws: ``JSONError`` `.nonFiniteNumber` when it holds an infinite or NaN number.
    public static func serialize(_ value: JSONValue, style: Style) throws -> [UInt8] {
        guard style == .prettySortedKeys else { return try serialize(value) }
        var writer = JSONWriter(reservingCapacity: 256)
        try writer.writePretty(value, indent: 0)
        return writer.bytes
    }

    private mutating func writePretty(_ value: JSONValue, indent: Int) throws {
        func newline(_ depth: Int) {
            bytes.append(0x0A)
            bytes.append(contentsOf: repeatElement(0x20, count: depth * 2))
        }
        switch value {
        case .object(let object) where object.count > 0:
            bytes.append(0x7B)
            for (i, m) in object.members.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { bytes.append(0x2C) }
                newline(indent + 1)
                appendQuoted(m.key)
                bytes.append(contentsOf: [0x20, 0x3A, 0x20])  // " : "
                try writePretty(m.value, indent: indent + 1)
            }
            newline(indent)
            bytes.append(0x7D)
        case .array(let elements) where !elements.isEmpty:
            bytes.append(0x5B)
            for (i, e) in elements.enumerated() {
                if i > 0 { bytes.append(0x2C) }
                newline(indent + 1)
                try writePretty(e, indent: indent + 1)
            }
            newline(indent)
            bytes.append(0x5D)
        default:
            needsComma = false
            try write(value)
        }
        needsComma = false
    }

    /// The compact serialization of `value` as a `String`.
    /// - Throws: ``JSONError`` `.nonFiniteNumber` when it holds an infinite or NaN number.
    public static func serializeToString(_ value: JSONValue) throws -> String {
        String(decoding: try serialize(value), as: UTF8.self)
    }

    /// The exact number of bytes ``string(_:)`` writes for `string`: its UTF-8 length plus
    /// the escapes plus the two quotation marks. Nothing is written; use it to plan a byte
    /// budget (APNs: 4096 bytes).
    /// - Parameter string: any string.
    /// - Returns: a byte count ≥ 2.
    public static func utf8ByteCount(escaping string: String) -> Int {
        if let n = string.utf8.withContiguousStorageIfAvailable({ escapedByteCount($0) }) {
            return n
        }
        var copy = string
        return copy.withUTF8 { escapedByteCount($0) }
    }

    // MARK: Internals

    @inline(__always)
    private mutating func comma() {
        if needsComma { bytes.append(0x2C) }
    }

    private static func escapedByteCount(_ u: UnsafeBufferPointer<UInt8>) -> Int {
        var n = u.count + 2
        guard let p = u.baseAddress else { return n }
        let count = u.count
        var j = 0
        while j < count {
            if j + 8 <= count, !ByteScan.needsEscape(ByteScan.load(p, at: j)) {
                j += 8
                continue
            }
            let b = p[j]
            j += 1
            guard b < 0x20 || b == 0x22 || b == 0x5C else { continue }
            switch b {
            case 0x22, 0x5C, 0x08, 0x0C, 0x0A, 0x0D, 0x09: n += 1  // two-byte escape
            default: n += 5  // \u00XX
            }
        }
        return n
    }

    private mutating func appendQuoted(_ s: String) {
        bytes.append(0x22)
        if s.utf8.withContiguousStorageIfAvailable({ appendEscaped($0) }) == nil {
            var copy = s
            copy.withUTF8 { appendEscaped($0) }
        }
        bytes.append(0x22)
    }

    private mutating func appendEscaped(_ u: UnsafeBufferPointer<UInt8>) {
        guard let p = u.baseAddress else { return }
        let count = u.count
        var runStart = 0
        var j = 0
        while j < count {
            if j + 8 <= count, !ByteScan.needsEscape(ByteScan.load(p, at: j)) {
                j += 8
                continue
            }
            let b = p[j]
            j += 1
            if b >= 0x20, b != 0x22, b != 0x5C { continue }
            let escapeAt = j - 1
            if escapeAt > runStart { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: u[runStart..<escapeAt])) }
            runStart = j
            switch b {
            case 0x22: bytes.append(contentsOf: [0x5C, 0x22])  // \"
            case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])  // \\
            case 0x08: bytes.append(contentsOf: [0x5C, 0x62])  // \b
            case 0x0C: bytes.append(contentsOf: [0x5C, 0x66])  // \f
            case 0x0A: bytes.append(contentsOf: [0x5C, 0x6E])  // \n
            case 0x0D: bytes.append(contentsOf: [0x5C, 0x72])  // \r
            case 0x09: bytes.append(contentsOf: [0x5C, 0x74])  // \t
            default:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0xF)]])
            }
        }
        if runStart < count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: u[runStart...])) }
    }

    private mutating func appendInteger(_ value: Int64) {
        if value < 0 { bytes.append(0x2D) }
        var m = value.magnitude
        if m < 10 {
            bytes.append(0x30 &+ UInt8(truncatingIfNeeded: m))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var n = 20
            while m > 0 {
                n -= 1
                buffer[n] = 0x30 &+ UInt8(truncatingIfNeeded: m % 10)
                m /= 10
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[n..<20]))
        }
    }
}
