#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PushSealFormat

// The wire format v1 pieces the sender needs: the seal (and its AAD), key ids and Padmé lengths
// come from PushSealFormat's `WireFormat` / `Padme`; the plaintext layout is written here, once, by
// `writePlaintext` for both the tree path (`OutgoingNotification`) and the scan path (text copied
// straight from the input). The interop tests open it with the Python reference.
enum Wire {
    /// Padmé length (Nikitin et al., PoPETs 2019, Algorithm 1): 100→104, 1000→1024, 2049→2176.
    static func padmeLength(_ length: Int) -> Int { Padme.paddedLength(length) }

    /// A text member to write: a `String`, or the content of a scanned input string that is
    /// already minimally escaped (copied as it is; valid only while the input is).
    enum Text {
        case string(String)
        case raw(UnsafeRawBufferPointer)

        var isEmpty: Bool {
            switch self {
            case .string(let s): s.isEmpty
            case .raw(let r): r.isEmpty
            }
        }

        func write<W: PlaintextSink>(to w: inout W) {
            switch self {
            case .string(let s): w.string(s)
            case .raw(let r):
                w.byte(0x22)
                w.raw(bytes: r)
                w.byte(0x22)
            }
        }
    }

    /// The members of a plaintext, ready to write.
    struct Fields {
        var title: Text?
        var subtitle: Text?
        var body: Text?
        var media: MediaDescriptor?
        var localizations: JSONObject?
        var data: JSONObject?
        var iat: Int64?
        var exp: Int64?
        var id: Text?

        /// `true` when title, subtitle or body is non-empty.
        var hasVisibleText: Bool {
            !(title?.isEmpty ?? true) || !(subtitle?.isEmpty ?? true) || !(body?.isEmpty ?? true)
        }
    }

    /// Writes the plaintext object, compact, members in the order title, subtitle, body,
    /// media, localizations, data, iat, exp, id (the order of `Notification.encoded`).
    static func writePlaintext<W: PlaintextSink>(_ f: Fields, to w: inout W) throws {
        w.byte(UInt8(ascii: "{"))
        var first = true
        func key(_ k: StaticString, _ w: inout W) {
            if !first { w.byte(UInt8(ascii: ",")) }
            first = false
            w.byte(0x22)
            w.raw(k)
            w.raw("\":")
        }
        if let t = f.title { key("title", &w); t.write(to: &w) }
        if let t = f.subtitle { key("subtitle", &w); t.write(to: &w) }
        if let b = f.body { key("body", &w); b.write(to: &w) }
        if let m = f.media, case .object(let o) = m.jsonValue() { key("media", &w); try w.object(o) }
        if let l = f.localizations { key("localizations", &w); try w.object(l) }
        if let d = f.data { key("data", &w); try w.object(d) }
        if let i = f.iat { key("iat", &w); w.integer(i) }
        if let e = f.exp { key("exp", &w); w.integer(e) }
        if let i = f.id { key("id", &w); i.write(to: &w) }
        w.byte(UInt8(ascii: "}"))
    }

    /// Writes `n`'s plaintext; `body` overrides the notification's body (the fit ladder).
    static func writePlaintext(_ n: OutgoingNotification, body: String?, includeMedia: Bool, to w: inout PayloadWriter) throws {
        try writePlaintext(n.fields(body: body, includeMedia: includeMedia), to: &w)
    }
}

/// Where ``Wire/writePlaintext(_:to:)`` writes: a growing ``PayloadWriter``, or a
/// ``BoundedWriter`` over a fixed buffer.
protocol PlaintextSink {
    mutating func byte(_ b: UInt8)
    mutating func raw(_ text: StaticString)
    mutating func raw(bytes: UnsafeRawBufferPointer)
    mutating func string(_ s: String)
    mutating func integer(_ value: Int64)
    mutating func object(_ o: JSONObject) throws
}

extension PayloadWriter: PlaintextSink {}

/// Writes into a fixed buffer without allocating; past its capacity it only sets
/// ``overflowed`` (the caller then writes again with a ``PayloadWriter``). Strings and objects
/// are escaped by ``PayloadWriter`` (one escaper), then copied.
struct BoundedWriter: PlaintextSink {
    let base: UnsafeMutableRawPointer
    let capacity: Int
    /// Bytes written.
    private(set) var count = 0
    /// `true` once a write did not fit; the contents are then incomplete.
    private(set) var overflowed = false

    /// A writer over `buffer`; `nil` for an empty buffer.
    init?(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let b = buffer.baseAddress else { return nil }
        base = b
        capacity = buffer.count
    }

    /// The bytes written so far.
    var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    @inline(__always) mutating func put(_ p: UnsafeRawPointer?, _ n: Int) {
        guard count + n <= capacity else { overflowed = true; return }
        if let p, n > 0 { (base + count).copyMemory(from: p, byteCount: n) }
        count += n
    }

