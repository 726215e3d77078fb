public import PushSealJSON
import PushSealSystem
#if canImport(FoundationEssentials)
internal import FoundationEssentials
#else
internal import Foundation
#endif

// The sender's rules for a notification, one function per rule, shared by every way in: the
// JSON form a sender reads (`init(sendingJSON:extraMember:)`), the scanner
// (`PushNotification.scan`) and a value built in code (`validate()`). They are the receiver's rules
// (`init(json:)`, FORMAT.md §5, the Python reference in Tests/Interop) plus a few a sender adds,
// so a sender never seals what a device rejects. Errors are `FormatError` `.invalidPlaintext`
// whose reason names the member.
extension PushNotification {
    /// The members of the sending form, in the order reasons list them (``NotificationMember``'s).
    public static let memberNames = NotificationMember.allCases.map(\.name)

    /// Names a sender may not use at the top level of `data` (issue 12): the payload's own
    /// members (`aps`, `encrypted_data`, `key_id`, `enc_alg`, v2's `sender_key_id`) and the
    /// `userInfo` key the device puts the sealed `data` under (`pushseal`), so no sealed member
    /// can be mistaken for, or overwrite, an envelope field.
    public static let reservedDataNames = ["aps", "encrypted_data", "key_id", "enc_alg", "sender_key_id", "pushseal"]

    /// Reads the JSON form a sender is given: an object with `title`, `subtitle`, `body`
    /// (strings), `media` (`{url, type?, sha256?, key?}`), `localizations` (object of locale →
    /// `{title?, subtitle?, body?}`), `data` (object), `iat`, `exp` (integers, seconds), `id`
    /// (string). Unlike ``init(json:)`` (the receiver's, which ignores unknown members) an
    /// unknown member is refused unless `extraMember` takes it (returns true; the sender's `ttl`).
    /// - Parameters:
    ///   - json: the notification value.
    ///   - extraMemberNames: names `extraMember` takes, for the reason of an unknown member.
    ///   - extraMember: called with each member not listed in ``memberNames``.
    ///   - checkingTimes: end with ``checkTimes(iat:exp:)`` (default true; a caller with its
    ///     own time members, such as a `ttl`, checks them first and then calls it).
    /// - Throws: `FormatError` `.invalidPlaintext` naming the member for a wrong JSON type, an
    ///   unknown member, a time out of range (negative, after `WireFormat.maxTimeSeconds`, `exp`
    ///   before `iat`), or a `media`, `localizations` or `data` a receiver would reject; what
    ///   `extraMember` throws.
    public init(sendingJSON json: JSONValue, extraMemberNames: [String] = [],
                extraMember: (String, JSONValue) throws -> Bool = { _, _ in false }, checkingTimes: Bool = true) throws {
        guard case .object(let o) = json else {
            throw FormatError(.invalidPlaintext, "the notification must be a JSON object, got \(json.typeName)")
        }
        self.init()
        for m in o {
            guard let member = NotificationMember(rawValue: m.key) else {
                guard try extraMember(m.key, m.value) else {
                    throw FormatError(.invalidPlaintext, "unknown member \(Self.excerpt(m.key)) (known: \((Self.memberNames + extraMemberNames).joined(separator: ", ")))")
                }
                continue
            }
            switch member {  // schema-switch: sending decoder
            case .title: title = try Self.sendingString(m.value, "title")
            case .subtitle: subtitle = try Self.sendingString(m.value, "subtitle")
            case .body: body = try Self.sendingString(m.value, "body")
            case .media: media = try Self.sendingMedia(m.value)
            case .localizations: localizations = try Self.sendingLocalizations(m.value)
            case .data: data = try Self.sendingData(m.value)
            case .aps: aps = try Self.sendingPresentation(m.value)
            case .iat: iat = try Self.sendingTime(m.value, "iat")
            case .exp: exp = try Self.sendingTime(m.value, "exp")
            case .id: id = try Self.sendingString(m.value, "id")
            case .kind: kind = try Self.sendingKind(m.value)
            case .ids: ids = try Self.sendingIDs(m.value)
            }
        }
        try checkKind()
        if checkingTimes { try Self.checkTimes(iat: iat, exp: exp) }
    }

