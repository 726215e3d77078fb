import PushSealSystem
public import PushSealJSON
public import PushSealCrypto

/// The plaintext of a sealed notification (FORMAT.md §5): a UTF-8 JSON object.
///
/// Decoding is strict about the members it knows (a wrong JSON type is an error naming the
/// member) and ignores members it does not know, so later minor versions can add members
/// that version-1 receivers skip. `null` for an optional member means "absent".
public struct PushNotification: Sendable, Equatable {
    // Text members are stored as ``NotificationText``: a `String`, or (from the scanner, see
    // `PushNotification+Scanner.swift`) a span of `source`, the JSON text it read, so a scanned
    // notification is encoded by copying its already validated, minimally escaped input bytes
    // without building a `String` or escaping again. Reading a member gives the same `String`
    // either way; assigning one stores a `String`.

    /// The JSON text the scanner read, which `.span` texts point into; empty otherwise.
    @usableFromInline var source: [UInt8] = []
    @usableFromInline var titleText: NotificationText?
    @usableFromInline var subtitleText: NotificationText?
    @usableFromInline var bodyText: NotificationText?
    @usableFromInline var idText: NotificationText?

    /// Title shown in bold; `nil` when absent.
    public var title: String? {
        get { titleText.map { $0.string(in: source) } }
        set { titleText = newValue.map(NotificationText.string) }
    }
    /// Subtitle under the title; `nil` when absent.
    public var subtitle: String? {
        get { subtitleText.map { $0.string(in: source) } }
        set { subtitleText = newValue.map(NotificationText.string) }
    }
    /// Body text; `nil` when absent.
    public var body: String? {
        get { bodyText.map { $0.string(in: source) } }
        set { bodyText = newValue.map(NotificationText.string) }
    }
    /// An attachment to download and show; `nil` when absent.
    public var media: MediaDescriptor?
    /// Per-locale variants, in document order: `(locale, content)` with a BCP 47 tag such as
    /// `fr` or `pt-BR`. Locales are unique.
    public var localizations: [(locale: String, content: LocalizedContent)] = []
    /// App data; on a device it reaches the app as `userInfo["pushseal"]` (kept apart from
    /// the payload's unsealed members); `nil` when absent.
    public var data: JSONObject?
    /// Sealed presentation fields (the plaintext's `aps`: thread-id, category,
    /// interruption-level, sound); `nil` when absent.
    public var aps: PresentationFields?
    /// Issued at: seconds since 1970-01-01 UTC; `nil` when absent.
    public var iat: Int64?
    /// Expires at: seconds since 1970-01-01 UTC; a receiver shows original content after it.
    public var exp: Int64?
    /// Whether ``id`` is set, without building its `String`.
    @inlinable package var hasID: Bool { idText != nil }

    /// Sender's notification id (e.g. for collapsing); `nil` when absent.
    public var id: String? {
        get { idText.map { $0.string(in: source) } }
        set { idText = newValue.map(NotificationText.string) }
    }
    /// What the receiver does with it (`kind`): show it (`display`, the default, not written)
    /// or remove earlier notifications (`retract`).
    public var kind: MessageKind = .display
    /// A retract's notification ids (`ids`, 1–100); empty for a display message (not written).
    public var ids: [String] = []

    /// Creates an empty plaintext (no member set), to be filled in; it does not encode into
    /// something a receiver accepts until a title, subtitle or body is set.
    public init() {}

