import Foundation
import Testing
@testable import PushSealAPNs
@testable import PushSealSender
import PushSealCrypto
import PushSealServer
import PushSealTestSupport

/// Every kind of line the tools write through PushSealJSON's one writer, byte for byte against
/// the Python reference (Tests/Interop/pushseal_ref.py: `json.dumps(…, ensure_ascii=False,
/// separators=(",", ":"))`, its `encode_plaintext` for the plaintext) and against the bytes in
/// Tests/Vectors: the plaintext (padded), the APNs payload, the APNs headers object, push-seal
/// batch's sealed and error lines, and push-send's outcome, not-sent, unconfirmed, intent and
/// invalidation lines.
@Suite struct LineKindsReferenceTests {
    /// Strings that exercise the escaper: quotes, backslashes, every short escape, `\u00XX`
    /// controls, DEL (raw), `/` (never escaped), U+2028, non-BMP, and a long plain run (the
    /// vector scan).
    static let awkward = ["plain", "a\"b\\c/d", "\u{0}\u{1}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1F}\u{7F}", "é😀\u{2028}\u{2029}",
                          String(repeating: "x", count: 70) + "\"" + String(repeating: "y", count: 33), ""]

    /// One written line: its kind (for the failure message) and bytes.
    struct Written {
        let kind: String
        let bytes: [UInt8]
    }

    static func lines() throws -> [Written] {
        var out: [Written] = []
        func add(_ kind: String, _ write: (inout JSONWriter) -> Void) {
            var w = JSONWriter()
            write(&w)
            out.append(Written(kind: kind, bytes: w.bytes))
        }
        let key = SecretBytes(copying: Array(0..<32))
        let keys = InMemorySealingKeys([("com.example.app", "alice", SealingKey(keyID: "k1", key: key))])
        for (i, s) in awkward.enumerated() where !s.isEmpty {
            // The plaintext and the payload, sealed with a clear part of awkward strings.
            let options = SealOptions(fallback: FallbackAlert(title: s, body: "b" + s), aps: APSFields(sound: s, badge: Int64(i), threadID: s))
            let sealer = try NotificationSealer(appID: "com.example.app", keys: keys, options: options, clock: { 1_796_000_000 })
            var n = PushSealWire.PushNotification(title: s, body: "b" + s, id: "id-\(i)")
            n.data = ["k": .string(s), "n": .integer(-Int64(i)), "list": .array([.null, .bool(true), .number(0.25)])]
            n.localizations = [(locale: s.isEmpty ? "fr" : "fr-\(i)", content: LocalizedContent(title: s, body: s))]
            out.append(Written(kind: "plaintext", bytes: try n.encoded(padding: true)))
            let sealed = try sealer.seal(n, ttlSeconds: 3600, for: "alice")
            out.append(Written(kind: "payload", bytes: sealed.payload))
            add("headers") { sealed.headers.write(to: &$0) }
            let headers = APNsHeaders(pushType: "alert", topic: s, priority: 10, expiration: Int64(i), collapseID: s)
            add("headers") { headers.write(to: &$0) }
            add("batch-sealed") {
                BatchLine.writeSealed(recipient: s, line: i + 1, id: s, deviceToken: "ab01", payload: sealed.payload, headers: headers,
                                      changes: [.droppedPadding(byteCount: 3), .droppedMedia], to: &$0)
            }
            add("batch-failed") {
                BatchLine.writeFailed(recipient: i % 2 == 0 ? nil : s, line: i + 1, id: s, deviceToken: nil, code: "invalidNotification", message: s, to: &$0)
            }
            let outcome = APNsOutcome(tag: i + 1, deviceToken: "ab01", kind: .unregistered, status: 410, reason: s, apnsID: s,
                                      apnsUniqueID: s, timestampMilliseconds: 1_796_000_000_123, attempts: 2, connection: 1,
                                      latencyNanoseconds: 12_345_678 * UInt64(i + 1), invalidatesToken: true)
            let context = APNsOutcomeLine.Context(recipient: s, id: i % 2 == 0 ? nil : s)
            add("outcome") { APNsOutcomeLine.write(outcome, context: context, to: &$0) }
            add("not-sent") { APNsOutcomeLine.writeNotSent(line: i + 1, deviceToken: s, code: "badInput", message: s, context: context, to: &$0) }
            add("unconfirmed") { APNsOutcomeLine.writeUnconfirmed(line: i + 1, deviceToken: s, context: context, to: &$0) }
            add("intent") { APNsOutcomeLine.write(APNsIntent(tag: i + 1, apnsID: s, hasCollapseID: false), to: &$0) }
            add("invalidation") {
                APNsOutcomeLine.write(APNsInvalidation(tag: i + 1, deviceToken: s, reason: "Unregistered",
                                                       timestampMilliseconds: i % 2 == 0 ? nil : 1_796_000_000_000), to: &$0)
            }
        }
        return out
    }