    /// Checks a notification built in code by the rules of the sending form, so both give the
    /// same reason for the same value: `media` as a receiver reads it (absolute `https://` or
    /// `http://` URL without control characters, ``isValidMediaType(_:)``); `localizations`
    /// keys are locale tags and each content has a non-empty text; `data` nested at most
    /// ``maxDataDepth`` levels, with finite numbers; `iat`, `exp` from 0 to
    /// `WireFormat.maxTimeSeconds`, `exp` not before `iat`. Not checked here: a non-empty
    /// title, subtitle or body (the sealer does, after localization and fitting).
    /// - Parameter checkingTimes: end with ``checkTimes(iat:exp:)`` (see
    ///   ``init(sendingJSON:extraMemberNames:extraMember:checkingTimes:)``).
    /// - Throws: `FormatError` `.invalidPlaintext` naming the member.
    public func validate(checkingTimes: Bool = true) throws {
        for member in NotificationMember.allCases {
            switch member {  // schema-switch: validation
            case .title, .subtitle, .body, .id: break  // any string (the sealer checks the visible text)
            case .media: if let media { _ = try Self.sendingMedia(media.jsonValue()) }
            case .localizations:
                for l in localizations {
                    guard WireFormat.isValidLocale(l.locale) else { throw Self.notALocale(l.locale) }
                    _ = try Self.invalidPlaintext { try LocalizedContent(json: l.content.jsonValue(), path: "localizations.\(l.locale)") }
                }
            case .data: if let data { _ = try Self.sendingData(.object(data)) }
            case .aps: if let aps { _ = try Self.sendingPresentation(aps.jsonValue()) }
            case .iat: if let iat { _ = try Self.sendingTime(.integer(iat), "iat") }
            case .exp: if let exp { _ = try Self.sendingTime(.integer(exp), "exp") }
            case .kind: break  // a MessageKind is always valid; checkKind() checks the members it allows
            case .ids: if !ids.isEmpty { _ = try Self.sendingIDs(.array(ids.map { .string($0) })) }
            }
        }
        try checkKind()
        if checkingTimes { try Self.checkTimes(iat: iat, exp: exp) }
    }

    /// The members a message of ``kind`` may carry (FORMAT.md §5.1): a display message no
    /// `ids`; a retract 1–100 `ids` and nothing shown (no `title`, `subtitle`, `body`, `media`,
    /// `localizations`, `aps`, `data`: a retract is never displayed, so they would be dropped).
    /// - Throws: `FormatError` `.invalidPlaintext` naming the member.
    public func checkKind() throws {
        switch kind {
        case .display:
            guard ids.isEmpty else {
                throw FormatError(.invalidPlaintext, "ids: only a retract names notification ids (give \"kind\": \"retract\")")
            }
        case .retract:
            guard !ids.isEmpty else {
                throw FormatError(.invalidPlaintext, "ids: a retract needs 1-\(MessageKind.maxRetractIDs) notification ids")
            }
            let shown: [(String, Bool)] = [("title", titleText != nil), ("subtitle", subtitleText != nil), ("body", bodyText != nil),
                                           ("media", media != nil), ("localizations", !localizations.isEmpty), ("aps", aps != nil),
                                           ("data", data != nil)]
            if let (name, _) = shown.first(where: { $0.1 }) {
                throw FormatError(.invalidPlaintext, "\(name): a retract shows nothing, so it carries only kind, ids, iat, exp and id")
            }
        }
    }

    /// Reads `kind`: `"display"` or `"retract"`.
    static func sendingKind(_ v: JSONValue) throws -> MessageKind {
        guard case .string(let s) = v else { throw sendingWrongType("kind", "a string", v) }
        guard let k = MessageKind(rawValue: s) else {
            throw FormatError(.invalidPlaintext, "kind must be one of \(MessageKind.allCases.map(\.rawValue).joined(separator: ", ")), got \(excerpt(s))")
        }
        return k
    }

    /// Reads `ids` by the receiver's rules (1–100 strings of 1–256 bytes).
    static func sendingIDs(_ v: JSONValue) throws -> [String] {
        guard case .array = v else { throw sendingWrongType("ids", "an array of notification ids", v) }
        return try invalidPlaintext { try ids(v) }
    }

