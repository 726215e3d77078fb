public import PushSealJSON
import PushSealSystem
public import PushSealCrypto
internal import CPushSealSIMD

/// The one writer of the plaintext layout (FORMAT.md §5): compact UTF-8 JSON, members in the
/// order title, subtitle, body, media, localizations, data, aps, iat, exp, id, absent ones omitted;
/// minimal escapes (`"`, `\`, control characters below U+0020 only; never `\/`; every other
/// scalar as raw UTF-8); integers in decimal; doubles in Swift's shortest round-trip form.
///
/// Generic over its ``ByteSink``: `[UInt8]` for ``Notification/encoded(padding:)``, a
/// ``BoundedByteSink`` for the sender's stack buffer. The sender's clear `aps` part is written
/// with the same primitives (``string(_:)``, ``integer(_:)``, ``number(_:)``).
public struct PlaintextEncoder<Sink: ByteSink> {
    /// Where the bytes go.
    public var sink: Sink

    // Every method is @inlinable so a client module gets a version specialized for its sink
    // (an unspecialized generic call per byte costs more than the AES-GCM seal itself).

    /// An encoder writing into `sink`.
    @inlinable public init(into sink: Sink) {
        self.sink = sink
    }

    /// Writes `notification`'s plaintext object (no padding).
    /// - Throws: `FormatError` `.nonFiniteNumber` when `data` holds an infinite or NaN number.
    @inlinable public mutating func encode(_ notification: Notification) throws {
        try withUnsafePointer(to: notification) { try encode(pointer: $0) }
    }

    /// ``encode(_:)`` of the notification at `p`, read member by member where it lies: a hot
    /// caller that holds its notification in a closure passes it this way, as passing the value
    /// there copies it (every member retained and released again).
    /// - Throws: `FormatError` `.nonFiniteNumber` when `data` holds an infinite or NaN number.
    @inlinable public mutating func encode(pointer p: UnsafePointer<Notification>) throws {
        sink.append(UInt8(ascii: "{"))
        var first = true
        func key(_ k: StaticString, _ e: inout PlaintextEncoder) {
            if !first { e.sink.append(UInt8(ascii: ",")) }
            first = false
            e.sink.append(0x22)
            e.raw(k)
            e.raw("\":")
        }
        if let t = p.pointee.titleText { key("title", &self); text(t, in: p.pointee.source) }
        if let t = p.pointee.subtitleText { key("subtitle", &self); text(t, in: p.pointee.source) }
        if let t = p.pointee.bodyText { key("body", &self); text(t, in: p.pointee.source) }
        if let m = p.pointee.media {
            key("media", &self)
            raw("{\"url\":")
            string(m.url)
            if let t = m.type { raw(",\"type\":"); string(t) }
            if let h = m.sha256Hex { raw(",\"sha256\":"); string(h) }
            if let k = m.key { raw(",\"key\":"); string(k.withUnsafeBytes { WireBase64.encodeSecret($0) }) }
            sink.append(UInt8(ascii: "}"))
        }
        if !p.pointee.localizations.isEmpty {
            key("localizations", &self)
            sink.append(UInt8(ascii: "{"))
            for (i, l) in p.pointee.localizations.enumerated() {
                if i > 0 { sink.append(UInt8(ascii: ",")) }
                string(l.locale)
                sink.append(UInt8(ascii: ":"))
                sink.append(UInt8(ascii: "{"))
                var firstText = true
                func text(_ name: StaticString, _ value: String?, _ e: inout PlaintextEncoder) {
                    guard let value else { return }
                    if !firstText { e.sink.append(UInt8(ascii: ",")) }
                    firstText = false
                    e.sink.append(0x22)
                    e.raw(name)
                    e.raw("\":")
                    e.string(value)
                }
                text("title", l.content.title, &self)
                text("subtitle", l.content.subtitle, &self)
                text("body", l.content.body, &self)
                sink.append(UInt8(ascii: "}"))
            }
            sink.append(UInt8(ascii: "}"))
        }
        if let d = p.pointee.data { key("data", &self); try object(d) }
        if let a = p.pointee.aps, case .object(let o) = a.jsonValue() { key("aps", &self); try object(o) }
        if let t = p.pointee.iat { key("iat", &self); integer(t) }
        if let t = p.pointee.exp { key("exp", &self); integer(t) }
        if let t = p.pointee.idText { key("id", &self); text(t, in: p.pointee.source) }
        sink.append(UInt8(ascii: "}"))
    }

