import PushSealTestSupport
import Foundation
import Testing

/// Runs the built `push-keys keychain …` and checks stdout, stderr and the exit code.
@Suite struct KeychainCLITests {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var binary: URL { builtTool("push-keys") ?? URL(fileURLWithPath: "push-keys") }

    /// Runs push-keys with `args` in `cwd`, feeding `stdin`.
    static func run(_ args: [String], in cwd: URL, stdin: String? = nil) throws -> Result {
        #expect(FileManager.default.isExecutableFile(atPath: binary.path), "push-keys is not built at \(binary.path): run `swift build --build-tests`")
        let r = try runTool(binary, args, cwd: cwd, stdin: Data((stdin ?? "").utf8))
        return Result(status: r.status, stdout: r.stdout, stderr: r.stderr)
    }

    /// A scratch directory with `app.json` and `ext.json` entitlements and an initialized keychain `kc`.
    static func setUp(passcode: String? = nil) throws -> URL {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-kccli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try #"{"application-identifier": "T.com.example.app", "keychain-access-groups": ["T.shared"], "application-groups": ["group.x"]}"#
            .write(to: dir.appendingPathComponent("app.json"), atomically: true, encoding: .utf8)
        try #"{"application-identifier": "T.com.example.app.ext", "keychain-access-groups": ["T.shared"], "application-groups": ["group.x"]}"#
            .write(to: dir.appendingPathComponent("ext.json"), atomically: true, encoding: .utf8)
        var args = ["keychain", "init", "--keychain", "kc"]
        if passcode != nil { args += ["--passcode-file", "-"] }
        let r = try run(args, in: dir, stdin: passcode.map { $0 + "\n" })
        #expect(r.status == 0, "\(r.stderr)")
        return dir
    }

    /// Writes the bytes of standard base64 `b64` to a new file in `dir`; returns its path, for
    /// `--data-file` (secrets never travel on argv).
    static func dataFile(_ b64: String, in dir: URL) throws -> String {
        let url = dir.appendingPathComponent("data-\(UUID().uuidString).bin")
        try #require(Data(base64Encoded: b64)).write(to: url)
        return url.path
    }