    /// Checks the times together: `iat` and `exp` each at most `WireFormat.maxTimeSeconds`, and
    /// `exp` not before `iat` (a notification expired when sealed only ever shows the fallback).
    /// - Throws: `FormatError` `.invalidPlaintext`.
    public static func checkTimes(iat: Int64?, exp: Int64?) throws {
        // Two plain checks, no array: a sealer runs this twice on every seal.
        func tooLate(_ name: String, _ t: Int64) -> FormatError {
            FormatError(.invalidPlaintext, "\(name) \(t) is after \(WireFormat.maxTimeText), the latest time the sender seals")
        }
        if let iat, iat > WireFormat.maxTimeSeconds { throw tooLate("iat", iat) }
        if let exp, exp > WireFormat.maxTimeSeconds { throw tooLate("exp", exp) }
        if let iat, let exp, exp < iat {
            throw FormatError(.invalidPlaintext, "exp \(exp) is earlier than iat \(iat) (the seal time unless given): the notification would arrive expired")
        }
    }

    /// `true` when title, subtitle or body holds a character that is not white space — the
    /// receiver's rule (a content whose title, subtitle and body are all empty or white space
    /// only, `Character.isWhitespace`, falls back with `blankContent`).
    ///
    /// Reads the scanner's spans in place: only a text that starts (after ASCII white space)
    /// with a non-ASCII byte or an escape is decoded into a `String` and read by `Character`.
    @inlinable public var hasVisibleText: Bool {
        // Inlined, so a caller passes the members rather than a copy of the whole notification.
        Self.hasVisibleText(titleText, subtitleText, bodyText, in: source)
    }

    /// ``hasVisibleText`` of these text members (`source` is the notification's).
    @usableFromInline static func hasVisibleText(_ title: NotificationText?, _ subtitle: NotificationText?, _ body: NotificationText?,
                                                 in source: [UInt8]) -> Bool {
        title?.isVisible(in: source) == true || subtitle?.isVisible(in: source) == true || body?.isVisible(in: source) == true
    }

    /// The first locale tag of ``localizations`` whose content, with the default's text for its
    /// missing fields (as the receiver merges them), is empty or white space only; `nil` when
    /// every locale would show text.
    public var blankLocale: String? {
        localizations.first { !Self.isVisible($0.content.title ?? title, $0.content.subtitle ?? subtitle, $0.content.body ?? body) }?.locale
    }

    /// `true` when one of the texts holds a character that is not white space.
    static func isVisible(_ texts: String?...) -> Bool {
        texts.contains { $0.map(isVisible) ?? false }
    }

    /// `true` when `text` holds a character that is not white space (`Character.isWhitespace`).
    ///
    /// ASCII first: a printable ASCII byte met before any non-ASCII byte starts a grapheme
    /// (nothing before it can extend into it: ASCII white space is neither a prepend nor a
    /// joiner), so the text shows a character; ASCII white space is skipped; the first
    /// non-ASCII byte hands the whole text to the `Character` rule.
    static func isVisible(_ text: String) -> Bool {
        switch asciiVisibility(text.utf8.span) {
        case .visible: return true
        case .blank: return false
        case .undecided: return text.contains { !$0.isWhitespace }
        }
    }

    /// What the ASCII prefix of UTF-8 `bytes` tells (see ``isVisible(_:)-(String)``); a
    /// backslash (an escape in a span) is undecided too.
    static func asciiVisibility(_ bytes: Span<UInt8>) -> ASCIIVisibility {
        for i in bytes.indices {
            let b = bytes[i]
            switch b {
            case 0x09...0x0D, 0x20: continue
            case 0x21...0x7E where b != UInt8(ascii: "\\"): return .visible
            default: return .undecided
            }
        }
        return .blank
    }

    /// The verdict of ``asciiVisibility(_:)``.
    enum ASCIIVisibility { case visible, blank, undecided }

    /// A short, quoted excerpt of `s` for a reason.
    public static func excerpt(_ s: String) -> String {
        let shown = s.count > 40 ? String(s.prefix(37)) + "..." : s
        return "'\(shown)'"
    }

