import Foundation
import PushSealKeychain
import PushSealKeys
import Testing

/// Runs the Keys/ scripts against the built push-keys (and shellcheck when installed).
@Suite struct KeysScriptsTests {
    static let scripts = ["rotate.sh", "prune.sh", "provision-device.sh"]

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
        let none = try KeysCLI.run(keysDir.appendingPathComponent("rotate.sh").path, [srv, outbox], env: env)
        #expect(none.status == 0 && none.stdout.isEmpty, "\(none.stderr)")
        // Everything due with a zero period: both keysets rotate; records land in the outbox, 0600.
        let rot = try KeysCLI.run(keysDir.appendingPathComponent("rotate.sh").path, [srv, outbox, "--period", "0", "--grace", "1h"], env: env)
        #expect(rot.status == 0, "\(rot.stderr)")
        let lines = rot.stdout.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        #expect(lines.count == 2 && lines.map { $0[1] }.sorted() == ["alice", "bob"])
        let alice = try #require(lines.first { $0[1] == "alice" })
        let mode = (try FileManager.default.attributesOfItem(atPath: alice[3])[.posixPermissions] as? Int) ?? 0
        #expect(mode == 0o600)
        // The device takes the new record; the extension opens with the new primary.
        let imp = try KeysCLI.keys(["import", "--keychain", dev, "--entitlements", appJSON, alice[3]])
        #expect(imp.status == 0, "\(imp.stderr)")
        #expect(try KeysCLI.sealAndOpen(server: URL(fileURLWithPath: srv), device: URL(fileURLWithPath: dev), recipient: "alice",
                                          ext: try Entitlements.load(from: URL(fileURLWithPath: extJSON))) == alice[2])
        // prune.sh far in the future destroys the old primaries on both sides.
        let future = String(KeyStore.now() + 7200)
        let ps = try KeysCLI.run(keysDir.appendingPathComponent("prune.sh").path, [srv, "--now", future], env: env)
        #expect(ps.status == 0 && ps.stdout.split(separator: "\n").count == 2, "\(ps.stderr)")
        let pd = try KeysCLI.run(keysDir.appendingPathComponent("prune.sh").path, [dev, "--entitlements", appJSON, "--now", future], env: env)
        #expect(pd.status == 0 && pd.stdout.split(separator: "\n").count == 1, "\(pd.stderr)")
        // Bad usage exits 64.
        #expect(try KeysCLI.run(keysDir.appendingPathComponent("rotate.sh").path, [srv], env: env).status == 64)
    }
}
