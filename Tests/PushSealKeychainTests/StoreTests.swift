import PushSealTestSupport
import Foundation
import PushSealCrypto
@testable import PushSealKeychain
import Testing

@Suite struct StoreTests {
    @Test func layoutAndModes() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "s", account: "a", data: Fixture.secret("plaintext-marker"))
        var st = stat()
        for (path, mode) in [("", 0o700), ("/items", 0o700), ("/tmp", 0o700), ("/app-groups", 0o700), ("/device-secret", 0o600),
                             ("/keychain.meta", 0o600), ("/device-state", 0o600)] {
            #expect(lstat(dir.path + path, &st) == 0)
            #expect(Int(st.st_mode & 0o777) == mode, "\(path)")
        }
        let file = try Fixture.itemFiles(dir)[0]
        #expect(lstat(file.path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        // The secret is not stored in clear.
        let raw = try Data(contentsOf: file)
        #expect(raw.range(of: Data("plaintext-marker".utf8)) == nil)
    }

    @Test func missingAndUnsafeKeychainsAreRefused() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        expectCode(.keychainMissing) { try Keychain(opening: root.appendingPathComponent("nope"), as: Fixture.app) }
        try FileManager.default.createDirectory(at: root.appendingPathComponent("empty"), withIntermediateDirectories: false)
        chmod(root.appendingPathComponent("empty").path, 0o700)
        expectCode(.keychainMissing) { try Keychain(opening: root.appendingPathComponent("empty"), as: Fixture.app) }
        expectCode(.alreadyExists) { try Keychain.create(at: dir) }
        chmod(dir.path, 0o755)
        expectCode(.insecurePermissions) { try Keychain(opening: dir, as: Fixture.app) }
        chmod(dir.path, 0o700)
        chmod(dir.path + "/device-secret", 0o644)
        expectCode(.insecurePermissions) { try Keychain(opening: dir, as: Fixture.app) }
        chmod(dir.path + "/device-secret", 0o600)
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "s", account: "a", data: Fixture.secret("x"))
        chmod(try Fixture.itemFiles(dir)[0].path, 0o640)
        expectCode(.insecurePermissions) { try app.copyMatching(ItemQuery(service: "s", account: "a")) }
    }

    /// The thrown error of `body`, which must fail with a `KeychainError`.
    private func keychainError(_ body: () throws -> Void) throws -> KeychainError {
        do {
            try body()
        } catch let e as KeychainError {
            return e
        }
        throw CancellationError()
    }

    @Test func permissionErrorsSuggestTheFixForTheOnePathThatFailed() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "s", account: "a", data: Fixture.secret("x"))
        let item = try Fixture.itemFiles(dir)[0].path
        chmod(item, 0o644)
        let file = try keychainError { _ = try app.copyMatching(ItemQuery(service: "s", account: "a")) }
        #expect(file.code == .insecurePermissions)
        #expect(file.reason == "\(item) is accessible by group or others (mode 644)")
        #expect(file.suggestion == "chmod 600 \(item)  # a keychain's files must be 0600, its directories 0700")
        chmod(item, 0o600)
        chmod(dir.path + "/items", 0o711)
        let directory = try keychainError { _ = try Keychain(opening: dir, as: Fixture.app) }
        #expect(directory.suggestion?.hasPrefix("chmod 700 \(dir.path)/items  #") == true, "\(directory.suggestion ?? "nil")")
        chmod(dir.path + "/items", 0o700)
        // A path that needs quoting for the shell is quoted.
        #expect(Posix.shellQuoted("/a b/it's") == #"'/a b/it'\''s'"#)
        #expect(Posix.shellQuoted("/srv/kc-1/items/x.item") == "/srv/kc-1/items/x.item")
    }

    @Test func aKeychainPathThatIsASymbolicLinkIsRefusedNamingItsTarget() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let link = root.appendingPathComponent("link")
        #expect(symlink(dir.path, link.path) == 0)
        let open = try keychainError { _ = try Keychain(opening: link, as: Fixture.app) }
        #expect(open.code == .keychainMissing)
        #expect(open.reason.hasPrefix("\(link.path) is a symbolic link"))
        #expect(open.suggestion == "give the keychain's real path: \(dir.resolvingSymlinksInPath().path)")
        let create = try keychainError { try Keychain.create(at: link) }
        #expect(create.code == .alreadyExists)
        #expect(create.reason.hasPrefix("\(link.path) is a symbolic link"))
        // A dangling link: refused the same way, with no target to suggest.
        let dangling = root.appendingPathComponent("dangling")
        #expect(symlink(root.appendingPathComponent("nowhere").path, dangling.path) == 0)
        let gone = try keychainError { _ = try Keychain(opening: dangling, as: Fixture.app) }
        #expect(gone.code == .keychainMissing && gone.suggestion == nil)
        // Through its real path the same keychain opens.
        _ = try Keychain(opening: dir, as: Fixture.app)
    }

    @Test func leftoverTempFilesAreIgnoredAndCleaned() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        let junk = dir.path + "/tmp/.tmp-99999-dead"
        #expect(FileManager.default.createFile(atPath: junk, contents: Data("half".utf8), attributes: [.posixPermissions: 0o600]))
        expectCode(.itemNotFound) { try app.copyMatching(ItemQuery(), limit: .all) }
        try app.add(service: "s", account: "a", data: Fixture.secret("x"))
        #expect(!FileManager.default.fileExists(atPath: junk))
    }
}