    /// Appends ASCII text known to need no escape (punctuation, a literal key).
    @inlinable @inline(__always) public mutating func raw(_ text: StaticString) {
        sink.append(bytes: UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends `s` as a JSON string literal with quotes.
    @inlinable public mutating func string(_ s: String) {
        sink.append(0x22)
        // In place for a native string (no copy of it, so no retain and release).
        if s.utf8.withContiguousStorageIfAvailable({ appendEscaped($0) }) == nil {
            var s = s
            s.withUTF8 { appendEscaped($0) }
        }
        sink.append(0x22)
    }

    /// Appends a notification's text member as a JSON string literal with quotes: a scanned
    /// span that is already minimally escaped is copied from `source` as it is (the bytes this
    /// encoder would write for its decoded string), anything else is escaped.
    @inlinable mutating func text(_ t: NotificationText, in source: [UInt8]) {
        guard case .span(let start, let end, _, true) = t else { return string(t.string(in: source)) }
        sink.append(0x22)
        source.withUnsafeBytes { b in
            if start >= 0, start <= end, end <= b.count, let base = b.baseAddress {
                sink.append(bytes: UnsafeRawBufferPointer(start: base + start, count: end - start))
            }
        }
        sink.append(0x22)
    }

    /// Appends `s` as a JSON string literal with quotes.
    @inlinable public mutating func string(_ s: Substring) {
        sink.append(0x22)
        var s = s
        s.withUTF8 { appendEscaped($0) }
        sink.append(0x22)
    }

    @inlinable mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        var start = 0
        let n = utf8.count
        while true {
            let i = Self.firstEscapeIndex(utf8, from: start)
            if start < i { sink.append(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: utf8[start..<i]))) }
            if i >= n { return }
            let c = utf8[i]
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
            start = i + 1
        }
    }

    /// The index of the first byte at or after `from` that needs an escape (a control
    /// character, `"` or `\`), or `utf8.count`. A long run goes through `CPushSealSIMD`'s
    /// scan first (it stops at the first non-ASCII byte too); then eight bytes at a time (SWAR).
    @inlinable @inline(__always)
    static func firstEscapeIndex(_ utf8: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        let n = utf8.count
        var i = from
        guard let base = utf8.baseAddress else { return n }
        if n - i >= 32 { i = plainASCIIPrefixEnd(base, from: i, end: n) }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while i + 8 <= n {
            let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            // A byte b has its high bit set in `flags` when b < 0x20, b == 0x22 or b == 0x5C
            // (exact for bytes < 0x80; bytes >= 0x80 never match because of `& ~w`).
            let control = w &- ones &* 0x20
            let quote = (w ^ (ones &* 0x22)) &- ones
            let backslash = (w ^ (ones &* 0x5C)) &- ones
            let quoteMask = quote & ~(w ^ (ones &* 0x22))
            let backslashMask = backslash & ~(w ^ (ones &* 0x5C))
            let flags = (control | quoteMask | backslashMask) & ~w & highs
            if flags != 0 {
                return i + (flags.littleEndian.trailingZeroBitCount >> 3)
            }
            i += 8
        }
        while i < n {
            let c = utf8[i]
            if c < 0x20 || c == 0x22 || c == 0x5C { return i }
            i += 1
        }
        return n
    }

    /// Appends `value` in decimal.
    @inlinable public mutating func integer(_ value: Int64) {
        withUnsafeTemporaryAllocation(byteCount: 24, alignment: 8) { buffer in
            guard let base = buffer.baseAddress else { return }
            let n = Self.writeDecimal(value, to: base)
            sink.append(bytes: UnsafeRawBufferPointer(start: base, count: n))
        }
    }

    /// "00" … "99": two decimal digits for every value below 100.
    @usableFromInline static var digitPairs: StaticString {
        """
        0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
        5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899
        """
    }

    /// Writes `value` in decimal at `out` (room for 20 bytes) and returns the byte count.
    /// Two digits per division, right to left into a 20-byte stack buffer, then one copy.
    @inlinable public static func writeDecimal(_ value: Int64, to out: UnsafeMutableRawPointer) -> Int {
        var magnitude = value.magnitude
        var sign = 0
        if value < 0 { out.storeBytes(of: UInt8(ascii: "-"), as: UInt8.self); sign = 1 }
        return withUnsafeTemporaryAllocation(byteCount: 20, alignment: 8) { buffer -> Int in
            guard let b = buffer.baseAddress else { return 0 }
            let pairs = UnsafeRawPointer(digitPairs.utf8Start)
            var at = 20
            while magnitude >= 100 {
                let r = Int(magnitude % 100)
                magnitude /= 100
                at -= 2
                b.storeBytes(of: pairs.loadUnaligned(fromByteOffset: 2 * r, as: UInt16.self), toByteOffset: at, as: UInt16.self)
            }
            if magnitude >= 10 {
                at -= 2
                b.storeBytes(of: pairs.loadUnaligned(fromByteOffset: 2 * Int(magnitude), as: UInt16.self), toByteOffset: at, as: UInt16.self)
            } else {
                at -= 1
                b.storeBytes(of: UInt8(truncatingIfNeeded: magnitude) &+ 0x30, toByteOffset: at, as: UInt8.self)
            }
            (out + sign).copyMemory(from: b + at, byteCount: 20 - at)
            return sign + 20 - at
        }
    }

    /// Appends a finite `Double` in Swift's shortest round-trip form (`0.5`, `1.0`, `1e-07`).
    /// - Throws: `FormatError` `.nonFiniteNumber` for NaN or infinity, which JSON cannot express.
    @inlinable public mutating func number(_ value: Double) throws {
        guard value.isFinite else { throw FormatError(.nonFiniteNumber, "cannot write \(value) as JSON") }
        var text = value.description
        text.withUTF8 { sink.append(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Appends any JSON value (objects in member order).
    /// - Throws: `FormatError` `.nonFiniteNumber`.
    @inlinable public mutating func value(_ value: JSONValue) throws {
        switch value {
        case .null: raw("null")
        case .bool(let b): if b { raw("true") } else { raw("false") }
        case .integer(let i): integer(i)
        case .number(let d): try number(d)
        case .string(let s): string(s)
        case .array(let a):
            sink.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { sink.append(UInt8(ascii: ",")) }
                try self.value(v)
            }
            sink.append(UInt8(ascii: "]"))
        case .object(let o):
            try object(o)
        }
    }

    /// Appends an object with its members in order.
    /// - Throws: `FormatError` `.nonFiniteNumber`.
    @inlinable public mutating func object(_ o: JSONObject) throws {
        sink.append(UInt8(ascii: "{"))
        var first = true
        for m in o {
            if !first { sink.append(UInt8(ascii: ",")) }
            first = false
            string(m.key)
            sink.append(UInt8(ascii: ":"))
            try value(m.value)
        }
        sink.append(UInt8(ascii: "}"))
    }
}
extension PlaintextEncoder: Sendable where Sink: Sendable {}

/// `CPushSealSIMD`'s JSON string scan for ``PlaintextEncoder``: an index `j >= i` such that
/// `p[i..<j]` is ASCII with no byte to escape (`j` is at a flagged byte, a non-ASCII byte, or
/// fewer than 16 bytes before `end`). Not inlinable: the C module is this module's own import.
@usableFromInline func plainASCIIPrefixEnd(_ p: UnsafePointer<UInt8>, from i: Int, end: Int) -> Int {
    pushseal_json_skip_plain(p, i, end)
}
