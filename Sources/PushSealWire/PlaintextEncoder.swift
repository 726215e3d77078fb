public import PushSealJSON
import PushSealCrypto

/// The one writer of the plaintext layout (FORMAT.md §5): compact UTF-8 JSON, members in
/// ``NotificationMember`` order (the table's), absent ones and `kind` `display` omitted. It
/// states the layout only: every byte goes through PushSealJSON's ``JSONSinkWriter`` (minimal
/// escapes — `"`, `\`, control characters below U+0020 only; never `\/`; every other scalar as
/// raw UTF-8; integers in decimal; doubles in Swift's shortest round-trip form).
///
/// Generic over its ``ByteSink``: `[UInt8]` for ``PushNotification/encoded(padding:)``, a
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

    /// Writes `notification`'s plaintext object (no padding), reading each member where it lies:
    /// the notification is borrowed, not copied (a copy retains and releases every member).
    /// - Throws: `FormatError` `.nonFiniteNumber` when `data` holds an infinite or NaN number.
    @inlinable public mutating func encode(_ notification: borrowing PushNotification) throws {
        // The scanned source is borrowed once for the text members (passing the array to each
        // retained and released it every time).
        do {
            try encodeMembers(notification, source: notification.source.span.bytes)
        } catch let e as JSONError {
            throw FormatError(.nonFiniteNumber, e.reason)
        }
    }

    /// The members of ``encode(_:)``; `source` is the notification's `source` bytes.
    @inlinable mutating func encodeMembers(_ n: borrowing PushNotification, source: RawSpan) throws {
        writer.beginObject()
        for m in NotificationMember.allCases {
            switch m {  // schema-switch: encoder
            case .title: if let t = n.titleText { writer.key(static: "title"); text(t, in: source) }
            case .subtitle: if let t = n.subtitleText { writer.key(static: "subtitle"); text(t, in: source) }
            case .body: if let t = n.bodyText { writer.key(static: "body"); text(t, in: source) }
            case .media:
                if let m = n.media {
                    writer.key(static: "media")
                    writer.beginObject()
                    writer.key(static: "url"); writer.string(m.url)
                    if let t = m.type { writer.key(static: "type"); writer.string(t) }
                    if let h = m.sha256Hex { writer.key(static: "sha256"); writer.string(h) }
                    // The key's bytes are read in place by the constant-time encoder.
                    if let k = m.key { writer.key(static: "key"); writer.string(WireBase64.encodeSecret(k)) }
                    writer.endObject()
                }
            case .localizations:
                if !n.localizations.isEmpty {
                    writer.key(static: "localizations")
                    writer.beginObject()
                    for l in n.localizations {
                        writer.key(l.locale)
                        writer.beginObject()
                        if let v = l.content.title { writer.key(static: "title"); writer.string(v) }
                        if let v = l.content.subtitle { writer.key(static: "subtitle"); writer.string(v) }
                        if let v = l.content.body { writer.key(static: "body"); writer.string(v) }
                        writer.endObject()
                    }
                    writer.endObject()
                }
            case .data: if let d = n.data { writer.key(static: "data"); try writer.write(d) }
            case .aps: if let a = n.aps, case .object(let o) = a.jsonValue() { writer.key(static: "aps"); try writer.write(o) }
            case .iat: if let t = n.iat { writer.key(static: "iat"); writer.integer(t) }
            case .exp: if let t = n.exp { writer.key(static: "exp"); writer.integer(t) }
            case .id: if let t = n.idText { writer.key(static: "id"); text(t, in: source) }
            case .kind:
                // `display`, the default, is not written: a display plaintext reads as before kinds.
                switch n.kind {
                case .display: break
                case .retract: writer.key(static: "kind"); writer.string(MessageKind.retract.rawValue)
                }
            case .ids:
                if !n.ids.isEmpty {
                    writer.key(static: "ids")
                    writer.beginArray()
                    for id in n.ids { writer.string(id) }
                    writer.endArray()
                }
            }
        }
        writer.endObject()
    }

    /// Writes a notification's text member: a scanned span that is already minimally escaped
    /// is copied from `source` (the bytes of the notification's `source`) as it is (the bytes the
    /// writer would write for its decoded string), anything else is escaped.
    @inlinable mutating func text(_ t: NotificationText, in source: RawSpan) {
        guard case .span(let start, let end, _, true) = t else {
            return writer.string(t.string(in: source))
        }
        // A span lies inside its notification's source: the scanner makes spans only of the
        // bytes it read, and `source` is set with them and never changed alone (the stored
        // members are internal). One outside is a broken invariant, not an input: trap.
        precondition(start >= 0 && start <= end && end <= source.byteCount, "a notification text span lies outside its source")
        writer.string(plain: source.extracting(start..<end))
    }
}
extension PlaintextEncoder: Sendable where Sink: Sendable {}
