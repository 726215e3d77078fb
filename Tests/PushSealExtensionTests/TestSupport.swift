import PushSealTestSupport
public import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
import PushSealKeychain
import PushSealSystem
import Testing
@testable import PushSealExtension

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

/// Lets a test wait for the event "no content-handler call can come any more" instead of
/// sleeping and hoping a late second call would have shown up by then.
///
/// ``wrap(_:)`` gives a host factory whose instances forward to the real extension, handing it
/// a content handler that holds a token. Each token is released once the host, the instance
/// and everything the instance started have let go of it (didReceive and the expiry call
/// returned, the instance is gone): from then on no further delivery is possible, so counting
/// the host's `delivered` and `dropped` lines is final.
final class DeliveryWatch: Sendable {
    private let counts = Locked<(made: Int, released: Int)>((0, 0))
    private let releases = DispatchSemaphore(value: 0)

    /// Released with the last reference to the content handler an instance was given.
    private final class Token: Sendable {
        let watch: DeliveryWatch
        init(_ watch: DeliveryWatch) { self.watch = watch }
        deinit {
            watch.counts.withLock { $0.released += 1 }
            watch.releases.signal()
        }
    }

    /// Forwards both calls to `inner`, with a content handler that holds `token`.
    /// `@unchecked Sendable`: both stored properties are immutable and Sendable.
    private final class Forwarding: UNNotificationServiceExtension, @unchecked Sendable {
        let inner: UNNotificationServiceExtension
        let token: Token
        init(_ inner: UNNotificationServiceExtension, _ token: Token) {
            self.inner = inner
            self.token = token
        }
        override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: ContentHandler) {
            let token = self.token
            inner.didReceive(request, withContentHandler: ContentHandler(delivery: { d in
                withExtendedLifetime(token) { contentHandler.sink(d) }
            }))
        }
        override func serviceExtensionTimeWillExpire() { inner.serviceExtensionTimeWillExpire() }
    }

    /// A factory making `make`'s instances, each watched.
    func wrap(_ make: @escaping @Sendable (ExtensionContext) -> UNNotificationServiceExtension)
        -> @Sendable (ExtensionContext) -> UNNotificationServiceExtension {
        { context in
            self.counts.withLock { $0.made += 1 }
            return Forwarding(make(context), Token(self))
        }
    }

    /// How many instances the wrapped factory has made.
    var instanceCount: Int { counts.withLock { $0.made } }

    /// Blocks until every instance made so far has let go of its content handler.
    /// - Parameter timeoutSeconds: how long to wait at most (a failure, not a verdict: an
    ///   instance still holding its handler after that is stuck or leaked).
    /// - Returns: true when all were released, false on timeout.
    func waitUntilAllReleased(timeoutSeconds: Double = 30) -> Bool {
        let deadline = DispatchTime.now() + timeoutSeconds
        while counts.withLock({ $0.released < $0.made }) {
            if releases.wait(timeout: deadline) == .timedOut { return counts.withLock { $0.released >= $0.made } }
        }
        return true
    }
}

/// Waits until no content-handler call can come any more (``DeliveryWatch``), then checks the
/// host took exactly one delivery and dropped none.
func expectExactlyOneDelivery(_ logger: CollectingLogger, watch: DeliveryWatch, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(watch.instanceCount > 0, "the watch saw no instance: is the host's factory wrapped?", sourceLocation: sourceLocation)
    #expect(watch.waitUntilAllReleased(), "an extension instance still holds its content handler after 30 s", sourceLocation: sourceLocation)
    #expect(logger.count("event=delivered") == 1, sourceLocation: sourceLocation)
    #expect(logger.count("event=dropped") == 0, sourceLocation: sourceLocation)
}
