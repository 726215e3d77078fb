import PushSealTestSupport
import PushSealJSON
import Foundation
import Testing

/// The shared cases push-open runs (see ``sharedData(_:)``).
private let sharedCases = sharedData("cases")

/// Runs the built `push-open` (and `push-keys` to provision the device keychain).
@Suite(.serialized)
struct PushOpenCLITests {
    /// Shared data policy (PushSealTestSupport): absent cases fail the run, never skip it.
    @Test func sharedCasesArePresent() throws { _ = try requireSharedData("cases") }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:] }
    }

    static func binary(_ name: String) -> URL { builtTool(name) ?? URL(fileURLWithPath: name) }

    static func run(_ tool: String, _ args: [String], in cwd: URL, stdin: Data? = nil) throws -> Result {
        let bin = binary(tool)
        try #require(FileManager.default.isExecutableFile(atPath: bin.path), "\(tool) is not built at \(bin.path): run `swift build --build-tests`")
        let r = try runTool(bin, args, cwd: cwd, stdin: stdin ?? Data())
        return Result(status: r.status, stdout: r.stdout, stderr: r.stderr)
    }

    /// A scratch directory with a device keychain `dev` holding the cases' key under `k1`
    /// (imported by `push-keys import` as the app), and `ext.json` for the extension.
    static func setUp(accessibility: String = "afterFirstUnlockThisDeviceOnly", directoryName: String? = nil) throws -> URL {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(directoryName ?? "pushseal-open-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        #expect(try run("push-keys", ["keychain", "init", "--keychain", "dev"], in: dir).status == 0)
        let record = #"{"format":"pushseal-key-record","version":1,"appId":"com.example.app","recipient":"device","keys":[{"keyId":"k1","status":"primary","createdAt":1700000000,"promotedAt":1700000000,"sealCount":0,"key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}]}"#
        let imported = try run("push-keys", ["import", "--keychain", "dev", "--access-group", "T.shared", "--app-group", "group.x",
                                             "--accessibility", accessibility, "-"]
                                             // Key items are always afterFirstUnlockThisDeviceOnly: another one is a legacy keyset.
                                             + (accessibility == "afterFirstUnlockThisDeviceOnly" ? [] : ["--legacy-keyset"]), in: dir, stdin: Data(record.utf8))
        #expect(imported.status == 0, "\(imported.stderr)")
        try #"{"keychain-access-groups": ["T.shared"], "application-groups": ["group.x"]}"#
            .write(to: dir.appendingPathComponent("ext.json"), atomically: true, encoding: .utf8)
        return dir
    }

    static let base = ["--keychain", "dev", "--app-id", "com.example.app", "--entitlements", "ext.json"]

    static func casePath(_ relative: String) -> String {
        sharedCases.url?.appendingPathComponent(relative).path ?? relative
    }

    @Test func decryptedNotificationPrintsOneJSONObjectAndExitsZero() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try Self.run("push-open", Self.base + [Self.casePath("notifications/n08.payload.json")], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("}\n"))
        #expect(r.stdout.filter { $0 == "\n" }.count == 1)
        let j = r.json
        let plain = (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.casePath("notifications/n08.plain.json"))))) as? [String: Any]
        #expect(j["outcome"] as? String == "decrypted")
        #expect(j["reason"] as? String == "decrypted")
        #expect(j["title"] as? String == plain?["title"] as? String)
        #expect(j["body"] as? String == plain?["body"] as? String)
        #expect(j["subtitle"] as? String == "")
        #expect((j["attachments"] as? [Any])?.isEmpty == true)
        // Security review F3: the sealed data under pushseal and the delivered aps, no envelope field.
        let userInfo = j["userInfo"] as? [String: Any]
        #expect(userInfo?["key_id"] == nil && userInfo?["pushseal"] is [String: Any] && userInfo?["aps"] is [String: Any])
        #expect(j["elapsedMs"] is NSNumber)
        #expect(r.stderr.isEmpty)
    }

    @Test func crlfNonceOpensFromAFileAndFromStandardInput() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = Self.casePath("failures/crlf-nonce.payload.json")
        let byFile = try Self.run("push-open", Self.base + [path], in: dir)
        let byStdin = try Self.run("push-open", Self.base + ["-"], in: dir, stdin: try Data(contentsOf: URL(fileURLWithPath: path)))
        let implicitStdin = try Self.run("push-open", Self.base, in: dir, stdin: try Data(contentsOf: URL(fileURLWithPath: path)))
        for r in [byFile, byStdin, implicitStdin] {
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.json["outcome"] as? String == "decrypted")
            #expect(r.json["title"] as? String == byFile.json["title"] as? String)
        }
        #expect((byFile.json["title"] as? String)?.isEmpty == false)
    }

    @Test(arguments: [("field-missing-key-id", "missingField:key_id"), ("wrong-app-id", "authenticationFailed"),
                      ("field-unknown-kid", "unknownKey"), ("inner-not-utf8", "invalidPlaintext")])
    func fallbackExitsOneAndShowsTheAlertAsSent(_ name: String, _ reason: String) throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try Self.run("push-open", Self.base + [Self.casePath("failures/\(name).payload.json")], in: dir)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.json["outcome"] as? String == "original")
        #expect(r.json["reason"] as? String == reason)
        #expect(r.json["title"] as? String == "New message")
        #expect(r.json["body"] as? String == "Open the app to read it")
        if reason == "unknownKey" {
            // The detail names the usual newcomer cause: a keyset of another app id.
            #expect((r.json["detail"] as? String)?.contains("another app id's keyset (check push-seal --app-id)") == true, "\(r.stdout)")
        }
    }

    @Test func lockedDeviceWithAWhenUnlockedKeyNamesMinus25308() throws {
        let dir = try Self.setUp(accessibility: "whenUnlocked")
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try Self.run("push-keys", ["keychain", "device-state", "--keychain", "dev", "locked"], in: dir).status == 0)
        let r = try Self.run("push-open", Self.base + [Self.casePath("notifications/n01.payload.json")], in: dir)
        #expect(r.status == 1)
        #expect(r.json["reason"] as? String == "keychain:errSecInteractionNotAllowed(-25308)")
        #expect(r.json["title"] as? String == "New message")
        // The extension naming a group it lacks.
        let lacking = try Self.run("push-open", Self.base + ["--access-group", "T.other", Self.casePath("notifications/n01.payload.json")], in: dir)
        #expect(lacking.json["reason"] as? String == "keychain:errSecMissingEntitlement(-34018)")
    }

    @Test(arguments: [("mutable-content-true", "mutableContent:true", true), ("no-alert", "noAlert", false)])
    func notInvokedExitsTwo(_ name: String, _ reason: String, _ shown: Bool) throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try Self.run("push-open", Self.base + [Self.casePath("failures/\(name).payload.json")], in: dir)
        #expect(r.status == 2)
        #expect(r.json["outcome"] as? String == "notInvoked")
        #expect(r.json["reason"] as? String == reason)
        #expect((r.json["title"] as? String) == (shown ? "New message" : nil))
        #expect(r.json["title"] is NSNull == !shown)
    }

    @Test func replayGuardRemembersIDsInTheAppGroupUnlessTurnedOff() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let payload = Self.casePath("notifications/n10.payload.json") // carries "id": "otp-1"
        let now = ["--now", "1796000100"]
        let first = try Self.run("push-open", Self.base + now + [payload], in: dir)
        #expect(first.status == 0 && first.json["outcome"] as? String == "decrypted", "\(first.stdout)\(first.stderr)")
        // The cache is where --help says: DIR/app-groups/<first application group>/pushseal-replay-guard.json.
        let cache = dir.appendingPathComponent("dev/app-groups/group.x/pushseal-replay-guard.json")
        // Ids are stored as digests (never as sent), with the time they are kept until.
        let stored = try String(contentsOf: cache, encoding: .utf8)
        #expect(stored.hasPrefix("{\"format\":\"pushseal-replay-guard\",\"version\":1,") && !stored.contains("otp-1"), "\(stored)")
        let again = try Self.run("push-open", Self.base + now + [payload], in: dir)
        #expect(again.status == 1 && again.json["outcome"] as? String == "original" && again.json["reason"] as? String == "replayed")
        // --no-replay-guard: the same payload opens again, as often as wanted, and the cache is left alone.
        for _ in 0..<2 {
            let off = try Self.run("push-open", Self.base + now + ["--no-replay-guard", payload], in: dir)
            #expect(off.status == 0 && off.json["outcome"] as? String == "decrypted", "\(off.stdout)")
        }
        #expect(try String(contentsOf: cache, encoding: .utf8) == stored)
        // The help names the flag and the cache's place.
        let help = try Self.run("push-open", ["--help"], in: dir)
        #expect(help.stdout.contains("--no-replay-guard") && help.stdout.contains("DIR/app-groups/GROUP/pushseal-replay-guard.json"))
    }

    @Test func commandErrorsUseSysexitsCodes() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        try "{not json".write(to: dir.appendingPathComponent("bad.json"), atomically: true, encoding: .utf8)
        let notJSON = try Self.run("push-open", Self.base + ["bad.json"], in: dir)
        #expect(notJSON.status == 65)
        #expect(notJSON.stdout.isEmpty)
        #expect(notJSON.stderr.hasPrefix("push-open: error: "))
        let missing = try Self.run("push-open", Self.base + ["nope.json"], in: dir)
        #expect(missing.status == 66)
        let jsonError = try Self.run("push-open", Self.base + ["nope.json", "--json"], in: dir)
        #expect((jsonError.json["error"] as? [String: Any])?["code"] as? String == "inputMissing")
        let noKeychain = try Self.run("push-open", ["--keychain", "nokc", "--app-id", "com.example.app", "--access-group", "T.shared",
                                                    Self.casePath("notifications/n01.payload.json")], in: dir)
        #expect(noKeychain.status == 66)
        let noIdentity = try Self.run("push-open", ["--keychain", "dev", "--app-id", "com.example.app", "x.json"], in: dir)
        #expect(noIdentity.status == 64)
        let badBudget = try Self.run("push-open", Self.base + ["--budget", "soon", "x.json"], in: dir)
        #expect(badBudget.status == 64)
        // An app id no keyset can have is a usage error, not a fallback for every payload.
        for bad in ["com.ex|ample", "bad app", "x/../y"] {
            let badApp = try Self.run("push-open", ["--keychain", "dev", "--app-id", bad, "--access-group", "T.shared",
                                                    Self.casePath("notifications/n01.payload.json")], in: dir)
            #expect(badApp.status == 64, "\(bad): \(badApp.stderr)")
            #expect(badApp.stderr.hasPrefix("push-open: error: app id \"\(bad)\" is not a bundle identifier"), "\(badApp.stderr)")
            #expect(badApp.stdout.isEmpty)
        }
        if getuid() != 0 {
            let unreadable = dir.appendingPathComponent("secret.json")
            try "{}".write(to: unreadable, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: unreadable.path)
            #expect(try Self.run("push-open", Self.base + ["secret.json"], in: dir).status == 77)
        }
    }

    @Test func helpIsComplete() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try Self.run("push-open", ["--help"], in: dir)
        #expect(r.status == 0)
        for section in ["OVERVIEW:", "USAGE:", "OPTIONS:", "EXAMPLES:", "EXIT CODES:"] { #expect(r.stdout.contains(section)) }
        for option in ["--keychain", "--app-id", "--entitlements", "--access-group", "--app-group", "--locale", "--budget", "--now",
                       "--allow-insecure-loopback"] {
            #expect(r.stdout.contains(option), "\(option)")
        }
        for code in ["0 ", "1 ", "2 ", "65", "66"] { #expect(r.stdout.contains("\n  \(code)")) }
        #expect(PushSealCLITests.exitCodes(r.stdout) == [0, 1, 2, 64, 65, 66, 74, 77])
        // Exit 1 also names the internal error PushSealCLI's Tool reports with it.
        #expect(r.stdout.contains("internal"))
        // --access-group reads as one sentence: no "(one) (repeatable)".
        let group = r.stdout.components(separatedBy: "\n  --access-group G")[1].components(separatedBy: "\n  --")[0]
        #expect(!group.contains("(repeatable)") && group.contains("repeat it for more"))
    }
}
