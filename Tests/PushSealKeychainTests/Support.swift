import PushSealTestSupport
import Foundation
import PushSealCrypto
@testable import PushSealKeychain
import Testing

/// Identities used throughout: an app and its Notification Service Extension sharing one
/// keychain access group and one App Group, each with its own application identifier.
enum Fixture {
    static let shared = "TEAM123456.com.example.shared"
    static let appID = "TEAM123456.com.example.app"
    static let extID = "TEAM123456.com.example.app.NotificationService"
    static let appGroup = "group.com.example"
    static let app = Entitlements(applicationIdentifier: appID, keychainAccessGroups: [shared], applicationGroups: [appGroup])
    static let ext = Entitlements(applicationIdentifier: extID, keychainAccessGroups: [shared], applicationGroups: [appGroup])

    /// A fresh, empty scratch directory under the system temp dir; removed by the caller's `defer`.
    static func scratch() throws -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true).appendingPathComponent("pushseal-kc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }

    /// A new keychain (no passcode) at `<scratch>/kc`.
    static func keychain(passcode: String? = nil) throws -> (root: URL, dir: URL) {
        let root = try scratch()
        let dir = root.appendingPathComponent("kc")
        try Keychain.create(at: dir, passcode: passcode, passcodeParameters: .testing)
        return (root, dir)
    }

    static func secret(_ s: String) -> SecretBytes { SecretBytes(copying: Array(s.utf8)) }
    static func text(_ s: SecretBytes?) -> String? { s.map { String(decoding: $0.copyBytes(), as: UTF8.self) } }

    /// Every file under `dir` with its bytes and mode, for byte-identical comparisons.
    static func snapshot(_ dir: URL) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        let fm = FileManager.default
        guard let e = fm.enumerator(atPath: dir.path) else { return out }
        for case let rel as String in e {
            let path = dir.path + "/" + rel
            var isDir: ObjCBool = false
            _ = fm.fileExists(atPath: path, isDirectory: &isDir)
            let attrs = try fm.attributesOfItem(atPath: path)
            let mode = (attrs[.posixPermissions] as? Int) ?? -1
            out[rel + "#mode"] = Array(String(mode).utf8)
            if !isDir.boolValue { out[rel] = Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
        }
        return out
    }

    static func itemFiles(_ dir: URL) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path + "/items").filter { $0.hasSuffix(".item") }.sorted()
            .map { dir.appendingPathComponent("items/" + $0) }
    }

    /// The build directory holding the package's executables (beside the test bundle).
    static var buildDirectory: URL {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("keychain-stress").path) { return url }
        }
        return URL(fileURLWithPath: exe).deletingLastPathComponent()
    }
}

/// `#expect(throws:)` on the code, returning the error for further checks.
func expectCode<R>(_ code: KeychainError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R) {
    PushSealTestSupport.expectCode(code, sourceLocation: sourceLocation, body)
}
