import PushSealTestSupport
import PushSealJSON
import Foundation
import Testing
import PushSealWire
@testable import PushSealSender

/// Every payload opens with an independent implementation: Python `cryptography`'s AESGCM,
/// written from the wire format (DESIGN.md, issue #2: standard base64 of nonce(12) ‖
/// ciphertext ‖ tag(16), AAD `pushseal:v1|A256GCM|<key_id>|<app_id>`).
@Suite struct InteropTests {
    static let opener = """
    import base64, json, sys
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        sys.exit(99)
    key = bytes(range(32))
    app = sys.argv[2]
    n = bad = 0
    for raw in open(sys.argv[1], 'rb'):
        n += 1
        line = json.loads(raw)
        p = line['payload']
        aps = p['aps']
        ok = (type(aps['mutable-content']) is int and aps['mutable-content'] == 1
              and aps['alert']['title'] and aps['alert']['body'] and p['enc_alg'] == 'A256GCM')
        box = base64.b64decode(p['encrypted_data'], validate=True)
        aad = ('pushseal:v1|' + p['enc_alg'] + '|' + p['key_id'] + '|' + app).encode()
        plain = json.loads(AESGCM(key).decrypt(box[:12], box[12:], aad).decode('utf-8'))
        for k, v in line['expect'].items():
            if plain.get(k) != v:
                ok = False
        if not ok:
            bad += 1
            print('mismatch on line', n, file=sys.stderr)
    print(n, bad)
    """

    /// The same payloads through the project's Python reference (Tests/Interop/pushseal_ref.py,
    /// written from docs/FORMAT.md), which also checks the plaintext's shape.
    static let referenceOpener = """
    import json, sys
    sys.path.insert(0, sys.argv[3])
    try:
        import pushseal_ref
    except ImportError:
        sys.exit(99)
    n = bad = 0
    for raw in open(sys.argv[1], 'rb'):
        n += 1
        line = json.loads(raw)
        obj, _ = pushseal_ref.open_payload(line['payload'], bytes(range(32)), sys.argv[2])
        if any(obj.get(k) != v for k, v in line['expect'].items()):
            bad += 1
    print(n, bad)
    """

    @Test func pythonOpensEveryPayload() throws {
        let sealer = try Fixture.sealer(SealOptions(aps: APSFields(sound: "default", badge: 1), fit: true))
        var rng = SeededGenerator(seed: 42)
        var lines: [UInt8] = []
        let count = 300
        for i in 0..<count {
            var n = PushNotification(title: randomString(&rng), subtitle: i % 3 == 0 ? randomString(&rng) : nil,
                                         body: "b" + randomString(&rng, maxLength: i % 10 == 0 ? 1500 : 60), id: "id-\(i)")
            if i % 4 == 0 { n.media = .init(url: "https://cdn.example.com/\(i)/a b.jpg", type: "image/jpeg") }
            if i % 5 == 0 { n.localizations = [(locale: "fr", content: LocalizedContent(title: "Titre \(i)", body: "Corps/é"))] }
            if i % 6 == 0 { n.data = ["thread": .integer(Int64(i)), "flag": .bool(true), "list": .array([.null, .number(0.25)])] }
            let sealed = try sealer.seal(n, for: "alice")
            #expect(sealed.payload.count <= 4096)
            // What Python must find inside (the body only when the fit ladder left it whole).
            var expect = JSONObject()
            expect["title"] = n.title.map(JSONValue.string)
            expect["subtitle"] = n.subtitle.map(JSONValue.string)
            expect["id"] = n.id.map(JSONValue.string)
            if sealed.changes.isEmpty { expect["body"] = n.body.map(JSONValue.string) }
            if !n.localizations.isEmpty, sealed.changes.isEmpty {
                expect["localizations"] = .object(JSONObject(n.localizations.map { (key: $0.locale, value: $0.content.jsonValue()) }))
            }
            var w = JSONWriter()
            w.beginObject()
            w.key(static: "payload")
            w.value(json: sealed.payload)
            w.key(static: "expect")
            try w.write(expect)
            w.endObject()
            w.endLine()
            lines += w.bytes
        }
        let file = try Fixture.temporaryFile(lines)
        defer { try? FileManager.default.removeItem(at: file) }
        guard let r = try Fixture.python(Self.opener, [file.path, Fixture.appID]) else {
            Issue.record("python3 with the cryptography package is missing: run 'make deps' (pip install cryptography)")
            return
        }
        #expect(r.status == 0)
        #expect(r.out.trimmingCharacters(in: .whitespacesAndNewlines) == "\(count) 0")
        guard let ref = try Fixture.referenceOpen(file) else {
            Issue.record("Tests/Interop/pushseal_ref.py or python3 cryptography is missing")
            return
        }
        #expect(ref.status == 0)
        #expect(ref.out.trimmingCharacters(in: .whitespacesAndNewlines) == "\(count) 0")
    }
}
