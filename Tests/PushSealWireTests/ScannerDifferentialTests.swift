import Foundation
import PushSealCrypto
import PushSealJSON
import PushSealTestSupport
import Testing
@testable import PushSealWire

/// The scanner (`PushNotification.scan`) is only an alternative decoder: wherever it gives an
/// answer, it is the tree decoder's (`PushNotification(sendingJSON:)` after `JSONReader.parse`),
/// and it gives up on everything the tree decoder refuses. Held over every
/// `Examples/notifications/*.json`, every plaintext and payload of the fuzz corpus (`Fuzz/corpus`),
/// and seeded random inputs (`PUSHSEAL_TEST_SEED`, printed in every failure).
@Suite struct ScannerDifferentialTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    enum Outcome: Equatable {
        case read(PushNotification, ttl: Int64?)
        case refused
    }

    /// The tree decoder, with the sender's `ttl` as the one extra member.
    static func tree(_ bytes: [UInt8]) -> Outcome {
        var ttl: Int64?
        guard let value = try? JSONReader.parse(bytes),
              let n = try? PushNotification(sendingJSON: value, extraMemberNames: ["ttl"], extraMember: { key, v in
                  guard key == "ttl" else { return false }
                  ttl = try PushNotification.sendingTime(v, "ttl")
                  return true
              }) else { return .refused }
        return .read(n, ttl: ttl)
    }

    /// Asserts the scanner agrees with the tree decoder on `bytes`; returns whether it scanned.
    @discardableResult
    static func agree(_ bytes: [UInt8], _ name: String) -> Bool {
        let tree = tree(bytes)
        let scanned = bytes.withUnsafeBytes { PushNotification.stringScan($0) }
        if let scanned {
            #expect(Outcome.read(scanned.notification, ttl: scanned.extra) == tree, seedNote("\(name): the scanner read what the tree decoder did not"))
        }
        // The array form keeps text as spans of the input: the same answer, and (when read)
        // the same plaintext bytes as the tree decoder's notification.
        let spans = PushNotification.spanScan(bytes)
        #expect((spans != nil) == (scanned != nil), seedNote("\(name): the span scan and the string scan differ in giving up"))
        if let spans {
            #expect(Outcome.read(spans.notification, ttl: spans.extra) == tree, seedNote("\(name): the span scan read what the tree decoder did not"))
            if case .read(let n, _) = tree {
                #expect((try? spans.notification.encoded(padding: false)) == (try? n.encoded(padding: false)),
                        seedNote("\(name): the span scan encodes other bytes than the tree decoder's notification"))
                // The visibility rule read in place from the spans is the Character rule on the strings.
                #expect(spans.notification.hasVisibleText == Self.visibleByCharacters(n),
                        seedNote("\(name): hasVisibleText on the spans differs from the Character rule"))
            }
        }
        return scanned != nil
    }

    @Test func examplesScanToTheTreesNotification() throws {
        let dir = Self.root.appendingPathComponent("Examples/notifications")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }.sorted()
        #expect(files.count >= 10)
        for f in files {
            let bytes = Array(try Data(contentsOf: dir.appendingPathComponent(f)))
            // Every example the tree decoder reads (the media ones are templates with
            // placeholders) is the common shape the scanner exists for: it must not give up.
            let scanned = Self.agree(bytes, f)
            if Self.tree(bytes) != .refused { #expect(scanned, "\(f) left the scanner") }
        }
    }

    @Test func fuzzCorpusAgrees() throws {
        let dir = Self.root.appendingPathComponent("Fuzz/corpus")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(!files.isEmpty)
        // The receive fuzzer's fixed key (Fuzz/Sources/receive-fuzz: 0x00…0x1f under k1).
        let key = SecretBytes(copying: Array(0..<32))
        var opened = 0
        for f in files {
            let bytes = Array(try Data(contentsOf: dir.appendingPathComponent(f)))
            Self.agree(bytes, f)
            // Each sealed payload's plaintext, padding trimmed, and the payload's members.
            guard let payload = try? JSONReader.parse(bytes) else { continue }
            if let sealed = try? SealedPayload(payload: payload), var plain = try? sealed.openBytes(with: key, appID: "com.example.app") {
                opened += 1
                while plain.last == 0x20 { plain.removeLast() }
                Self.agree(plain, "\(f) plaintext")
            }
            if case .object(let o) = payload {
                for m in o { Self.agree((try? JSONWriter.serialize(m.value)) ?? [], "\(f).\(m.key)") }
            }
        }
        #expect(opened > 0)
    }

    /// A notification's JSON text, members in random order with random whitespace and needless
    /// escapes, sometimes broken one way (a wrong type, an unknown or repeated member, a bad
    /// time, media or locale, trailing bytes) so both decoders' refusals are compared too.
    static func randomText(_ rng: inout SeededGenerator) -> [UInt8] {
        let n = RandomNotification.make(using: &rng)
        var members: [String] = []
        func literal(_ s: String) -> String {
            var text = String(decoding: (try? JSONWriter.serialize(.string(s))) ?? [], as: UTF8.self)
            if Int.random(in: 0..<4, using: &rng) == 0 { text = text.replacingOccurrences(of: "/", with: "\\/") }
            if Int.random(in: 0..<4, using: &rng) == 0 { text = text.replacingOccurrences(of: "a", with: "\\u0061") }
            return text
        }
        if let value = try? n.jsonValue(), case .object(let o) = value {
            for m in o {
                let v: String
                if case .string(let s) = m.value { v = literal(s) } else { v = String(decoding: (try? JSONWriter.serialize(m.value)) ?? [], as: UTF8.self) }
                members.append("\"\(m.key)\":" + v)
            }
        }
        if Bool.random(using: &rng) { members.append("\"ttl\":\(Int.random(in: 0...86_400, using: &rng))") }
        let broken: [String] = [
            "\"title\":5", "\"body\":null", "\"nope\":1", "\"iat\":-1", "\"exp\":1.5", "\"ttl\":\"x\"", "\"data\":[]",
            "\"media\":{\"url\":\"ftp://x/y\"}", "\"media\":{\"url\":\"https://x/y\",\"extra\":1}", "\"localizations\":{\"f r\":{\"title\":\"x\"}}",
            "\"localizations\":{\"fr\":{\"title\":\"\"}}", "\"localizations\":{\"fr\":{\"sound\":\"x\"}}", "\"exp\":253402300800",
            "\"ti\\u0074le\":\"escaped key\"", "\"id\":7",
        ]
        if Int.random(in: 0..<3, using: &rng) == 0, let b = broken.randomElement(using: &rng) { members.append(b) }
        if Int.random(in: 0..<10, using: &rng) == 0, let first = members.first { members.append(first) }  // a repeated member
        members.shuffle(using: &rng)
        let sep = [",", ", ", " ,\n\t"].randomElement(using: &rng) ?? ","
        var text = "{" + members.joined(separator: sep) + "}"
        if Int.random(in: 0..<20, using: &rng) == 0 { text += " x" }
        if Int.random(in: 0..<20, using: &rng) == 0 { text = "[" + text + "]" }
        return Array(text.utf8)
    }

    @Test func seededRandomInputsAgree() throws {
        print("ScannerDifferentialTests seed: \(testSeed) (PUSHSEAL_TEST_SEED)")
        var rng = SeededGenerator(seed: testSeed &+ 31)
        var scanned = 0, refused = 0
        for i in 0..<3000 {
            let text = Self.randomText(&rng)
            if Self.agree(text, "input \(i): \(String(decoding: text, as: UTF8.self))") { scanned += 1 }
            if Self.tree(text) == .refused { refused += 1 }
        }
        // Both sides of the comparison are exercised.
        #expect(scanned > 500 && refused > 200, seedNote("scanned \(scanned), refused \(refused)"))
    }

    /// The receiver's blankContent rule, spelled out on the decoded strings.
    static func visibleByCharacters(_ n: PushNotification) -> Bool {
        [n.title, n.subtitle, n.body].contains { $0?.contains { !$0.isWhitespace } ?? false }
    }

    /// `hasVisibleText` (ASCII read in place, the rest by `Character`) against the `Character`
    /// rule on seeded random texts of white space (ASCII and not), combining marks, CR LF,
    /// prepend and joiner characters, escapes and letters, as strings and as scanned spans.
    @Test func visibleTextRuleMatchesTheCharacterRule() throws {
        var rng = SeededGenerator(seed: testSeed &+ 47)
        let pieces = [" ", "\t", "\n", "\r\n", "\u{0B}", "\u{0C}", "\u{85}", "\u{A0}", "\u{2028}", "\u{3000}", "\u{200B}",
                      "\u{0301}", "\u{200D}", "\u{0600}", "\u{1F}", "a", "7", "\\", "\"", "é", "\u{1F600}"]
        var blank = 0, visible = 0
        for i in 0..<1500 {
            let text = (0..<Int.random(in: 0...6, using: &rng)).map { _ in pieces.randomElement(using: &rng) ?? " " }.joined()
            let expected = text.contains { !$0.isWhitespace }
            if expected { visible += 1 } else { blank += 1 }
            #expect(PushNotification.isVisible(text) == expected, seedNote("text \(i): \(text.unicodeScalars.map { String($0.value, radix: 16) })"))
            // The same text as the title of scanned JSON (a span, escaped where JSON needs it).
            let json = Array("{\"title\":".utf8) + ((try? JSONWriter.serialize(.string(text))) ?? []) + Array(",\"body\":\"\"}".utf8)
            if let scanned = PushNotification.spanScan(json, ttl: false) {
                #expect(scanned.notification.hasVisibleText == expected, seedNote("text \(i) as a span"))
            }
        }
        #expect(blank > 100 && visible > 100, seedNote("blank \(blank), visible \(visible)"))
    }

    @Test func memberNamesMapToTheirCasesAndNothingElseDoes() {
        func member(_ name: String) -> NotificationMember? { let bytes = Array(name.utf8); return NotificationMember.named(bytes.span) }
        for m in NotificationMember.allCases { #expect(member(m.name) == m, "\(m.name)") }
        #expect(PushNotification.memberNames == NotificationMember.allCases.map(\.rawValue))
        for (position, m) in NotificationMember.allCases.enumerated() { #expect(m.bitIndex == position, "\(m.name)") }
        for name in ["Title", "titlf", "subtitlE", "bodY", "datA", "medIa", "iaT", "exq", "ttl", "ttL", "iD", "ix", "localisations",
                     "localizationS", "tit", "titles", "", "i", "xxxx", "xxxxx", "idid", "ttlx", "kinD", "idS", "apS"] {
            #expect(member(name) == nil, "\(name)")
        }
    }
}

extension PushNotification {
    /// The sender's `ttl` as the scanner's other member (as `SealRequest` reads it).
    static func testTTL(_ key: String, _ s: inout JSONReader.Scanner, _ ttl: inout Int64?) throws -> Bool {
        guard ttl == nil, key == "ttl", try s.peekKind() == .number,
              case .integer(let t) = try s.readNumber(), t >= 0 else { return false }
        ttl = t
        return true
    }

    /// The scan of a whole input over a scanner without a source (text members built as
    /// `String`s), with `ttl` as the one other member.
    static func stringScan(_ raw: UnsafeRawBufferPointer) -> (notification: PushNotification, extra: Int64?)? {
        var n = PushNotification()
        var ttl: Int64?
        guard !raw.isEmpty, var s = try? JSONReader.Scanner(raw),
              scan(&s, into: &n, otherMember: { try testTTL($0, &$1, &ttl) }), (try? s.finish()) != nil else { return nil }
        return (n, ttl)
    }

    /// The span scan of a whole input (text members kept as spans), with `ttl` as the one
    /// other member unless `ttl` is false.
    static func spanScan(_ bytes: [UInt8], ttl readsTTL: Bool = true) -> (notification: PushNotification, extra: Int64?)? {
        var n = PushNotification()
        var ttl: Int64?
        guard scan(bytes, into: &n, otherMember: { readsTTL ? try testTTL($0, &$1, &ttl) : false }) else { return nil }
        return (n, ttl)
    }
}
