import Foundation
import PushSealKeychain
@testable import PushSealServerKeys
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The key store's own files in the keychain directory (`keys.lock`, `keys-audit.log`) are held
/// to the keychain's rules, like item files: a loose mode is `.insecurePermissions` with the
/// `chmod 600` that fixes it, a link is `.symbolicLink`, and nothing is written meanwhile.
@Suite struct KeyStoreFilesTests {
    let alice = "alice-iphone"

    @Test func looseOrLinkedLockAndAuditFilesAreRefused() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        try f.server.generate(appID: KeysFixture.appID, recipient: alice, now: 1_767_225_600)
        for name in [KeyStore.lockFileName, KeyAudit.fileName] {
            let path = f.serverDir.path + "/" + name
            #expect(FileManager.default.fileExists(atPath: path), "\(name) should exist after a change")
            let before = try KeysFixture.items(f.serverDir)
            let audit = try Data(contentsOf: URL(fileURLWithPath: f.serverDir.path + "/" + KeyAudit.fileName))
            #expect(chmod(path, name == KeyAudit.fileName ? 0o644 : 0o666) == 0)
            let opening = try #require(throws: KeychainError.self) { _ = try KeyStore(keychain: try Keychain(opening: f.serverDir, as: KeyStore.serverIdentity)) }
            #expect(opening.code == .insecurePermissions)
            #expect(opening.suggestion == "chmod 600 \(path)  # a keychain's files must be 0600, its directories 0700")
            // An instance opened before the change refuses at its next write.
            let writing = try #require(throws: KeychainError.self) { try f.server.generate(appID: KeysFixture.appID, recipient: "bob", now: 1_767_225_700) }
            #expect(writing.code == .insecurePermissions, "\(writing)")
            #expect(chmod(path, 0o600) == 0)
            #expect(rename(path, path + ".real") == 0 && symlink(path + ".real", path) == 0)
            let linked = try #require(throws: KeychainError.self) { _ = try KeyStore(keychain: try Keychain(opening: f.serverDir, as: KeyStore.serverIdentity)) }
            #expect(linked.code == .symbolicLink)
            #expect(linked.reason == "\(path) is a symbolic link: links inside a keychain are refused, never followed")
            let linkedWrite = try #require(throws: KeychainError.self) { try f.server.generate(appID: KeysFixture.appID, recipient: "bob", now: 1_767_225_700) }
            #expect(linkedWrite.code == .symbolicLink)
            #expect(try KeysFixture.items(f.serverDir) == before)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path + (name == KeyAudit.fileName ? ".real" : ""))) == (name == KeyAudit.fileName ? audit : Data()))
            #expect(unlink(path) == 0 && rename(path + ".real", path) == 0)
        }
        try f.server.generate(appID: KeysFixture.appID, recipient: "bob", now: 1_767_225_700)
    }
}
