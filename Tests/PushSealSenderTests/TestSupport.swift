import PushSealTestSupport
import Foundation
import PushSealCrypto
import PushSealWire
@testable import PushSealSender

/// Fixed test key 0x00…0x1f under key id `k1` for `alice` of `com.example.app`, and a
/// disabled key for `bob`.
enum Fixture {
    static let appID = "com.example.app"
    static let keyBytes: [UInt8] = Array(0..<32)
    static let key = SecretBytes(copying: keyBytes)
    static let keys = InMemorySealingKeys([
        (appID, "alice", SealingKey(keyID: "k1", key: key)),
        (appID, "bob", nil),
    ])
    static let now: Int64 = 1_796_000_000

    static func sealer(_ options: SealOptions = SealOptions()) throws -> NotificationSealer {
        try NotificationSealer(appID: appID, keys: keys, options: options, clock: { now })
    }

    /// Parses a payload with Foundation's JSONSerialization (a real, independent parser).
    static func json(_ bytes: [UInt8]) throws -> [String: Any] {
        guard let o = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw SenderError(.invalidJSON, "not an object")
        }
        return o
    }

    /// Opens a payload in Swift: the combined box from `encrypted_data`, AAD from key id and app id.
    static func open(_ payload: [UInt8]) throws -> [UInt8] {
        let o = try json(payload)
        guard let b64 = o["encrypted_data"] as? String, let kid = o["key_id"] as? String,
              let combined = Data(base64Encoded: b64) else { throw SenderError(.invalidJSON, "fields") }
        let box = try SealedBox(combined: [UInt8](combined))
        return try AES256GCM.open(box, with: key, authenticating: Array("pushseal:v1|A256GCM|\(kid)|\(appID)".utf8))
    }

    /// The opened plaintext as an object (trailing padding spaces are valid JSON whitespace).
    static func plaintext(_ payload: [UInt8]) throws -> [String: Any] {
        try json(open(payload))
    }

    /// Runs `python3 -c script args…`, returning stdout; `nil` when python3 or its
    /// `cryptography` package is missing.
    static func python(_ script: String, _ args: [String]) throws -> (status: Int32, out: String)? {
        guard let r = runPython(script, args), r.status != 99 else { return nil }
        return (r.status, r.output)
    }

    /// Opens every `{"payload", "expect"}` line of `file` with the project's Python reference
    /// (Tests/Interop/pushseal_ref.py, ``InteropTests/referenceOpener``), which also checks the
    /// plaintext's shape: stdout is `<lines> <mismatches>`, a non-zero status when it refused
    /// a payload; `nil` when python3 or its `cryptography` package is missing.
    static func referenceOpen(_ file: URL) throws -> (status: Int32, out: String)? {
        var interop = URL(fileURLWithPath: #filePath)
        for _ in 0..<2 { interop.deleteLastPathComponent() }
        interop.appendPathComponent("Interop")
        return try python(InteropTests.referenceOpener, [file.path, appID, interop.path])
    }

    static func temporaryFile(_ bytes: [UInt8]) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pushseal-sender-\(UUID().uuidString)")
        try Data(bytes).write(to: url)
        return url
    }
}


/// Random strings over every Unicode plane, weighted towards the characters JSON escapes.
func randomString(_ rng: inout SeededGenerator, maxLength: Int = 40) -> String {
    var s = String.UnicodeScalarView()
    let n = Int.random(in: 0...maxLength, using: &rng)
    for _ in 0..<n {
        let pick = Int.random(in: 0..<10, using: &rng)
        var v: UInt32
        switch pick {
        case 0: v = UInt32.random(in: 0..<0x20, using: &rng)                       // control characters
        case 1: v = [0x22, 0x5C, 0x2F, 0x7F, 0x2028, 0x2029, 0xFEFF][Int.random(in: 0..<7, using: &rng)]
        case 2: v = UInt32.random(in: 0x20..<0x80, using: &rng)
        case 3: v = UInt32.random(in: 0x80..<0x800, using: &rng)
        case 4: v = UInt32.random(in: 0x800..<0x10000, using: &rng)
        case 5: v = UInt32.random(in: 0x1F300..<0x1FAFF, using: &rng)              // emoji
        case 6: v = UInt32.random(in: 0x300..<0x370, using: &rng)                  // combining marks
        default: v = UInt32.random(in: 0..<0x110000, using: &rng)                  // any plane
        }
        if (0xD800...0xDFFF).contains(v) { v = 0xFFFD }
        if let u = Unicode.Scalar(v) { s.append(u) }
    }
    return String(s)
}