    /// Creates a plaintext. At least one of `title`, `subtitle`, `body` must be non-empty for
    /// it to encode into something a receiver accepts (checked by ``validate()``).
    public init(title: String? = nil, subtitle: String? = nil, body: String? = nil, media: MediaDescriptor? = nil,
                localizations: [(locale: String, content: LocalizedContent)] = [], data: JSONObject? = nil,
                aps: PresentationFields? = nil, iat: Int64? = nil, exp: Int64? = nil, id: String? = nil,
                kind: MessageKind = .display, ids: [String] = []) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.media = media
        self.localizations = localizations
        self.data = data
        self.aps = aps
        self.iat = iat
        self.exp = exp
        self.id = id
        self.kind = kind
        self.ids = ids
    }

    /// A retract message (FORMAT.md §5.1): it removes the delivered notifications whose `id` is
    /// one of `ids` and shows nothing.
    /// - Parameters:
    ///   - ids: 1–100 notification ids of earlier notifications to the same recipient.
    ///   - id: the retract's own id (for the receiver's replay guard); the sealer draws one when `nil`.
    public static func retract(ids: [String], id: String? = nil) -> PushNotification {
        PushNotification(id: id, kind: .retract, ids: ids)
    }

    /// Equal when every member of ``NotificationMember`` is (texts compared decoded, so a
    /// scanned and a built notification of the same content are equal).
    public static func == (lhs: PushNotification, rhs: PushNotification) -> Bool {
        NotificationMember.allCases.allSatisfy { lhs.hasEqual($0, to: rhs) }
    }

    /// Whether `member` is the same in `self` and `other`.
    private func hasEqual(_ member: NotificationMember, to other: PushNotification) -> Bool {
        switch member {  // schema-switch: equality
        case .title: title == other.title
        case .subtitle: subtitle == other.subtitle
        case .body: body == other.body
        case .media: media == other.media
        case .localizations:
            localizations.count == other.localizations.count
                && zip(localizations, other.localizations).allSatisfy { $0.locale == $1.locale && $0.content == $1.content }
        case .data: data == other.data
        case .aps: aps == other.aps
        case .iat: iat == other.iat
        case .exp: exp == other.exp
        case .id: id == other.id
        case .kind: kind == other.kind
        case .ids: ids == other.ids
        }
    }

    // MARK: Decoding

    /// Decodes opened plaintext bytes: UTF-8 JSON, an object, trailing spaces allowed.
    /// - Parameter bytes: the opened (possibly padded) plaintext.
    /// - Throws: `FormatError` `.invalidPlaintext` naming the problem (not UTF-8, not JSON,
    ///   not an object, or a member of the wrong type or shape); a JSON error gives its code
    ///   and byte offset only, never the text it found.
    public init(jsonBytes bytes: [UInt8]) throws {
        let value: JSONValue
        do {
            value = try JSONReader.parse(bytes)
        } catch let error as JSONError {
            // Code and offset only: the reader's reason may quote plaintext (a duplicate member's
            // name), and errors never carry plaintext (security review F15, FORMAT.md §8).
            let what = error.code == .invalidUTF8 ? "is not UTF-8" : "is not valid JSON"
            let at = error.byteOffset.map { " at byte offset \($0)" } ?? ""
            throw FormatError(.invalidPlaintext, "the plaintext \(what) (\(error.code.name)\(at))")
        }
        try self.init(json: value)
    }

    /// Decodes a parsed plaintext object (FORMAT.md §5): each known member's type and shape in
    /// the table's order, then the kind's content rule (a display message needs a non-empty
    /// title, subtitle or body; a retract needs `ids`). Unknown members are ignored.
    /// - Throws: `FormatError` `.invalidPlaintext` with a reason `<member>: <problem>`.
    public init(json value: JSONValue) throws {
        guard case .object(let o) = value else {
            throw FormatError(.invalidPlaintext, "the plaintext is a JSON \(value.typeName), not an object")
        }
        self.init()
        // The kind first: it decides the content rule, checked where the texts end (as before kinds).
        if let k = try Self.optional(o, NotificationMember.kind.name, path: "") { kind = try Self.kind(k) }
        for member in NotificationMember.allCases {
            guard let v = try Self.optional(o, member.name, path: "") else {
                if member == .body { try checkContent(o) }
                continue
            }
            switch member {  // schema-switch: receiving decoder
            case .title: titleText = .string(try Self.receivedString(v, "title"))
            case .subtitle: subtitleText = .string(try Self.receivedString(v, "subtitle"))
            case .body:
                bodyText = .string(try Self.receivedString(v, "body"))
                try checkContent(o)
            case .media: media = try MediaDescriptor(json: v)
            case .localizations:
                guard case .object(let lo) = v else { throw Self.wrongType("localizations", "object", v) }
                for (position, m) in lo.members.enumerated() {
                    let locale = m.key
                    guard WireFormat.isValidLocale(locale) else {
                        // The position, not the tag: a decrypted tag is plaintext (security review F15).
                        throw FormatError(.invalidPlaintext, "localizations: member \(position + 1) is not a locale tag (1-35 of A-Z a-z 0-9 - _)")
                    }
                    // Named by position too when the tag is valid: error text never quotes plaintext.
                    localizations.append((locale: locale, content: try LocalizedContent(json: m.value, path: "localizations[\(position + 1)]")))
                }
            case .data:
                guard case .object(let dobj) = v else { throw Self.wrongType("data", "object", v) }
                data = dobj
            case .aps: aps = try PresentationFields(json: v)
            case .iat: iat = try Self.time(v, "iat")
            case .exp: exp = try Self.time(v, "exp")
            case .id: idText = .string(try Self.receivedString(v, "id"))
            case .kind: break  // read first
            case .ids: ids = try Self.ids(v)
            }
        }
        if kind == .retract, ids.isEmpty {
            throw FormatError(.invalidPlaintext, "ids: a retract needs 1-\(MessageKind.maxRetractIDs) notification ids")
        }
    }

    /// The content rule of the message's kind, checked once the texts are read: a display
    /// message needs a non-empty title, subtitle or body; a retract shows nothing.
    private func checkContent(_ o: JSONObject) throws {
        guard kind == .display else { return }
        _ = try Self.textMembers(o, path: "")
    }

    /// A text member (`title`, `subtitle`, `body`, `id`): a string.
    static func receivedString(_ v: JSONValue, _ name: String) throws -> String {
        guard case .string(let s) = v else { throw wrongType(name, "string", v) }
        return s
    }

    /// `kind`: one of ``MessageKind``'s names. An unknown kind is refused (never displayed):
    /// a receiver cannot do what it does not know.
    static func kind(_ v: JSONValue) throws -> MessageKind {
        guard case .string(let s) = v else { throw wrongType("kind", "string", v) }
        // Not quoted: a decrypted value is plaintext (security review F15).
        guard let k = MessageKind(rawValue: s) else {
            throw FormatError(.invalidPlaintext, "kind: not a kind this receiver knows (known: \(MessageKind.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return k
    }

    /// `ids`: an array of 1–100 strings of 1–256 UTF-8 bytes each.
    static func ids(_ v: JSONValue) throws -> [String] {
        guard case .array(let a) = v else { throw wrongType("ids", "array", v) }
        guard (1...MessageKind.maxRetractIDs).contains(a.count) else {
            throw FormatError(.invalidPlaintext, "ids: expected 1-\(MessageKind.maxRetractIDs) notification ids, got \(a.count)")
        }
        return try a.enumerated().map { position, e in
            guard case .string(let s) = e else { throw wrongType("ids[\(position + 1)]", "string", e) }
            guard (1...MessageKind.maxIDByteCount).contains(s.utf8.count) else {
                throw FormatError(.invalidPlaintext, "ids[\(position + 1)]: expected 1-\(MessageKind.maxIDByteCount) bytes, got \(s.utf8.count)")
            }
            return s
        }
    }

    static func optional(_ o: JSONObject, _ key: String, path: String) throws -> JSONValue? {
        guard let v = o[key] else { return nil }
        if case .null = v { return nil }
        return v
    }

    static func wrongType(_ member: String, _ expected: String, _ got: JSONValue) -> FormatError {
        FormatError(.invalidPlaintext, "\(member): expected \(expected == "object" || expected == "integer" || expected == "array" ? "an" : "a") \(expected), got \(got.typeName)")
    }

    static func textMembers(_ o: JSONObject, path: String) throws -> (title: String?, subtitle: String?, body: String?) {
        var out: [String?] = []
        for key in ["title", "subtitle", "body"] {
            if let v = try optional(o, key, path: path) {
                guard case .string(let s) = v else { throw wrongType(path + key, "string", v) }
                out.append(s)
            } else {
                out.append(nil)
            }
        }
        guard out.contains(where: { !($0 ?? "").isEmpty }) else {
            let whereText = path.isEmpty ? "the plaintext" : String(path.dropLast())
            throw FormatError(.invalidPlaintext, "\(whereText): needs a non-empty title, subtitle or body")
        }
        return (out[0], out[1], out[2])
    }

    static func time(_ v: JSONValue, _ key: String) throws -> Int64 {
        guard case .integer(let t) = v else { throw wrongType(key, "integer", v) }
        guard t >= 0 else { throw FormatError(.invalidPlaintext, "\(key): seconds since 1970 must not be negative, got \(t)") }
        return t
    }

    // MARK: Encoding

    /// The plaintext as a JSON value: ``encoded(padding:)`` read back (members in
    /// ``NotificationMember`` order; absent ones, and `kind` `display`, omitted).
    /// - Throws: `FormatError` `.nonFiniteNumber`.
    public func jsonValue() throws -> JSONValue {
        try JSONReader.parse(try encoded(padding: false))
    }

    /// Compact UTF-8 JSON written by ``PlaintextEncoder``, padded with trailing spaces to its
    /// Padmé length when `padding` is true (FORMAT.md §6).
    /// - Parameter padding: pad (default true).
    /// - Returns: the bytes to seal.
    /// - Throws: `FormatError` `.nonFiniteNumber` when `data` holds an infinite or NaN number.
    public func encoded(padding: Bool = true) throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(estimatedByteCount())
        var encoder = PlaintextEncoder(into: bytes)
        bytes = []
        try encoder.encode(self)
        swap(&bytes, &encoder.sink)
        if padding { Padme.pad(&bytes) }
        return bytes
    }

    /// A capacity guess in bytes that usually holds the padded output without growing (never
    /// a bound: callers fall back when the output does not fit).
    @inlinable package func estimatedByteCount() -> Int {
        // Scanned from JSON text: about that text's size (its members are copied as read).
        // Inlined, so a caller does not pass a copy of the whole notification for this.
        if !source.isEmpty { return source.count + source.count / 8 + 96 }
        return estimatedBuiltByteCount()
    }

    /// ``estimatedByteCount()`` of a notification built in code.
    @usableFromInline func estimatedBuiltByteCount() -> Int {
        var n = 160
        for member in NotificationMember.allCases {
            switch member {  // schema-switch: size estimate
            case .title: n += titleText?.byteCount ?? 0
            case .subtitle: n += subtitleText?.byteCount ?? 0
            case .body: n += bodyText?.byteCount ?? 0
            case .media: if media != nil { n += 256 }
            case .localizations:
                for l in localizations {
                    n += 48 + l.locale.utf8.count + (l.content.title?.utf8.count ?? 0) + (l.content.subtitle?.utf8.count ?? 0)
                        + (l.content.body?.utf8.count ?? 0)
                }
            case .data: if let data { n += 64 * data.count }
            case .aps: if aps != nil { n += 160 }
            case .iat, .exp: break  // within the base
            case .id: n += idText?.byteCount ?? 0
            case .kind: if kind != .display { n += 20 }
            case .ids: for i in ids { n += 3 + i.utf8.count }
            }
        }
        return n + n / 8
    }
}

