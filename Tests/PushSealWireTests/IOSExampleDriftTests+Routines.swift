import Foundation
import PushSealCrypto
import PushSealKeychain
import PushSealKeyRecords
import PushSealDeviceKeys
import PushSealTestSupport
import PushSealWire
import Testing

/// The iOS reference's app routines of issue 28 — the first run after a reinstall
/// (`removeLeftoversAfterReinstall`), the move to another access group (`migrateAccessGroup`) and
/// what the app does after a restore onto a new phone (`registerCurrentKey`) — against what the
/// emulation actually writes, deletes and moves (PushSealDeviceKeys' `DeviceInstallMarker`,
/// `push-keys keychain migrate`, `KeychainBackup`).
extension IOSExampleDriftTests {
    static let routineApp = "com.example.app"

    /// A keychain `kc` in `dir` with an App Group container, as the app (group `T.shared`, App Group `group.x`).
    static func appKeychain(_ dir: TemporaryDirectory, groups: [String] = ["T.shared"]) throws -> Keychain {
        try Keychain.create(at: dir.appending("kc"))
        return try Keychain(opening: dir.appending("kc"), as: Entitlements(keychainAccessGroups: groups, applicationGroups: ["group.x"]))
    }

    /// The services of the app's items in `kc` (every group the identity reaches), sorted.
    static func services(_ kc: Keychain, group: String? = nil) throws -> [String] {
        do {
            return try kc.copyMatching(ItemQuery(accessGroup: group), limit: .all).map(\.attributes.service).sorted()
        } catch let e as KeychainError where e.code == .itemNotFound {
            return []
        }
    }

