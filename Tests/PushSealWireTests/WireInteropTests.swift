import PushSealTestSupport
import PushSealJSON
import Foundation
import Testing
@testable import PushSealWire
import PushSealCrypto

/// Interop with the independent Python reference (Tests/Interop/pushseal_ref.py, Python
/// `cryptography`'s AESGCM), both directions, over JSON Lines on the script's stdin/stdout.
@Suite("Wire format v1: interop with the Python reference")
struct WireInteropTests {
    static let script = WireTestSupport.repoRoot.appendingPathComponent("Tests/Interop/pushseal_ref.py")
    static let count = 40
    static let appID = "com.example.app"

    /// Runs `python3 pushseal_ref.py serve` on `requests` (one JSON object a line) and returns
    /// one parsed response a request. Fails the test, with the install hint, when Python or
    /// `cryptography` is missing.
    static func serve(_ requests: [JSONValue]) throws -> [JSONValue] {
        let check = try runTool(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import cryptography"])
        try #require(check.status == 0 && !check.signaled,
                     "python3 with the cryptography package is needed for the interop tests: `make test` installs it via scripts/install-deps.sh")

        var input: [UInt8] = []
        for r in requests {
            input += try JSONWriter.serialize(r)
            input.append(0x0A)
        }
        // Requests go through a file, not a pipe, so neither side can block the other.
        let inputURL = FileManager.default.temporaryDirectory.appendingPathComponent("pushseal-interop-\(UUID().uuidString).jsonl")
        try Data(input).write(to: inputURL)
        defer { try? FileManager.default.removeItem(at: inputURL) }

        let p = try TestChild(["/usr/bin/env", "python3", script.path, "serve"], stdinFile: inputURL.path, stderr: .descriptor(2))
        let data = p.readOutputToEnd()
        let exit = p.wait()
        try #require(exit.status == 0 && exit.signal == nil, "pushseal_ref.py serve exited with \(exit.status)")
        let lines = data.split(separator: 0x0A)
        try #require(lines.count == requests.count, "expected \(requests.count) responses, got \(lines.count)")
        return try lines.map { try JSONReader.parse(Array($0)) }
    }

    static let keyHex = WireTestSupport.hexString((0..<32).map { UInt8($0 &* 7 &+ 3) })
    static var key: SecretBytes { SecretBytes(copying: WireTestSupport.hex(keyHex) ?? []) }

    @Test func pythonSealsAndWeOpen() throws {
        // Seeded (PUSHSEAL_TEST_SEED), not SystemRandomNumberGenerator: an empty struct passed inout to
        // generic test code gets an undefined address from IRGen, which ThreadSanitizer then instruments (SEGV).
        var rng = SeededGenerator(seed: testSeed)
        let notes = (0..<Self.count).map { _ in RandomNotification.make(using: &rng) }
        let requests: [JSONValue] = try notes.enumerated().map { i, n in
            .object(["op": .string("seal"), "key": .string(Self.keyHex), "keyId": .string("k\(i)"), "appId": .string(Self.appID),
                     "plaintext": try n.jsonValue(), "padding": .bool(i % 2 == 0)])
        }
        let responses = try Self.serve(requests)
        for (i, (note, response)) in zip(notes, responses).enumerated() {
            guard case .object(let fields)? = response["fields"] else {
                Issue.record("Python could not seal notification \(i): \(response)")
                continue
            }
            let sealed = try SealedPayload(payload: fields)
            #expect(sealed.keyID == "k\(i)")
            let opened = try sealed.open(with: Self.key, appID: Self.appID)
            #expect(opened == note, "notification \(i)")
            #expect(opened.body.map { Array($0.utf8) } == note.body.map { Array($0.utf8) })
            #expect(WireTestSupport.errorCode { try sealed.open(with: Self.key, appID: "com.example.other") } == "authenticationFailed")
        }
    }

    @Test func weSealAndPythonOpens() throws {
        // Seeded (PUSHSEAL_TEST_SEED), not SystemRandomNumberGenerator: an empty struct passed inout to
        // generic test code gets an undefined address from IRGen, which ThreadSanitizer then instruments (SEGV).
        var rng = SeededGenerator(seed: testSeed)
        let notes = (0..<Self.count).map { _ in RandomNotification.make(using: &rng) }
        var requests: [JSONValue] = []
        for (i, n) in notes.enumerated() {
            let fields = try WireFormat.seal(plaintext: n, key: Self.key, keyID: "kid_\(i)", appID: Self.appID, padding: i % 2 == 0)
            requests.append(.object(["op": .string("open"), "key": .string(Self.keyHex), "appId": .string(Self.appID),
                                     "payload": WireTestSupport.payload(fields)]))
        }
        // Negative controls: Python must refuse a wrong app id and a flipped bit.
        let control = try WireFormat.seal(plaintext: notes[0], key: Self.key, keyID: "k1", appID: Self.appID)
        requests.append(.object(["op": .string("open"), "key": .string(Self.keyHex), "appId": .string("com.example.other"),
                                 "payload": WireTestSupport.payload(control)]))
        var flipped = try WireBase64.decode(control.encryptedData)
        flipped[20] ^= 0x80
        requests.append(.object(["op": .string("open"), "key": .string(Self.keyHex), "appId": .string(Self.appID),
                                 "payload": WireTestSupport.payload(SealedFields(encryptedData: WireBase64.encode(flipped), keyID: "k1", algorithm: "A256GCM"))]))

        let responses = try Self.serve(requests)
        for (i, n) in notes.enumerated() {
            let r = responses[i]
            guard let plaintext = r["plaintext"], let hex = r["plaintextHex"]?.stringValue else {
                Issue.record("Python could not open notification \(i): \(r)")
                continue
            }
            #expect(try PushNotification(json: plaintext) == n, "notification \(i)")
            #expect(WireTestSupport.hex(hex) == (try n.encoded(padding: i % 2 == 0)), "notification \(i): plaintext bytes")
        }
        #expect(responses[notes.count]["error"]?.stringValue == "authenticationFailed")
        #expect(responses[notes.count + 1]["error"]?.stringValue == "authenticationFailed")
    }
}