/// How ``PushNotification`` stores a text member: a `String`, or the content of a JSON string in
/// the notification's `source` bytes (the scanner's input), already checked by the reader's
/// rules (strict UTF-8, escapes, no raw control characters).
@usableFromInline
enum NotificationText: Sendable {
    case string(String)
    /// `source[start..<end]`, the bytes between the quotes; `hasEscapes` when it holds a
    /// backslash escape; `isMinimallyEscaped` when copying it gives exactly the encoder's output
    /// for the decoded string (`JSONReader.StringSpan`).
    case span(start: Int, end: Int, hasEscapes: Bool, isMinimallyEscaped: Bool)

    /// The scanner's span of `source` as a text.
    init(_ span: JSONReader.StringSpan) {
        self = .span(start: span.start, end: span.end, hasEscapes: span.hasEscapes, isMinimallyEscaped: span.isMinimallyEscaped)
    }

    /// Whether the decoded string is empty (a non-empty content never decodes to "").
    @usableFromInline var isEmpty: Bool {
        switch self {
        case .string(let s): s.isEmpty
        case .span(let start, let end, _, _): start == end
        }
    }

    /// About the encoded byte count (the string's UTF-8, or the span as written).
    var byteCount: Int {
        switch self {
        case .string(let s): s.utf8.count
        case .span(let start, let end, _, _): end - start
        }
    }

