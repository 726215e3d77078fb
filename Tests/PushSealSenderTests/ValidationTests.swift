import PushSealTestSupport
import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
@testable import PushSealSender
import Testing

/// A notification built in code is refused exactly as the same notification in JSON, and the
/// sender never seals a plaintext the receivers (PushSealWire's `PushNotification` and
/// the Python reference) reject.
@Suite struct ValidationTests {
    /// The JSON spelling of `n`, members in the order of `Draft`.
    static func json(_ n: Draft) throws -> [UInt8] {
        var o = JSONObject()
        o["title"] = n.title.map(JSONValue.string)
        o["subtitle"] = n.subtitle.map(JSONValue.string)
        o["body"] = n.body.map(JSONValue.string)
        o["media"] = n.media?.jsonValue()
        o["localizations"] = n.localizations.map(JSONValue.object)
        o["data"] = n.data.map(JSONValue.object)
        o["iat"] = n.iat.map(JSONValue.integer)
        o["exp"] = n.exp.map(JSONValue.integer)
        o["ttl"] = n.ttlSeconds.map(JSONValue.integer)
        o["id"] = n.id.map(JSONValue.string)
        var w = JSONWriter()
        try w.write(o)
        return w.bytes
    }

    enum Outcome: Equatable, CustomStringConvertible {
        case sealed(plaintext: [UInt8], expiration: Int64?)
        case refused(SenderError.Code, String)

        var description: String {
            switch self {
            case .sealed(let p, let e): "sealed \(String(decoding: p, as: UTF8.self)) exp \(e.map(String.init) ?? "-")"
            case .refused(let c, let r): "refused \(c): \(r)"
            }
        }
    }

    /// Seals with `body`: the opened plaintext (padding trimmed) and `apns-expiration`, or the error.
    static func outcome(_ body: () throws -> SealedNotification) throws -> Outcome {
        do {
            let sealed = try body()
            var plain = try Fixture.open(sealed.payload)
            while plain.last == 0x20 { plain.removeLast() }
            return .sealed(plaintext: plain, expiration: sealed.headers.expiration)
        } catch let e as SenderError {
            return .refused(e.code, e.reason)
        }
    }

    /// The three ways in: the value, its JSON through `seal(notificationJSON:)` (scan path
    /// first), and its JSON read by `SealRequest(jsonBytes:)` and sealed as a value.
    static func outcomes(_ n: Draft, _ sealer: NotificationSealer) throws -> [Outcome] {
        let text = try json(n)
        return [
            try outcome { try sealer.seal(n.request(), for: "alice") },
            try outcome { try sealer.seal(notificationJSON: text, for: "alice") },
            try outcome { try sealer.seal(SealRequest(jsonBytes: text), for: "alice") },
        ]
    }

    static let maxTime = WireFormat.maxTimeSeconds