    static func sendingWrongType(_ name: String, _ expected: String, _ got: JSONValue) -> FormatError {
        FormatError(.invalidPlaintext, "\(name) must be \(expected), got \(got.typeName)")
    }

    static func sendingString(_ v: JSONValue, _ name: String) throws -> String {
        guard case .string(let s) = v else { throw sendingWrongType(name, "a string", v) }
        return s
    }

    /// Reads a time member (`iat`, `exp`, a sender's `ttl`): an integer number of seconds, not negative.
    /// - Throws: `FormatError` `.invalidPlaintext`.
    public static func sendingTime(_ v: JSONValue, _ name: String) throws -> Int64 {
        guard case .integer(let i) = v else { throw sendingWrongType(name, "an integer (seconds)", v) }
        guard i >= 0 else { throw FormatError(.invalidPlaintext, "\(name) must not be negative, got \(i)") }
        return i
    }

    private static func invalidPlaintext<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as FormatError {
            throw FormatError(.invalidPlaintext, e.reason)
        }
    }

    private static func notALocale(_ tag: String) -> FormatError {
        FormatError(.invalidPlaintext, "localizations: \(excerpt(tag)) is not a locale tag (1-35 of A-Z a-z 0-9 - _)")
    }

    /// Reads `media` by the receiver's rules (`MediaDescriptor(json:)`: an http(s) URL, 64 hex
    /// digits, base64 of 32 bytes) plus the sender's: no control characters in the URL (the
    /// Python reference refuses a line break after `://`), a URL that parses with a host, a
    /// `type` that ``isValidMediaType(_:)`` accepts; unknown members refused.
    static func sendingMedia(_ v: JSONValue) throws -> MediaDescriptor {
        guard case .object(let o) = v else { throw sendingWrongType("media", "an object", v) }
        for m in o where !["url", "type", "sha256", "key"].contains(m.key) {
            throw FormatError(.invalidPlaintext, "unknown member media.\(m.key) (known: url, type, sha256, key)")
        }
        let media = try invalidPlaintext { try MediaDescriptor(json: v) }
        if let problem = mediaURLProblem(media.url) {
            throw FormatError(.invalidPlaintext, "media.url: expected an absolute https:// or http:// URL, got one \(problem)")
        }
        if let t = media.type, !isValidMediaType(t) {
            throw FormatError(.invalidPlaintext, "media.type: expected a MIME type type/subtype of token characters such as image/jpeg, got \(excerpt(t))")
        }
        return media
    }

    /// Whether `url` is a media URL a sender seals: an absolute `https://` or `http://` URL
    /// (scheme in any case) as receivers read it (`MediaDescriptor(json:)`), without ASCII
    /// control characters, that parses as a URL with a host (what the extension's downloader
    /// needs). Plain `http://` to any host is sealed: whether the device may fetch it is the
    /// app's App Transport Security setting.
    public static func isValidMediaURL(_ url: String) -> Bool {
        (try? MediaDescriptor(json: .object(["url": .string(url)]))) != nil && mediaURLProblem(url) == nil
    }

    /// Why a media URL that passed the receiver's prefix rule cannot be fetched ("with a
    /// control character", "that does not parse", "without a host"), or `nil`.
    static func mediaURLProblem(_ url: String) -> String? {
        if url.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) { return "with a control character" }
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "https" || scheme == "http" else {
            return "that does not parse"
        }
        guard let host = parsed.host, !host.isEmpty else { return "without a host" }
        return nil
    }

    /// Whether `type` is a MIME type a sender seals: `type/subtype`, each 1–127 token
    /// characters (RFC 9110 §5.6.2: `A-Z a-z 0-9 ! # $ % & ' * + - . ^ _ ` | ~`), no parameters;
    /// e.g. `image/jpeg`, `video/mp4`, `application/octet-stream`.
    public static func isValidMediaType(_ type: String) -> Bool {
        let parts = type.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard parts.count == 2 else { return false }
        let punctuation = Array("!#$%&'*+-.^_`|~".utf8)
        return parts.allSatisfy { part in
            (1...127).contains(part.count) && part.allSatisfy { c in
                (c | 0x20) &- 0x61 < 26 || c &- 0x30 < 10 || punctuation.contains(c)
            }
        }
    }

    /// Reads the sealed `aps` (``PresentationFields``) by the receiver's rules plus the sender's:
    /// unknown members refused, non-empty strings. Also the rule for the same members in a
    /// sender's clear `aps` (a `push-seal batch` line's `aps`).
    /// - Throws: `FormatError` `.invalidPlaintext` naming the member (`aps.sound.volume: …`).
    public static func sendingPresentation(_ v: JSONValue) throws -> PresentationFields {
        guard case .object(let o) = v else { throw sendingWrongType("aps", "an object", v) }
        let known = ["thread-id", "category", "interruption-level", "sound"]
        for m in o where !known.contains(m.key) {
            throw FormatError(.invalidPlaintext, "unknown member aps.\(excerpt(m.key)) (known: \(known.joined(separator: ", ")); alert, badge and mutable-content stay in the clear aps)")
        }
        if case .object(let so)? = o["sound"] {
            for m in so where !["name", "critical", "volume"].contains(m.key) {
                throw FormatError(.invalidPlaintext, "unknown member aps.sound.\(excerpt(m.key)) (known: name, critical, volume)")
            }
        }
        let fields = try invalidPlaintext { try PresentationFields(json: v) }
        for (name, value) in [("thread-id", fields.threadID), ("category", fields.category)] where value?.isEmpty == true {
            throw FormatError(.invalidPlaintext, "aps.\(name) must not be empty")
        }
        return fields
    }

    /// Reads `localizations` by the receiver's rules (locale tags, `LocalizedContent(json:path:)`:
    /// title, subtitle, body strings, one non-empty); other members of a locale are refused.
    static func sendingLocalizations(_ v: JSONValue) throws -> [(locale: String, content: LocalizedContent)] {
        guard case .object(let o) = v else { throw sendingWrongType("localizations", "an object", v) }
        var out: [(locale: String, content: LocalizedContent)] = []
        out.reserveCapacity(o.count)
        for locale in o {
            guard WireFormat.isValidLocale(locale.key) else { throw notALocale(locale.key) }
            if case .object(let variant) = locale.value {
                for m in variant where !["title", "subtitle", "body"].contains(m.key) {
                    throw FormatError(.invalidPlaintext, "unknown member localizations.\(locale.key).\(m.key) (known: title, subtitle, body)")
                }
            }
            out.append((locale: locale.key, content: try invalidPlaintext { try LocalizedContent(json: locale.value, path: "localizations.\(locale.key)") }))
        }
        return out
    }

    /// The deepest `data` a sender seals: a receiver reads at most 64 levels
    /// (`JSONReader.Limits.default`), and the plaintext object is the first.
    public static let maxDataDepth = JSONReader.Limits.default.maxDepth - 1

    /// Reads `data`: an object, nested at most ``maxDataDepth`` levels (an object of scalars is
    /// one), with finite numbers only. A value parsed from JSON always passes the last two.
    static func sendingData(_ v: JSONValue) throws -> JSONObject {
        guard case .object(let d) = v else { throw sendingWrongType("data", "an object", v) }
        for m in d where reservedDataNames.contains(m.key) {
            throw FormatError(.invalidPlaintext, "data.\(m.key) is a reserved name (\(reservedDataNames.joined(separator: ", "))): the app reads sealed data from userInfo[\"pushseal\"], so rename the member")
        }
        try checkData(v, depth: 1)
        return d
    }

    /// Walks `v` (at nesting `depth`, 1 for `data` itself); recursion stops past ``maxDataDepth``.
    private static func checkData(_ v: JSONValue, depth: Int) throws {
        switch v {
        case .number(let x) where !x.isFinite:
            throw FormatError(.invalidPlaintext, "data: \(x) is not a JSON number (no NaN or infinity)")
        case .array, .object:
            guard depth <= maxDataDepth else {
                throw FormatError(.invalidPlaintext, "data: nested deeper than \(maxDataDepth) levels (a receiver reads at most \(maxDataDepth + 1), the plaintext object included)")
            }
            if case .array(let a) = v {
                for e in a { try checkData(e, depth: depth + 1) }
            } else if case .object(let o) = v {
                for m in o { try checkData(m.value, depth: depth + 1) }
            }
        default:
            break
        }
    }
}
