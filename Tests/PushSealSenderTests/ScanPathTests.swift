import PushSealTestSupport
import PushSealJSON
import Foundation
import PushSealWire
@testable import PushSealSender
import Testing

/// The scan path (the wire module's scanner) reads exactly the notification the tree path reads,
/// and gives up on everything the tree path rejects.
@Suite struct ScanPathTests {
    /// A random notification in JSON: members in random order, strings over every plane, some
    /// written with needless escapes, random whitespace.
    static func randomNotification(_ rng: inout SeededGenerator) -> [UInt8] {
        func literal(_ s: String) -> String {
            var w = JSONWriter()
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

    static func scan(_ json: [UInt8]) -> (notification: PushNotification, extra: Int64?)? {
        var n = PushNotification()
        var ttl: Int64?
        let scanned = json.withUnsafeBytes { raw -> Bool in
            guard var s = try? JSONReader.Scanner(raw) else { return false }
            return PushNotification.scan(&s, into: &n, otherMember: { try SealRequest.scanTTL($0, &$1, into: &ttl) }) && (try? s.finish()) != nil
        }
        return scanned ? (n, ttl) : nil
    }

    @Test func scanPathReadsTheTreePathsNotification() throws {
        var rng = SeededGenerator(seed: 11)
        for n in 0..<2000 {
            let json = Self.randomNotification(&rng)
            let tree = try SealRequest(jsonBytes: json)
            let scanned = Self.scan(json)
            #expect(scanned != nil, "notification \(n) left the scan path: \(String(decoding: json, as: UTF8.self))")
            #expect(scanned?.notification == tree.notification, "notification \(n): \(String(decoding: json, as: UTF8.self))")
            #expect(scanned?.extra == tree.ttlSeconds)
            // The sealer's form (text kept as spans of the input): same notification, same bytes.
            var spanned = PushNotification()
            var spannedTTL: Int64?
            let spans = PushNotification.scan(json, into: &spanned, otherMember: { try SealRequest.scanTTL($0, &$1, into: &spannedTTL) })
                ? (notification: spanned, extra: spannedTTL) : nil
            #expect(spans?.notification == tree.notification, "notification \(n) (spans): \(String(decoding: json, as: UTF8.self))")
            #expect(try spans?.notification.encoded() == tree.notification.encoded())
        }
    }

    @Test func fullSealsAgreeAndOpen() throws {
        var rng = SeededGenerator(seed: 12)
        // No generated ids: the two paths' plaintexts are compared byte for byte.
        let sealer = try Fixture.sealer(SealOptions(generatesIDs: false))
        for _ in 0..<300 {
            let json = Self.randomNotification(&rng)
            let a = try sealer.seal(notificationJSON: json, for: "alice")
            let b = try sealer.seal(SealRequest(jsonBytes: json), for: "alice")
            #expect(try Fixture.open(a.payload) == Fixture.open(b.payload))
            #expect(a.headers == b.headers)
            #expect(a.payload.count == b.payload.count)
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
            let scanned = Self.scan(json) != nil
            var treeError: SenderError?
            do { _ = try SealRequest(jsonBytes: json) } catch let e as SenderError { treeError = e }
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
