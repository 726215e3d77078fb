import PushSealTestSupport
import Foundation
import PushSealCrypto
@testable import PushSealKeychain
import Testing

@Suite struct EntitlementsTests {
    @Test func accessGroupsFollowIOSOrderWithoutDuplicates() {
        let e = Entitlements(applicationIdentifier: "T.app", keychainAccessGroups: ["T.shared", "T.app"], applicationGroups: ["group.x", "T.shared"])
        #expect(e.accessGroups == ["T.shared", "T.app", "group.x"])
        #expect(Entitlements(applicationIdentifier: "T.app", applicationGroups: ["group.x"]).accessGroups == ["T.app", "group.x"])
    }

    @Test func loadsJSONAndPlist() throws {
        let json = #"{"application-identifier": "T.app", "keychain-access-groups": ["T.shared"], "application-groups": ["group.x"]}"#
        let a = try Entitlements.decode(Data(json.utf8))
        #expect(a == Entitlements(applicationIdentifier: "T.app", keychainAccessGroups: ["T.shared"], applicationGroups: ["group.x"]))
        let plist = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict>
        <key>application-identifier</key><string>T.app</string>
        <key>keychain-access-groups</key><array><string>T.shared</string></array>
        <key>com.apple.security.application-groups</key><array><string>group.x</string></array>
        </dict></plist>
        """
        #expect(try Entitlements.decode(Data(plist.utf8)) == a)
    }

    @Test func rejectsWrongTypes() {
        expectCode(.decode) { try Entitlements.decode(Data(#"{"keychain-access-groups": "T.shared"}"#.utf8)) }
        expectCode(.decode) { try Entitlements.decode(Data("[1]".utf8)) }
        expectCode(.keychainMissing) { try Entitlements.load(from: URL(fileURLWithPath: "/nonexistent/ent.json")) }
    }
}

@Suite struct KeychainErrorTests {
    @Test func osStatusNumbersAndNames() {
        let cases: [(KeychainError.Code, Int32, String)] = [
            (.itemNotFound, -25300, "errSecItemNotFound"), (.duplicateItem, -25299, "errSecDuplicateItem"),
            (.interactionNotAllowed, -25308, "errSecInteractionNotAllowed"), (.missingEntitlement, -34018, "errSecMissingEntitlement"),
            (.param, -50, "errSecParam"), (.decode, -26275, "errSecDecode"), (.authFailed, -25293, "errSecAuthFailed"),
        ]
        for (code, status, name) in cases {
            let e = KeychainError(code, "x")
            #expect(e.osStatus == status)
            #expect(e.statusName == name)
            #expect(e.description == "x: \(name) (\(status))")
        }
        for code in [KeychainError.Code.keychainMissing, .insecurePermissions, .corrupt, .io, .alreadyExists, .symbolicLink] {
            #expect(code.osStatus == nil)
            #expect(code.statusName == nil)
        }
    }
}

@Suite struct KeychainItemTests {
    @Test func addStoresInFirstGroupAndReadsBack() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        let stored = try app.add(service: "push", account: "alice", label: "Alice", data: Fixture.secret("k1"))
        #expect(stored.accessGroup == Fixture.shared)
        #expect(stored.accessibility == .whenUnlocked)
        let items = try app.copyMatching(ItemQuery(service: "push", account: "alice"), returning: [.attributes, .data])
        #expect(items.count == 1)
        #expect(items[0].attributes == stored)
        #expect(Fixture.text(items[0].data) == "k1")
        // The extension shares the group and reads the same item.
        let ext = try Keychain(opening: dir, as: Fixture.ext)
        #expect(Fixture.text(try ext.copyData(ItemQuery(service: "push", account: "alice"))) == "k1")
        // Attributes-only results carry no data.
        #expect(try ext.copyMatching(ItemQuery(service: "push")).first?.data == nil)
    }

    @Test func duplicateAddFailsAndChangesNothing() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "push", account: "alice", data: Fixture.secret("old"))
        let before = try Fixture.snapshot(dir)
        expectCode(.duplicateItem) { try app.add(service: "push", account: "alice", accessibility: .afterFirstUnlock, data: Fixture.secret("new")) }
        #expect(try Fixture.snapshot(dir) == before)
        // Same service/account in another group or class is a different item.
        try app.add(service: "push", account: "alice", accessGroup: Fixture.appID, data: Fixture.secret("other"))
        try app.add(.key, service: "push", account: "alice", data: Fixture.secret("key"))
        #expect(try app.copyMatching(ItemQuery(service: "push", account: "alice"), limit: .all).count == 2)
    }

    @Test func entitlementRules() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        let ext = try Keychain(opening: dir, as: Fixture.ext)
        try app.add(service: "push", account: "private", accessGroup: Fixture.appID, data: Fixture.secret("p"))
        // A group the extension lacks: -34018; a group it has but empty: -25300.
        expectCode(.missingEntitlement) { try ext.copyMatching(ItemQuery(service: "push", account: "private", accessGroup: Fixture.appID)) }
        expectCode(.itemNotFound) { try ext.copyMatching(ItemQuery(service: "push", account: "private", accessGroup: Fixture.shared)) }
        // Without a group the search covers only the caller's groups.
        expectCode(.itemNotFound) { try ext.copyMatching(ItemQuery(service: "push", account: "private")) }
        expectCode(.itemNotFound) { try ext.copyMatching(ItemQuery(service: "push"), limit: .all) }
        #expect(try app.copyMatching(ItemQuery(service: "push"), limit: .all).count == 1)
        // Adding, updating and deleting in a foreign group fail before any file is touched.
        let before = try Fixture.snapshot(dir)
        expectCode(.missingEntitlement) { try ext.add(service: "x", account: "y", accessGroup: Fixture.appID, data: Fixture.secret("z")) }
        expectCode(.missingEntitlement) { try ext.update(ItemQuery(service: "push", accessGroup: Fixture.appID), with: ItemChanges(label: "l")) }
        expectCode(.missingEntitlement) { try ext.delete(ItemQuery(service: "push", accessGroup: Fixture.appID)) }
        expectCode(.missingEntitlement) { try app.update(ItemQuery(service: "push"), with: ItemChanges(accessGroup: Fixture.extID)) }
        #expect(try Fixture.snapshot(dir) == before)
        // An identity without any group can store nothing.
        let nobody = try Keychain(opening: dir, as: Entitlements())
        expectCode(.missingEntitlement) { try nobody.add(service: "x", account: "y", data: Fixture.secret("z")) }
    }

    @Test func paramErrors() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        expectCode(.param) { try app.add(service: "", account: "a", data: Fixture.secret("z")) }
        expectCode(.param) { try app.add(service: "s", account: "", data: Fixture.secret("z")) }
        expectCode(.param) { try app.add(service: String(repeating: "s", count: 5000), account: "a", data: Fixture.secret("z")) }
        expectCode(.param) { try app.add(service: "s", account: "a", data: SecretBytes(randomByteCount: Keychain.maxDataByteCount + 1)) }
        #expect(try Fixture.itemFiles(dir).isEmpty)
    }

    @Test func updateBumpsModificationDateAndRefusesCollisions() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        let a = try app.add(service: "push", account: "a", data: Fixture.secret("a1"))
        try app.add(service: "push", account: "b", data: Fixture.secret("b1"))
        #expect(try app.update(ItemQuery(service: "push", account: "a"), with: ItemChanges(label: "A", data: Fixture.secret("a2"))) == 1)
        let got = try app.copyMatching(ItemQuery(service: "push", account: "a"), returning: [.data])[0]
        #expect(Fixture.text(got.data) == "a2")
        #expect(got.attributes.label == "A")
        #expect(got.attributes.creationDate == a.creationDate)
        #expect(got.attributes.modificationDate > a.modificationDate)
        // Renaming a onto b collides: -25299 and nothing changes.
        let before = try Fixture.snapshot(dir)
        expectCode(.duplicateItem) { try app.update(ItemQuery(service: "push", account: "a"), with: ItemChanges(account: "b")) }
        // Updating both to the same account collides among themselves.
        expectCode(.duplicateItem) { try app.update(ItemQuery(service: "push"), with: ItemChanges(account: "c")) }
        #expect(try Fixture.snapshot(dir) == before)
        expectCode(.itemNotFound) { try app.update(ItemQuery(service: "push", account: "zzz"), with: ItemChanges(label: "x")) }
        // Moving an item to another primary key keeps one file per item.
        try app.update(ItemQuery(service: "push", account: "a"), with: ItemChanges(account: "c", accessGroup: Fixture.appID))
        #expect(try Fixture.itemFiles(dir).count == 2)
        #expect(Fixture.text(try app.copyData(ItemQuery(service: "push", account: "c", accessGroup: Fixture.appID))) == "a2")
        expectCode(.itemNotFound) { try app.copyMatching(ItemQuery(service: "push", account: "a")) }
        // Changing accessibility re-seals under the other class key and stays readable.
        try app.update(ItemQuery(service: "push", account: "b"), with: ItemChanges(accessibility: .afterFirstUnlockThisDeviceOnly))
        try app.lock()
        #expect(Fixture.text(try app.copyData(ItemQuery(service: "push", account: "b"))) == "b1")
    }

    @Test func deleteRemovesAllMatches() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        for i in 0..<3 { try app.add(service: "push", account: "a\(i)", data: Fixture.secret("\(i)")) }
        try app.add(service: "other", account: "a0", data: Fixture.secret("o"))
        try app.lock()  // delete needs no class key
        #expect(try app.delete(ItemQuery(service: "push")) == 3)
        expectCode(.itemNotFound) { try app.delete(ItemQuery(service: "push")) }
        #expect(try app.copyMatching(ItemQuery(), limit: .all).map(\.attributes.service) == ["other"])
    }

    @Test func matchAllOrderIsGroupOrderThenOldest() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        try app.add(service: "s", account: "in-app-group", accessGroup: Fixture.appGroup, data: Fixture.secret("1"))
        try app.add(service: "s", account: "in-app-id", accessGroup: Fixture.appID, data: Fixture.secret("2"))
        try app.add(service: "s", account: "shared-1", data: Fixture.secret("3"))
        try app.add(service: "s", account: "shared-2", data: Fixture.secret("4"))
        let all = try app.copyMatching(ItemQuery(service: "s"), limit: .all, returning: [.data])
        #expect(all.map(\.attributes.account) == ["shared-1", "shared-2", "in-app-id", "in-app-group"])
        #expect(all.map { Fixture.text($0.data) } == ["3", "4", "2", "1"])
        #expect(try app.copyMatching(ItemQuery(service: "s"), limit: .one).map(\.attributes.account) == ["shared-1"])
        expectCode(.itemNotFound) { try app.copyMatching(ItemQuery(service: "s", label: "none"), limit: .all) }
    }

    @Test func appGroupContainerIsSharedAndEntitled() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let app = try Keychain(opening: dir, as: Fixture.app)
        let ext = try Keychain(opening: dir, as: Fixture.ext)
        let a = try app.appGroupContainer(for: Fixture.appGroup)
        try Data("cached".utf8).write(to: a.appendingPathComponent("media.bin"))
        let e = try ext.appGroupContainer(for: Fixture.appGroup)
        #expect(e == a)
        #expect(try Data(contentsOf: e.appendingPathComponent("media.bin")) == Data("cached".utf8))
        expectCode(.missingEntitlement) { try ext.appGroupContainer(for: "group.other") }
        // A keychain access group is not an App Group.
        expectCode(.missingEntitlement) { try ext.appGroupContainer(for: Fixture.shared) }
        let odd = try Keychain(opening: dir, as: Entitlements(applicationGroups: ["../escape"]))
        expectCode(.param) { try odd.appGroupContainer(for: "../escape") }
    }
}
