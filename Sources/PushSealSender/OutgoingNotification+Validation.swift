import PushSealJSON
import Foundation
import PushSealWire

// The member rules of a notification, one function per rule, shared by every way in: the JSON
// form (`init(json:)`), the scan path (`ScannedNotification`) and a value built in code
// (`validate()`, run by `NotificationSealer.seal(_:for:)`). They are the receiver's rules
// (PushSealWire's `NotificationPlaintext(json:)`, FORMAT.md §5, and the Python reference in
// Tests/Interop) plus a few the sender adds, so the sender never seals what a device rejects.
extension OutgoingNotification {
    /// The latest `iat` or `exp` the sender seals, in seconds since 1970 UTC: 253402300799,
    /// 9999-12-31T23:59:59Z (the last second with a four-digit year) — the wire format's bound,
    /// `WireFormat.maxTimeSeconds`. A `ttl` must keep `exp` at or before it; it is also the
    /// largest `apns-expiration` sent.
    public static let maxTimeSeconds: Int64 = WireFormat.maxTimeSeconds

    /// ``maxTimeSeconds`` as people read it, for error messages.
    static let maxTimeText = WireFormat.maxTimeText

    /// Checks a notification built in code by the rules of the JSON form: every member goes
    /// through the same reader ``init(json:)`` uses, on its JSON spelling, then the times
    /// together (``checkTimes(iat:exp:ttlSeconds:)``), so both give the same error code and
    /// reason for the same value (for the JSON form with its members in the order of
    /// ``memberNames``).
    ///
    /// Checked: `media` as a receiver reads it (absolute `https://` or `http://` URL without
    /// control characters, ``isValidMediaType(_:)``, a 32-byte `sha256` and `key`);
    /// `localizations` keys are locale tags and each value an object of `title`, `subtitle`,
    /// `body` strings, one non-empty; `data` nested at most 63 levels, with finite numbers;
    /// `iat`, `exp`, `ttlSeconds` not negative, not both `exp` and `ttlSeconds`, `iat` and `exp`
    /// at most ``maxTimeSeconds``, `exp` not before `iat`. Not checked here
    /// (``NotificationSealer`` does, at the seal): a non-empty title, subtitle or body; the
    /// `iat` and `exp` a seal time and a TTL give.
    /// - Throws: `SenderError` `.invalidNotification` naming the member.
    public func validate() throws {
        if let media { _ = try Self.media(media.jsonValue()) }
        if let localizations { _ = try Self.localizations(.object(localizations)) }
        if let data { _ = try Self.data(.object(data)) }
        for (name, t) in [("iat", iat), ("exp", exp), ("ttl", ttlSeconds)] {
            if let t { _ = try Self.time(.integer(t), name) }
        }
        try Self.checkTimes(iat: iat, exp: exp, ttlSeconds: ttlSeconds)
    }

    /// Reads a time member (`iat`, `exp`, `ttl`): an integer number of seconds, not negative.
    static func time(_ v: JSONValue, _ name: String) throws -> Int64 {
        guard case .integer(let i) = v else { throw wrongType(name, "an integer (seconds)", v) }
        guard i >= 0 else { throw SenderError(.invalidNotification, "\(name) must not be negative, got \(i)") }
        return i
    }

    /// Checks the times together: not both `exp` and a TTL, `iat` and `exp` each at most
    /// ``maxTimeSeconds``, and `exp` not before `iat` (a notification that is expired when
    /// sealed only ever shows the fallback alert). Run on the members as given (by
    /// ``init(json:)``, ``validate()`` and the sealer, for every path) and again by the sealer on
    /// the times it seals (`iat` defaulted to the seal time, `exp` from a TTL).
    static func checkTimes(iat: Int64?, exp: Int64?, ttlSeconds: Int64?) throws {
        guard exp == nil || ttlSeconds == nil else {
            throw SenderError(.invalidNotification, "give either exp or ttl, not both")
        }
        // Two plain checks, no array: this runs twice on every seal.
        func tooLate(_ name: String, _ t: Int64) -> SenderError {
            SenderError(.invalidNotification, "\(name) \(t) is after \(maxTimeText), the latest time the sender seals")
        }
        if let iat, iat > maxTimeSeconds { throw tooLate("iat", iat) }
        if let exp, exp > maxTimeSeconds { throw tooLate("exp", exp) }
        if let iat, let exp, exp < iat {
            throw SenderError(.invalidNotification, "exp \(exp) is earlier than iat \(iat) (the seal time unless given): the notification would arrive expired")
        }
    }

    /// `now + ttlSeconds`, or `nil` when that is after ``maxTimeSeconds`` (or overflows).
    static func expiry(now: Int64, ttlSeconds: Int64) -> Int64? {
        let (e, overflow) = now.addingReportingOverflow(ttlSeconds)
        return overflow || e > maxTimeSeconds ? nil : e
    }

    /// The reason for a TTL that ``expiry(now:ttlSeconds:)`` refuses.
    static func ttlTooLarge(_ ttlSeconds: Int64) -> String {
        "ttl \(ttlSeconds) seconds is too large: exp would be after \(maxTimeText)"
    }

