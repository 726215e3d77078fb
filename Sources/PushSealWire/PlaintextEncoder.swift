public import PushSealJSON
public import PushSealCrypto

/// The one writer of the plaintext layout (FORMAT.md §5): compact UTF-8 JSON, members in
/// ``NotificationMember`` order (the table's), absent ones and `kind` `display` omitted. It
/// states the layout only: every byte goes through PushSealJSON's ``JSONSinkWriter`` (minimal
/// escapes — `"`, `\`, control characters below U+0020 only; never `\/`; every other scalar as
/// raw UTF-8; integers in decimal; doubles in Swift's shortest round-trip form).
///
/// Generic over its ``ByteSink``: `[UInt8]` for ``Notification/encoded(padding:)``, a
/// ``BoundedByteSink`` for the sender's stack buffer.
public struct PlaintextEncoder<Sink: ByteSink> {
    /// The writer; its sink holds the bytes.
    public var writer: JSONSinkWriter<Sink>

    /// Where the bytes go.
    @inlinable public var sink: Sink {
        get { writer.sink }
        _modify { yield &writer.sink }
    }

    // Every method is @inlinable so a client module gets a version specialized for its sink
    // (an unspecialized generic call per byte costs more than the AES-GCM seal itself).

    /// An encoder writing into `sink`.
    @inlinable public init(into sink: Sink) {
        writer = JSONSinkWriter(into: sink)
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
        // The scanned source is borrowed once for the text members (passing the array to each
        // retained and released it every time).
        do {
            try p.pointee.source.withUnsafeBytes { source in try encodeMembers(p, source: source) }
        } catch let e as JSONError {
            throw FormatError(.nonFiniteNumber, e.reason)
        }
    }

    /// The members of ``encode(pointer:)``; `source` is the notification's `source` bytes.
    @inlinable mutating func encodeMembers(_ p: UnsafePointer<Notification>, source: UnsafeRawBufferPointer) throws {
        writer.beginObject()
        for m in NotificationMember.allCases {
            switch m {  // schema-switch: encoder
            case .title: if let t = p.pointee.titleText { writer.key(static: "title"); text(t, in: source, of: p) }
            case .subtitle: if let t = p.pointee.subtitleText { writer.key(static: "subtitle"); text(t, in: source, of: p) }
            case .body: if let t = p.pointee.bodyText { writer.key(static: "body"); text(t, in: source, of: p) }
            case .media:
                if let m = p.pointee.media {
                    writer.key(static: "media")
                    writer.beginObject()
                    writer.key(static: "url"); writer.string(m.url)
                    if let t = m.type { writer.key(static: "type"); writer.string(t) }
                    if let h = m.sha256Hex { writer.key(static: "sha256"); writer.string(h) }
                    if let k = m.key { writer.key(static: "key"); writer.string(k.withUnsafeBytes { WireBase64.encodeSecret($0) }) }
                    writer.endObject()
                }
            case .localizations:
                if !p.pointee.localizations.isEmpty {
                    writer.key(static: "localizations")
                    writer.beginObject()
                    for l in p.pointee.localizations {
                        writer.key(l.locale)
                        writer.beginObject()
                        if let v = l.content.title { writer.key(static: "title"); writer.string(v) }
                        if let v = l.content.subtitle { writer.key(static: "subtitle"); writer.string(v) }
                        if let v = l.content.body { writer.key(static: "body"); writer.string(v) }
                        writer.endObject()
                    }
                    writer.endObject()
                }
            case .data: if let d = p.pointee.data { writer.key(static: "data"); try writer.write(d) }
            case .aps: if let a = p.pointee.aps, case .object(let o) = a.jsonValue() { writer.key(static: "aps"); try writer.write(o) }
            case .iat: if let t = p.pointee.iat { writer.key(static: "iat"); writer.integer(t) }
            case .exp: if let t = p.pointee.exp { writer.key(static: "exp"); writer.integer(t) }
            case .id: if let t = p.pointee.idText { writer.key(static: "id"); text(t, in: source, of: p) }
            case .kind:
                // `display`, the default, is not written: a display plaintext reads as before kinds.
                switch p.pointee.kind {
                case .display: break
                case .retract: writer.key(static: "kind"); writer.string(MessageKind.retract.rawValue)
                }
            case .ids:
                if !p.pointee.ids.isEmpty {
                    writer.key(static: "ids")
                    writer.beginArray()
                    for id in p.pointee.ids { writer.string(id) }
                    writer.endArray()
                }
            }
        }
        writer.endObject()
    }

    /// Writes a notification's text member: a scanned span that is already minimally escaped
    /// is copied from `source` (the bytes of `n`'s `source`) as it is (the bytes the writer
    /// would write for its decoded string), anything else is escaped.
    @inlinable mutating func text(_ t: NotificationText, in source: UnsafeRawBufferPointer, of n: UnsafePointer<Notification>) {
        guard case .span(let start, let end, _, true) = t, start >= 0, start <= end, end <= source.count, let base = source.baseAddress else {
            return writer.string(t.string(in: n.pointee.source))
        }
        writer.string(plain: UnsafeRawBufferPointer(start: base + start, count: end - start))
    }
}
extension PlaintextEncoder: Sendable where Sink: Sendable {}
