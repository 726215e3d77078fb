import Foundation
import Testing

/// `push-keys import` of a key record readable by group or others warns on stderr (export
/// never writes one so); the import itself goes on.
@Suite struct KeyImportModeTests {
    @Test func groupOrWorldReadableRecordWarns() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let srv = dir.appendingPathComponent("srv").path
        let record = dir.appendingPathComponent("alice.key.json").path
        #expect(try KeysCLI.keys(["generate", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice"]).status == 0)
        #expect(try KeysCLI.keys(["export", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice", "--out", record]).status == 0)
        let app = dir.appendingPathComponent("app.json").path

        // 0600, as export writes it: no warning.
        let quiet = try KeysCLI.keys(["import", "--keychain", dir.appendingPathComponent("dev0").path, "--entitlements", app, record])
        #expect(quiet.status == 0, "\(quiet.stderr)")
        #expect(!quiet.stderr.contains("warning"), "\(quiet.stderr)")

        for mode in [0o644, 0o640, 0o604] {
            #expect(chmod(record, mode_t(mode)) == 0)
            let r = try KeysCLI.keys(["import", "--keychain", dir.appendingPathComponent("dev\(mode)").path, "--entitlements", app, record])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.contains("push-keys: warning: \(record) is readable by group or others (mode \(String(mode, radix: 8)))"), "\(r.stderr)")
            #expect(r.stderr.contains("chmod 600"), "\(r.stderr)")
            #expect(r.stdout.contains("imported"), "\(r.stdout)")
        }
        // A regular file on standard input is checked too.
        let viaStdin = try KeysCLI.run("/bin/bash", ["-c", "\"$0\" import --keychain \"$1\" --entitlements \"$2\" - < \"$3\"",
                                                     KeysCLI.tool, dir.appendingPathComponent("dev-stdin").path, app, record])
        #expect(viaStdin.status == 0, "\(viaStdin.stderr)")
        #expect(viaStdin.stderr.contains("standard input is readable by group or others"), "\(viaStdin.stderr)")
    }
}