    /// Each value the review found sealed by the value path, and its neighbours: refused on
    /// every path with the same code and the same reason.
    static let refused: [(name: String, notification: Draft, reason: String)] = {
        let t = "T"
        var cases: [(String, Draft, String)] = []
        for url in ["garbage", "not a url", "", "ftp://x/y", "javascript:alert(1)", "file:///etc/passwd", "https://", "http://x"] {
            cases.append(("media.url \(url)", Draft(title: t, media: MediaDescriptor(url: url)), "media.url: expected an absolute https:// or http:// URL"))
        }
        cases.append(("media.url line break", Draft(title: t, media: MediaDescriptor(url: "https://\ncdn.example.com/a.jpg")), "media.url: expected an absolute https:// or http:// URL, got one with a control character"))
        // Past the receiver's prefix rule, but the downloader could not fetch them.
        for (url, why) in [("https:///a", "without a host"), ("https://[::1/a", "that does not parse"), ("http:///x.jpg", "without a host"),
                           ("https://?q=1", "without a host")] {
            cases.append(("media.url \(url)", Draft(title: t, media: MediaDescriptor(url: url)),
                          "media.url: expected an absolute https:// or http:// URL, got one \(why)"))
        }
        for type in ["bad type", "image", "image/", "/jpeg", "image/jpeg/x", "image/jpeg; q=1", "imäge/jpeg"] {
            cases.append(("media.type \(type)", Draft(title: t, media: MediaDescriptor(url: "https://cdn.example.com/a", type: type)), "media.type: expected a MIME type"))
        }
        cases.append(("media.sha256 31 bytes", Draft(title: t, media: MediaDescriptor(url: "https://cdn.example.com/a", sha256: Array(repeating: 7, count: 31))),
                      "media.sha256: expected 64 hexadecimal digits, got 62 characters"))
        cases.append(("media.key 16 bytes", Draft(title: t, media: MediaDescriptor(url: "https://cdn.example.com/a", key: SecretBytes(copying: Array(0..<16)))),
                      "media.key: expected base64 of 32 bytes, got 16 bytes"))
        let fr: JSONValue = .object(["title": .string("Titre")])
        for tag in ["!!", "", String(repeating: "a", count: 36), "pt BR", "fr/"] {
            cases.append(("locale \(tag)", Draft(title: t, localizations: [tag: fr]), "is not a locale tag"))
        }
        cases.append(("locale value a string", Draft(title: t, localizations: ["fr": .string("Titre")]), "localizations.fr: expected an object, got string"))
        cases.append(("locale without text", Draft(title: t, localizations: ["fr": .object(["title": .string("")])]), "localizations.fr: needs a non-empty title, subtitle or body"))
        cases.append(("locale title a number", Draft(title: t, localizations: ["fr": .object(["title": .integer(5)])]), "localizations.fr.title: expected a string, got integer"))
        cases.append(("locale unknown member", Draft(title: t, localizations: ["fr": .object(["title": .string("x"), "sound": .string("y")])]), "unknown member localizations.fr.sound"))
        cases.append(("iat -5", Draft(title: t, iat: -5), "iat must not be negative, got -5"))
        cases.append(("exp -5", Draft(title: t, exp: -5), "exp must not be negative, got -5"))
        cases.append(("ttl -5", Draft(title: t, ttlSeconds: -5), "ttl must not be negative, got -5"))
        cases.append(("iat after 9999", Draft(title: t, iat: maxTime + 1), "iat 253402300800 is after 9999-12-31T23:59:59Z (253402300799)"))
        cases.append(("exp after 9999", Draft(title: t, exp: maxTime + 1), "exp 253402300800 is after 9999-12-31T23:59:59Z (253402300799)"))
        cases.append(("exp Int64.max", Draft(title: t, exp: .max), "exp 9223372036854775807 is after 9999-12-31T23:59:59Z"))
        cases.append(("exp before iat", Draft(title: t, iat: 2_000, exp: 1_999), "exp 1999 is earlier than iat 2000"))
        cases.append(("exp before the seal time", Draft(title: t, exp: Fixture.now - 1), "exp \(Fixture.now - 1) is earlier than iat \(Fixture.now)"))
        cases.append(("exp and ttl", Draft(title: t, exp: Fixture.now + 5, ttlSeconds: 5), "give either exp or ttl, not both"))
        cases.append(("ttl Int64.max", Draft(title: t, ttlSeconds: .max), "ttl 9223372036854775807 seconds is too large: exp would be after 9999-12-31T23:59:59Z"))
        cases.append(("ttl one past 9999", Draft(title: t, ttlSeconds: maxTime - Fixture.now + 1), "is too large: exp would be after 9999-12-31T23:59:59Z"))
        return cases
    }()

