import Foundation
import PushSealKeychain
import PushSealKeyRecords
import PushSealServerKeys
import Testing

/// Runs the Keys/ scripts against the built push-keys (and shellcheck when installed).
@Suite struct KeysScriptsTests {
    static let scripts = ["rotate.sh", "prune.sh", "provision-device.sh", "provision-device-v2.sh"]

    @Test func scriptsPassShellcheckWhenInstalled() throws {
        let candidates = ["/usr/bin/shellcheck", "/usr/local/bin/shellcheck", "/bin/shellcheck"]
        guard let sc = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            print("keys: shellcheck is not installed: Keys/*.sh not linted (apt-get install -y shellcheck)")
            return
        }
        for s in Self.scripts {
            let r = try KeysCLI.run(sc, [KeysCLI.repo.appendingPathComponent("Keys/" + s).path])
            #expect(r.status == 0, "\(s): \(r.stdout)")
        }
    }

    @Test func scriptsStartWithStrictMode() throws {
        for s in Self.scripts {
            let text = try String(contentsOf: KeysCLI.repo.appendingPathComponent("Keys/" + s), encoding: .utf8)
            #expect(text.hasPrefix("#!/usr/bin/env bash") && text.contains("\nset -euo pipefail\n"), "\(s)")
        }
    }

    /// Keys/provision-device-v2.sh: entitlements written, the published sender keys pinned before
    /// the device key is made, the registration record registered on the server, and the first
    /// payload sealed to it decrypts on the phone (a fresh install, issue 24).
    @Test func provisionV2PhoneDecryptsItsFirstPush() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let env = ["PUSH_KEYS": KeysCLI.tool]
        let srv = dir.appendingPathComponent("srv").path, phone = dir.appendingPathComponent("phone").path
        #expect(try KeysCLI.keys(["keychain", "init", "--keychain", srv]).status == 0)
        #expect(try KeysCLI.keys(["sender", "generate", "--keychain", srv, "--app-id", KeysCLI.appID]).status == 0)
        let published = try KeysCLI.keys(["sender", "export", "--keychain", srv, "--app-id", KeysCLI.appID, "--all"])
        let senders = dir.appendingPathComponent("senders.jsonl")
        try Data(published.stdout.utf8).write(to: senders)
        let script = KeysCLI.repo.appendingPathComponent("Keys/provision-device-v2.sh").path
        let prov = try KeysCLI.run(script, [phone, "TEAM123456", KeysCLI.appID, senders.path], env: env)
        #expect(prov.status == 0, "\(prov.stderr)")
        let lines = prov.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "app entitlements: \(phone).entitlements/app.json" && lines.contains("registration: \(phone).registration.json"))
        #expect(lines.contains { $0.hasPrefix("pinned sender keys: ") && !$0.hasSuffix("none") }, "\(prov.stdout)")
        let registered = try KeysCLI.keys(["register", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice", phone + ".registration.json"])
        #expect(registered.status == 0, "\(registered.stderr)")
        let note = dir.appendingPathComponent("note.json")
        try Data(#"{"title":"Welcome","body":"first push"}"#.utf8).write(to: note)
        let sealed = try KeysCLI.run(KeysCLI.buildDirectory.appendingPathComponent("push-seal").path,
                                     ["--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice", note.path])
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let payload = dir.appendingPathComponent("payload.json")
        try Data(sealed.stdout.utf8).write(to: payload)
        let opened = try KeysCLI.run(KeysCLI.buildDirectory.appendingPathComponent("push-open").path,
                                     ["--keychain", phone, "--app-id", KeysCLI.appID, "--entitlements", phone + ".entitlements/ext.json",
                                      "--no-replay-guard", payload.path])
        #expect(opened.stdout.contains("decrypted") && opened.stdout.contains("Welcome"), "\(opened.stdout) \(opened.stderr)")
    }

    @Test func provisionRotateAndPruneScripts() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let env = ["PUSH_KEYS": KeysCLI.tool]
        let keysDir = KeysCLI.repo.appendingPathComponent("Keys")
        let srv = dir.appendingPathComponent("srv").path, dev = dir.appendingPathComponent("dev").path
        let outbox = dir.appendingPathComponent("outbox").path
        for r in ["alice", "bob"] {
            #expect(try KeysCLI.keys(["generate", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", r]).status == 0)
        }
        let record = dir.appendingPathComponent("alice.json").path
        #expect(try KeysCLI.keys(["export", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice", "--out", record]).status == 0)
        let prov = try KeysCLI.run(keysDir.appendingPathComponent("provision-device.sh").path, [dev, record, "TEAM123456", KeysCLI.appID], env: env)
        #expect(prov.status == 0, "\(prov.stderr)")
        let extJSON = dev + ".entitlements/ext.json", appJSON = dev + ".entitlements/app.json"
        #expect(FileManager.default.fileExists(atPath: extJSON))
        // stdout: both entitlements files, the shared groups, and the push-open command to run next.
        #expect(prov.stdout.split(separator: "\n").map(String.init) == [
            "app entitlements: \(appJSON)",
            "extension entitlements: \(extJSON)",
            "keychain access group: TEAM123456.\(KeysCLI.appID).shared",
            "app group: group.\(KeysCLI.appID)",
            "next: push-open --keychain \(dev) --app-id \(KeysCLI.appID) --entitlements \(extJSON) PAYLOAD.json",
        ], "\(prov.stdout)")
        #expect(prov.stderr.contains("imported"), "the import's own line is on stderr: \(prov.stderr)")

        // Nothing due yet: no output, no outbox files.
        let rotate = keysDir.appendingPathComponent("rotate.sh").path
        let none = try KeysCLI.run(rotate, [srv, outbox], env: env)
        #expect(none.status == 0 && none.stdout.isEmpty, "\(none.stderr)")
        func run(_ extra: [String], period: String = "0") throws -> [[String]] {
            let r = try KeysCLI.run(rotate, [srv, outbox, "--period", period, "--grace", "1h"] + extra, env: env)
            #expect(r.status == 0, "\(r.stderr)")
            return r.stdout.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }.sorted { $0[1] < $1[1] }
        }
        func primary(_ recipient: String) throws -> String? {
            let s = try KeyStore(keychain: try Keychain(opening: URL(fileURLWithPath: srv), as: KeyStore.serverIdentity), audit: .none)
            return try s.keyset(appID: KeysCLI.appID, recipient: recipient).keys.first { $0.status == .primary }?.keyID
        }
        let before = (try primary("alice"), try primary("bob"))
        // Everything due with a zero period: both keysets are staged (never promoted by default);
        // records land in the outbox, 0600.
        let staged = try run([])
        #expect(staged.map { $0[1] } == ["alice", "bob"] && staged.allSatisfy { $0.count == 5 && $0[4] == "staged" }, "\(staged)")
        let alice = staged[0]
        let mode = (try FileManager.default.attributesOfItem(atPath: alice[3])[.posixPermissions] as? Int) ?? 0
        #expect(mode == 0o600)
        #expect(try primary("alice") == before.0 && primary("bob") == before.1, "staging changes no primary")
        // A later plain run (the nightly cron) does not promote the staged keys: same keys, still staged.
        let again = try run([])
        #expect(again == staged, "\(again)")
        #expect(try primary("alice") == before.0 && primary("bob") == before.1, "a plain rerun promoted a staged key")
        // The phone takes the record and acknowledges; only the acknowledged key is promoted.
        let imp = try KeysCLI.keys(["import", "--keychain", dev, "--entitlements", appJSON, alice[3]])
        #expect(imp.status == 0, "\(imp.stderr)")
        let acks = dir.appendingPathComponent("acks")
        try FileManager.default.createDirectory(at: acks.appendingPathComponent(KeysCLI.appID), withIntermediateDirectories: true)
        try Data().write(to: acks.appendingPathComponent("\(KeysCLI.appID)/alice-\(alice[2]).ack"))
        let acked = try run(["--acks", acks.path])
        #expect(acked.map { $0[4] } == ["promoted", "staged"], "\(acked)")
        #expect(try primary("alice") == alice[2] && primary("bob") == before.1)
        #expect(try KeysCLI.sealAndOpen(server: URL(fileURLWithPath: srv), device: URL(fileURLWithPath: dev), recipient: "alice",
                                          ext: try Entitlements.load(from: URL(fileURLWithPath: extJSON))) == alice[2])
        // The record after the promotion tells the phone the old primary is retired.
        #expect(acked[0][3].hasSuffix("-promoted.json") && FileManager.default.fileExists(atPath: acked[0][3]))
        #expect(try KeysCLI.keys(["import", "--keychain", dev, "--entitlements", appJSON, acked[0][3]]).status == 0)
        // The documented delay: not yet after 1d; with 0 the staged key is promoted. (A 1h period:
        // alice's new primary is not due, bob's staged rotation is.)
        #expect(try run(["--promote-after", "1d"], period: "1h").map { $0[1] + " " + $0[4] } == ["bob staged"])
        #expect(try primary("bob") == before.1)
        #expect(try run(["--promote-after", "0"], period: "1h").map { $0[1] + " " + $0[4] } == ["bob promoted"])
        #expect(try primary("bob") == staged[1][2])
        // prune.sh far in the future destroys the old primaries on both sides.
        let future = String(KeyTime.now() + 7200)
        let ps = try KeysCLI.run(keysDir.appendingPathComponent("prune.sh").path, [srv, "--now", future], env: env)
        #expect(ps.status == 0 && ps.stdout.split(separator: "\n").count == 2, "\(ps.stderr)")
        let pd = try KeysCLI.run(keysDir.appendingPathComponent("prune.sh").path, [dev, "--entitlements", appJSON, "--now", future], env: env)
        #expect(pd.status == 0 && pd.stdout.split(separator: "\n").count == 1, "\(pd.stderr)")
        // Bad usage exits 64.
        #expect(try KeysCLI.run(rotate, [srv], env: env).status == 64)
        #expect(try KeysCLI.run(rotate, [srv, outbox, "--promote-after", "soon"], env: env).status == 64)
    }
}
