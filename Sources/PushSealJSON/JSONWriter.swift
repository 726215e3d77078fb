import PushSealSystem

/// A compact JSON writer (RFC 8259) that appends UTF-8 to a ``ByteSink``: a growable `[UInt8]`
/// (``JSONWriter``), a ``BoundedByteSink`` over a stack buffer, push-send's pending output, or a
/// ``ByteCounter`` that only counts. The one JSON writer of the package, and its one escaper.
///
/// Output has no whitespace outside strings and no needless escapes: inside strings only `"`,
/// `\` and the control characters U+0000–U+001F are escaped (`\b \f \n \r \t` short forms,
/// `\u00XX` for the rest, lower-case hex); `/`, U+2028, U+2029 and every other character are
/// written as raw UTF-8. Integers are written in decimal (`DecimalText`); doubles in their
/// shortest round-trip form (Swift's `description`, always with a `.` or an exponent so they
/// read back as numbers, not integers). Infinity and NaN are refused (`.nonFiniteNumber`).
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
/// missing `end…`, produce invalid JSON): the caller writes a fixed shape. Every method is
/// `@inlinable`, so a client module gets a writer specialized for its sink.
public struct JSONSinkWriter<Sink: ByteSink> {
    /// Where the bytes go.
    public var sink: Sink
    /// Whether the next value or key needs a `,` before it.
    @usableFromInline var needsComma = false

    /// A writer appending to `sink`, at the start of a value (no comma before the first).
    @inlinable public init(into sink: Sink) {
        self.sink = sink
    }

    // MARK: Structure

    /// Writes `{` (preceded by `,` when needed).
    @inlinable public mutating func beginObject() {
        comma()
        sink.append(0x7B)
        needsComma = false
    }

    /// Writes `}`.
    @inlinable public mutating func endObject() {
        sink.append(0x7D)
        needsComma = true
    }

    /// Writes `[` (preceded by `,` when needed).
    @inlinable public mutating func beginArray() {
        comma()
        sink.append(0x5B)
        needsComma = false
    }

    /// Writes `]`.
    @inlinable public mutating func endArray() {
        sink.append(0x5D)
        needsComma = true
    }

    /// Writes an object member's key and the `:` (preceded by `,` when needed); write its
    /// value next.
    @inlinable public mutating func key(_ key: String) {
        comma()
        quoted(key)
        sink.append(0x3A)
        needsComma = false
    }

    /// ``key(_:)`` for a key whose bytes are known to need no escape (checked by whoever made
    /// it: an envelope's header field name), copied as it is.
    @inlinable public mutating func key(plain key: String) {
        comma()
        plainQuoted(key)
        sink.append(0x3A)
        needsComma = false
    }

    /// ``key(_:)`` for a key fixed in the program, copied as it is: for keys that need no
    /// escaping (no `"`, `\\` or control character — member names such as `deviceToken`).
    @inlinable @inline(__always) public mutating func key(static key: StaticString) {
        comma()
        sink.append(0x22)
        raw(key)
        sink.append(0x22)
        sink.append(0x3A)
        needsComma = false
    }

    // MARK: Values

    /// Writes a string value, escaped as described on ``JSONSinkWriter``.
    @inlinable public mutating func string(_ value: String) {
        comma()
        quoted(value)
        needsComma = true
    }

    /// Writes a string value, escaped as described on ``JSONSinkWriter``.
    @inlinable public mutating func string(_ value: Substring) {
        comma()
        var v = value
        v.withUTF8 { quoted(utf8: $0) }
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
        quoted(utf8: value.assumingMemoryBound(to: UInt8.self))
        needsComma = true
    }

    /// Writes a string value given as UTF-8 bytes (see ``string(utf8:)-(UnsafeRawBufferPointer)``).
    /// - Throws: ``JSONError`` `.invalidUTF8`.
    public mutating func string(utf8 value: [UInt8]) throws {
        try value.withUnsafeBytes { try string(utf8: $0) }
    }

    /// Writes a string value known to need no escape (checked by whoever made it: a key id, an
    /// algorithm name), copied as it is.
    @inlinable public mutating func string(plain value: String) {
        comma()
        plainQuoted(value)
        needsComma = true
    }