    @Test(arguments: refused.indices)
    func valueAndJSONAreRefusedAlike(_ i: Int) throws {
        let (name, n, reason) = Self.refused[i]
        let results = try Self.outcomes(n, try Fixture.sealer())
        for r in results {
            guard case .refused(let code, let text) = r else {
                Issue.record("\(name): sealed on one path: \(r)")
                continue
            }
            #expect(code == .invalidNotification, "\(name): \(r)")
            #expect(text.contains(reason), "\(name): \(text)")
        }
        #expect(results[1] == results[0] && results[2] == results[0], "\(name): \(results)")
        // validate() alone refuses it too, except what only the seal time decides (the exp a
        // TTL gives, an exp before the default iat).
        let atSealOnly = ["exp before the seal time", "ttl Int64.max", "ttl one past 9999"].contains(name)
        do {
            try n.request().validate()
            #expect(atSealOnly, "\(name): validate() passed")
        } catch let e as SenderError {
            #expect(!atSealOnly && .refused(e.code, e.reason) == results[0], "\(name): \(e)")
        }
    }

    @Test func theBoundsThemselvesSealAndOpen() throws {
        // No generated ids: the three ways in are compared plaintext for plaintext.
        let sealer = try Fixture.sealer(SealOptions(generatesIDs: false))
        let maxTime = Self.maxTime
        let accepted = [
            Draft(title: "T", iat: maxTime, exp: maxTime),
            Draft(title: "T", iat: 0, exp: 0),
            Draft(title: "T", exp: Fixture.now),
            Draft(title: "T", ttlSeconds: maxTime - Fixture.now),
            Draft(title: "T", ttlSeconds: 0),
            Draft(title: "T", media: MediaDescriptor(url: "HTTPS://CDN.example.com/a b.jpg", type: "application/vnd.example+json")),
            Draft(title: "T", media: MediaDescriptor(url: "http://127.0.0.1:8080/a", type: "image/jpeg", sha256: Array(repeating: 0xAB, count: 32), key: SecretBytes(copying: Array(0..<32)))),
            Draft(title: "T", localizations: ["pt_BR": .object(["body": .string("Olá")]), String(repeating: "z", count: 35): .object(["subtitle": .string("s")])]),
        ]
        for n in accepted {
            let results = try Self.outcomes(n, sealer)
            guard case .sealed(let plain, let expiration) = results[0] else {
                Issue.record("refused: \(results[0])")
                continue
            }
            #expect(results[1] == results[0] && results[2] == results[0], "\(results)")
            let opened = try PushNotification(jsonBytes: plain)
            // A ttl of 0 is apns-expiration 0 with a sealed exp of iat + 60 s.
            #expect(expiration == opened.exp || (expiration == 0 && opened.exp == opened.iat.map { $0 + SealOptions.immediateTTLSeconds }))
            #expect(opened.exp.map { $0 <= maxTime && $0 >= (opened.iat ?? 0) } != false)
        }
        let latest = try sealer.seal(Draft(title: "T", exp: maxTime), for: "alice")
        #expect(latest.headers.fields.first { $0.name == "apns-expiration" }?.value == "253402300799")
    }

    @Test func dataIsBoundedByTheReceiversDepthAndFiniteNumbers() throws {
        let sealer = try Fixture.sealer()
        func nested(_ levels: Int) -> JSONObject {
            var v: JSONValue = .integer(1)
            for _ in 0..<(levels - 1) { v = .array([v]) }
            return ["deep": v]
        }
        // 63 levels of data under the plaintext object: 64 in all, the receiver's limit.
        let deepest = try sealer.seal(Draft(title: "T", data: nested(63)), for: "alice")
        #expect(try PushNotification(jsonBytes: Fixture.open(deepest.payload)).data == nested(63))
        #expect(throws: SenderError(.invalidNotification, "")) { try sealer.seal(Draft(title: "T", data: nested(64)), for: "alice") }
        // The receiver indeed refuses that plaintext.
        var w = JSONWriter()
        try w.write(["title": .string("T"), "data": .object(nested(64))])
        #expect(throws: FormatError(.invalidPlaintext, "")) { try PushNotification(jsonBytes: w.bytes) }
        for x in [Double.nan, .infinity, -.infinity] {
            do {
                _ = try sealer.seal(Draft(title: "T", data: ["x": .array([.number(x)])]), for: "alice")
                Issue.record("\(x) was sealed")
            } catch let e as SenderError {
                #expect(e.code == .invalidNotification)
                #expect(e.reason.hasPrefix("data: "), "\(e.reason)")
            }
        }
    }