/// Damaged files are reported as `.corrupt`, never skipped and never "not found".
@Suite struct CorruptionTests {
    /// A keychain with two items; returns paths of their files (a's first).
    func twoItems() throws -> (root: URL, dir: URL, a: URL, b: URL) {
        let (root, dir) = try Fixture.keychain()
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "s", account: "a", data: Fixture.secret("secret-a"))
        try app.add(service: "s", account: "b", data: Fixture.secret("secret-b"))
        let a = dir.appendingPathComponent("items/" + ItemRecord.fileName(itemClass: .genericPassword, accessGroup: Fixture.shared, service: "s", account: "a"))
        let b = dir.appendingPathComponent("items/" + ItemRecord.fileName(itemClass: .genericPassword, accessGroup: Fixture.shared, service: "s", account: "b"))
        return (root, dir, a, b)
    }

    @Test func everyFlippedBitOfAnItemIsReported() throws {
        let (root, dir, a, _) = try twoItems()
        defer { try? FileManager.default.removeItem(at: root) }
        let original = Array(try Data(contentsOf: a))
        let app = try Keychain(opening: dir, as: Fixture.app)
        let boxByteCount = AES256GCM.minimumCombinedByteCount + "secret-a".utf8.count
        // Every byte position, one bit each (the file is about 150 bytes).
        for i in 0..<original.count {
            var damaged = original
            damaged[i] ^= UInt8(1 << (i % 8))
            try Data(damaged).write(to: a)
            expectCode(.corrupt) { try app.copyData(ItemQuery(service: "s", account: "a")) }
            // A scan meets the damaged file too and reports it; it skips it (and says so) only when
            // the damaged header names a group the caller does not search (F10).
            if let claimed = ItemRecord.claimedAccessGroup(damaged), !app.entitlements.accessGroups.contains(claimed) {
                var skipped: [KeychainError] = []
                let found = try app.copyMatching(ItemQuery(service: "s"), limit: .all, returning: .data, skipped: &skipped)
                #expect(found.map(\.attributes.account) == ["b"])
                #expect(skipped.map(\.code) == [.corrupt])
                continue
            }
            expectCode(.corrupt) { try app.copyMatching(ItemQuery(service: "s"), limit: .all, returning: .data) }
            // Attribute-only results authenticate the header (not the sealed secret, which they never open).
            if i < original.count - boxByteCount {
                expectCode(.corrupt) { try app.copyMatching(ItemQuery(service: "s"), limit: .all) }
            }
        }
        try Data(original).write(to: a)
        #expect(Fixture.text(try app.copyData(ItemQuery(service: "s", account: "a"))) == "secret-a")
    }

    @Test func swappedCiphertextIsReported() throws {
        let (root, dir, a, b) = try twoItems()
        defer { try? FileManager.default.removeItem(at: root) }
        var fa = Array(try Data(contentsOf: a)), fb = Array(try Data(contentsOf: b))
        // Both secrets are the same length, so the secret boxes sit at the same offset from the end.
        let boxLength = AES256GCM.minimumCombinedByteCount + "secret-a".utf8.count
        let tailA = Array(fa.suffix(boxLength)), tailB = Array(fb.suffix(boxLength))
        fa.replaceSubrange((fa.count - boxLength)..., with: tailB)
        fb.replaceSubrange((fb.count - boxLength)..., with: tailA)
        try Data(fa).write(to: a)
        try Data(fb).write(to: b)
        let app = try Keychain(opening: dir, as: Fixture.app)
        expectCode(.corrupt) { try app.copyData(ItemQuery(service: "s", account: "a")) }
        expectCode(.corrupt) { try app.copyData(ItemQuery(service: "s", account: "b")) }
    }

    @Test func swappedOrRenamedFilesAreReported() throws {
        let (root, dir, a, b) = try twoItems()
        defer { try? FileManager.default.removeItem(at: root) }
        let fa = try Data(contentsOf: a), fb = try Data(contentsOf: b)
        try fb.write(to: a)
        try fa.write(to: b)
        let app = try Keychain(opening: dir, as: Fixture.app)
        expectCode(.corrupt) { try app.copyData(ItemQuery(service: "s", account: "a")) }
        expectCode(.corrupt) { try app.copyMatching(ItemQuery(), limit: .all) }
    }

    @Test func truncatedFilesAreReported() throws {
        let (root, dir, a, _) = try twoItems()
        defer { try? FileManager.default.removeItem(at: root) }
        let original = try Data(contentsOf: a)
        let app = try Keychain(opening: dir, as: Fixture.app)
        for length in [0, 1, 4, 30, original.count / 2, original.count - 1] {
            try original.prefix(length).write(to: a)
            expectCode(.corrupt) { try app.copyData(ItemQuery(service: "s", account: "a")) }
        }
        try (original + Data([0])).write(to: a)
        expectCode(.corrupt) { try app.copyData(ItemQuery(service: "s", account: "a")) }
        // Damaged store files too.
        try original.write(to: a)
        let state = dir.appendingPathComponent("device-state")
        let stateBytes = try Data(contentsOf: state)
        try stateBytes.prefix(10).write(to: state)
        expectCode(.corrupt) { try Keychain(opening: dir, as: Fixture.app) }
        var flipped = Array(stateBytes)
        flipped[20] ^= 0x01
        try Data(flipped).write(to: state)
        expectCode(.corrupt) { try Keychain(opening: dir, as: Fixture.app) }
        try stateBytes.write(to: state)
        let metaURL = dir.appendingPathComponent("keychain.meta")
        let meta = try Data(contentsOf: metaURL)
        try meta.prefix(meta.count / 2).write(to: metaURL)
        expectCode(.corrupt) { try Keychain(opening: dir, as: Fixture.app) }
    }

    @Test func wrongDeviceSecretIsReported() throws {
        let (root, dir, _, _) = try twoItems()
        defer { try? FileManager.default.removeItem(at: root) }
        let secretURL = dir.appendingPathComponent("device-secret")
        let original = try Data(contentsOf: secretURL)
        try Data(SecureRandom.bytes(32)).write(to: secretURL)
        expectCode(.corrupt) { try Keychain(opening: dir, as: Fixture.app) }
        try Data(SecureRandom.bytes(31)).write(to: secretURL)
        expectCode(.corrupt) { try Keychain(opening: dir, as: Fixture.app) }
        try FileManager.default.removeItem(at: secretURL)
        expectCode(.deviceSecretMissing) { try Keychain(opening: dir, as: Fixture.app) }
        // Another keychain's item files do not open under this one's keys.
        try original.write(to: secretURL)
        chmod(secretURL.path, 0o600)
        let (root2, dir2) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root2) }
        let other = try Keychain(opening: dir2, as: Fixture.app)
        try other.add(service: "s", account: "a", data: Fixture.secret("secret-x"))
        let name = ItemRecord.fileName(itemClass: .genericPassword, accessGroup: Fixture.shared, service: "s", account: "a")
        try Data(contentsOf: dir2.appendingPathComponent("items/" + name)).write(to: dir.appendingPathComponent("items/" + name))
        let app = try Keychain(opening: dir, as: Fixture.app)
        expectCode(.corrupt) { try app.copyData(ItemQuery(service: "s", account: "a")) }
    }
}
