import PushSealTestSupport
import Foundation
import PushSealCrypto
import PushSealKeychain
@testable import PushSealKeyRecords
@testable import PushSealDeviceKeys
@testable import PushSealServerKeys
import Testing

/// A server keychain and a device keychain (app and extension identities) in a scratch dir.
struct KeysFixture {
    static let appID = "com.example.app"
    static let shared = "TEAM123456.com.example.shared"
    static let app = Entitlements(applicationIdentifier: "TEAM123456.com.example.app", keychainAccessGroups: [shared], applicationGroups: ["group.com.example"])
    static let ext = Entitlements(applicationIdentifier: "TEAM123456.com.example.app.NotificationService", keychainAccessGroups: [shared],
                                  applicationGroups: ["group.com.example"])
    /// An extension whose entitlements forgot the shared keychain group.
    static let brokenExt = Entitlements(applicationIdentifier: "TEAM123456.com.example.app.NotificationService", applicationGroups: ["group.other"])

    let root: URL
    let serverDir: URL
    let deviceDir: URL
    let server: KeyStore
    let device: KeyStore

    init(deviceAccessibility: Accessibility = .afterFirstUnlockThisDeviceOnly) throws {
        root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        serverDir = root.appendingPathComponent("server")
        deviceDir = root.appendingPathComponent("device")
        try Keychain.create(at: serverDir)
        try Keychain.create(at: deviceDir)
        server = try KeyStore(keychain: try Keychain(opening: serverDir, as: KeyStore.serverIdentity))
        device = try KeyStore(keychain: try Keychain(opening: deviceDir, as: Self.app), accessibility: deviceAccessibility)
    }

    func cleanup() { try? FileManager.default.removeItem(at: root) }

    func extensionKeyring(_ e: Entitlements = KeysFixture.ext, accessGroup: String? = nil) throws -> DeviceKeyring {
        try DeviceKeyring(keychainAt: deviceDir, as: e, accessGroup: accessGroup)
    }

    static func aad(_ keyID: String, _ appID: String = KeysFixture.appID) -> [UInt8] { Array("pushseal:v1|A256GCM|\(keyID)|\(appID)".utf8) }

    /// Seals `text` as the sender would: key from the server keyring, wire AAD.
    static func seal(_ text: String, keyring: ServerKeyring, recipient: String) throws -> (keyID: String, box: [UInt8]) {
        let (keyID, key) = try keyring.primaryKeyForSealing(appID: appID, recipient: recipient)
        return (keyID, try AES256GCM.seal(Array(text.utf8), with: key, authenticating: aad(keyID)).combined)
    }

    /// Opens as the extension would: key by key id from the device keyring.
    static func open(_ sealed: (keyID: String, box: [UInt8]), keyring: DeviceKeyring, now: Int64 = KeyTime.now()) throws -> String {
        let key = try keyring.key(for: sealed.keyID, appID: appID, now: now)
        return String(decoding: try AES256GCM.open(try SealedBox(combined: sealed.box), with: key, authenticating: aad(sealed.keyID)), as: UTF8.self)
    }

    /// Every file of the keychain's items directory with its bytes (for "nothing changed").
    static func items(_ dir: URL) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path + "/items") {
            out[name] = Array(try Data(contentsOf: dir.appendingPathComponent("items/" + name)))
        }
        return out
    }
}

/// Expects `body` to throw a `KeysError` with `code`.
func expectKeys<R>(_ code: KeysError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R) {
    expectCode(code, sourceLocation: sourceLocation, body)
}

/// Expects `body` to throw a `KeychainError` with OSStatus `status`.
func expectOSStatus<R>(_ status: Int32, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R) {
    do {
        _ = try body()
        Issue.record("expected OSStatus \(status), got success", sourceLocation: sourceLocation)
    } catch let e as KeychainError {
        #expect(e.osStatus == status, "got \(e)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected KeychainError \(status), got \(error)", sourceLocation: sourceLocation)
    }
}