    /// Compares each line with the reference's serialization of what it says; prints
    /// `<lines> <mismatches>` and each mismatch's kind on stderr (exit 99: no reference).
    static let checker = """
    import json, sys
    sys.path.insert(0, sys.argv[2])
    try:
        import pushseal_ref
    except ImportError:
        sys.exit(99)
    n = bad = 0
    for raw in open(sys.argv[1], 'rb'):
        kind, hexed = raw.decode().split()
        data = bytes.fromhex(hexed)
        n += 1
        if kind == 'plaintext':
            want = pushseal_ref.encode_plaintext(json.loads(data), padding=True)
        else:
            body = data[:-1] if kind in ('batch-sealed', 'batch-failed', 'outcome', 'not-sent', 'unconfirmed', 'intent', 'invalidation') else data
            if body is not data and data[-1:] != b'\\n':
                want = None
            else:
                want = json.dumps(json.loads(body), ensure_ascii=False, separators=(',', ':')).encode() + data[len(body):]
        if want != data:
            bad += 1
            print('mismatch', kind, data, want, file=sys.stderr)
    print(n, bad)
    """

    @Test func everyLineKindMatchesThePythonReference() throws {
        let lines = try Self.lines()
        #expect(Set(lines.map(\.kind)).count == 10)
        let text = lines.map { "\($0.kind) \($0.bytes.map { String(format: "%02x", $0) }.joined())\n" }.joined()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pushseal-lines-\(UUID().uuidString)")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let interop = repositoryRoot.appendingPathComponent("Tests/Interop")
        guard let r = runPython(Self.checker, [file.path, interop.path]), r.status != 99 else {
            Issue.record("python3 with the cryptography package is missing: run 'make deps'")
            return
        }
        #expect(r.status == 0, "\(r.errors)")
        #expect(r.output.trimmingCharacters(in: .whitespacesAndNewlines) == "\(lines.count) 0", "\(r.errors)")
    }

    /// The vectors' bytes (written by pushseal_ref.py): each `ok-` vector's payload JSON, written
    /// back through the writer, is the reference's compact serialization of it, and its plaintext
    /// (`plaintext-hex`) read as a notification and encoded again is the same bytes, padding
    /// included, when it has only members the encoder writes back.
    @Test func vectorsRoundTripByteForByte() throws {
        let directory = repositoryRoot.appendingPathComponent("Tests/Vectors")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("ok-") && $0.hasSuffix(".vector") }.sorted()
        #expect(names.count >= 10)
        var plaintexts = 0
        for name in names {
            let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            guard let split = text.range(of: "\n\n") else { Issue.record("\(name): no blank line"); continue }
            let headers = text[..<split.lowerBound].split(separator: "\n")
            let payload = try JSONReader.parse(Array(text[split.upperBound...].utf8))
            let compact = try JSONWriter.serialize(payload)
            // The vector file is indented; the reference's compact form of the same JSON:
            let reference = runPythonOutput("import json,sys; print(json.dumps(json.loads(open(sys.argv[1], encoding='utf-8').read().split('\\n\\n', 1)[1]), ensure_ascii=False, separators=(',', ':')))",
                                            [directory.appendingPathComponent(name).path])
            if let reference { #expect(compact == Array(reference.utf8), "\(name)") }
            guard let hexLine = headers.first(where: { $0.hasPrefix("plaintext-hex: ") }) else { continue }
            let hex = hexLine.dropFirst("plaintext-hex: ".count)
            var bytes: [UInt8] = []
            var i = hex.startIndex
            while i < hex.endIndex, let next = hex.index(i, offsetBy: 2, limitedBy: hex.endIndex), let b = UInt8(hex[i..<next], radix: 16) {
                bytes.append(b)
                i = next
            }
            // Only members the encoder writes back: none unknown, and no `"kind":"display"` (the
            // default, which the encoder leaves out).
            guard case .object(let o) = try JSONReader.parse(bytes), o["kind"]?.stringValue != MessageKind.display.rawValue,
                  o.members.allSatisfy({ m in NotificationMember.allCases.contains { $0.rawValue == m.key } }) else { continue }
            let n = try PushSealWire.PushNotification(jsonBytes: bytes)
            let unpadded = Array(bytes.reversed().drop(while: { $0 == 0x20 }).reversed())
            #expect(try n.encoded(padding: false) == unpadded, "\(name)")
            #expect(try n.encoded(padding: bytes.count != unpadded.count) == bytes, "\(name)")
            plaintexts += 1
        }
        #expect(plaintexts >= 5)
    }
}
