import PushSealTestSupport
import PushSealJSON
import Foundation
import PushSealWire
@testable import PushSealSender
import Testing

/// The scan path (text copied from the input) writes exactly the plaintext the tree path writes,
/// and gives up on everything the tree path rejects.
@Suite struct ScanPathTests {
    /// A random notification in JSON: members in random order, strings over every plane, some
    /// written with needless escapes, random whitespace.
    static func randomNotification(_ rng: inout SeededGenerator) -> [UInt8] {
        func literal(_ s: String) -> String {
            var w = PayloadWriter()
            w.string(s)
            var text = String(decoding: w.bytes, as: UTF8.self)
            if Int.random(in: 0..<4, using: &rng) == 0 { text = text.replacingOccurrences(of: "/", with: "\\/") }
            if Int.random(in: 0..<4, using: &rng) == 0 { text = text.replacingOccurrences(of: "Z", with: "\\u005A") }
            return text
        }
        var members: [String] = []
        for name in ["title", "subtitle", "body", "id"] where Int.random(in: 0..<3, using: &rng) > 0 {
            members.append("\"\(name)\":" + literal((name == "body" ? "Z" : "") + randomString(&rng, maxLength: 80)))
        }
        if !members.contains(where: { $0.hasPrefix("\"body\"") }) { members.append("\"body\":\"Zb\"") }
        // exp is never before iat (the seal time, Fixture.now, when iat is absent; a ttl counts
        // from the seal time): the sealer refuses that.
        let iat = Bool.random(using: &rng) ? Int64.random(in: 0...Fixture.now, using: &rng) : nil
        if let iat { members.append("\"iat\":\(iat)") }
        switch Int.random(in: 0..<3, using: &rng) {
        case 0:
            let earliest = iat ?? Fixture.now
            members.append("\"exp\":\(Int64.random(in: earliest...(earliest + 2_000_000_000), using: &rng))")
        case 1: members.append("\"ttl\":\(Int.random(in: 0...86_400, using: &rng))")
        default: break
        }
        if Int.random(in: 0..<4, using: &rng) == 0 { members.append("\"data\":{\"k\":[1,2.5,\"x/y\",null,true], \"n\":{}}") }
        if Int.random(in: 0..<4, using: &rng) == 0 { members.append("\"media\":{\"url\":\"https://cdn/x.jpg\",\"type\":\"image/jpeg\"}") }
        if Int.random(in: 0..<4, using: &rng) == 0 { members.append("\"localizations\":{\"fr\":{\"title\":\(literal("Dîner"))}}") }
        members.shuffle(using: &rng)
        let sep = Bool.random(using: &rng) ? ", " : ","
        return Array(("{" + members.joined(separator: sep) + "}").utf8)
    }

    static func plaintext(_ f: Wire.Fields) throws -> [UInt8] {
        var w = PayloadWriter()
        try Wire.writePlaintext(f, to: &w)
        return w.bytes
    }

    @Test func scanPathWritesTheTreePathsPlaintext() throws {
        var rng = SeededGenerator(seed: 11)
        for n in 0..<2000 {
            let json = Self.randomNotification(&rng)
            let tree = try OutgoingNotification(jsonBytes: json)
            let scanned = try json.withUnsafeBytes { raw -> ScannedNotification? in
                var s = try JSONReader.Scanner(raw)
                var r = ScannedNotification()
                let ok = ScannedNotification.scan(&s, into: &r)
                try s.finish()
                guard ok else { return nil }
                // Inside the closure: raw text members point into `json`.
                #expect(try Self.plaintext(r.fields) == Self.plaintext(tree.fields(body: tree.body, includeMedia: true)),
                        "notification \(n): \(String(decoding: json, as: UTF8.self))")
                return r
            }
            #expect(scanned != nil, "notification \(n) left the scan path: \(String(decoding: json, as: UTF8.self))")
            #expect(scanned?.ttlSeconds == tree.ttlSeconds)
        }
    }

    @Test func fullSealsAgreeAndOpen() throws {
        var rng = SeededGenerator(seed: 12)
        let sealer = try Fixture.sealer()
        for _ in 0..<300 {
            let json = Self.randomNotification(&rng)
            let a = try sealer.seal(notificationJSON: json, for: "alice")
            let b = try sealer.seal(OutgoingNotification(jsonBytes: json), for: "alice")
            #expect(try Fixture.open(a.payload) == Fixture.open(b.payload))
            #expect(a.headers == b.headers)
            #expect(a.payload.count == b.payload.count)
        }
    }

    @Test func memberNamesMapToTheirNumbersAndNothingElseDoes() {
        let known = ["title", "subtitle", "body", "media", "localizations", "data", "iat", "exp", "ttl", "id"]
        func member(_ name: String) -> Int? { Array(name.utf8).withUnsafeBytes { ScannedNotification.member($0) } }
        for (number, name) in known.enumerated() { #expect(member(name) == number, "\(name)") }
        // Same lengths, one byte off, other cases, prefixes, extensions, empty.
        for name in ["Title", "titlf", "subtitlE", "bodY", "datA", "medIa", "iaT", "exq", "ttL", "iD", "ix", "localisations",
                     "localizationS", "tit", "titles", "", "i", "xxxx", "xxxxx", "idid"] {
            #expect(member(name) == nil, "\(name)")
        }
    }

    @Test func givesUpOnWhatTheTreePathRejects() throws {
        let cases = [
            "{\"title\":1}", "{\"title\":\"a\",\"title\":\"b\"}", "{\"tit\\u006ce\":\"a\"}", "{\"nope\":1}", "{\"iat\":-1,\"title\":\"t\"}",
            "{\"exp\":1.5,\"title\":\"t\"}", "{\"data\":[],\"title\":\"t\"}", "{\"media\":{\"url\":\"\"},\"title\":\"t\"}", "[]", "\"x\"",
            "{\"localizations\":{\"fr\":{\"x\":\"y\"}},\"title\":\"t\"}",
            "{\"media\":{\"url\":\"ftp://cdn/x.jpg\"},\"title\":\"t\"}", "{\"localizations\":{\"f r\":{\"title\":\"x\"}},\"title\":\"t\"}",
            "{\"localizations\":{\"fr\":{\"title\":\"\"}},\"title\":\"t\"}", "{\"media\":{\"url\":\"https://cdn/x\",\"key\":\"!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!=\"},\"title\":\"t\"}",
        ]
        let sealer = try Fixture.sealer()
        for c in cases {
            let json = Array(c.utf8)
            let scanned = try json.withUnsafeBytes { raw -> Bool in
                var s = try JSONReader.Scanner(raw)
                var n = ScannedNotification()
                return ScannedNotification.scan(&s, into: &n) && (try? s.finish()) != nil
            }
            var treeError: SenderError?
            do { _ = try OutgoingNotification(jsonBytes: json) } catch let e as SenderError { treeError = e }
            // An escaped key is valid: only the scan path gives up on it.
            #expect(treeError != nil || c.contains("\\u006c"), "the tree path accepted \(c)")
            if treeError != nil { #expect(!scanned, "\(c)") }
            // Whatever the path, the full seal gives the tree path's error.
            var sealError: SenderError?
            do { _ = try sealer.seal(notificationJSON: json, for: "alice") } catch let e as SenderError { sealError = e }
            #expect(sealError?.code == treeError?.code, "\(c)")
            #expect(sealError?.reason == treeError?.reason, "\(c)")
        }
    }
}