    mutating func byte(_ b: UInt8) {
        guard count < capacity else { overflowed = true; return }
        base.storeBytes(of: b, toByteOffset: count, as: UInt8.self)
        count += 1
    }
    mutating func raw(_ text: StaticString) { put(text.utf8Start, text.utf8CodeUnitCount) }
    mutating func raw(bytes: UnsafeRawBufferPointer) { put(bytes.baseAddress, bytes.count) }
    mutating func string(_ s: String) {
        var w = PayloadWriter(capacity: s.utf8.count + 16)
        w.string(s)
        w.bytes.withUnsafeBytes { put($0.baseAddress, $0.count) }
    }
    mutating func integer(_ value: Int64) {
        guard count + 20 <= capacity else { overflowed = true; return }
        count += PayloadWriter.writeDecimal(value, to: base + count)
    }
    mutating func object(_ o: JSONObject) throws {
        var w = PayloadWriter(capacity: 256)
        try w.object(o)
        w.bytes.withUnsafeBytes { put($0.baseAddress, $0.count) }
    }
    /// Appends `n` spaces (Padmé padding).
    mutating func spaces(_ n: Int) {
        guard count + n <= capacity else { overflowed = true; return }
        (base + count).initializeMemory(as: UInt8.self, repeating: 0x20, count: n)
        count += n
    }
}

extension OutgoingNotification {
    /// The plaintext members of this notification (`body` as given, media when `includeMedia`).
    func fields(body: String?, includeMedia: Bool) -> Wire.Fields {
        Wire.Fields(title: title.map(Wire.Text.string), subtitle: subtitle.map(Wire.Text.string), body: body.map(Wire.Text.string),
                    media: includeMedia ? media : nil, localizations: localizations, data: data, iat: iat, exp: exp,
                    id: id.map(Wire.Text.string))
    }
}

/// The scan path: reads a notification object member by member with `JSONReader.Scanner` and
/// keeps its text members as spans of the input, so a well-formed notification is written to
/// the plaintext without building a tree or its `String`s. It accepts exactly what
/// `OutgoingNotification(json:)` accepts, or gives up (`nil`) on anything else — wrong types,
/// unknown or duplicate members, escaped keys — and the caller takes the tree path, which gives
/// the same result or the precise error. Giving up has no side effect.
struct ScannedNotification {
    var fields = Wire.Fields()
    var ttlSeconds: Int64?

    /// The member number of the known member named by the UTF-8 bytes `k` (title 0, subtitle 1,
    /// body 2, media 3, localizations 4, data 5, iat 6, exp 7, ttl 8, id 9), or `nil`.
    /// One length switch and at most three byte comparisons.
    static func member(_ k: UnsafeRawBufferPointer) -> Int? {
        func named(_ name: StaticString) -> Bool {
            guard let b = k.baseAddress else { return false }
            return memcmp(b, name.utf8Start, name.utf8CodeUnitCount) == 0
        }
        switch k.count {
        case 2: return named("id") ? 9 : nil
        case 3: return named("iat") ? 6 : named("exp") ? 7 : named("ttl") ? 8 : nil
        case 4: return named("body") ? 2 : named("data") ? 5 : nil
        case 5: return named("title") ? 0 : named("media") ? 3 : nil
        case 8: return named("subtitle") ? 1 : nil
        case 13: return named("localizations") ? 4 : nil
        default: return nil
        }
    }

    /// Scans the notification object at the scanner's position into `out` (which starts
    /// empty); `false` to take the tree path (then `out` holds a partial notification to drop).
    /// Filled in place, so the caller seals from it without copying its members.
    static func scan(_ s: inout JSONReader.Scanner, into out: inout ScannedNotification) -> Bool {
        var seen = 0
        do {
            guard try s.peekKind() == .object else { return false }
            try s.beginObject()
            while let key = try s.nextKey() {
                guard !key.hasEscapes, let member = member(s.rawBytes(key)) else { return false }
                guard seen & (1 << member) == 0 else { return false }
                seen |= 1 << member
                switch member {
                case 0, 1, 2, 9:
                    guard try s.peekKind() == .string else { return false }
                    let span = try s.readString()
                    let text: Wire.Text = span.isMinimallyEscaped ? .raw(s.rawBytes(span)) : .string(s.string(span))
                    switch member {
                    case 0: out.fields.title = text
                    case 1: out.fields.subtitle = text
                    case 2: out.fields.body = text
                    default: out.fields.id = text
                    }
                case 6, 7, 8:
                    guard try s.peekKind() == .number, case .integer(let t) = try s.readNumber(), t >= 0 else { return false }
                    switch member {
                    case 6: out.fields.iat = t
                    case 7: out.fields.exp = t
                    default: out.ttlSeconds = t
                    }
                case 3: out.fields.media = try OutgoingNotification.media(s.readValue())
                case 4: out.fields.localizations = try OutgoingNotification.localizations(s.readValue())
                default:
                    guard case .object(let d) = try s.readValue() else { return false }
                    out.fields.data = d
                }
            }
            return true
        } catch {
            return false
        }
    }
}