    /// Random notifications from a pool of good and bad member values: every path gives the
    /// same outcome, and whatever is sealed opens with both receivers (PushSealWire's reader
    /// and the Python reference).
    @Test func randomMembersAgreeAcrossPathsAndSealOnlyWhatReceiversAccept() throws {
        let sealer = try Fixture.sealer(SealOptions(fit: true))
        let maxTime = Self.maxTime
        // Each member: a bad value one time in six, else a good one (nil included).
        func pick<T>(_ good: [T?], _ bad: [T?], _ rng: inout SeededGenerator) -> T? {
            let pool = Int.random(in: 0..<6, using: &rng) == 0 ? bad : good
            return pool.randomElement(using: &rng) ?? nil
        }
        let goodMedia: [MediaDescriptor?] = [
            nil, nil, MediaDescriptor(url: "https://cdn.example.com/a.jpg", type: "image/jpeg"),
            MediaDescriptor(url: "https://x/p", type: "image/png", sha256: Array(repeating: 1, count: 32), key: SecretBytes(copying: Array(0..<32))),
        ]
        let badMedia: [MediaDescriptor?] = [
            MediaDescriptor(url: "not a url"), MediaDescriptor(url: "ftp://x/y"), MediaDescriptor(url: "https://x/y", type: "bad type"),
            MediaDescriptor(url: "https://x/y", key: SecretBytes(copying: Array(0..<31))), MediaDescriptor(url: "https://x/y", sha256: [1]),
        ]
        let goodLocalizations: [JSONObject?] = [nil, nil, ["fr": .object(["title": .string("Titre")]), "pt-BR": .object(["body": .string("Olá")])]]
        let badLocalizations: [JSONObject?] = [
            ["!!": .object(["title": .string("x")])], ["de": .object(["body": .string("")])], ["en": .null], ["es": .object(["body": .array([])])],
        ]
        let goodData: [JSONObject?] = [nil, ["k": .array([.integer(1), .number(2.5), .null, .bool(true)])], ["n": .object([:])]]
        let goodIATs: [Int64?] = [nil, nil, 0, Fixture.now - 60, Fixture.now]
        let badIATs: [Int64?] = [maxTime + 1, -1, .max]
        let goodExps: [Int64?] = [nil, nil, Fixture.now, Fixture.now + 3600, maxTime]
        let badExps: [Int64?] = [Fixture.now - 1, maxTime + 1, .max, -1]
        let goodTTLs: [Int64?] = [nil, nil, nil, 0, 3600, maxTime - Fixture.now]
        let badTTLs: [Int64?] = [maxTime - Fixture.now + 1, .max, -1]
        var rng = SeededGenerator(seed: 5)
        var lines: [UInt8] = []
        var sealedCount = 0
        var refusedCount = 0
        for i in 0..<400 {
            let n = Draft(
                title: "n\(i)", body: i % 2 == 0 ? randomString(&rng) : nil,
                media: pick(goodMedia, badMedia, &rng), localizations: pick(goodLocalizations, badLocalizations, &rng),
                data: goodData.randomElement(using: &rng) ?? nil, iat: pick(goodIATs, badIATs, &rng),
                exp: pick(goodExps, badExps, &rng), ttlSeconds: pick(goodTTLs, badTTLs, &rng), id: "id-\(i)")
            let results = try Self.outcomes(n, sealer)
            #expect(results[1] == results[0] && results[2] == results[0], "notification \(i): \(results)")
            switch results[0] {
            case .refused(let code, _):
                #expect(code == .invalidNotification, "notification \(i): \(results[0])")
                refusedCount += 1
            case .sealed(let plain, _):
                sealedCount += 1
                #expect(throws: Never.self, "notification \(i)") { try PushNotification(jsonBytes: plain) }
                let payload = try sealer.seal(n.request(), for: "alice").payload
                lines += Array("{\"payload\":".utf8) + payload + Array(",\"expect\":{}}\n".utf8)
            }
        }
        #expect(sealedCount > 20 && refusedCount > 20, "sealed \(sealedCount), refused \(refusedCount)")
        let file = try Fixture.temporaryFile(lines)
        defer { try? FileManager.default.removeItem(at: file) }
        guard let ref = try Fixture.referenceOpen(file) else {
            Issue.record("Tests/Interop/pushseal_ref.py or python3 cryptography is missing: run 'make deps'")
            return
        }
        #expect(ref.status == 0)
        #expect(ref.out.trimmingCharacters(in: .whitespacesAndNewlines) == "\(sealedCount) 0")
    }