    /// Writes a string value whose UTF-8 bytes are known to need no escape (checked by whoever
    /// made them: base64 text, hex digits, a registry's key id), copied as they are.
    @inlinable @inline(__always) public mutating func string(plain value: UnsafeRawBufferPointer) {
        comma()
        sink.append(0x22)
        sink.append(bytes: value)
        sink.append(0x22)
        needsComma = true
    }

    /// Writes a string value whose UTF-8 bytes are known to need no escape (see
    /// ``string(plain:)-(UnsafeRawBufferPointer)``), given as a span (a text kept as it was
    /// scanned), copied as they are.
    @inlinable @inline(__always) public mutating func string(plain value: RawSpan) {
        // Safe: the span's memory is valid for the call and only copied from.
        value.withUnsafeBytes { string(plain: $0) }
    }

    /// Writes an integer in decimal.
    @inlinable public mutating func integer(_ value: Int64) {
        comma()
        DecimalText.withDigits(value) { sink.append(bytes: $0) }
        needsComma = true
    }

    /// Writes an integer in decimal.
    @inlinable public mutating func integer(_ value: Int) {
        integer(Int64(value))
    }

    /// Writes an integer in decimal as a JSON string (`"10"`): for values a protocol gives as
    /// text, such as APNs header values.
    @inlinable public mutating func string(decimal value: Int64) {
        comma()
        sink.append(0x22)
        DecimalText.withDigits(value) { sink.append(bytes: $0) }
        sink.append(0x22)
        needsComma = true
    }

    /// Writes `units / 10^fractionDigits` as a decimal number with exactly `fractionDigits`
    /// digits after the point (`decimal(12345, fractionDigits: 3)` writes `12.345`,
    /// `decimal(-5, fractionDigits: 2)` writes `-0.05`): fixed-point values such as
    /// milliseconds kept in microseconds, without a `Double`. `fractionDigits` is clamped to
    /// 0…18; 0 writes an integer.
    @inlinable public mutating func decimal(_ units: Int64, fractionDigits: Int) {
        let digits = max(0, min(18, fractionDigits))
        guard digits > 0 else { return integer(units) }
        comma()
        if units < 0 { sink.append(0x2D) }
        var scale: UInt64 = 1
        for _ in 0..<digits { scale *= 10 }
        let m = units.magnitude
        DecimalText.withDigits(Int64(m / scale)) { sink.append(bytes: $0) }
        sink.append(0x2E)
        // scale + fraction has one more digit than the fraction's zero-padded form: a leading 1.
        DecimalText.withDigits(Int64(scale + m % scale)) { sink.append(bytes: UnsafeRawBufferPointer(rebasing: $0.dropFirst())) }
        needsComma = true
    }

    /// Writes a double in its shortest round-trip form (e.g. `0.1`, `1.0`, `1e+100`).
    /// Nothing is written when it is infinite or NaN.
    /// - Throws: ``JSONError`` `.nonFiniteNumber` for infinity and NaN.
    @inlinable public mutating func number(_ value: Double) throws {
        guard value.isFinite else {
            throw JSONError(.nonFiniteNumber, "cannot write \(value) as JSON")
        }
        comma()
        var text = value.description
        text.withUTF8 { sink.append(bytes: UnsafeRawBufferPointer($0)) }
        needsComma = true
    }

    /// Writes `true` or `false`.
    @inlinable public mutating func bool(_ value: Bool) {
        comma()
        if value { raw("true") } else { raw("false") }
        needsComma = true
    }

    /// Writes `null`.
    @inlinable public mutating func null() {
        comma()
        raw("null")
        needsComma = true
    }

    /// Writes a value already serialized as JSON (a sealed payload inside a batch line), copied
    /// as it is; the caller vouches that it is one well-formed JSON value.
    @inlinable public mutating func value(json bytes: UnsafeRawBufferPointer) {
        comma()
        sink.append(bytes: bytes)
        needsComma = true
    }

