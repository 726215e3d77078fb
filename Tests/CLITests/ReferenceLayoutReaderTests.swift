import Foundation
import PushSealCrypto
import PushSealKeychain
import PushSealSystem
import PushSealTestSupport
import Testing

/// A phone provisioned by the toolkit (`Keys/provision-device.sh`, i.e. `push-keys import` into
/// the emulated device keychain) is readable by a reader written from docs/keychain.md alone
/// (`Tests/Interop/keychain_layout_ref.py`, the layout the iOS reference reads): the items,
/// their bytes and the key manifest; an older item put back is refused by it and by `push-open`.
@Suite(.serialized) struct ReferenceLayoutReaderTests {
    static let app = "com.example.app", team = "TEAM123456", recipient = "alice"

    /// The generic-password items of the shared group as the extension reads them, and the payload, for the Python reader.
    static func readerRequest(device: URL, payload: Data, now: Int64) throws -> Data {
        let ext = Entitlements(applicationIdentifier: "\(team).\(app).NotificationService", keychainAccessGroups: ["\(team).\(app).shared"],
                               applicationGroups: ["group.\(app)"])
        let kc = try Keychain(opening: device, as: ext)
        let items = try kc.copyMatching(ItemQuery(accessGroup: "\(team).\(app).shared"), limit: .all, returning: [.attributes, .data]).map { item -> [String: Any] in
            ["service": item.attributes.service, "account": item.attributes.account, "label": item.attributes.label ?? "",
             "accessibility": item.attributes.accessibility.rawValue, "data": Hex.encode(item.data?.copyBytes() ?? [])]
        }
        let request: [String: Any] = ["appId": app, "now": now, "items": items, "payload": try JSONSerialization.jsonObject(with: payload)]
        return try JSONSerialization.data(withJSONObject: request)
    }

    static func referenceRead(device: URL, payload: Data, now: Int64 = 1_796_000_000) throws -> [String: Any] {
        let script = repositoryRoot.appendingPathComponent("Tests/Interop/keychain_layout_ref.py")
        let r = try #require(runPython(file: script, input: try readerRequest(device: device, payload: payload, now: now)), "python3 missing")
        #expect(r.status == 0, "\(r.errors)")
        return try #require(try JSONSerialization.jsonObject(with: Data(r.output.utf8)) as? [String: Any], "\(r.output)")
    }

    @Test func aToolkitProvisionedPhoneOpensThroughTheReferenceLayoutAndARestoredItemIsRefused() throws {
        let dir = try TemporaryDirectory("pushseal-reference-layout")
        defer { dir.remove() }
        let srv = dir.appending("srv"), dev = dir.appending("dev")
        func keys(_ args: [String], stdin: Data? = nil) throws -> PushOpenCLITests.Result { try PushOpenCLITests.run("push-keys", args, in: dir.url, stdin: stdin) }
        #expect(try keys(["generate", "--keychain", srv.path, "--app-id", Self.app, "--recipient", Self.recipient]).status == 0)
        let record = dir.appending("alice.json")
        #expect(try keys(["export", "--keychain", srv.path, "--app-id", Self.app, "--recipient", Self.recipient, "--out", record.path]).status == 0)
        // Provisioned as Keys/README.md says, with the toolkit's script.
        let script = repositoryRoot.appendingPathComponent("Keys/provision-device.sh").path
        let prov = try runTool(URL(fileURLWithPath: script), [dev.path, record.path, Self.team, Self.app],
                               environment: ["PUSH_KEYS": PushOpenCLITests.binary("push-keys").path])
        #expect(prov.status == 0, "\(prov.stderr)")
        let sealed = try PushOpenCLITests.run("push-seal", ["--keychain", srv.path, "--app-id", Self.app, "--recipient", Self.recipient,
                                                            "--title", "Lunch?", "--body", "Noon"], in: dir.url)
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let payload = Data(sealed.stdout.utf8)
        let opened = try Self.referenceRead(device: dev, payload: payload)
        #expect(opened["outcome"] as? String == "decrypted", "\(opened)")
        #expect((opened["plaintext"] as? [String: Any])?["title"] as? String == "Lunch?")
        // A revocation record, then the key item from before it put back: refused by the reference reader and by push-open.
        let items = dev.appendingPathComponent("items")
        func snapshot() throws -> [String: Data] {
            Dictionary(uniqueKeysWithValues: try FileManager.default.contentsOfDirectory(atPath: items.path).map { ($0, try Data(contentsOf: items.appendingPathComponent($0))) })
        }
        let before = try snapshot()
        let keyID = try #require((try JSONSerialization.jsonObject(with: payload) as? [String: Any])?["key_id"] as? String)
        let revocation = #"{"format":"pushseal-revocation","version":1,"appId":"\#(Self.app)","keyIds":["\#(keyID)"],"revokedAt":1796000000}"#
        let revoked = try keys(["import", "--keychain", dev.path, "--entitlements", dev.path + ".entitlements/app.json", "-"], stdin: Data(revocation.utf8))
        #expect(revoked.status == 0, "\(revoked.stderr)")
        #expect(try Self.referenceRead(device: dev, payload: payload)["reason"] as? String == "keyDisabled")
        let after = try snapshot()
        let changed = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }
        #expect(changed.count == 2, "the key item and the manifest: \(changed.sorted())")
        let ext = dev.path + ".entitlements/ext.json"
        for name in changed.sorted() {
            let url = items.appendingPathComponent(name)
            try FileManager.default.removeItem(at: url)
            #expect(FileManager.default.createFile(atPath: url.path, contents: before[name], attributes: [.posixPermissions: 0o600]))
            #expect(try Self.referenceRead(device: dev, payload: payload)["reason"] as? String == "keyRolledBack", "\(name) put back")
            let open = try PushOpenCLITests.run("push-open", ["--keychain", dev.path, "--app-id", Self.app, "--entitlements", ext, "--no-replay-guard", "-"],
                                                in: dir.url, stdin: payload)
            #expect(open.status == 1 && open.json["reason"] as? String == "keyRolledBack", "\(open.stdout) \(open.stderr)")
            try FileManager.default.removeItem(at: url)
            #expect(FileManager.default.createFile(atPath: url.path, contents: after[name], attributes: [.posixPermissions: 0o600]))
        }
    }
}