    @Test func sealerOptionsAreBoundedToo() throws {
        let maxTime = Self.maxTime
        // A default TTL is an option: too large is .invalidOption (push-seal --ttl: exit 64).
        _ = try Fixture.sealer(SealOptions(defaultTTLSeconds: maxTime - Fixture.now))
        for ttl in [maxTime - Fixture.now + 1, Int64.max] {
            do {
                _ = try Fixture.sealer(SealOptions(defaultTTLSeconds: ttl))
                Issue.record("default ttl \(ttl) accepted")
            } catch let e as SenderError {
                #expect(e.code == .invalidOption)
                #expect(e.reason == "ttl \(ttl) seconds is too large: exp would be after 9999-12-31T23:59:59Z (253402300799)")
            }
        }
        // The app id is bound into the AAD: it must be one a receiver accepts (FORMAT.md §3.2).
        for appID in ["bad app", "com.example|x", "com.é.app", String(repeating: "a", count: 256)] {
            #expect(throws: SenderError(.invalidOption, ""), "\(appID)") {
                try NotificationSealer(appID: appID, keys: Fixture.keys)
            }
        }
    }

    @Test func aClearPartOverBudgetIsNamedAndNotBlamedOnTheText() throws {
        let big = String(repeating: "a", count: 5000)
        let cases: [(SealOptions, String)] = [
            (SealOptions(fallback: FallbackAlert(title: big)), "the fallback title alone is 5000 bytes"),
            (SealOptions(fallback: FallbackAlert(body: big)), "the fallback body alone is 5000 bytes"),
            (SealOptions(aps: APSFields(sound: big)), "aps.sound alone is 5000 bytes"),
            (SealOptions(aps: APSFields(threadID: "t", category: big)), "aps.category alone is 5000 bytes"),
        ]
        for (options, named) in cases {
            for fit in [false, true] {
                var o = options
                o.fit = fit
                let sealer = try Fixture.sealer(o)
                for n in [Draft(title: "T"), Draft(title: "T", body: String(repeating: "b", count: 3000))] {
                    do {
                        _ = try sealer.seal(n.request(), for: "alice")
                        Issue.record("sealed with \(named)")
                    } catch let e as SenderError {
                        #expect(e.code == .clearPartTooLarge, "\(e.reason)")
                        #expect((e.payloadByteCount ?? 0) > SealOptions.maxPayloadByteCount, "the clear part's size travels in the error")
                        #expect(e.reason.contains(named), "\(e.reason)")
                        #expect(e.reason.contains("before any sealed content, APNs allows 4096"), "\(e.reason)")
                    }
                }
            }
        }
        // A large clear part that still leaves room is not this error: the text is what to cut.
        let roomy = try Fixture.sealer(SealOptions(fallback: FallbackAlert(title: String(repeating: "a", count: 3000)), fit: true))
        #expect(throws: SenderError(.cannotFit, "")) { try roomy.seal(Draft(title: String(repeating: "t", count: 2000)), for: "alice") }
        let fitted = try roomy.seal(Draft(title: "T", body: String(repeating: "b", count: 2000)), for: "alice")
        #expect(fitted.payload.count <= 4096)
    }

    @Test func mediaRulesAndTheMediaSealer() throws {
        for good in ["image/jpeg", "video/mp4", "application/octet-stream", "application/vnd.example+json", "x-a/x.b_c!#$%&'*^`|~"] {
            #expect(PushNotification.isValidMediaType(good), "\(good)")
        }
        for bad in ["", "image", "image/", "/jpeg", "image/jpeg/x", "image/jpeg; q=1", "image /jpeg", "imäge/jpeg", "image/jp\"eg",
                    String(repeating: "a", count: 128) + "/b"] {
            #expect(!PushNotification.isValidMediaType(bad), "\(bad)")
        }
        for good in ["https://cdn.example.com/a.jpg", "HTTP://127.0.0.1:8080/x", "https://x/a b"] {
            #expect(PushNotification.isValidMediaURL(good), "\(good)")
        }
        for bad in ["", "not a url", "ftp://x/y", "javascript:alert(1)", "file:///etc/passwd", "https://", "http://x", "https://x/\u{7F}", "https://x\t/"] {
            #expect(!PushNotification.isValidMediaURL(bad), "\(bad)")
        }
        // The media sealer writes only descriptors the sealer accepts (an empty url is filled in later).
        let file: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]
        #expect(try MediaSealer.seal(file, url: "").media.url == "")
        let sealed = try MediaSealer.seal(file, url: "https://cdn.example.com/p.png.sealed", type: "image/png")
        _ = try Fixture.sealer().seal(Draft(title: "T", media: sealed.media), for: "alice")
        #expect(throws: SenderError(.invalidMedia, "")) { try MediaSealer.seal(file, url: "not a url") }
        #expect(throws: SenderError(.invalidMedia, "")) { try MediaSealer.seal(file, url: "https://x/y", type: "bad type") }
    }
}