    /// ``value(json:)-(UnsafeRawBufferPointer)`` for bytes in an array.
    @inlinable public mutating func value(json bytes: [UInt8]) {
        bytes.withUnsafeBytes { value(json: $0) }
    }

    /// Writes a whole value (objects keep their member order).
    /// - Throws: ``JSONError`` `.nonFiniteNumber` when the tree holds an infinite or NaN
    ///   number; the sink then holds a partial document.
    @inlinable public mutating func write(_ value: JSONValue) throws {
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
            try write(object)
        }
    }

    /// Writes an object with its members in order.
    /// - Throws: ``JSONError`` `.nonFiniteNumber` (see ``write(_:)-(JSONValue)``).
    @inlinable public mutating func write(_ object: JSONObject) throws {
        beginObject()
        for m in object {
            key(m.key)
            try write(m.value)
        }
        endObject()
    }

    // MARK: Layout by hand

    /// Appends ASCII text fixed in the program as it is — punctuation or a run of literal
    /// members (`,"title":`) — with no comma logic: for a writer that states a fixed layout
    /// (the plaintext encoder). Follow with ``continueAfterValue()`` when a member may follow.
    @inlinable @inline(__always) public mutating func raw(_ text: StaticString) {
        sink.append(bytes: UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Marks that a value was just written by hand (``raw(_:)``): the next key or value gets
    /// its comma.
    @inlinable public mutating func continueAfterValue() {
        needsComma = true
    }

    /// Ends a line of JSON Lines: writes `\n`; the next value starts a new document (no comma).
    @inlinable public mutating func endLine() {
        sink.append(0x0A)
        needsComma = false
    }

    // MARK: The escaper

    @inlinable @inline(__always) mutating func comma() {
        if needsComma { sink.append(0x2C) }
    }

    /// `"` `s` escaped `"` (no comma).
    @inlinable public mutating func quoted(_ s: String) {
        // In place for a native string (no copy of it, so no retain and release).
        if s.utf8.withContiguousStorageIfAvailable({ quoted(utf8: $0) }) == nil {
            var copy = s
            copy.withUTF8 { quoted(utf8: $0) }
        }
    }

    /// `"` `s` `"`, its bytes copied without an escape scan (the caller vouches for them).
    @inlinable mutating func plainQuoted(_ s: String) {
        sink.append(0x22)
        if s.utf8.withContiguousStorageIfAvailable({ sink.append(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            var copy = s
            copy.withUTF8 { sink.append(bytes: UnsafeRawBufferPointer($0)) }
        }
        sink.append(0x22)
    }

    /// `"` the UTF-8 bytes escaped `"` (no comma): the one JSON string escaper. Plain runs are
    /// copied whole, found by ``ByteScan/firstEscapeIndex(_:from:end:)``.
    @inlinable public mutating func quoted(utf8 u: UnsafeBufferPointer<UInt8>) {
        sink.append(0x22)
        if let p = u.baseAddress {
            let n = u.count
            var start = 0
            while true {
                let i = ByteScan.firstEscapeIndex(p, from: start, end: n)
                if start < i { sink.append(bytes: UnsafeRawBufferPointer(start: p + start, count: i - start)) }
                if i >= n { break }
                escape(p[i])
                start = i + 1
            }
        }
        sink.append(0x22)
    }

    /// The escape of one byte that needs it (below 0x20, `"` or `\`).
    @inlinable mutating func escape(_ c: UInt8) {
        sink.append(0x5C)
        switch c {
        case 0x22: sink.append(0x22)
        case 0x5C: sink.append(0x5C)
        case 0x0A: sink.append(UInt8(ascii: "n"))
        case 0x0D: sink.append(UInt8(ascii: "r"))
        case 0x09: sink.append(UInt8(ascii: "t"))
        case 0x08: sink.append(UInt8(ascii: "b"))
        case 0x0C: sink.append(UInt8(ascii: "f"))
        default:
            raw("u00")
            let hex: StaticString = "0123456789abcdef"
            sink.append(hex.utf8Start[Int(c >> 4)])
            sink.append(hex.utf8Start[Int(c & 0xF)])
        }
    }
}

extension JSONSinkWriter: Sendable where Sink: Sendable {}

extension JSONSinkWriter where Sink == BoundedByteSink {
    /// The bytes `body` writes, at most `capacity`, written straight into the returned array's
    /// storage (no growth, no zero fill, no copy): for a document whose size is known first
    /// (an APNs payload, counted by writing it into a ``ByteCounter``). Past `capacity` the
    /// sink stops (``BoundedByteSink/overflowed``) and the array holds what fitted.
    @inlinable public static func bytes(capacity: Int, _ body: (inout JSONSinkWriter<BoundedByteSink>) throws -> Void) rethrows -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: max(capacity, 1)) { buffer, initialized in
            guard let sink = BoundedByteSink(UnsafeMutableRawBufferPointer(buffer)) else { return }
            var w = JSONSinkWriter(into: sink)
            try body(&w)
            initialized = w.sink.count
        }
    }
}

/// The JSON writer over a growable byte array: the common case (payloads, `--json`, logs).
public typealias JSONWriter = JSONSinkWriter<[UInt8]>

extension JSONSinkWriter where Sink == [UInt8] {
    /// An empty writer.
    /// - Parameter reservingCapacity: bytes to reserve up front (e.g. 4096 for an APNs payload).
    @inlinable public init(reservingCapacity: Int = 0) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(reservingCapacity)
        self.init(into: bytes)
    }

    /// The UTF-8 bytes written so far.
    @inlinable public var bytes: [UInt8] {
        get { sink }
        _modify { yield &sink }
    }

    /// Number of bytes written so far.
    @inlinable public var byteCount: Int { sink.count }

    /// Empties the buffer (keeping its capacity) to write another document.
    @inlinable public mutating func reset() {
        sink.removeAll(keepingCapacity: true)
        needsComma = false
    }

    // MARK: One-shot helpers

    /// The compact UTF-8 serialization of `value`.
    /// - Throws: ``JSONError`` `.nonFiniteNumber` when it holds an infinite or NaN number.
    public static func serialize(_ value: JSONValue) throws -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 256)
        try writer.write(value)
        return writer.bytes
    }

    /// The serialization of `value` in `style`, as UTF-8.
    /// - Throws: ``JSONError`` `.nonFiniteNumber` when it holds an infinite or NaN number.
    public static func serialize(_ value: JSONValue, style: JSONWriterStyle) throws -> [UInt8] {
        guard style == .prettySortedKeys else { return try serialize(value) }
        var writer = JSONWriter(reservingCapacity: 256)
        try writer.writePretty(value, indent: 0)
        return writer.bytes
    }

    private mutating func writePretty(_ value: JSONValue, indent: Int) throws {
        func newline(_ depth: Int) {
            sink.append(0x0A)
            sink.append(contentsOf: repeatElement(0x20, count: depth * 2))
        }
        switch value {
        case .object(let object) where object.count > 0:
            sink.append(0x7B)
            for (i, m) in object.members.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { sink.append(0x2C) }
                newline(indent + 1)
                quoted(m.key)
                raw(" : ")
                try writePretty(m.value, indent: indent + 1)
            }
            newline(indent)
            sink.append(0x7D)
        case .array(let elements) where !elements.isEmpty:
            sink.append(0x5B)
            for (i, e) in elements.enumerated() {
                if i > 0 { sink.append(0x2C) }
                newline(indent + 1)
                try writePretty(e, indent: indent + 1)
            }
            newline(indent)
            sink.append(0x5D)
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
}

/// How ``JSONSinkWriter/serialize(_:style:)`` lays a document out.
public enum JSONWriterStyle: Sendable, Hashable {
    /// No whitespace outside strings, members in their order (payloads, `--json`, logs).
    case compact
    /// For files people read (`keychain.meta`): members sorted by key (Swift string order),
    /// two-space indent, one member or element a line, `"key" : value` (the layout of
    /// Foundation's `.prettyPrinted, .sortedKeys`); empty objects and arrays as `{}`, `[]`.
    /// Strings are escaped as in compact output.
    case prettySortedKeys
}
