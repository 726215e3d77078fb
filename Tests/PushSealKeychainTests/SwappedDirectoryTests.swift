import Foundation
import PushSealCrypto
import PushSealKeychain
import Testing

/// Security review F21: an open keychain works below the directories it opened and checked
/// (`openat` + `O_NOFOLLOW`), so a directory of the keychain, or the keychain itself, swapped
/// for a symbolic link between two operations is never followed.
@Suite struct SwappedDirectoryTests {
    /// Renames `path` away (to `path.orig`) and puts a link to `target` in its place.
    private func swap(_ path: String, forLinkTo target: String) throws {
        try FileManager.default.moveItem(atPath: path, toPath: path + ".orig")
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
    }

    /// A 0700 directory holding one file `precious` (0600).
    private func makeDecoy(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        #expect(FileManager.default.createFile(atPath: path + "/precious", contents: Data("not the keychain's".utf8), attributes: [.posixPermissions: 0o600]))
    }

    private func names(_ path: String) throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: path).sorted() }

    @Test func itemsAndTempDirectoriesSwappedForLinksAreNotFollowed() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "push", account: "alice", accessibility: .afterFirstUnlockThisDeviceOnly, data: Fixture.secret("key-a"))

        let decoy = root.path + "/decoy"
        try makeDecoy(decoy)
        try swap(dir.path + "/items", forLinkTo: decoy)
        try swap(dir.path + "/tmp", forLinkTo: decoy)

        // The open instance still reads the items directory it opened, not the link's target.
        #expect(Fixture.text(try app.copyData(ItemQuery(service: "push", account: "alice"))) == "key-a")
        // A write goes there too: its temp file is not made (nor left-overs swept) in the decoy,
        // and the item is not renamed into it.
        try app.add(service: "push", account: "bob", accessibility: .afterFirstUnlockThisDeviceOnly, data: Fixture.secret("key-b"))
        try app.delete(ItemQuery(service: "push", account: "alice"))
        #expect(try names(decoy) == ["precious"])
        #expect(try names(dir.path + "/items.orig").count == 1)
        #expect(try names(dir.path + "/tmp.orig").isEmpty)
        #expect(Fixture.text(try app.copyData(ItemQuery(service: "push", account: "bob"))) == "key-b")
        #expect(try app.copyMatching(ItemQuery(), limit: .all, returning: .attributes).count == 1)

        // A new open meets the links and refuses them, as before.
        let error = #expect(throws: KeychainError.self) { try Keychain(opening: dir, as: Fixture.app) }
        #expect(error?.code == .symbolicLink)
    }

    @Test func aKeychainDirectorySwappedForALinkIsNotFollowedByAnOpenInstance() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "push", account: "alice", accessibility: .afterFirstUnlockThisDeviceOnly, data: Fixture.secret("key-a"))
        // Another keychain (say, an older copy) swapped in under the same path.
        let other = root.appendingPathComponent("other")
        try Keychain.create(at: other)
        try Keychain(opening: other, as: Fixture.app)
            .add(service: "push", account: "mallory", accessibility: .afterFirstUnlockThisDeviceOnly, data: Fixture.secret("planted"))
        try swap(dir.path, forLinkTo: other.path)

        #expect(try app.deviceState == .unlocked)
        #expect(Fixture.text(try app.copyData(ItemQuery(service: "push", account: "alice"))) == "key-a")
        let missing = #expect(throws: KeychainError.self) { try app.copyData(ItemQuery(service: "push", account: "mallory")) }
        #expect(missing?.code == .itemNotFound)
        try app.lock()
        try app.add(service: "push", account: "bob", accessibility: .afterFirstUnlockThisDeviceOnly, data: Fixture.secret("key-b"))
        // Nothing reached the other keychain: its state and items are untouched.
        let seen = try Keychain(opening: other, as: Fixture.app)
        #expect(try seen.deviceState == .unlocked)
        #expect(try seen.copyMatching(ItemQuery(), limit: .all, returning: .attributes).map(\.attributes.account) == ["mallory"])
        #expect(try names(dir.path + ".orig/items").count == 2)
    }
}
