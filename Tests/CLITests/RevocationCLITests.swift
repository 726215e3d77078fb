import Foundation
import PushSealTestSupport
import Testing

/// Issue 24, "Forgetting an installation": `push-keys registration revoke` stops sealing to a
/// recipient's registrations; `push-keys revocations export` writes the list apps apply
/// (FORMAT.md §V.12); a phone that imports it shows the fallback for a payload sealed to the
/// revoked key before (`keyDisabled`), which it opened before.
@Suite(.serialized) struct RevocationCLITests {
    typealias V2 = PushSealV2CLITests

    @Test func revokeThenExportThenThePhoneRefusesTheOldKey() throws {
        let dir = try V2.setUp(sender: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let app = V2.app
        // Sealed to alice's registration before the revocation: the phone opens it.
        let before = try V2.seal("alice", in: dir)
        #expect(before.status == 0, "\(before.stderr)")
        #expect(try V2.pushOpen(before.stdout, in: dir, pinned: ["sender.json"]).stdout.contains("decrypted"))
        // Nothing revoked yet: an empty list.
        #expect(try V2.run("push-keys", ["revocations", "export", "--keychain", "kc", "--app-id", app], in: dir).stdout == "[]\n")

        let revoked = try V2.run("push-keys", ["registration", "revoke", "--keychain", "kc", "--app-id", app, "--recipient", "alice", "--now", "1796000500"], in: dir)
        #expect(revoked.status == 0, "\(revoked.stderr)")
        #expect(revoked.stdout == "\(app) alice \(V2.deviceKeyID) revoked\n")
        let again = try V2.run("push-keys", ["registration", "revoke", "--keychain", "kc", "--app-id", app, "--recipient", "alice", "--json"], in: dir)
        #expect(again.stdout.contains("\"alreadyRevoked\":[\"\(V2.deviceKeyID)\"]"))
        #expect(try V2.run("push-keys", ["registration", "revoke", "--keychain", "kc", "--app-id", app, "--recipient", "nobody"], in: dir).status == 66)
        // The audit trail says why alice stopped getting notifications, without SQL.
        let audit = try V2.run("push-keys", ["audit", "--keychain", "kc", "--recipient", "alice", "--app-id", app], in: dir)
        #expect(audit.status == 0 && audit.stdout.contains("\"event\":\"register\"") && audit.stdout.contains("\"event\":\"revokeRegistration\""), "\(audit.stdout) \(audit.stderr)")
        #expect(try V2.run("push-keys", ["audit", "--keychain", "kc", "--recipient", "alice", "--audit-log", "missing.log"], in: dir).status == 66)
        // Nothing is sealed to a revoked registration.
        #expect(try V2.seal("alice", in: dir).status != 0)
        // The list names the revoked key at its revocation time; each record reads back.
        let export = try V2.run("push-keys", ["revocations", "export", "--keychain", "kc", "--app-id", app], in: dir)
        #expect(export.status == 0, "\(export.stderr)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [[String: Any]])
        #expect(list.count == 1)
        #expect(list.first?["keyIds"] as? [String] == [V2.deviceKeyID] && (list.first?["revokedAt"] as? Int) == 1_796_000_500)
        let record = try JSONSerialization.data(withJSONObject: try #require(list.first))
        try record.write(to: dir.appendingPathComponent("revocation.json"))
        // The phone applies it (as the iOS reference's refreshRevocations does): the earlier payload falls back.
        let phone = "phone-revoked"
        let identity = ["--keychain", phone, "--access-group", "T.shared", "--app-id", app]
        #expect(try V2.run("push-keys", ["keychain", "init", "--keychain", phone], in: dir).status == 0)
        #expect(try V2.run("push-keys", ["device", "import"] + identity + ["--key-file", "device.key", "--now", "1796000000"], in: dir).status == 0)
        #expect(try V2.run("push-keys", ["device", "pin-sender"] + identity + ["sender.json"], in: dir).status == 0)
        let applied = try V2.run("push-keys", ["import"] + identity + ["revocation.json"], in: dir)
        #expect(applied.status == 0, "\(applied.stderr)")
        let opened = try V2.run("push-open", identity + ["--no-replay-guard", "-"], in: dir, stdin: before.stdout)
        #expect(opened.stdout.contains("keyDisabled"), "\(opened.stdout) \(opened.stderr)")
    }
}
