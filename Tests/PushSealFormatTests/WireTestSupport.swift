import Foundation
@testable import PushSealFormat
import PushSealCrypto

/// The wire module's `Notification` (named here once: Foundation, imported too, has its own `Notification`).
typealias Notification = PushSealFormat.Notification

/// The shared test data at `relative` (e.g. `cases/failures`) inside `$PUSHSEAL_SHARED`, else
/// `<repo>/../shared`: its URL when it exists, and the message a test gives when it does not (the
/// resolved path it looked in, and how to point at the data).
func sharedData(_ relative: String) -> (url: URL?, missing: String) {
    let env = ProcessInfo.processInfo.environment["PUSHSEAL_SHARED"] ?? ""
    let root = env.isEmpty ? WireTestSupport.repoRoot.deletingLastPathComponent().appendingPathComponent("shared") : URL(fileURLWithPath: env)
    let url = root.appendingPathComponent(relative).standardized
    let found = FileManager.default.fileExists(atPath: url.path)
    return (found ? url : nil, "shared test data not found at \(url.path) (\(env.isEmpty ? "default <repo>/../shared" : "from PUSHSEAL_SHARED")): "
        + "run `make test SHARED=/path/to/shared`, or set PUSHSEAL_SHARED=/path/to/shared")
}

/// Paths and helpers shared by the wire-format tests.
enum WireTestSupport {
    /// The repository root (three levels above this file).
    static let repoRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The key of shared/cases: bytes 0x00…0x1f.
    static var casesKey: SecretBytes { SecretBytes(copying: (0..<32).map { UInt8($0) }) }

    static func hex(_ s: String) -> [UInt8]? { MediaDescriptor.hexBytes(s) }

    static func hexString(_ b: [UInt8]) -> String { MediaDescriptor.hex(b) }

    static func read(_ url: URL) throws -> [UInt8] { Array(try Data(contentsOf: url)) }

    /// A payload object with a fallback alert and the sealed fields.
    static func payload(_ fields: SealedFields) -> JSONValue {
        var o: JSONObject = ["aps": .object(["alert": .object(["title": .string("New message"), "body": .string("Open the app to read it")]),
                                             "mutable-content": .integer(1)])]
        fields.write(into: &o)
        return .object(o)
    }

    /// The error code thrown by `body`, or nil when it does not throw.
    static func errorCode<T>(_ body: () throws -> T) -> String? {
        do {
            _ = try body()
            return nil
        } catch let e as FormatError {
            return e.code.name
        } catch let e as CryptoError {
            return "crypto." + e.code.name
        } catch {
            return "other: \(error)"
        }
    }
}