    @Test("reinstall: the reference's marker name, bytes, earlier-run file and services are what the emulation's first run writes and removes")
    func reinstallRoutine() throws {
        let routine = try Self.deviceKeys().section(from: "static let installMarkerName", to: "private static let writeLock")
        // Constants: the marker's name and bytes.
        #expect(try routine.matches(#"static let installMarkerName = "([^"]+)""#) == [DeviceInstallMarker.fileName])
        let written = try #require(try routine.matches(#"contents: Data\("([^"]*)"\.utf8\)"#).first)
        #expect(written.replacingOccurrences(of: "\\n", with: "\n") == String(decoding: DeviceInstallMarker.contents, as: UTF8.self))
        // The container file that marks an update from before the marker is one the emulation knows.
        let earlier = try routine.matches(#"appendingPathComponent\("([^"]+)"\)"#).filter { $0 != DeviceInstallMarker.fileName }
        #expect(!earlier.isEmpty && earlier.allSatisfy(DeviceInstallMarker.earlierRunFiles.contains), "\(earlier)")
        // The services it clears, in order: the emulation's, which add only the legacy keysets
        // and counters (never written by the reference), the key manifest last in both.
        let kinds: [String: String] = ["PushSealKeyKind.v1Key.service": DeviceKeyKind.v1Key.service(appID: Self.routineApp),
                                       "PushSealKeyKind.v2DeviceKey.service": DeviceKeyKind.v2DeviceKey.service(appID: Self.routineApp),
                                       "PushSealKeyKind.senderKey.service": DeviceKeyKind.senderKey.service(appID: Self.routineApp),
                                       "PushSealKeyManifestLayout.service": DeviceKeyManifest.service(appID: Self.routineApp)]
        let listed = try routine.section(from: "let services = [", to: "]").matches(#"(PushSeal\w+(?:\.\w+)?\.service)\(appID: appID\)"#)
        let reference = try listed.map { try #require(kinds[$0], "unknown service \($0)") }
        let emulation = DeviceInstallMarker.leftoverServices(appID: Self.routineApp)
        #expect(reference.last == DeviceKeyManifest.service(appID: Self.routineApp) && emulation.last == reference.last)
        #expect(emulation.filter { !reference.contains($0) } == [KeychainNames.service(appID: Self.routineApp), KeychainNames.generationService(appID: Self.routineApp)],
                "reference \(reference) vs emulation \(emulation)")
        #expect(Set(reference).isSubset(of: emulation))
        // What the emulation's first run does with the items the reference's writers make.
        let dir = try TemporaryDirectory("pushseal-drift-reinstall")
        defer { dir.remove() }
        let kc = try Self.appKeychain(dir)
        try DeviceKeyItem.store(try X25519.PrivateKey(), keyID: "dev-1", appID: Self.routineApp, in: kc, accessGroup: "T.shared", now: 1_796_000_000)
        try DeviceKeyItem.pinSender(try PinnedSenderKey(keyID: "snd-1", publicKey: try X25519.PrivateKey().publicKey), appID: Self.routineApp, in: kc,
                                    accessGroup: "T.shared", now: 1_796_000_000)
        try kc.add(service: "other.service", account: "a", accessGroup: "T.shared", data: SecretBytes(copying: [1]))
        #expect(try DeviceInstallMarker.prepare(kc, accessGroup: "T.shared", appID: Self.routineApp) == 3)  // the key, the pin, the manifest
        #expect(try Self.services(kc) == ["other.service"])
        let container = try kc.appGroupContainer(for: "group.x")
        let marker = container.appendingPathComponent(try #require(try routine.matches(#"static let installMarkerName = "([^"]+)""#).first))
        #expect(try Data(contentsOf: marker) == Data(DeviceInstallMarker.contents))
        #expect(try DeviceInstallMarker.prepare(kc, accessGroup: "T.shared", appID: Self.routineApp) == 0)
        // An update from before the marker (the reference's earlier-run file present): nothing removed.
        try FileManager.default.removeItem(at: marker)
        try DeviceKeyItem.store(try X25519.PrivateKey(), keyID: "dev-2", appID: Self.routineApp, in: kc, accessGroup: "T.shared", now: 1_796_000_001)
        #expect(FileManager.default.createFile(atPath: container.appendingPathComponent(try #require(earlier.first)).path, contents: Data("{}".utf8),
                                               attributes: [.posixPermissions: 0o600]))
        #expect(try DeviceInstallMarker.prepare(kc, accessGroup: "T.shared", appID: Self.routineApp) == 0)
        #expect(try Self.services(kc).contains(DeviceKeyKind.v2DeviceKey.service(appID: Self.routineApp)))
    }

    @Test("access-group migration: the reference's selection, order and refusals are what push-keys keychain migrate does to the emulation's items")
    func migrateRoutine() throws {
        let routine = try Self.deviceKeys().section(from: "static func migrateAccessGroup(", to: "static let installMarkerName")
        // Selection: services with PushSeal's prefix and the app's suffix.
        let prefix = try #require(try routine.matches(#"service\.hasPrefix\("([^"]+)"\)"#).first)
        #expect(routine.contains("service.hasSuffix(\":\" + appID)"))
        // Order: the manifest sorted last; add, read back (verifyFailed), then delete naming the source group.
        #expect(routine.contains("sources.sort { !isManifest($0) && isManifest($1) }"))
        let text = routine.text
        let add = try #require(text.range(of: "SecItemAdd("))
        let verify = try #require(text.range(of: "Failure(\"verifyFailed\")"))
        let delete = try #require(text.range(of: "SecItemDelete("))
        #expect(add.lowerBound < verify.lowerBound && verify.lowerBound < delete.lowerBound)
        #expect(try routine.section(from: "let delete: [String: Any]", to: "SecItemDelete(").contains("kSecAttrAccessGroup as String: from"))
        let refusals = Set(try routine.matches(#"Failure\("([A-Za-z]+)"\)"#))
        #expect(refusals.isSuperset(of: ["targetConflict", "verifyFailed"]), "\(refusals)")
        // The emulation's migration of the items the emulation's writers make.
        let tool = try #require(builtTool("push-keys"), "push-keys is not built")
        let dir = try TemporaryDirectory("pushseal-drift-migrate")
        defer { dir.remove() }
        let kc = try Self.appKeychain(dir, groups: ["T.old", "T.shared"])
        try DeviceKeyItem.store(try X25519.PrivateKey(), keyID: "dev-1", appID: Self.routineApp, in: kc, accessGroup: "T.old", now: 1_796_000_000)
        try DeviceKeyItem.pinSender(try PinnedSenderKey(keyID: "snd-1", publicKey: try X25519.PrivateKey().publicKey), appID: Self.routineApp, in: kc,
                                    accessGroup: "T.old", now: 1_796_000_000)
        try DeviceKeyItem.store(try X25519.PrivateKey(), keyID: "dev-9", appID: "com.example.other", in: kc, accessGroup: "T.old", now: 1_796_000_000)
        try kc.add(service: "other.service", account: "a", accessGroup: "T.old", data: SecretBytes(copying: [1]))
        let before = try kc.copyMatching(ItemQuery(accessGroup: "T.old"), limit: .all).map(\.attributes.service)
        let selected = Set(before.filter { $0.hasPrefix(prefix) && $0.hasSuffix(":" + Self.routineApp) })
        #expect(selected.count == 3, "\(before)")
        let moved = try runTool(tool, ["keychain", "migrate", "--keychain", dir.appending("kc").path, "--from", "T.old", "--to", "T.shared", "--app-id", Self.routineApp, "--json"])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(Set(try Self.services(kc, group: "T.shared")) == selected)
        #expect(Set(try Self.services(kc, group: "T.old")) == Set(before).subtracting(selected))
        // The manifest copy was added last (its creation date is the latest of the copies).
        let copies = try kc.copyMatching(ItemQuery(accessGroup: "T.shared"), limit: .all).map(\.attributes)
        let manifest = try #require(copies.first { $0.service == DeviceKeyManifest.service(appID: Self.routineApp) })
        #expect(copies.allSatisfy { $0.creationDate <= manifest.creationDate })
        // A target holding another item of the same name: the reference's refusal token, nothing changed.
        try kc.add(service: "pushseal.key:com.example.other", account: "dev-9", accessGroup: "T.shared", accessibility: .afterFirstUnlockThisDeviceOnly,
                   data: SecretBytes(copying: [2]))
        let refused = try runTool(tool, ["keychain", "migrate", "--keychain", dir.appending("kc").path, "--from", "T.old", "--to", "T.shared",
                                         "--app-id", "com.example.other", "--json"])
        let code = ((try? JSONSerialization.jsonObject(with: refused.stdoutBytes)) as? [String: Any]).flatMap { $0["error"] as? [String: Any] }?["code"] as? String
        #expect(refused.status == 65 && code.map(refusals.contains) == true, "\(refused.stdout)")
    }

    @Test("restore onto a new phone: the reference's key items are …ThisDeviceOnly, the emulation's restore leaves them behind, and the app's next launch makes a key")
    func restoreOntoANewDevice() throws {
        let keys = try Self.deviceKeys()
        // The reference writes key items and the manifest with the emulation's accessibility, a ThisDeviceOnly class.
        let classes = Set(try keys.matches(#"kSecAttrAccessible as String\] = (kSecAttrAccessible\w+)"#))
        #expect(classes == [DeviceKeyItem.accessibility.constantName] && DeviceKeyItem.accessibility.isThisDeviceOnly, "\(classes)")
        // The app's launch registers the current key from the keychain and makes one when there is none.
        let register = try Self.registration().section(from: "public static func registerCurrentKey(", to: "public static func rotate(")
        #expect(register.contains("PushSealDeviceKeys.list(appID: appID)") && register.contains("?? PushSealDeviceKeys.makeDeviceKey(appID: appID)"))
        #expect(try Self.exampleReadme().section(from: "**Backup and restore**", to: "The record:").contains("registerCurrentKey"))
        // The emulation's backup of the items the writers make, restored onto a new device: none come back.
        let dir = try TemporaryDirectory("pushseal-drift-restore")
        defer { dir.remove() }
        let kc = try Self.appKeychain(dir)
        try DeviceKeyItem.store(try X25519.PrivateKey(), keyID: "dev-1", appID: Self.routineApp, in: kc, accessGroup: "T.shared", now: 1_796_000_000)
        let backup = try KeychainBackup.make(of: kc, passphrase: Array("pass".utf8), parameters: .testing)
        #expect(Set(backup.items.map(\.service)) == [DeviceKeyKind.v2DeviceKey.service(appID: Self.routineApp), DeviceKeyManifest.service(appID: Self.routineApp)])
        try Keychain.create(at: dir.appending("new"))
        let new = try Keychain(opening: dir.appending("new"), as: Entitlements(keychainAccessGroups: ["T.shared"], applicationGroups: ["group.x"]))
        let result = try KeychainBackup.restore(try KeychainBackup.read(backup.file, passphrase: Array("pass".utf8)), into: new, target: .newDevice)
        #expect(result.restored.isEmpty && result.skipped.count == 2)
        #expect(try DeviceKeyItem.list(appID: Self.routineApp, in: new, accessGroup: nil).isEmpty)
        // What the extension's unknownKey (not -25300) rests on: the restore's record of the items it left behind.
        #expect(try new.restoreLeftBehind().map(\.service).contains(DeviceKeyKind.v2DeviceKey.service(appID: Self.routineApp)))
    }
}
