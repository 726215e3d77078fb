import Foundation
import PushSealKeychain
import PushSealKeyRecords
import Testing

/// Device keychains provisioned before 0.2.0 hold a keyset item (docs/keychain.md "Legacy keyset
/// items"): still read, listed by `device list`, and converted into kind 1 key items by the next
/// `push-keys import` (and `rotate --device-keychain`); a keyset item put back afterwards is refused.
@Suite struct LegacyKeysetConversionCLITests {
    @Test func aLegacyKeysetIsListedReadAndConvertedByTheNextImport() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let srv = dir.appendingPathComponent("srv").path, dev = dir.appendingPathComponent("dev").path
        let app = dir.appendingPathComponent("app.json").path
        let r = "alice-iphone"
        #expect(try KeysCLI.keys(["generate", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r]).status == 0)
        let first = try KeysCLI.keys(["export", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r]).stdout
        // The pre-0.2.0 form, as --legacy-keyset still writes it.
        let legacy = try KeysCLI.keys(["import", "--keychain", dev, "--entitlements", app, "--legacy-keyset", "--json", "-"], stdin: Array(first.utf8))
        #expect(legacy.status == 0 && KeysCLI.json(legacy.stdout)["created"] as? Bool == true, "\(legacy.stdout) \(legacy.stderr)")
        let keyID = try #require((KeysCLI.json(first)["keys"] as? [[String: Any]])?.first?["keyId"] as? String)
        let devURL = URL(fileURLWithPath: dev)
        #expect(try KeysCLI.sealAndOpen(server: URL(fileURLWithPath: srv), device: devURL, recipient: r) == keyID)
        // device list shows the keyset-held key, marked as such.
        let listed = try KeysCLI.keys(["device", "list", "--keychain", dev, "--entitlements", app, "--app-id", KeysCLI.appID, "--json"])
        let keys = KeysCLI.json(listed.stdout)["keys"] as? [[String: Any]] ?? []
        #expect(keys.count == 1 && keys.first?["kind"] as? String == "v1" && keys.first?["keyId"] as? String == keyID
                && keys.first?["status"] as? String == "primary" && keys.first?["keyset"] as? String == r, "\(listed.stdout)")
        let text = try KeysCLI.keys(["device", "list", "--keychain", dev, "--entitlements", app, "--app-id", KeysCLI.appID])
        #expect(text.stdout.hasPrefix("v1 \(keyID) primary ") && text.stdout.hasSuffix(" - keyset:\(r)\n"), "\(text.stdout)")
        let items = dir.appendingPathComponent("dev/items")
        let keysetFiles = Dictionary(uniqueKeysWithValues: try FileManager.default.contentsOfDirectory(atPath: items.path).map {
            ($0, try Data(contentsOf: items.appendingPathComponent($0)))
        })
        // The next record (after a rotation on the server): the keyset is converted, then the record imported.
        #expect(try KeysCLI.keys(["rotate", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r, "--no-promote"]).status == 0)
        let next = try KeysCLI.keys(["export", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r]).stdout
        let converted = try KeysCLI.keys(["import", "--keychain", dev, "--entitlements", app, "--json", "-"], stdin: Array(next.utf8))
        #expect(converted.status == 0, "\(converted.stderr)")
        let cj = KeysCLI.json(converted.stdout)
        #expect(cj["convertedKeysetKeyIds"] as? [String] == [keyID] && (cj["changedKeyIds"] as? [String])?.count == 1, "\(converted.stdout)")
        let after = KeysCLI.json(try KeysCLI.keys(["device", "list", "--keychain", dev, "--entitlements", app, "--app-id", KeysCLI.appID, "--json"]).stdout)
        let afterKeys = after["keys"] as? [[String: Any]] ?? []
        #expect(afterKeys.count == 2 && afterKeys.allSatisfy { $0["keyset"] is NSNull && $0["rolledBack"] as? Bool == false }, "\(after)")
        // No keyset item left; the key opens from its kind 1 item.
        let kc = try Keychain(opening: devURL, as: KeysCLI.app)
        #expect((try? kc.copyMatching(ItemQuery(service: KeychainNames.service(appID: KeysCLI.appID)))) == nil)
        #expect(try KeysCLI.sealAndOpen(server: URL(fileURLWithPath: srv), device: devURL, recipient: r) == keyID)
        // The keyset item put back (a restored backup): refused, and it never decides over the items.
        for (name, data) in keysetFiles where !FileManager.default.fileExists(atPath: items.appendingPathComponent(name).path) {
            #expect(FileManager.default.createFile(atPath: items.appendingPathComponent(name).path, contents: data, attributes: [.posixPermissions: 0o600]))
        }
        #expect(try KeysCLI.sealAndOpen(server: URL(fileURLWithPath: srv), device: devURL, recipient: r) == keyID)
        let again = try KeysCLI.keys(["import", "--keychain", dev, "--entitlements", app, "-"], stdin: Array(next.utf8))
        #expect(again.status == 65 && again.stderr.contains("keyset"), "\(again.stderr)")
    }
}
