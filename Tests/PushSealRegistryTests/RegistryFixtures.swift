import Foundation
import PushSealCrypto
import PushSealRegistry

/// Fixtures for registry tests.
enum Registry {
    /// A fresh KEK file (0600) in a fresh directory; returns its path.
    static func kekFile(_ kek: KeyEncryptionKey = .generate()) throws -> String {
        let d = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-kek-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = d.appendingPathComponent("kek").path
        var line = kek.hexLine()
        defer { SecretBytes.wipe(&line) }
        guard FileManager.default.createFile(atPath: path, contents: Data(line), attributes: [.posixPermissions: 0o600]) else {
            throw TestFailure("cannot write \(path)")
        }
        return path
    }

    /// A migrated, empty registry database in the shared server and a store on it.
    static func store(kek: KeyEncryptionKey = .generate()) throws -> (PostgresKeyStore, String) {
        let server = try PostgresServer.sharedServer()
        let cs = try server.createDatabase()
        _ = try PostgresKeyStore.migrate(connectionString: cs)
        return (try PostgresKeyStore(connectionString: cs, kek: kek, reconnectWaitSeconds: 10), cs)
    }

    /// The build directory holding the package's executables.
    static var buildDirectory: URL {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("registry-stress").path) { return url }
        }
        return URL(fileURLWithPath: exe).deletingLastPathComponent()
    }
}