    /// Whether the decoded string holds a character that is not white space
    /// (`Character.isWhitespace`; `source` is the notification's): a span is read in place
    /// while its bytes are ASCII (see `PushNotification.isVisible(_:)`).
    func isVisible(in source: [UInt8]) -> Bool {
        switch self {
        case .string(let s):
            return PushNotification.isVisible(s)
        case .span(let start, let end, _, _):
            precondition(start >= 0 && start <= end && end <= source.count, "a notification text span lies outside its source")
            switch PushNotification.asciiVisibility(source.span.extracting(start..<end)) {
            case .visible: return true
            case .blank: return false
            case .undecided: return string(in: source).contains { !$0.isWhitespace }
            }
        }
    }

    /// The decoded string (`source` is the notification's).
    @usableFromInline func string(in source: [UInt8]) -> String {
        switch self {
        case .string(let s): s
        case .span: string(in: source.span.bytes)
        }
    }

    /// The decoded string (`source`: the bytes of the notification's `source`).
    @usableFromInline func string(in source: RawSpan) -> String {
        switch self {
        case .string(let s):
            return s
        case .span(let start, let end, let hasEscapes, _):
            // A span lies between the quotes of a JSON string the scanner read from `source`
            // (so 1 <= start <= end < count), and `source` is set with its spans and never
            // changed alone. One outside is a broken invariant, not an input: trap rather than
            // read as "".
            precondition(start >= 1 && start <= end && end < source.byteCount, "a notification text span lies outside its source")
            // Scanned and validated before, so reading it again (from its opening quote) cannot fail.
            guard let decoded = JSONReader.decodedString(in: source, start: start, end: end, hasEscapes: hasEscapes) else {
                preconditionFailure("a scanned notification text no longer decodes")
            }
            return decoded
        }
    }
}

