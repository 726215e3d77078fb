import PushSealSystem
import Foundation
@testable import PushSealKeychain
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A symbolic link anywhere inside a keychain is `.symbolicLink`, named as a link and never
/// followed; the keychain directory given through a linked parent opens; the files only writers
/// open (`.lock`) and files other modules keep there are held to the 0600 rule of item files.
@Suite struct LinksAndModesTests {

    /// Moves `path` to `<path>.real` and puts a link to it in its place; returns the target.
    @discardableResult
    private func replaceWithLink(_ path: String) throws -> String {
        let target = path + ".real"
        #expect(rename(path, target) == 0)
        #expect(symlink(target, path) == 0)
        return target
    }

    private func restore(_ path: String) {
        unlink(path)
        rename(path + ".real", path)
    }

    private func expectLink(_ e: KeychainError, _ path: String, target: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(e.code == .symbolicLink, "\(e.code): \(e.reason)", sourceLocation: sourceLocation)
        #expect(e.reason == "\(path) is a symbolic link: links inside a keychain are refused, never followed", sourceLocation: sourceLocation)
        #expect(e.suggestion?.contains("(\(URL(fileURLWithPath: target).resolvingSymlinksInPath().path))") == true, "\(e.suggestion ?? "nil")",
                sourceLocation: sourceLocation)
    }

    @Test func aLinkedItemFileIsALinkNotADamagedFile() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "s", account: "a", data: Fixture.secret("x"))
        let item = try Fixture.itemFiles(dir)[0].path
        let target = try replaceWithLink(item)
        let before = try Fixture.snapshot(dir)
        expectLink(try #require(throws: KeychainError.self) { _ = try app.copyMatching(ItemQuery(service: "s", account: "a")) }, item, target: target)
        expectLink(try #require(throws: KeychainError.self) { _ = try app.copyMatching(ItemQuery(), limit: .all, returning: .attributes) }, item, target: target)
        expectLink(try #require(throws: KeychainError.self) { try app.update(ItemQuery(service: "s", account: "a"), with: ItemChanges(data: Fixture.secret("y"))) }, item, target: target)
        #expect(try Fixture.snapshot(dir) == before)
        restore(item)
        #expect(Fixture.text(try app.copyData(ItemQuery(service: "s", account: "a"))) == "x")
    }

    @Test func linkedDirectoriesAndFilesOfTheKeychainAreRefusedAtOpen() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        _ = try Keychain(opening: dir, as: Fixture.app).appGroupContainer(for: Fixture.appGroup)
        for name in ["items", "tmp", "app-groups", "keychain.meta", "device-secret", "device-state"] {
            let path = dir.path + "/" + name
            let target = try replaceWithLink(path)
            expectLink(try #require(throws: KeychainError.self) { _ = try Keychain(opening: dir, as: Fixture.app) }, path, target: target)
            restore(path)
        }
        // An App Group container that is a link, met when the container is asked for.
        let container = dir.path + "/app-groups/" + Fixture.appGroup
        let target = try replaceWithLink(container)
        let kc = try Keychain(opening: dir, as: Fixture.app)
        expectLink(try #require(throws: KeychainError.self) { _ = try kc.appGroupContainer(for: Fixture.appGroup) }, container, target: target)
        restore(container)
        _ = try Keychain(opening: dir, as: Fixture.app)
    }

    @Test func theWritersLockFileIsCheckedLikeAnItemFile() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "s", account: "a", data: Fixture.secret("x"))
        let lock = dir.path + "/.lock"
        #expect(chmod(lock, 0o666) == 0)
        for e in [try #require(throws: KeychainError.self) { _ = try Keychain(opening: dir, as: Fixture.app) },
                  try #require(throws: KeychainError.self) { try app.add(service: "s", account: "b", data: Fixture.secret("y")) }] {
            #expect(e.code == .insecurePermissions)
            #expect(e.reason == "\(lock) is accessible by group or others (mode 666)")
            #expect(e.suggestion == "chmod 600 \(lock)  # a keychain's files must be 0600, its directories 0700")
        }
        #expect(chmod(lock, 0o600) == 0)
        let target = try replaceWithLink(lock)
        expectLink(try #require(throws: KeychainError.self) { _ = try Keychain(opening: dir, as: Fixture.app) }, lock, target: target)
        expectLink(try #require(throws: KeychainError.self) { try app.add(service: "s", account: "b", data: Fixture.secret("y")) }, lock, target: target)
        restore(lock)
        try app.add(service: "s", account: "b", data: Fixture.secret("y"))
    }

    @Test func filesOfOtherModulesFollowTheSameRules() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let kc = try Keychain(opening: dir, as: Fixture.app)
        let path = dir.path + "/keys.lock"
        try kc.checkPrivateFile(named: "keys.lock")  // absent: nothing to check
        _ = try kc.openPrivateFile(named: "keys.lock", options: [.readWrite, .create], what: "lock file")
        var st = stat()
        #expect(lstat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(chmod(path, 0o644) == 0)
        let loose = try #require(throws: KeychainError.self) { try kc.checkPrivateFile(named: "keys.lock") }
        #expect(loose.code == .insecurePermissions && loose.suggestion == "chmod 600 \(path)  # a keychain's files must be 0600, its directories 0700")
        #expect(try #require(throws: KeychainError.self) { _ = try kc.openPrivateFile(named: "keys.lock", options: .readWrite, what: "lock file") }.code == .insecurePermissions)
        #expect(chmod(path, 0o600) == 0)
        let target = try replaceWithLink(path)
        expectLink(try #require(throws: KeychainError.self) { try kc.checkPrivateFile(named: "keys.lock") }, path, target: target)
        restore(path)
        #expect(mkfifo(dir.path + "/fifo", 0o600) == 0)
        #expect(try #require(throws: KeychainError.self) { _ = try kc.openPrivateFile(named: "fifo", options: .writeOnly, what: "log") }.code == .corrupt)
        for bad in ["", ".", "..", "items/x", "../kc2"] {
            #expect(try #require(throws: KeychainError.self) { try kc.checkPrivateFile(named: bad) }.code == .param, "\(bad)")
        }
    }

    /// What is checked is the keychain directory and what is inside it: a linked parent is
    /// followed (as /var → /private/var on macOS), and the message for a linked keychain says so.
    @Test func aLinkedParentDirectoryIsAcceptedAndTheMessageSaysWhatIsChecked() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let parent = root.appendingPathComponent("parent-link")
        #expect(symlink(root.path, parent.path) == 0)
        let viaParent = try Keychain(opening: parent.appendingPathComponent("kc"), as: Fixture.app)
        try viaParent.add(service: "s", account: "a", data: Fixture.secret("x"))
        let link = root.appendingPathComponent("kc-link")
        #expect(symlink(dir.path, link.path) == 0)
        let e = try #require(throws: KeychainError.self) { _ = try Keychain(opening: link, as: Fixture.app) }
        #expect(e.code == .keychainMissing)
        #expect(e.reason == "\(link.path) is a symbolic link: the keychain directory itself and everything inside it must not be links (directories above it may be)")
    }

    @Test func theLockedMessageUsesTheRightArticle() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "s", account: "wu", accessibility: .whenUnlocked, data: Fixture.secret("x"))
        try app.add(service: "s", account: "afu", accessibility: .afterFirstUnlockThisDeviceOnly, data: Fixture.secret("x"))
        try app.lock()
        let wu = try #require(throws: KeychainError.self) { _ = try app.copyData(ItemQuery(service: "s", account: "wu")) }
        #expect(wu.reason == "a whenUnlocked item is not accessible while the device is locked")
        try app.setDeviceState(.beforeFirstUnlock)
        let afu = try #require(throws: KeychainError.self) { _ = try app.copyData(ItemQuery(service: "s", account: "afu")) }
        #expect(afu.reason == "an afterFirstUnlockThisDeviceOnly item is not accessible while the device is before first unlock")
        #expect(afu.description.hasSuffix(": errSecInteractionNotAllowed (-25308)"))
    }
}