    static func json(_ s: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(s.utf8))) as? [String: Any] ?? [:]
    }

    @Test func initCreatesAPrivateDirectoryOnce() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let mode = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent("kc").path)[.posixPermissions] as? Int
        #expect(mode == 0o700)
        let again = try Self.run(["keychain", "init", "--keychain", "kc"], in: dir)
        #expect(again.status == 73)
        #expect(again.stderr.hasPrefix("push-keys: error: "))
        // A keychain is named as one; other content is "not empty" (both 73).
        #expect(again.stderr.contains("/kc is already a keychain") && !again.stderr.contains("not empty"), "\(again.stderr)")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("other"), withIntermediateDirectories: false)
        try "x".write(to: dir.appendingPathComponent("other/notes.txt"), atomically: true, encoding: .utf8)
        let other = try Self.run(["keychain", "init", "--keychain", "other"], in: dir)
        #expect(other.status == 73 && other.stderr.contains("/other is not empty"), "\(other.stderr)")
    }

    /// F10 of the December review (poc06): an unrelated identity adding an item with an access
    /// group over 65,535 bytes wrote an item whose header length wrapped, and every later scan by
    /// service (the extension's key lookup) failed with `corrupt`. Now the add is refused and the
    /// app's own item stays readable.
    @Test func anOversizedAccessGroupNeverBreaksAnotherIdentitysLookup() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let data = try Self.dataFile("c2VjcmV0LWtleQ==", in: dir)
        let add = try Self.run(["keychain", "add", "--keychain", "kc", "--entitlements", "app.json", "--service", "push", "--account", "alice", "--data-file", data], in: dir)
        #expect(add.status == 0, "\(add.stderr)")
        let huge = "T." + String(repeating: "g", count: 65_600)
        try "{\"application-identifier\": \"U.com.evil.app\", \"keychain-access-groups\": [\"\(huge)\"]}"
            .write(to: dir.appendingPathComponent("evil.json"), atomically: true, encoding: .utf8)
        let evil = try Self.run(["keychain", "add", "--keychain", "kc", "--entitlements", "evil.json", "--access-group", huge, "--service", "push", "--account", "mallory", "--data-file", data], in: dir)
        #expect(evil.status != 0, "an item with a 65,602-byte access group was written")
        let get = try Self.run(["keychain", "get", "--keychain", "kc", "--entitlements", "ext.json", "--service", "push", "--account", "alice"], in: dir)
        #expect(get.status == 0, "the app's own item no longer reads: \(get.stderr)")
        #expect(get.stdout.contains("account: alice"))
        // The scan the review reproduced: v1 failed it with 65 (item file damaged: truncated).
        let list = try Self.run(["keychain", "list", "--keychain", "kc", "--entitlements", "app.json"], in: dir)
        #expect(list.status == 0, "the app's scan fails: \(list.stderr)")
        #expect(list.stdout.contains("alice"))
    }

    @Test func addGetRoundTripAndDuplicate() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let add = ["keychain", "add", "--keychain", "kc", "--entitlements", "app.json", "--service", "push", "--account", "alice", "--data-file", try Self.dataFile("c2VjcmV0LWtleQ==", in: dir)]
        let r1 = try Self.run(add + ["--json"], in: dir)
        #expect(r1.status == 0, "\(r1.stderr)")
        let item = Self.json(r1.stdout)["item"] as? [String: Any]
        #expect(item?["accessGroup"] as? String == "T.shared")
        #expect(item?["accessibility"] as? String == "whenUnlocked")
        let get = try Self.run(["keychain", "get", "--keychain", "kc", "--entitlements", "ext.json", "--service", "push", "--account", "alice", "--reveal", "--json"], in: dir)
        #expect(get.status == 0, "\(get.stderr)")
        #expect((Self.json(get.stdout)["item"] as? [String: Any])?["data"] as? String == "c2VjcmV0LWtleQ==")
        // Without --reveal the secret never appears.
        let quiet = try Self.run(["keychain", "get", "--keychain", "kc", "--access-group", "T.shared", "--service", "push", "--account", "alice"], in: dir)
        #expect(quiet.status == 0)
        #expect(quiet.stdout.contains("account: alice"))
        #expect(!quiet.stdout.contains("c2VjcmV0LWtleQ==") && !quiet.stdout.contains("secret-key"))
        // Duplicate: exit 1, OSStatus on stderr and in JSON.
        let dup = try Self.run(add, in: dir)
        #expect(dup.status == 1)
        #expect(dup.stderr.contains("errSecDuplicateItem (-25299)"))
        let dupJSON = try Self.run(add + ["--json"], in: dir)
        let error = Self.json(dupJSON.stdout)["error"] as? [String: Any]
        #expect(error?["code"] as? String == "errSecDuplicateItem")
        #expect((error?["osStatus"] as? NSNumber)?.intValue == -25299)
        // Data from a file and from standard input.
        try Data([0, 1, 2, 255]).write(to: dir.appendingPathComponent("k.bin"))
        #expect(try Self.run(["keychain", "add", "--keychain", "kc", "--access-group", "T.shared", "--service", "push", "--account", "bob", "--data-file", "k.bin"], in: dir).status == 0)
        #expect(try Self.run(["keychain", "add", "--keychain", "kc", "--access-group", "T.shared", "--service", "push", "--account", "carol", "--data-file", "-"], in: dir, stdin: "from stdin").status == 0)
        let bob = try Self.run(["keychain", "get", "--keychain", "kc", "--access-group", "T.shared", "--service", "push", "--account", "bob", "--reveal"], in: dir)
        #expect(bob.stdout.contains("data: AAEC/w=="))
    }

    @Test func entitlementAndNotFoundErrors() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try Self.run(["keychain", "add", "--keychain", "kc", "--entitlements", "app.json", "--access-group", "T.com.example.app",
                              "--service", "push", "--account", "a", "--data-file", try Self.dataFile("AA==", in: dir)], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        let missing = try Self.run(["keychain", "get", "--keychain", "kc", "--entitlements", "ext.json", "--access-group", "T.com.example.app",
                                    "--service", "push", "--account", "a", "--json"], in: dir)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("errSecMissingEntitlement (-34018)"))
        #expect(((Self.json(missing.stdout)["error"] as? [String: Any])?["osStatus"] as? NSNumber)?.intValue == -34018)
        let notFound = try Self.run(["keychain", "get", "--keychain", "kc", "--entitlements", "ext.json", "--access-group", "T.shared",
                                     "--service", "push", "--account", "a"], in: dir)
        #expect(notFound.status == 1)
        #expect(notFound.stderr.contains("errSecItemNotFound (-25300)"))
    }

    @Test func lockedDeviceRefusesWhenUnlockedItemAndChangesNothing() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (account, acc) in [("wu", "whenUnlocked"), ("afu", "afterFirstUnlockThisDeviceOnly")] {
            let r = try Self.run(["keychain", "add", "--keychain", "kc", "--entitlements", "app.json", "--service", "push", "--account", account,
                                  "--accessibility", acc, "--data-file", try Self.dataFile("AA==", in: dir)], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
        }
        let locked = try Self.run(["keychain", "device-state", "--keychain", "kc", "locked"], in: dir)
        #expect(locked.stdout == "locked\n")
        let itemsDir = dir.appendingPathComponent("kc/items")
        let before = try FileManager.default.contentsOfDirectory(atPath: itemsDir.path).sorted().map { try Data(contentsOf: itemsDir.appendingPathComponent($0)) }
        let get = ["keychain", "get", "--keychain", "kc", "--entitlements", "ext.json", "--service", "push"]
        let wu = try Self.run(get + ["--account", "wu"], in: dir)
        #expect(wu.status == 77, "\(wu.stderr)")
        #expect(wu.stderr.contains("errSecInteractionNotAllowed (-25308)"))
        #expect(wu.stderr.contains("error: a whenUnlocked item is not accessible while the device is locked"), "\(wu.stderr)")
        #expect(wu.stderr.contains("\nhint: unlock the keychain: push-keys keychain device-state --keychain DIR unlocked"), "\(wu.stderr)")
        #expect(try Self.run(get + ["--account", "afu"], in: dir).status == 0)
        let after = try FileManager.default.contentsOfDirectory(atPath: itemsDir.path).sorted().map { try Data(contentsOf: itemsDir.appendingPathComponent($0)) }
        #expect(before == after)
        #expect(try Self.run(["keychain", "device-state", "--keychain", "kc", "beforeFirstUnlock"], in: dir).status == 0)
        let afu = try Self.run(get + ["--account", "afu"], in: dir)
        #expect(afu.status == 77, "\(afu.stderr)")
        #expect(afu.stderr.contains("error: an afterFirstUnlockThisDeviceOnly item is not accessible while the device is before first unlock"), "\(afu.stderr)")
        let state = try Self.run(["keychain", "device-state", "--keychain", "kc", "--json"], in: dir)
        #expect(Self.json(state.stdout)["deviceState"] as? String == "beforeFirstUnlock")
    }

    @Test func passcodeUnlock() throws {
        let dir = try Self.setUp(passcode: "123456")
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try Self.run(["keychain", "device-state", "--keychain", "kc", "locked"], in: dir).status == 0)
        let none = try Self.run(["keychain", "device-state", "--keychain", "kc", "unlocked"], in: dir)
        #expect(none.status == 1)
        #expect(none.stderr.contains("errSecAuthFailed (-25293)"))
        #expect(try Self.run(["keychain", "device-state", "--keychain", "kc", "unlocked", "--passcode-file", "-"], in: dir, stdin: "000000\n").status == 1)
        let ok = try Self.run(["keychain", "device-state", "--keychain", "kc", "unlocked", "--passcode-file", "-"], in: dir, stdin: "123456\n")
        #expect(ok.status == 0)
        #expect(ok.stdout == "unlocked\n")
    }

    /// F5 of the December review: a `device-state` file copied while the device was unlocked and
    /// put back after it locked must unlock nothing (v1 read every WhenUnlocked item again). The
    /// unlock key is fresh per unlock and destroyed on lock.
    @Test func aDeviceStatePutBackAfterLockUnlocksNothing() throws {
        let dir = try Self.setUp(passcode: "123456")
        defer { try? FileManager.default.removeItem(at: dir) }
        let unlock = try Self.run(["keychain", "device-state", "--keychain", "kc", "unlocked", "--passcode-file", "-"], in: dir, stdin: "123456\n")
        #expect(unlock.status == 0, "\(unlock.stderr)")
        let data = try Self.dataFile("c2VjcmV0LWtleQ==", in: dir)
        let add = try Self.run(["keychain", "add", "--keychain", "kc", "--entitlements", "app.json", "--service", "push", "--account", "alice", "--data-file", data], in: dir)
        #expect(add.status == 0, "\(add.stderr)")
        let reveal = ["keychain", "get", "--keychain", "kc", "--entitlements", "app.json", "--service", "push", "--account", "alice", "--reveal", "--json"]
        #expect(try Self.run(reveal, in: dir).status == 0)
        let state = dir.appendingPathComponent("kc/device-state")
        let snapshot = try Data(contentsOf: state)
        #expect(try Self.run(["keychain", "device-state", "--keychain", "kc", "locked"], in: dir).status == 0)
        // Put the unlocked device's state back, as a copy or an old backup would.
        try FileManager.default.removeItem(at: state)
        try snapshot.write(to: state)
        chmod(state.path, 0o600)
        let after = try Self.run(reveal, in: dir)
        #expect(after.status != 0, "the put-back device-state unlocked the keychain again")
        #expect(!after.stdout.contains("c2VjcmV0LWtleQ=="))
    }

    @Test func listUpdateDeleteNeverPrintSecrets() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        for account in ["a", "b"] {
            #expect(try Self.run(["keychain", "add", "--keychain", "kc", "--access-group", "T.shared", "--service", "push", "--account", account,
                                  "--label", "L-\(account)", "--data-file", try Self.dataFile("c2VjcmV0LXZhbHVl", in: dir)], in: dir).status == 0)
        }
        let list = try Self.run(["keychain", "list", "--keychain", "kc"], in: dir)
        #expect(list.status == 0)
        #expect(list.stdout == "T.shared\tgenericPassword\tpush\ta\twhenUnlocked\tL-a\nT.shared\tgenericPassword\tpush\tb\twhenUnlocked\tL-b\n")
        let listJSON = try Self.run(["keychain", "list", "--keychain", "kc", "--entitlements", "ext.json", "--json"], in: dir)
        #expect((Self.json(listJSON.stdout)["items"] as? [Any])?.count == 2)
        #expect(!listJSON.stdout.contains("c2VjcmV0LXZhbHVl") && !listJSON.stdout.contains("secret-value"))
        let upd = try Self.run(["keychain", "update", "--keychain", "kc", "--access-group", "T.shared", "--service", "push", "--account", "a",
                                "--label", "new", "--data-file", try Self.dataFile("AQ==", in: dir), "--json"], in: dir)
        #expect(Self.json(upd.stdout)["updated"] as? Int == 1)
        let got = try Self.run(["keychain", "get", "--keychain", "kc", "--access-group", "T.shared", "--service", "push", "--account", "a", "--reveal", "--json"], in: dir)
        let item = Self.json(got.stdout)["item"] as? [String: Any]
        #expect(item?["label"] as? String == "new")
        #expect(item?["data"] as? String == "AQ==")
        let collide = try Self.run(["keychain", "update", "--keychain", "kc", "--access-group", "T.shared", "--service", "push", "--account", "a", "--new-account", "b"], in: dir)
        #expect(collide.status == 1)
        #expect(collide.stderr.contains("-25299"))
        let del = try Self.run(["keychain", "delete", "--keychain", "kc", "--access-group", "T.shared", "--service", "push", "--account", "a", "--json"], in: dir)
        #expect(Self.json(del.stdout)["deleted"] as? Int == 1)
        let again = try Self.run(["keychain", "delete", "--keychain", "kc", "--access-group", "T.shared", "--service", "push", "--account", "a"], in: dir)
        #expect(again.status == 1)
        #expect(again.stderr.contains("errSecItemNotFound (-25300)"))
    }

    @Test func usageMissingPermissionAndCorruptExitCodes() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let usage: [[String]] = [
            ["keychain", "get", "--service", "s", "--account", "a", "--access-group", "T.shared"],  // no --keychain
            ["keychain", "get", "--keychain", "kc", "--service", "s", "--account", "a"],  // no identity
            ["keychain", "add", "--keychain", "kc", "--access-group", "G", "--service", "s", "--account", "a"],  // no data
            ["keychain", "add", "--keychain", "kc", "--access-group", "G", "--service", "s", "--account", "a", "--data-file", try Self.dataFile("AA==", in: dir), "--accessibility", "always"],
            ["keychain", "device-state", "--keychain", "kc", "asleep"],
            ["keychain", "list", "--keychain", "kc", "--bogus"],
            ["keychain", "update", "--keychain", "kc", "--access-group", "G", "--service", "s", "--account", "a"],  // nothing to update
        ]
        for args in usage {
            let r = try Self.run(args, in: dir)
            #expect(r.status == 64, "\(args): \(r.stderr)")
            #expect(r.stderr.hasPrefix("push-keys: error: "))
            #expect(r.stdout.isEmpty)
        }
        // Secrets never on argv: --data-base64 is gone (issue 12, F13); the data comes from a file or stdin.
        let argvSecret = try Self.run(["keychain", "add", "--keychain", "kc", "--access-group", "G", "--service", "s", "--account", "a", "--data-base64", "AA=="], in: dir)
        #expect(argvSecret.status == 64 && argvSecret.stderr.contains("unknown option --data-base64"), "\(argvSecret.stderr)")
        let missing = try Self.run(["keychain", "list", "--keychain", "nope", "--json"], in: dir)
        #expect(missing.status == 66)
        #expect((Self.json(missing.stdout)["error"] as? [String: Any])?["code"] as? String == "keychainMissing")
        #expect(try Self.run(["keychain", "add", "--keychain", "kc", "--access-group", "T.shared", "--service", "s", "--account", "a", "--data-file", try Self.dataFile("AA==", in: dir)], in: dir).status == 0)
        let items = dir.appendingPathComponent("kc/items")
        let file = items.appendingPathComponent(try FileManager.default.contentsOfDirectory(atPath: items.path)[0])
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count - 1] ^= 0x80
        try bytes.write(to: file)
        let corrupt = try Self.run(["keychain", "get", "--keychain", "kc", "--access-group", "T.shared", "--service", "s", "--account", "a"], in: dir)
        #expect(corrupt.status == 65)
        #expect(corrupt.stderr.contains("damaged"))
        chmod(dir.appendingPathComponent("kc").path, 0o755)
        let perm = try Self.run(["keychain", "list", "--keychain", "kc"], in: dir)
        #expect(perm.status == 77)
        #expect(perm.stderr.contains("hint: "))
    }

    /// `--application-identifier` (TEAMID.bundle.id) is part of the caller's identity; `--app-id`,
    /// which means the bundle id everywhere else, is not accepted here.
    @Test func applicationIdentifierIsPartOfTheIdentity() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let add = try Self.run(["keychain", "add", "--keychain", "kc", "--application-identifier", "T.com.example.app", "--service", "push",
                                "--account", "a", "--data-file", try Self.dataFile("AA==", in: dir), "--json"], in: dir)
        #expect(add.status == 0, "\(add.stderr)")
        #expect((Self.json(add.stdout)["item"] as? [String: Any])?["accessGroup"] as? String == "T.com.example.app")
        // The app (whose entitlements carry that application-identifier) finds it; its extension does not.
        let app = try Self.run(["keychain", "get", "--keychain", "kc", "--entitlements", "app.json", "--service", "push", "--account", "a"], in: dir)
        #expect(app.status == 0, "\(app.stderr)")
        #expect(app.stdout.contains("accessGroup: T.com.example.app"))
        let ext = try Self.run(["keychain", "get", "--keychain", "kc", "--entitlements", "ext.json", "--service", "push", "--account", "a"], in: dir)
        #expect(ext.status == 1)
        #expect(ext.stderr.contains("errSecItemNotFound (-25300)"))
        let old = try Self.run(["keychain", "list", "--keychain", "kc", "--app-id", "T.com.example.app"], in: dir)
        #expect(old.status == 64)
        #expect(old.stderr.hasPrefix("push-keys: error: unknown option --app-id"))
        let both = try Self.run(["keychain", "list", "--keychain", "kc", "--entitlements", "app.json", "--application-identifier", "T.x"], in: dir)
        #expect(both.status == 64)
        let empty = try Self.run(["keychain", "list", "--keychain", "kc", "--application-identifier", ""], in: dir)
        #expect(empty.status == 64)
    }

    @Test func everySubcommandDocumentsEveryOption() throws {
        let dir = try Self.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let expected: [String: [String]] = [
            "init": ["--keychain", "--passcode-file"],
            "add": ["--keychain", "--entitlements", "--access-group", "--app-group", "--application-identifier", "--service", "--account", "--label", "--accessibility", "--class", "--data-file"],
            "get": ["--keychain", "--entitlements", "--access-group", "--app-group", "--application-identifier", "--service", "--account", "--class", "--reveal"],
            "update": ["--keychain", "--entitlements", "--access-group", "--application-identifier", "--service", "--account", "--label", "--accessibility", "--new-service", "--new-account", "--new-access-group", "--data-file"],
            "delete": ["--keychain", "--entitlements", "--access-group", "--application-identifier", "--service", "--account", "--class"],
            "list": ["--keychain", "--entitlements", "--access-group", "--application-identifier", "--service", "--class"],
            "device-state": ["--keychain", "--passcode-file"],
        ]
        for (sub, options) in expected {
            let r = try Self.run(["keychain", sub, "--help"], in: dir)
            #expect(r.status == 0)
            for section in ["OVERVIEW:", "USAGE:", "OPTIONS:", "EXAMPLES:", "EXIT CODES:"] { #expect(r.stdout.contains(section), "\(sub) \(section)") }
            for option in options + ["--json"] { #expect(r.stdout.contains("  \(option)"), "\(sub) \(option)") }
            #expect(r.stdout.contains("66") && r.stdout.contains("77") && r.stdout.contains("  1 "))
        }
    }
}