/// The title, subtitle and body of one locale (`localizations.<tag>`), at least one non-empty.
public struct LocalizedContent: Sendable, Hashable {
    /// Localized title.
    public var title: String?
    /// Localized subtitle.
    public var subtitle: String?
    /// Localized body.
    public var body: String?

    /// Creates localized content.
    public init(title: String? = nil, subtitle: String? = nil, body: String? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
    }

    /// Reads one locale's content by the receiver's rules (an object whose `title`, `subtitle`,
    /// `body` are strings or null, at least one non-empty; other members ignored).
    /// - Parameters:
    ///   - value: the `localizations.<tag>` value.
    ///   - path: its name in errors, e.g. `localizations.fr`.
    /// - Throws: `FormatError` `.invalidPlaintext` (`<path>: <problem>`).
    public init(json value: JSONValue, path: String) throws {
        guard case .object(let o) = value else { throw PushNotification.wrongType(path, "object", value) }
        let t = try PushNotification.textMembers(o, path: path + ".")
        title = t.title
        subtitle = t.subtitle
        body = t.body
    }

    /// The content as a JSON object (title, subtitle, body; absent ones omitted).
    public func jsonValue() -> JSONValue {
        var o = JSONObject()
        if let title { o["title"] = .string(title) }
        if let subtitle { o["subtitle"] = .string(subtitle) }
        if let body { o["body"] = .string(body) }
        return .object(o)
    }
}

/// An attachment (`media`): where to download it and how to check or open it.
public struct MediaDescriptor: Sendable, Equatable {
    /// Absolute `https://` or `http://` URL of the file (receivers may refuse `http`).
    public var url: String
    /// MIME type such as `image/jpeg`; `nil` when absent.
    public var type: String?
    /// SHA-256 of the downloaded bytes (32 bytes; hex on the wire); `nil` when absent.
    public var sha256: [UInt8]?
    /// When present, the file at `url` is itself an AES-256-GCM box (nonce(12) ‖ ciphertext ‖
    /// tag(16), empty AAD) under this 32-byte key (base64 on the wire).
    public var key: SecretBytes?

