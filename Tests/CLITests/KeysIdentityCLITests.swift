import Foundation
import PushSealKeychain
import PushSealKeyRecords
import PushSealDeviceKeys
import Testing

/// Identity options of the key lifecycle commands follow `push-keys keychain`: with
/// `--entitlements`, one `--access-group` names the keysets' group.
@Suite struct KeysIdentityCLITests {
    static let second = "TEAM123456.com.example.second"
    static let twoGroups = """
        {"application-identifier":"TEAM123456.com.example.app","keychain-access-groups":["TEAM123456.com.example.shared","\(second)"]}
        """

    @Test func accessGroupWithEntitlementsNamesTheKeysetGroup() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ent = dir.appendingPathComponent("two.json").path
        try Data(Self.twoGroups.utf8).write(to: URL(fileURLWithPath: ent))
        let dev = dir.appendingPathComponent("dev").path
        let base = ["--keychain", dev, "--entitlements", ent]  // list reads only: it takes no --audit-log
        let gen = try KeysCLI.keys(["generate"] + base + ["--audit-log", "/dev/null"] + ["--access-group", Self.second, "--app-id", KeysCLI.appID, "--recipient", "r"])
        #expect(gen.status == 0, "\(gen.stderr)")
        // The key item (and its manifest) is in the named group, not the identity's first one.
        let kc = try Keychain(opening: URL(fileURLWithPath: dev), as: try Entitlements.load(from: URL(fileURLWithPath: ent)))
        let items = try kc.copyMatching(ItemQuery(service: DeviceKeyItem.service(appID: KeysCLI.appID)), limit: .all)
        #expect(items.map(\.attributes.accessGroup) == [Self.second])
        // device list finds it there, not in the first group.
        let list = try KeysCLI.keys(["device", "list"] + base + ["--access-group", Self.second, "--app-id", KeysCLI.appID, "--json"])
        #expect(list.status == 0 && list.stdout.contains("\"accessGroup\":\"\(Self.second)\""), "\(list.stderr)")
        let listFirst = try KeysCLI.keys(["device", "list"] + base + ["--access-group", "TEAM123456.com.example.shared", "--app-id", KeysCLI.appID, "--json"])
        #expect(listFirst.status == 0 && (KeysCLI.json(listFirst.stdout)["keys"] as? [Any])?.isEmpty == true, "\(listFirst.stdout)")
        // The same rule as push-keys keychain: a group the identity lacks is -34018.
        let lacks = try KeysCLI.keys(["list"] + base + ["--access-group", "TEAM123456.other", "--json"])
        #expect(lacks.status == 1 && lacks.stdout.contains("-34018"), "\(lacks.stdout) \(lacks.stderr)")
        let kcLacks = try KeysCLI.keys(["keychain", "get", "--keychain", dev, "--entitlements", ent, "--access-group", "TEAM123456.other",
                                        "--service", KeychainNames.service(appID: KeysCLI.appID), "--account", "r", "--json"])
        #expect(kcLacks.status == lacks.status)
    }

    @Test func usageErrorsMatchPushKeysKeychain() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let app = dir.appendingPathComponent("app.json").path
        let dev = dir.appendingPathComponent("dev").path
        let base = ["--keychain", dev, "--entitlements", app]
        let twoGroups = try KeysCLI.keys(["list"] + base + ["--access-group", "a.b", "--access-group", "c.d"])
        #expect(twoGroups.status == 64 && twoGroups.stderr.contains("at most one --access-group"), "\(twoGroups.stderr)")
        let appGroup = try KeysCLI.keys(["list"] + base + ["--app-group", "group.com.example"])
        #expect(appGroup.status == 64 && appGroup.stderr.contains("--app-group cannot be combined with --entitlements"), "\(appGroup.stderr)")
        let device = try KeysCLI.keys(["rotate", "--keychain", dir.appendingPathComponent("srv").path, "--app-id", KeysCLI.appID, "--recipient", "r",
                                       "--device-keychain", dev, "--device-entitlements", app, "--device-access-group", "a.b", "--device-access-group", "c.d"])
        #expect(device.status == 64 && device.stderr.contains("at most one --device-access-group"), "\(device.stderr)")
        let help = try KeysCLI.keys(["generate", "--help"])
        #expect(help.stdout.contains("with --entitlements: the keysets' access group"))
    }
}