    /// Reads `media` by the receiver's rules (`MediaDescriptor(json:)`: an http(s) URL, 64 hex
    /// digits, base64 of 32 bytes), so the sender never seals what a device rejects, plus the
    /// sender's own: no control characters in the URL (the Python reference refuses a line
    /// break after `://`), a `type` that ``isValidMediaType(_:)`` accepts. Unknown members are
    /// refused here (the receiver would ignore them).
    static func media(_ v: JSONValue) throws -> MediaDescriptor {
        guard case .object(let o) = v else { throw wrongType("media", "an object", v) }
        for m in o where !["url", "type", "sha256", "key"].contains(m.key) {
            throw SenderError(.invalidNotification, "unknown member media.\(m.key) (known: url, type, sha256, key)")
        }
        let media: MediaDescriptor
        do {
            media = try MediaDescriptor(json: v)
        } catch let e as FormatError {
            throw SenderError(.invalidNotification, e.reason)
        }
        if let problem = mediaURLProblem(media.url) {
            throw SenderError(.invalidNotification, "media.url: expected an absolute https:// or http:// URL, got one \(problem)")
        }
        if let t = media.type, !isValidMediaType(t) {
            throw SenderError(.invalidNotification, "media.type: expected a MIME type type/subtype of token characters such as image/jpeg, got \(excerpt(t))")
        }
        return media
    }

    /// Whether `url` is a media URL the sender seals: an absolute `https://` or `http://` URL
    /// (scheme in any case) as receivers read it (`MediaDescriptor(json:)`), without ASCII
    /// control characters, that parses as a URL with a host (what the extension's downloader
    /// needs: `https:///a` or `https://[::1/a` would reach the device only to be refused).
    /// `push-seal media --url` checks its flag with it. Plain `http://` to any host is sealed:
    /// whether the device may fetch it is the app's App Transport Security setting.
    public static func isValidMediaURL(_ url: String) -> Bool {
        (try? MediaDescriptor(json: .object(["url": .string(url)]))) != nil && mediaURLProblem(url) == nil
    }

    /// Why a media URL that passed the receiver's prefix rule cannot be fetched ("with a
    /// control character", "that does not parse", "without a host"), or `nil`.
    static func mediaURLProblem(_ url: String) -> String? {
        if hasControlCharacter(url) { return "with a control character" }
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "https" || scheme == "http" else {
            return "that does not parse"
        }
        guard let host = parsed.host, !host.isEmpty else { return "without a host" }
        return nil
    }

    /// Whether `type` is a MIME type the sender seals: `type/subtype`, each 1–127 token
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

    static func hasControlCharacter(_ s: String) -> Bool {
        s.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    /// Reads `localizations` by the receiver's rules (locale tags, `LocalizedContent(json:path:)`:
    /// title, subtitle, body strings, one non-empty); other members of a locale are refused.
    static func localizations(_ v: JSONValue) throws -> JSONObject {
        guard case .object(let o) = v else { throw wrongType("localizations", "an object", v) }
        for locale in o {
            guard WireFormat.isValidLocale(locale.key) else {
                throw SenderError(.invalidNotification, "localizations: \(excerpt(locale.key)) is not a locale tag (1-35 of A-Z a-z 0-9 - _)")
            }
            if case .object(let variant) = locale.value {
                for m in variant where !["title", "subtitle", "body"].contains(m.key) {
                    throw SenderError(.invalidNotification, "unknown member localizations.\(locale.key).\(m.key) (known: title, subtitle, body)")
                }
            }
            do {
                _ = try LocalizedContent(json: locale.value, path: "localizations.\(locale.key)")
            } catch let e as FormatError {
                throw SenderError(.invalidNotification, e.reason)
            }
        }
        return o
    }

    /// The deepest `data` the sender seals: a receiver reads at most 64 levels
    /// (`JSONReader.Limits.default`), and the plaintext object is the first.
    static let maxDataDepth = JSONReader.Limits.default.maxDepth - 1

    /// Reads `data`: an object, nested at most ``maxDataDepth`` levels (an object of scalars is
    /// one), with finite numbers only (JSON has no NaN or infinity). A value parsed from JSON
    /// always passes the last two; one built in code may not.
    static func data(_ v: JSONValue) throws -> JSONObject {
        guard case .object(let d) = v else { throw wrongType("data", "an object", v) }
        try checkData(v, depth: 1)
        return d
    }

    /// Walks `v` (at nesting `depth`, 1 for `data` itself); recursion stops past ``maxDataDepth``.
    private static func checkData(_ v: JSONValue, depth: Int) throws {
        switch v {
        case .number(let x) where !x.isFinite:
            throw SenderError(.invalidNotification, "data: \(x) is not a JSON number (no NaN or infinity)")
        case .array, .object:
            guard depth <= maxDataDepth else {
                throw SenderError(.invalidNotification, "data: nested deeper than \(maxDataDepth) levels (a receiver reads at most \(maxDataDepth + 1), the plaintext object included)")
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