    /// Creates a media descriptor.
    public init(url: String, type: String? = nil, sha256: [UInt8]? = nil, key: SecretBytes? = nil) {
        self.url = url
        self.type = type
        self.sha256 = sha256
        self.key = key
    }

    /// Reads a `media` value by the receiver's rules: `url` an absolute `https://` or
    /// `http://` URL; `type` a string; `sha256` 64 hex digits; `key` base64 of 32 bytes.
    /// - Throws: `FormatError` `.invalidPlaintext` (`media.<member>: <problem>`).
    public init(json value: JSONValue) throws {
        guard case .object(let o) = value else { throw PushNotification.wrongType("media", "object", value) }
        guard let u = try PushNotification.optional(o, "url", path: "media.") else {
            throw FormatError(.invalidPlaintext, "media.url: missing")
        }
        guard case .string(let url) = u else { throw PushNotification.wrongType("media.url", "string", u) }
        let lower = url.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://"), url.utf8.count > 8 else {
            throw FormatError(.invalidPlaintext, "media.url: expected an absolute https:// or http:// URL")
        }
        self.url = url
        if let t = try PushNotification.optional(o, "type", path: "media.") {
            guard case .string(let s) = t else { throw PushNotification.wrongType("media.type", "string", t) }
            type = s
        } else {
            type = nil
        }
        if let h = try PushNotification.optional(o, "sha256", path: "media.") {
            guard case .string(let s) = h else { throw PushNotification.wrongType("media.sha256", "string", h) }
            guard let bytes = Hex.decode(s), bytes.count == 32 else {
                throw FormatError(.invalidPlaintext, "media.sha256: expected 64 hexadecimal digits, got \(s.utf8.count) characters")
            }
            sha256 = bytes
        } else {
            sha256 = nil
        }
        if let k = try PushNotification.optional(o, "key", path: "media.") {
            guard case .string(let s) = k else { throw PushNotification.wrongType("media.key", "string", k) }
            var bytes: [UInt8]
            do {
                bytes = try WireBase64.decodeSecret(s)
            } catch let error as FormatError {
                throw FormatError(.invalidPlaintext, "media.key: \(error.reason)")
            }
            defer { SecretBytes.wipe(&bytes) }
            guard bytes.count == 32 else {
                throw FormatError(.invalidPlaintext, "media.key: expected base64 of 32 bytes, got \(bytes.count) bytes")
            }
            key = SecretBytes(copying: bytes)
        } else {
            key = nil
        }
    }

    /// The descriptor as a JSON object (url, type, sha256 as lower-case hex, key as standard
    /// padded base64; absent ones omitted).
    public func jsonValue() -> JSONValue {
        var o = JSONObject()
        o["url"] = .string(url)
        if let type { o["type"] = .string(type) }
        if let sha256 { o["sha256"] = .string(Hex.encode(sha256)) }
        // Safe: the key's bytes are read inside the closure only (constant-time encoder).
        if let key { o["key"] = .string(WireBase64.encodeSecret(key)) }
        return .object(o)
    }

    /// ``sha256`` as 64 lower-case hex digits, as on the wire; `nil` when absent.
    public var sha256Hex: String? { sha256.map { Hex.encode($0) } }
}

extension WireFormat {
    /// Whether `tag` is acceptable as a `localizations` key: 1–35 characters of
    /// `A-Z a-z 0-9 - _` (BCP 47 tags such as `fr`, `pt-BR`, `zh-Hant-TW`; `_` for Apple's
    /// `pt_BR` spelling).
    public static func isValidLocale(_ tag: String) -> Bool {
        let u = tag.utf8
        guard !u.isEmpty, u.count <= 35 else { return false }
        return u.allSatisfy { c in
            (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39)
                || c == UInt8(ascii: "-") || c == UInt8(ascii: "_")
        }
    }
}
