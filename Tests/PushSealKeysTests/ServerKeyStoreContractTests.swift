import Foundation
import PushSealKeychain
import PushSealServerKeys
import Testing

/// The ``ServerKeyStoreContract`` on the file keychain (``KeyStore``), each check with fresh
/// server keychains in a scratch directory.
@Suite struct ServerKeyStoreContractTests {
    @Test(arguments: ServerKeyStoreContract.names)
    func fileKeychain(_ check: String) throws {
        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: root) }
        var made = 0
        let make = { () throws -> any ServerKeyStore in
            made += 1
            let dir = root.appendingPathComponent("server\(made)")
            try Keychain.create(at: dir)
            return try KeyStore(keychain: try Keychain(opening: dir, as: KeyStore.serverIdentity), audit: .keychainFile)
        }
        try ServerKeyStoreContract.run(check, make)
        #expect(made >= 1)
    }
}