/// A notification as a test writes it, in the shape of the JSON form (localizations as JSON, so
/// a test can also spell locales a typed value cannot hold), turned into a `SealRequest` built in
/// code (``request()``) or into JSON (`ValidationTests.json`).
struct Draft {
    var title: String?
    var subtitle: String?
    var body: String?
    var media: MediaDescriptor?
    var localizations: JSONObject?
    var data: JSONObject?
    var iat: Int64?
    var exp: Int64?
    var ttlSeconds: Int64?
    var id: String?

    init(title: String? = nil, subtitle: String? = nil, body: String? = nil, media: MediaDescriptor? = nil,
         localizations: JSONObject? = nil, data: JSONObject? = nil, iat: Int64? = nil, exp: Int64? = nil,
         ttlSeconds: Int64? = nil, id: String? = nil) {
        (self.title, self.subtitle, self.body, self.media, self.localizations) = (title, subtitle, body, media, localizations)
        (self.data, self.iat, self.exp, self.ttlSeconds, self.id) = (data, iat, exp, ttlSeconds, id)
    }

    /// The value built in code. Localizations become typed content when each locale is an object
    /// of string `title`/`subtitle`/`body` members; a locale a value cannot hold (not an object,
    /// a non-string text, another member) exists only in JSON, so then the request is the JSON
    /// form read (which refuses it with the same reason).
    func request() throws -> SealRequest {
        var typed: [(locale: String, content: LocalizedContent)] = []
        for l in localizations ?? [:] {
            guard case .object(let o) = l.value, o.allSatisfy({ ["title", "subtitle", "body"].contains($0.key) && $0.value.stringValue != nil }) else {
                return try SealRequest(jsonBytes: ValidationTests.json(self))
            }
            typed.append((locale: l.key, content: LocalizedContent(title: o["title"]?.stringValue, subtitle: o["subtitle"]?.stringValue, body: o["body"]?.stringValue)))
        }
        return SealRequest(PushNotification(title: title, subtitle: subtitle, body: body, media: media, localizations: typed,
                                        data: data, iat: iat, exp: exp, id: id), ttlSeconds: ttlSeconds)
    }
}

extension NotificationSealer {
    /// Seals the value a draft describes (see ``Draft/request()``).
    func seal(_ draft: Draft, for recipient: String) throws -> SealedNotification { try seal(draft.request(), for: recipient) }
}
