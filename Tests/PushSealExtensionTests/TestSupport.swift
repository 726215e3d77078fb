import Foundation
import PushSealCrypto
import PushSealFormat
import PushSealKeychain
@testable import PushSealExtension

/// The wire module's `Notification` (named here once: Foundation, imported too, has its own `Notification`).
typealias Notification = PushSealFormat.Notification

/// The shared test data at `relative` (e.g. `cases/failures`) inside `$PUSHSEAL_SHARED`, else
/// `<repo>/../shared`: its URL when it exists, and the message a test gives when it does not (the
/// resolved path it looked in, and how to point at the data).
func sharedData(_ relative: String) -> (url: URL?, missing: String) {
    let env = ProcessInfo.processInfo.environment["PUSHSEAL_SHARED"] ?? ""
    let root = env.isEmpty
        ? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared")
        : URL(fileURLWithPath: env)
    let url = root.appendingPathComponent(relative).standardized
    let found = FileManager.default.fileExists(atPath: url.path)
    return (found ? url : nil, "shared test data not found at \(url.path) (\(env.isEmpty ? "default <repo>/../shared" : "from PUSHSEAL_SHARED")): "
        + "run `make test SHARED=/path/to/shared`, or set PUSHSEAL_SHARED=/path/to/shared")
}

/// A fresh temporary directory (mode 0700), removed by the caller when done.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("pushseal-ext-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    return url
}

/// Magic-byte headers of every supported type, padded to 64 bytes.
func sampleBytes(_ type: MediaType, byteCount: Int = 64) -> [UInt8] {
    var header: [UInt8]
    switch type {
    case .jpeg: header = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8)
    case .png: header = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
    case .gif: header = Array("GIF89a".utf8) + [1, 0, 1, 0]
    case .mpeg4Video: header = [0, 0, 0, 0x20] + Array("ftypisom".utf8)
    case .mpegVideo: header = [0, 0, 1, 0xBA, 0x44]
    case .avi: header = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("AVI LIST".utf8)
    case .mp3: header = Array("ID3".utf8) + [3, 0, 0]
    case .aac: header = [0, 0, 0, 0x20] + Array("ftypM4A ".utf8)
    case .aiff: header = Array("FORM".utf8) + [0, 0, 0, 0] + Array("AIFF".utf8)
    case .wav: header = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WAVEfmt ".utf8)
    }
    return header + [UInt8](repeating: 0x42, count: max(0, byteCount - header.count))
}

/// Writes `bytes` to `name` in `directory`.
@discardableResult
func writeFile(_ bytes: [UInt8], named name: String, in directory: URL) throws -> URL {
    let url = directory.appendingPathComponent(name)
    try Data(bytes).write(to: url)
    return url
}

/// Creates a sparse file of `byteCount` bytes starting with `header`.
@discardableResult
func writeSparseFile(header: [UInt8], byteCount: Int, named name: String, in directory: URL) throws -> URL {
    let url = try writeFile(header, named: name, in: directory)
    let handle = try FileHandle(forWritingTo: url)
    try handle.truncate(atOffset: UInt64(byteCount))
    try handle.close()
    return url
}

/// Converts Foundation JSON (from `JSONSerialization`) to `JSONValue`. Test-only: Foundation on
/// Linux cannot tell `true` from `1` reliably, so tests build payloads with `JSONValue` literals
/// and use this only for plaintext they wrote themselves (strings, integers, objects).
func jsonValue(fromFoundation any: Any) -> JSONValue {
    switch any {
    case let s as String: return .string(s)
    case let n as NSNumber:
        let d = n.doubleValue
        if d == d.rounded(), abs(d) < 9e15 { return .integer(n.int64Value) }
        return .number(d)
    case let a as [Any]: return .array(a.map(jsonValue(fromFoundation:)))
    case let o as [String: Any]:
        var obj = JSONObject()
        for key in o.keys.sorted() { if let v = o[key] { obj[key] = jsonValue(fromFoundation: v) } }
        return .object(obj)
    default: return .null
    }
}

/// Converts a `JSONValue` to a Foundation object for `JSONSerialization`.
func foundationObject(_ value: JSONValue) -> Any {
    switch value {
    case .null: return NSNull()
    case .bool(let b): return b
    case .integer(let i): return i
    case .number(let d): return d
    case .string(let s): return s
    case .array(let a): return a.map(foundationObject)
    case .object(let o):
        var d = [String: Any]()
        for m in o { d[m.key] = foundationObject(m.value) }
        return d
    }
}

/// Wire format v1's AAD: `pushseal:v1|<enc_alg>|<key_id>|<app_id>`.
func aad(keyID: String, appID: String) -> [UInt8] { Array("pushseal:v1|A256GCM|\(keyID)|\(appID)".utf8) }

/// Seals a plaintext object into an APNs payload per DESIGN.md (test stand-in for the sender).
func sealPayload(_ plaintext: JSONObject, key: SecretBytes, keyID: String = "k1", appID: String = "com.example.app",
                 mutableContent: JSONValue = .integer(1)) throws -> JSONValue {
    let bytes = try JSONSerialization.data(withJSONObject: foundationObject(.object(plaintext)))
    let box = try AES256GCM.seal(Array(bytes), with: key, authenticating: aad(keyID: keyID, appID: appID))
    return .object([
        "aps": .object(["alert": .object(["title": .string("New message"), "body": .string("Open the app to read it")]),
                        "mutable-content": mutableContent]),
        "encrypted_data": .string(Data(box.combined).base64EncodedString()),
        "key_id": .string(keyID),
        "enc_alg": .string("A256GCM"),
    ])
}

/// The payload opener the tests used before the real codec landed; now the real one, kept as
/// a name so tests written against it still compile.
typealias TestOpener = WireFormatOpener

/// Keys in memory by key id; optional fixed keychain failure (e.g. -25308).
struct MemoryKeyProvider: NotificationKeyProvider {
    var keys: [String: SecretBytes] = [:]
    var failure: KeychainError? = nil

    func key(for keyID: String) throws -> SecretBytes {
        if let failure { throw failure }
        guard let key = keys[keyID] else { throw KeychainError(.itemNotFound, "no key \(keyID)") }
        return key
    }
}

extension CollectingLogger {
    /// Number of lines containing `text`.
    func count(_ text: String) -> Int { lines.filter { $0.contains(text) }.count }
}

extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}
