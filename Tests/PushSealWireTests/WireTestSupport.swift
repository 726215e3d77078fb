import PushSealSystem
import PushSealTestSupport
import PushSealJSON
import Foundation
@testable import PushSealWire
import PushSealCrypto

/// Paths and helpers shared by the wire-format tests.
enum WireTestSupport {
    /// The repository root (three levels above this file).
    static let repoRoot: URL = repositoryRoot

    /// The key of shared/cases: bytes 0x00…0x1f.
    static var casesKey: SecretBytes { SecretBytes(copying: (0..<32).map { UInt8($0) }) }

    static func hex(_ s: String) -> [UInt8]? { Hex.decode(s) }

    static func hexString(_ b: [UInt8]) -> String { Hex.encode(b) }

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


