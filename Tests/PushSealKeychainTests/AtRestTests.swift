import Foundation
import PushSealCrypto
@testable import PushSealKeychain
import Testing

/// Keys at rest (security review F1, F5, F6, F10): what a copy, a rollback or a guess of the
/// files gives an attacker.
@Suite struct AtRestTests {
    static func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }
    static func put(_ data: Data, _ path: String) throws {
        try data.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    // F1: a copy of the directory without its device secret reads nothing.
    @Test func copiedDirectoryWithoutItsSecretReadsNothing() throws {
        let root = try Fixture.scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        let dir = root.appendingPathComponent("kc")
        try Keychain.create(at: dir, deviceSecret: .besideDirectory)
        #expect(FileManager.default.fileExists(atPath: dir.path + ".secret"))
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/device-secret"))
        let app = try Keychain(opening: dir, as: Fixture.app)
        #expect(app.deviceSecretLocation == .besideDirectory)
        try app.add(service: "push", account: "alice", accessibility: .afterFirstUnlockThisDeviceOnly, data: Fixture.secret("key"))

        let copy = root.appendingPathComponent("stolen")
        try FileManager.default.copyItem(at: dir, to: copy)
        let error = #expect(throws: KeychainError.self) { try Keychain(opening: copy, as: Fixture.app) }
        #expect(error?.code == .deviceSecretMissing)
        #expect(error?.reason.contains(copy.path + ".secret") == true)
        // Only the secret was missing: given its path, the copy opens.
        let withSecret = try Keychain(opening: copy, as: Fixture.app, deviceSecretFile: dir.path + ".secret")
        #expect(Fixture.text(try withSecret.copyData(ItemQuery(service: "push", account: "alice"))) == "key")
    }

    @Test func outsideSecretFileHasItsOwnChecks() throws {
        let root = try Fixture.scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        let dir = root.appendingPathComponent("kc"), secret = root.path + "/elsewhere.secret"
        try Keychain.create(at: dir, deviceSecret: .file(secret))
        #expect(try Keychain(opening: dir, as: Fixture.app).deviceSecretLocation == .file(secret))
        chmod(secret, 0o640)
        expectCode(.insecurePermissions) { try Keychain(opening: dir, as: Fixture.app) }
        chmod(secret, 0o600)
        try FileManager.default.moveItem(atPath: secret, toPath: secret + ".real")
        try FileManager.default.createSymbolicLink(atPath: secret, withDestinationPath: secret + ".real")
        expectCode(.symbolicLink) { try Keychain(opening: dir, as: Fixture.app) }
        // Creating over an existing secret file is refused (never overwrites another keychain's).
        expectCode(.alreadyExists) { try Keychain.create(at: root.appendingPathComponent("kc2"), deviceSecret: .file(secret + ".real")) }
        expectCode(.param) { try Keychain.create(at: root.appendingPathComponent("kc3"), deviceSecret: .file("relative.secret")) }
    }

    @Test func keychainMetaVersionOneStillOpens() throws {
        // A keychain written before 0.2.0: version 1 meta, secret inside, class C under the device KEK.
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "push", account: "alice", accessibility: .afterFirstUnlock, data: Fixture.secret("v1"))
        let metaPath = dir.path + "/keychain.meta"
        var meta = try KeychainMeta.decode(Array(try Self.bytes(metaPath)), path: metaPath)
        meta.version = 1
        try Self.put(Data(try meta.encode()), metaPath)
        #expect(!String(decoding: try Self.bytes(metaPath), as: UTF8.self).contains("deviceSecret"))
        let reopened = try Keychain(opening: dir, as: Fixture.app)
        #expect(Fixture.text(try reopened.copyData(ItemQuery(service: "push", account: "alice"))) == "v1")
    }

    // F1: with a passcode, class C is under the passcode KEK; a reboot destroys its per-boot key.
    @Test func afterFirstUnlockNeedsThePasscodeAfterReboot() throws {
        let (root, dir) = try Fixture.keychain(passcode: "0042")
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "push", account: "alice", accessibility: .afterFirstUnlockThisDeviceOnly, data: Fixture.secret("key"))
        try app.lock()
        let lockedState = try Self.bytes(dir.path + "/device-state")
        #expect(Fixture.text(try app.copyData(ItemQuery(service: "push", account: "alice"))) == "key")
        try app.setDeviceState(.beforeFirstUnlock)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/unlock-keys"))
        // The state saved while locked (after first unlock), put back: its class C box is dead.
        try Self.put(lockedState, dir.path + "/device-state")
        let fresh = try Keychain(opening: dir, as: Fixture.ext)
        #expect(try fresh.deviceState == .beforeFirstUnlock)
        expectCode(.interactionNotAllowed) { try fresh.copyData(ItemQuery(service: "push", account: "alice")) }
        // The passcode brings it back (first unlock into locked).
        try fresh.setDeviceState(.locked, passcode: "0042")
        #expect(Fixture.text(try fresh.copyData(ItemQuery(service: "push", account: "alice"))) == "key")
        #expect(!String(decoding: try Self.bytes(dir.path + "/keychain.meta"), as: UTF8.self).contains("\"afterFirstUnlock\" :"))
    }

    // F5: a device-state saved while unlocked and put back after lock unlocks nothing.
    @Test func deviceStateRollbackUnlocksNothing() throws {
        let (root, dir) = try Fixture.keychain(passcode: "0042")
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "push", account: "secret", accessibility: .whenUnlockedThisDeviceOnly, data: Fixture.secret("top-secret"))
        let unlockedState = try Self.bytes(dir.path + "/device-state")
        try app.lock()
        try app.setDeviceState(.beforeFirstUnlock)
        try app.setDeviceState(.locked, passcode: "0042")
        try Self.put(unlockedState, dir.path + "/device-state")
        let reader = try Keychain(opening: dir, as: Fixture.ext)
        #expect(try reader.deviceState != .unlocked)
        expectCode(.interactionNotAllowed) { try reader.copyData(ItemQuery(service: "push", account: "secret")) }
        // The same rollback within one boot (lock, no reboot) also opens nothing.
        try reader.unlock(passcode: "0042")
        let again = try Self.bytes(dir.path + "/device-state")
        try reader.lock()
        try Self.put(again, dir.path + "/device-state")
        expectCode(.interactionNotAllowed) { try reader.copyData(ItemQuery(service: "push", account: "secret")) }
        try reader.unlock(passcode: "0042")
        #expect(Fixture.text(try reader.copyData(ItemQuery(service: "push", account: "secret"))) == "top-secret")
    }

    // F6: wrong passcodes are counted; after five, the next try waits.
    @Test func wrongPasscodesBackOff() throws {
        let (root, dir) = try Fixture.keychain(passcode: "0042")
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.lock()
        let t0: Int64 = 1_800_000_000
        for i in 1...Int(Keychain.freePasscodeAttempts) {
            expectCode(.authFailed) { try app.setDeviceState(.unlocked, passcode: "1111", now: t0) }
            #expect(try app.failedPasscodeAttempts == i)
        }
        // Even the right passcode is not tried during the wait; the counter does not move.
        let e = #expect(throws: KeychainError.self) { try app.setDeviceState(.unlocked, passcode: "0042", now: t0 + 59) }
        #expect(e?.code == .passcodeBackoff)
        #expect(try app.failedPasscodeAttempts == Int(Keychain.freePasscodeAttempts))
        // A fresh instance (another process) sees the same counter: it is in the sealed device state.
        let other = try Keychain(opening: dir, as: Fixture.ext)
        expectCode(.passcodeBackoff) { try other.setDeviceState(.unlocked, passcode: "0042", now: t0 + 30) }
        expectCode(.authFailed) { try other.setDeviceState(.unlocked, passcode: "1111", now: t0 + 60) }
        expectCode(.passcodeBackoff) { try other.setDeviceState(.unlocked, passcode: "0042", now: t0 + 60 + 299) }
        try other.setDeviceState(.unlocked, passcode: "0042", now: t0 + 60 + 300)
        #expect(try other.failedPasscodeAttempts == 0)
        #expect(try other.deviceState == .unlocked)
        #expect(Keychain.passcodeDelaySeconds(afterFailures: 20) == 3600)
    }

    // F10: an access group over the attribute limit is refused before anything is written.
    @Test func oversizedAccessGroupIsRefused() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let long = String(repeating: "g", count: 70_000)
        let rogue = try Keychain(opening: dir, as: Entitlements(keychainAccessGroups: [long]))
        expectCode(.param) { try rogue.add(service: "pushseal.keyset:com.example.app", account: "x", data: Fixture.secret("junk")) }
        expectCode(.param) { try rogue.add(service: "s", account: "a", accessGroup: long, data: Fixture.secret("junk")) }
        #expect(try Fixture.itemFiles(dir).isEmpty)
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "s", account: "a", data: Fixture.secret("v"))
        let wide = try Keychain(opening: dir, as: Entitlements(keychainAccessGroups: [Fixture.shared, long]))
        expectCode(.param) { try wide.update(ItemQuery(service: "s", account: "a"), with: ItemChanges(accessGroup: long)) }
        let json = Data("{\"keychain-access-groups\": [\"\(String(repeating: "h", count: 5000))\"]}".utf8)
        expectCode(.decode) { try Entitlements.decode(json) }
    }

    // F21: a parent others can write (without the sticky bit) is refused, as ssh's StrictModes.
    @Test func parentWritableByOthersIsRefused() throws {
        let root = try Fixture.scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        let parent = root.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: false)
        let dir = parent.appendingPathComponent("kc")
        try Keychain.create(at: dir)
        chmod(parent.path, 0o777)
        let e = #expect(throws: KeychainError.self) { try Keychain(opening: dir, as: Fixture.app) }
        #expect(e?.code == .insecurePermissions)
        #expect(e?.suggestion?.hasPrefix("chmod go-w " + parent.path) == true)
        chmod(parent.path, 0o1777)  // sticky, like /tmp: allowed
        _ = try Keychain(opening: dir, as: Fixture.app)
        chmod(parent.path, 0o755)
        _ = try Keychain(opening: dir, as: Fixture.app)
    }

    // F10, the review's poc06: an oversized group from another identity no longer breaks the
    // extension's key lookup (a scan by service).
    @Test func oversizedGroupOfAnotherIdentityDoesNotBreakLookup() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "pushseal.keyset:com.example.app", account: "alice", data: Fixture.secret("key"))
        let rogue = try Keychain(opening: dir, as: Entitlements(keychainAccessGroups: [String(repeating: "g", count: 70_000)]))
        _ = try? rogue.add(service: "pushseal.keyset:com.example.app", account: "x", data: Fixture.secret("junk"))
        let ext = try Keychain(opening: dir, as: Fixture.ext)
        let found = try ext.copyMatching(ItemQuery(service: "pushseal.keyset:com.example.app"), limit: .one, returning: .data)
        #expect(Fixture.text(found.first?.data) == "key")
    }

    // F10: a damaged item of a group the caller does not search is skipped and reported.
    @Test func damagedItemOfAnotherGroupIsSkippedAndReported() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "pushseal.keyset:com.example.app", account: "alice", data: Fixture.secret("key"))
        let other = try Keychain(opening: dir, as: Entitlements(keychainAccessGroups: ["TEAM.other"]))
        try other.add(service: "pushseal.keyset:com.example.app", account: "mallory", data: Fixture.secret("x"))
        let otherFile = try Fixture.itemFiles(dir).first { path in
            ItemRecord.claimedAccessGroup(Array((try? Data(contentsOf: path)) ?? Data())) == "TEAM.other"
        }
        let path = try #require(otherFile).path
        var bytes = Array(try Self.bytes(path))
        bytes[bytes.count - 1] ^= 1
        bytes.append(0)  // trailing byte: the file no longer parses
        try Self.put(Data(bytes), path)

        let ext = try Keychain(opening: dir, as: Fixture.ext)
        var skipped: [KeychainError] = []
        let found = try ext.copyMatching(ItemQuery(service: "pushseal.keyset:com.example.app"), limit: .one, returning: .data, skipped: &skipped)
        #expect(Fixture.text(found.first?.data) == "key")
        #expect(skipped.count == 1)
        #expect(skipped.first?.code == .corrupt)
        #expect(skipped.first?.reason.contains(path) == true)
        // The damaged file's own group still sees it as damaged, never as "not found".
        expectCode(.corrupt) { try other.copyMatching(ItemQuery(service: "pushseal.keyset:com.example.app")) }
    }
}
