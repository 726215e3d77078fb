import PushSealTestSupport
import Foundation
import PushSealCrypto
@testable import PushSealKeychain
import Testing

@Suite struct DeviceStateTests {
    @Test func whenUnlockedItemWhileLockedIsRefusedAndNothingChanges() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        let ext = try Keychain(opening: dir, as: Fixture.ext)
        try app.add(service: "push", account: "alice", data: Fixture.secret("k"))
        try app.lock()
        #expect(try ext.deviceState == .locked)
        let before = try Fixture.snapshot(dir)
        expectCode(.interactionNotAllowed) { try ext.copyData(ItemQuery(service: "push", account: "alice")) }
        expectCode(.interactionNotAllowed) { try ext.update(ItemQuery(service: "push", account: "alice"), with: ItemChanges(data: Fixture.secret("x"))) }
        expectCode(.interactionNotAllowed) { try ext.add(service: "push", account: "bob", data: Fixture.secret("k")) }
        #expect(try Fixture.snapshot(dir) == before)
        // Attributes stay readable while locked.
        #expect(try ext.copyMatching(ItemQuery(service: "push")).first?.attributes.account == "alice")
        try app.unlock()
        #expect(Fixture.text(try ext.copyData(ItemQuery(service: "push", account: "alice"))) == "k")
    }

    @Test func afterFirstUnlockIsReadableWhileLockedButNotBeforeFirstUnlock() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        for acc in [Accessibility.afterFirstUnlock, .afterFirstUnlockThisDeviceOnly] {
            try app.add(service: "push", account: acc.rawValue, accessibility: acc, data: Fixture.secret(acc.rawValue))
        }
        try app.lock()
        for acc in [Accessibility.afterFirstUnlock, .afterFirstUnlockThisDeviceOnly] {
            #expect(Fixture.text(try app.copyData(ItemQuery(service: "push", account: acc.rawValue))) == acc.rawValue)
        }
        try app.setDeviceState(.beforeFirstUnlock)
        let fresh = try Keychain(opening: dir, as: Fixture.ext)
        #expect(try fresh.deviceState == .beforeFirstUnlock)
        for acc in [Accessibility.afterFirstUnlock, .afterFirstUnlockThisDeviceOnly] {
            expectCode(.interactionNotAllowed) { try fresh.copyData(ItemQuery(service: "push", account: acc.rawValue)) }
        }
    }

    @Test func availabilityTable() {
        for acc in Accessibility.allCases {
            #expect(acc.isAvailable(in: .unlocked, passcodeSet: true))
            #expect(!acc.isAvailable(in: .beforeFirstUnlock, passcodeSet: true))
            #expect(acc.isAvailable(in: .locked, passcodeSet: true) == (acc == .afterFirstUnlock || acc == .afterFirstUnlockThisDeviceOnly))
        }
        #expect(!Accessibility.whenPasscodeSetThisDeviceOnly.isAvailable(in: .unlocked, passcodeSet: false))
        #expect(Accessibility.default == .whenUnlocked)
    }

    @Test func whenPasscodeSetNeedsAPasscode() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        expectCode(.authFailed) { try app.add(service: "s", account: "a", accessibility: .whenPasscodeSetThisDeviceOnly, data: Fixture.secret("z")) }
        #expect(try Fixture.itemFiles(dir).isEmpty)
    }

    @Test func passcodeUnlockAndClassAKeyProtection() throws {
        let (root, dir) = try Fixture.keychain(passcode: "1234")
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        #expect(app.isPasscodeSet)
        try app.add(service: "s", account: "a", accessibility: .whenPasscodeSetThisDeviceOnly, data: Fixture.secret("pc"))
        try app.add(service: "s", account: "c", accessibility: .afterFirstUnlock, data: Fixture.secret("c"))
        // The class A key is not in keychain.meta under the device secret alone.
        let meta = try String(contentsOf: dir.appendingPathComponent("keychain.meta"), encoding: .utf8)
        #expect(!meta.contains("\"whenUnlocked\""))
        #expect(meta.contains("argon2id13"))
        try app.setDeviceState(.beforeFirstUnlock)
        expectCode(.authFailed) { try app.unlock() }
        expectCode(.authFailed) { try app.unlock(passcode: "0000") }
        expectCode(.authFailed) { try app.setDeviceState(.locked) }
        #expect(try app.deviceState == .beforeFirstUnlock)
        try app.unlock(passcode: "1234")
        let ext = try Keychain(opening: dir, as: Fixture.ext)
        #expect(Fixture.text(try ext.copyData(ItemQuery(service: "s", account: "a"))) == "pc")
        try ext.lock()
        expectCode(.interactionNotAllowed) { try ext.copyData(ItemQuery(service: "s", account: "a")) }
        #expect(Fixture.text(try ext.copyData(ItemQuery(service: "s", account: "c"))) == "c")
        try ext.unlock(passcode: "1234")
        #expect(Fixture.text(try ext.copyData(ItemQuery(service: "s", account: "a"))) == "pc")
    }

    @Test func passcodeParametersAreCappedOnRead() throws {
        let (root, dir) = try Fixture.keychain(passcode: "1234")
        defer { try? FileManager.default.removeItem(at: root) }
        let metaURL = dir.appendingPathComponent("keychain.meta")
        let meta = try String(contentsOf: metaURL, encoding: .utf8)
        let huge = meta.replacingOccurrences(of: "\"memLimitBytes\" : \(8 << 20)", with: "\"memLimitBytes\" : \(1 << 40)")
        #expect(huge != meta)
        try huge.write(to: metaURL, atomically: false, encoding: .utf8)
        expectCode(.corrupt) { try Keychain(opening: dir, as: Fixture.app) }
    }
}
