import Foundation
import PushSealKeyRecords
import Testing

/// One `--app-id` rule in all three tools (FORMAT.md §3.2 and the stricter keyset naming rule
/// `KeyID.isKeysetAppID`): a malformed app id is a usage error (64) with the same message in
/// push-seal, push-open and push-keys, before any keychain is opened or created.
@Suite struct AppIDRuleCLITests {
    @Test func everyToolRefusesAMalformedAppIDTheSameWay() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let kc = dir.appendingPathComponent("kc").path
        #expect(try KeysCLI.keys(["generate", "--keychain", kc, "--app-id", KeysCLI.appID, "--recipient", "alice"]).status == 0)
        let bin = KeysCLI.buildDirectory
        let seal = bin.appendingPathComponent("push-seal").path, open = bin.appendingPathComponent("push-open").path
        for bad in ["bad app", "com.ex|ample", "x/../y", "com.example.app_2", ""] {
            // The rule itself: not a keyset app id (the wire format may still allow some of them).
            #expect(!KeyID.isKeysetAppID(bad), "\(bad)")
            let message = bad.isEmpty ? nil : "app id \"\(bad)\" is not a bundle identifier (1-255 characters of A-Z a-z 0-9 . -)"
            let newKeychain = dir.appendingPathComponent("never-created").path
            let runs: [(String, KeysCLI.Result)] = [
                ("push-seal", try KeysCLI.run(seal, ["--app-id", bad, "--keychain", kc, "--recipient", "alice", "--title", "t"])),
                ("push-seal", try KeysCLI.run(seal, ["batch", "--app-id", bad, "--keychain", kc], stdin: [])),
                ("push-open", try KeysCLI.run(open, ["--keychain", kc, "--app-id", bad, "--access-group", "pushseal.server", "-"], stdin: Array("{}".utf8))),
                ("push-keys", try KeysCLI.keys(["generate", "--keychain", newKeychain, "--app-id", bad, "--recipient", "alice"])),
                ("push-keys", try KeysCLI.keys(["rotate", "--keychain", kc, "--app-id", bad, "--recipient", "alice"])),
                ("push-keys", try KeysCLI.keys(["list", "--keychain", kc, "--app-id", bad])),
                ("push-keys", try KeysCLI.keys(["import", "--keychain", kc, "--app-id", bad, "-"], stdin: Array("{}".utf8))),
            ]
            for (tool, r) in runs {
                #expect(r.status == 64, "\(tool) \(bad): \(r.stderr)")
                if let message {
                    #expect(r.stderr.hasPrefix("\(tool): error: \(message)\n"), "\(tool) \(bad): \(r.stderr)")
                }
            }
            #expect(!FileManager.default.fileExists(atPath: newKeychain), "generate created a keychain for \(bad)")
        }
    }
}
