public import PushSealJSON
import PushSealSystem
public import PushSealCrypto
internal import CPushSealSIMD

/// The one writer of the plaintext layout (FORMAT.md §5): compact UTF-8 JSON, members in
/// ``NotificationMember`` order (the table's), absent ones and `kind` `display` omitted;
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

    /// Writes `notification`'s plaintext object (no padding), reading each member where it lies:
    /// the notification is borrowed, not copied (a copy retains and releases every member).
    /// - Throws: `FormatError` `.nonFiniteNumber` when `data` holds an infinite or NaN number.
    @inlinable public mutating func encode(_ notification: borrowing Notification) throws {
        // The scanned source is borrowed once for the text members (passing the array to each
        // retained and released it every time).
        // Safe: the source bytes are borrowed for the whole encode and only read (text spans).
        try notification.source.withUnsafeBytes { source in try encodeMembers(notification, source: source) }
    }

    /// The members of ``encode(_:)``; `source` is the notification's `source` bytes.
    @inlinable mutating func encodeMembers(_ n: borrowing Notification, source: UnsafeRawBufferPointer) throws {
        sink.append(UInt8(ascii: "{"))
        var first = true
        for m in NotificationMember.allCases {
            switch m {  // schema-switch: encoder
            case .title: if let t = n.titleText { member(",\"title\":", first: &first); text(t, in: source) }
            case .subtitle: if let t = n.subtitleText { member(",\"subtitle\":", first: &first); text(t, in: source) }
            case .body: if let t = n.bodyText { member(",\"body\":", first: &first); text(t, in: source) }
            case .media:
                if let m = n.media {
                    member(",\"media\":", first: &first)
                    raw("{\"url\":")
                    string(m.url)
                    if let t = m.type { raw(",\"type\":"); string(t) }
                    if let h = m.sha256Hex { raw(",\"sha256\":"); string(h) }
                    // Safe: the key's bytes are read inside the closure only (constant-time encoder).
                    if let k = m.key { raw(",\"key\":"); string(k.withUnsafeBytes { WireBase64.encodeSecret($0) }) }
                    sink.append(UInt8(ascii: "}"))
                }
            case .localizations:
                if !n.localizations.isEmpty {
                    member(",\"localizations\":", first: &first)
                    sink.append(UInt8(ascii: "{"))
                    for (i, l) in n.localizations.enumerated() {
                        if i > 0 { sink.append(UInt8(ascii: ",")) }
                        string(l.locale)
                        sink.append(UInt8(ascii: ":"))
                        sink.append(UInt8(ascii: "{"))
                        var firstText = true
                        if let v = l.content.title { member(",\"title\":", first: &firstText); string(v) }
                        if let v = l.content.subtitle { member(",\"subtitle\":", first: &firstText); string(v) }
                        if let v = l.content.body { member(",\"body\":", first: &firstText); string(v) }
                        sink.append(UInt8(ascii: "}"))
                    }
                    sink.append(UInt8(ascii: "}"))
                }
            case .data: if let d = n.data { member(",\"data\":", first: &first); try object(d) }
            case .aps: if let a = n.aps, case .object(let o) = a.jsonValue() { member(",\"aps\":", first: &first); try object(o) }
            case .iat: if let t = n.iat { member(",\"iat\":", first: &first); integer(t) }
            case .exp: if let t = n.exp { member(",\"exp\":", first: &first); integer(t) }
            case .id: if let t = n.idText { member(",\"id\":", first: &first); text(t, in: source) }
            case .kind:
                // `display`, the default, is not written: a display plaintext reads as before kinds.
                switch n.kind {
                case .display: break
                case .retract: member(",\"kind\":\"retract\"", first: &first)
                }
            case .ids:
                if !n.ids.isEmpty {
                    member(",\"ids\":", first: &first)
                    sink.append(UInt8(ascii: "["))
                    for (i, id) in n.ids.enumerated() {
                        if i > 0 { sink.append(UInt8(ascii: ",")) }
                        string(id)
                    }
                    sink.append(UInt8(ascii: "]"))
                }
            }
        }
        sink.append(UInt8(ascii: "}"))
    }

    /// Appends a member's key: `comma` is `,"<name>":`, written without its comma for the
    /// object's first member (`first`, then cleared). One copy per key.
    @inlinable @inline(__always) mutating func member(_ comma: StaticString, first: inout Bool) {
        let skip = first ? 1 : 0
        first = false
        // Safe: a static string's bytes live for the whole program; every key literal starts
        // with its comma, so skipping 0 or 1 byte stays inside it.
        sink.append(bytes: UnsafeRawBufferPointer(start: comma.utf8Start + skip, count: comma.utf8CodeUnitCount - skip))
    }

    /// Appends ASCII text known to need no escape (punctuation, a literal key).
    @inlinable @inline(__always) public mutating func raw(_ text: StaticString) {
        // Safe: a static string's bytes live for the whole program (utf8Start..<+count).
        sink.append(bytes: UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends `s`'s UTF-8 as it is, without quotes or escapes: for text whose own rules leave
    /// nothing to escape (key ids, algorithm names, header values: `A-Z a-z 0-9 _ -`).
    @inlinable public mutating func verbatim(_ s: String) {
        // Safe: the UTF-8 buffer is valid inside each closure, and the sink copies it.
        if s.utf8.withContiguousStorageIfAvailable({ sink.append(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            var s = s
            s.withUTF8 { sink.append(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    /// Appends `bytes` as they are (e.g. a payload's clear part, written before).
    @inlinable public mutating func verbatim(_ bytes: [UInt8]) {
        // Safe: the bytes are valid inside the closure, and the sink copies them.
        bytes.withUnsafeBytes { sink.append(bytes: $0) }
    }

    /// Appends `s` as a JSON string literal with quotes.
    @inlinable public mutating func string(_ s: String) {
        sink.append(0x22)
        // In place for a native string (no copy of it, so no retain and release). Safe: the
        // UTF-8 buffer is valid inside each closure, and appendEscaped does not keep it.
        if s.utf8.withContiguousStorageIfAvailable({ appendEscaped($0) }) == nil {
            var s = s
            s.withUTF8 { appendEscaped($0) }
        }
        sink.append(0x22)
    }

    /// Appends a notification's text member as a JSON string literal with quotes: a scanned
    /// span that is already minimally escaped is copied from `source` (the bytes of the
    /// notification's `source`) as it is (the bytes this encoder would write for its decoded
    /// string), anything else is escaped.
    @inlinable mutating func text(_ t: NotificationText, in source: UnsafeRawBufferPointer) {
        guard case .span(let start, let end, _, true) = t else {
            return string(t.string(in: source))
        }
        // A span lies inside its notification's source: the scanner makes spans only of the
        // bytes it read, and `source` is set with them and never changed alone (the stored
        // members are internal). One outside is a broken invariant, not an input: trap.
        precondition(start >= 0 && start <= end && end <= source.count, "a notification text span lies outside its source")
        sink.append(0x22)
        // Safe: `start..<end` is inside `source` (checked just above), which the caller
        // borrows for this call; a non-empty source has a base address.
        if let base = source.baseAddress { sink.append(bytes: UnsafeRawBufferPointer(start: base + start, count: end - start)) }
        sink.append(0x22)
    }

    /// Appends `s` as a JSON string literal with quotes.
    @inlinable public mutating func string(_ s: Substring) {
        sink.append(0x22)
        var s = s
        // Safe: the UTF-8 buffer is valid inside the closure, and appendEscaped does not keep it.
        s.withUTF8 { appendEscaped($0) }
        sink.append(0x22)
    }

    /// Appends `utf8` with the minimal escapes (its bytes valid for the call, not kept).
    @inlinable mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        var start = 0
        let n = utf8.count
        while true {
            let i = Self.firstEscapeIndex(utf8, from: start)
            // Safe: start <= i <= n (firstEscapeIndex returns at most n), so the slice is inside
            // `utf8`, which the caller keeps valid for this call.
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
                // Safe: both indices are 0...15 (a nibble), inside the 16-byte literal.
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
        // Safe: the C scan reads only p[i..<end] (its documented contract) and returns an index
        // in i...end.
        if n - i >= 32 { i = plainASCIIPrefixEnd(base, from: i, end: n) }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while i + 8 <= n {
            // Safe: i + 8 <= n, so the 8-byte load stays inside `utf8` (unaligned load allowed).
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

    /// Appends `value` in decimal (``DecimalText``).
    @inlinable public mutating func integer(_ value: Int64) {
        // Safe: the digits are valid inside the closure, and the sink copies them.
        DecimalText.withDigits(value) { sink.append(bytes: $0) }
    }

    /// Appends a finite `Double` in Swift's shortest round-trip form (`0.5`, `1.0`, `1e-07`).
    /// - Throws: `FormatError` `.nonFiniteNumber` for NaN or infinity, which JSON cannot express.
    @inlinable public mutating func number(_ value: Double) throws {
        guard value.isFinite else { throw FormatError(.nonFiniteNumber, "cannot write \(value) as JSON") }
        var text = value.description
        // Safe: the UTF-8 buffer is valid inside the closure, and the sink copies it.
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

extension PlaintextEncoder where Sink == BoundedByteSink {
    /// An array of exactly `byteCount` bytes, written by `body` through an encoder over the
    /// array's own new storage (no zero fill first, no growth): the sender's APNs payload.
    /// - Parameters:
    ///   - byteCount: the bytes `body` writes (at least 1), counted by writing the same bytes
    ///     (into a ``ByteCounter``); writing more or fewer breaks that invariant and traps.
    ///   - body: writes the bytes; the encoder must not be used after it returns.
    /// - Returns: the bytes written.
    /// - Throws: what `body` throws (the array is then dropped).
    public static func bytes(exactly byteCount: Int, _ body: (inout Self) throws -> Void) rethrows -> [UInt8] {
        precondition(byteCount > 0, "an exactly sized array needs at least one byte")
        return try [UInt8](unsafeUninitializedCapacity: byteCount) { buffer, initialized in
            // Safe: `buffer` is the array's storage for byteCount bytes, alive until this closure
            // returns; the sink writes only inside it (every append checks the capacity), and
            // `initialized` is set to exactly the bytes written (UInt8 needs no deinitialising
            // when `body` throws and it stays 0).
            guard let sink = BoundedByteSink(UnsafeMutableRawBufferPointer(buffer)) else {
                preconditionFailure("a non-empty array buffer has a base address")
            }
            var e = PlaintextEncoder(into: sink)
            try body(&e)
            precondition(!e.sink.overflowed && e.sink.count == byteCount, "the bytes written differ from the count measured by writing them")
            initialized = e.sink.count
        }
    }
}

/// `CPushSealSIMD`'s JSON string scan for ``PlaintextEncoder``: an index `j >= i` such that
/// `p[i..<j]` is ASCII with no byte to escape (`j` is at a flagged byte, a non-ASCII byte, or
/// fewer than 16 bytes before `end`). Not inlinable: the C module is this module's own import.
@usableFromInline func plainASCIIPrefixEnd(_ p: UnsafePointer<UInt8>, from i: Int, end: Int) -> Int {
    pushseal_json_skip_plain(p, i, end)
}
