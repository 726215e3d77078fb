import Foundation
import PushSealCLI
import PushSealTestSupport
import Testing

/// Issue 12 F12/F14 and issue 11 item 6, run on the built tools: key bytes only to safe places
/// (a 0600 file, a pipe, never a terminal or a file others can read), links never followed,
/// terminal-safe text and `--json` on a terminal, and `push-seal seal` for a file named `batch`.
/// A terminal is a real pty from util-linux `script`.
@Suite struct SecretOutputCLITests {
    struct Run { var status: Int32; var out: String; var err: String }

    /// Runs `tool` with standard output to `stdout` (a file handle), or to a pipe when `nil`.
    static func run(_ tool: String, _ args: [String], cwd: URL, stdout: FileHandle? = nil, stdin: [UInt8] = []) throws -> Run {
        let r = try runTool(KeysCLI.buildDirectory.appendingPathComponent(tool), args, cwd: cwd, stdin: Data(stdin), stdout: stdout)
        return Run(status: r.status, out: r.stdout, err: r.stderr)
    }

    /// Runs `tool` with standard output (and error) on a pseudo-terminal, through `script -qec`;
    /// `out` is what the terminal showed.
    static func runOnTerminal(_ tool: String, _ args: [String], cwd: URL) throws -> Run {
        let command = ([KeysCLI.buildDirectory.appendingPathComponent(tool).path] + args)
            .map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let r = try KeysCLI.run("/usr/bin/script", ["-qec", command + " </dev/null", "/dev/null"], cwd: cwd)
        return Run(status: r.status, out: r.stdout, err: r.stderr)
    }

    /// A scratch directory with a server keychain `srv` holding alice's keyset.
    static func setUp() throws -> TemporaryDirectory {
        let dir = try TemporaryDirectory("secret-output-cli")
        let g = try run("push-keys", ["generate", "--keychain", "srv", "--app-id", KeysCLI.appID, "--recipient", "alice"], cwd: dir.url)
        try #require(g.status == 0, "\(g.err)")
        return dir
    }

    static func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    static func createFile(_ url: URL, mode: Int) throws -> FileHandle {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        return try FileHandle(forWritingTo: url)
    }

    @Test func exportRefusesAStandardOutputFileOthersCanRead() throws {
        let dir = try Self.setUp()
        let export = ["export", "--keychain", "srv", "--app-id", KeysCLI.appID, "--recipient", "alice"]
        // `push-keys export > alice.key.json` under umask 022: a 0644 file. Refused, nothing written.
        let open = dir.appending("open.key.json")
        let r = try Self.run("push-keys", export, cwd: dir.url, stdout: try Self.createFile(open, mode: 0o644))
        #expect(r.status == 64, "\(r.err)")
        #expect(r.err.contains("refusing to write key bytes to standard output: a regular file with mode 644"), "\(r.err)")
        #expect(try Data(contentsOf: open).isEmpty)
        // A 0600 file, and a pipe, are fine.
        let closed = dir.appending("closed.key.json")
        let ok = try Self.run("push-keys", export, cwd: dir.url, stdout: try Self.createFile(closed, mode: 0o600))
        #expect(ok.status == 0, "\(ok.err)")
        #expect(String(decoding: try Data(contentsOf: closed), as: UTF8.self).contains("\"keys\""))
        #expect(try Self.run("push-keys", export, cwd: dir.url).status == 0)
        // A terminal, as before.
        let tty = try Self.runOnTerminal("push-keys", export, cwd: dir.url)
        #expect(tty.status == 64 && tty.out.contains("refusing to print key bytes to a terminal"), "\(tty.out)")
    }

    @Test func keychainGetRevealRefusesATerminal() throws {
        let dir = try TemporaryDirectory("secret-output-reveal")
        #expect(try Self.run("push-keys", ["keychain", "init", "--keychain", "kc"], cwd: dir.url).status == 0)
        let add = try Self.run("push-keys", ["keychain", "add", "--keychain", "kc", "--access-group", "T.shared", "--service", "s", "--account", "a",
                                             "--data-file", "-"], cwd: dir.url, stdin: Array("terminal-secret".utf8))
        try #require(add.status == 0, "\(add.err)")
        let get = ["keychain", "get", "--keychain", "kc", "--access-group", "T.shared", "--service", "s", "--account", "a", "--reveal"]
        let tty = try Self.runOnTerminal("push-keys", get, cwd: dir.url)
        #expect(tty.status == 64, "\(tty.out)")
        #expect(tty.out.contains("refusing to print secret data to a terminal"), "\(tty.out)")
        #expect(!tty.out.contains(Data("terminal-secret".utf8).base64EncodedString()))
        // Without --reveal a terminal is fine (no secret is printed); a pipe gets the secret.
        #expect(try Self.runOnTerminal("push-keys", Array(get.dropLast()), cwd: dir.url).status == 0)
        let piped = try Self.run("push-keys", get, cwd: dir.url)
        #expect(piped.status == 0 && piped.out.contains("data: " + Data("terminal-secret".utf8).base64EncodedString()), "\(piped.err)")
    }

    @Test func mediaDescriptorGoesToAPrivateFileAndNeverToATerminal() throws {
        let dir = try TemporaryDirectory("secret-output-media")
        try Data([0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 7, count: 100)).write(to: dir.appending("cat.jpg"))
        let tty = try Self.runOnTerminal("push-seal", ["media", "cat.jpg", "--out", "cat.sealed"], cwd: dir.url)
        #expect(tty.status == 64 && tty.out.contains("refusing to print the media key to a terminal"), "\(tty.out)")
        #expect(!FileManager.default.fileExists(atPath: dir.appending("cat.sealed").path), "nothing is written before the refusal")
        let r = try Self.runOnTerminal("push-seal", ["media", "cat.jpg", "--out", "cat.sealed", "--descriptor-out", "media.json"], cwd: dir.url)
        #expect(r.status == 0, "\(r.out)")
        #expect(!r.out.contains("\"key\""))
        #expect(try Self.mode(dir.appending("media.json").path) == 0o600)
        let descriptor = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appending("media.json"))) as? [String: Any])
        #expect((descriptor["key"] as? String).flatMap { Data(base64Encoded: $0) }?.count == 32)
        // O_EXCL: an existing descriptor file is never overwritten (it may hold another key).
        let again = try Self.run("push-seal", ["media", "cat.jpg", "--out", "cat2.sealed", "--descriptor-out", "media.json"], cwd: dir.url)
        #expect(again.status == 73, "\(again.err)")
        #expect(try (JSONSerialization.jsonObject(with: Data(contentsOf: dir.appending("media.json"))) as? [String: Any])?["key"] as? String == descriptor["key"] as? String)
    }

    @Test func mediaForceNeverFollowsALink() throws {
        let dir = try TemporaryDirectory("secret-output-link")
        try Data([0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 7, count: 100)).write(to: dir.appending("cat.jpg"))
        let victim = dir.appending("victim.txt")
        try Data("keep me".utf8).write(to: victim)
        try FileManager.default.createSymbolicLink(atPath: dir.appending("cat.sealed").path, withDestinationPath: victim.path)
        let r = try Self.run("push-seal", ["media", "cat.jpg", "--out", "cat.sealed", "--force"], cwd: dir.url)
        #expect(r.status == 73, "\(r.err)")
        #expect(r.err.contains("cat.sealed is a symbolic link"), "\(r.err)")
        #expect(try String(contentsOf: victim, encoding: .utf8) == "keep me")
        #expect(!r.out.contains("\"key\""), "no descriptor for a blob that was not written")
    }

    @Test func textOutputEscapesControlsAndJSONOnATerminalEscapesWhatTerminalsObey() throws {
        let dir = try TemporaryDirectory("secret-output-escapes")
        #expect(try Self.run("push-keys", ["keychain", "init", "--keychain", "kc"], cwd: dir.url).status == 0)
        let label = "a\u{1B}]0;owned\u{07}b\u{202E}c\u{85}d\u{2028}e"
        let add = try Self.run("push-keys", ["keychain", "add", "--keychain", "kc", "--access-group", "T.shared", "--service", "s", "--account", "a",
                                             "--label", label, "--data-file", "-"], cwd: dir.url, stdin: [1, 2, 3])
        try #require(add.status == 0, "\(add.err)")
        let list = ["keychain", "list", "--keychain", "kc", "--access-group", "T.shared"]
        // Text (even in a pipe): every control shown as an escape, one line per item.
        let text = try Self.run("push-keys", list, cwd: dir.url)
        #expect(text.status == 0)
        #expect(text.out.contains("a\\u{1B}]0;owned\\u{7}b\\u{202E}c\\u{85}d\\u{2028}e"), "\(text.out)")
        #expect(!text.out.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x202E || $0.value == 0x85 })
        let get = try Self.run("push-keys", ["keychain", "get", "--keychain", "kc", "--access-group", "T.shared", "--service", "s", "--account", "a"], cwd: dir.url)
        #expect(get.out.contains("label: a\\u{1B}]0;owned"), "\(get.out)")
        // --json in a pipe: the exact JSON (only C0 escaped, as JSON requires).
        let piped = try Self.run("push-keys", list + ["--json"], cwd: dir.url)
        #expect(piped.out.contains("\u{202E}") && piped.out.contains("\u{85}"))
        let items = try #require((try JSONSerialization.jsonObject(with: Data(piped.out.utf8)) as? [String: Any])?["items"] as? [[String: Any]])
        #expect(items.first?["label"] as? String == label)
        // --json on a terminal: DEL/C1, U+2028/9 and bidi controls as \uXXXX too.
        let tty = try Self.runOnTerminal("push-keys", list + ["--json"], cwd: dir.url)
        #expect(tty.status == 0, "\(tty.out)")
        #expect(tty.out.contains("\\u202e") && tty.out.contains("\\u0085") && tty.out.contains("\\u2028") && tty.out.contains("\\u001b"), "\(tty.out)")
        #expect(!tty.out.unicodeScalars.contains { [0x1B, 0x85, 0x202E, 0x2028].contains($0.value) }, "\(tty.out)")
    }

    @Test func terminalSafeJSONKeepsTheValue() throws {
        let json = "{\"a\":\"x\u{7F}\u{9F}\u{2029}\u{2066}y\"}"
        let safe = Output.terminalSafeJSON(json)
        #expect(safe == "{\"a\":\"x\\u007f\\u009f\\u2029\\u2066y\"}")
        let decoded = try JSONSerialization.jsonObject(with: Data(safe.utf8)) as? [String: String]
        #expect(decoded?["a"] == "x\u{7F}\u{9F}\u{2029}\u{2066}y")
    }
}

/// `push-seal seal` (issue 11 item 6): the single seal as a command, the bare form its alias.
@Suite struct SealCommandCLITests {
    @Test func sealSealsAFileNamedBatchAndTheBareFormStays() throws {
        let dir = try TemporaryDirectory("seal-command-cli")
        let g = try SecretOutputCLITests.run("push-keys", ["generate", "--keychain", "srv", "--app-id", KeysCLI.appID, "--recipient", "alice"], cwd: dir.url)
        try #require(g.status == 0, "\(g.err)")
        try Data(#"{"title":"t","body":"b"}"#.utf8).write(to: dir.appending("batch"))
        let keys = ["--app-id", KeysCLI.appID, "--recipient", "alice", "--keychain", "srv"]
        let sealed = try SecretOutputCLITests.run("push-seal", ["seal"] + keys + ["batch"], cwd: dir.url)
        #expect(sealed.status == 0, "\(sealed.err)")
        #expect(sealed.out.contains("\"encrypted_data\""))
        let bare = try SecretOutputCLITests.run("push-seal", keys + ["batch"], cwd: dir.url)
        #expect(bare.status == 0 && bare.out.contains("\"encrypted_data\""), "\(bare.err)")
        // The word alone is still the batch command (with its own usage error).
        let batch = try SecretOutputCLITests.run("push-seal", ["batch"], cwd: dir.url)
        #expect(batch.status == 64 && batch.err.contains("missing --app-id APP"), "\(batch.err)")
        // The command list names seal once.
        let help = try SecretOutputCLITests.run("push-seal", ["help"], cwd: dir.url)
        #expect(help.out.components(separatedBy: "  push-seal seal\n").count == 2, "\(help.out)")
        #expect(!help.out.contains("  push-seal\n"), "\(help.out)")
        // Both spellings print the same help.
        #expect(try SecretOutputCLITests.run("push-seal", ["seal", "--help"], cwd: dir.url).out
                == (try SecretOutputCLITests.run("push-seal", ["--help"], cwd: dir.url).out))
    }

    @Test func batchSummaryStaysOnStderrWithJSON() throws {
        let dir = try TemporaryDirectory("seal-batch-summary")
        let g = try SecretOutputCLITests.run("push-keys", ["generate", "--keychain", "srv", "--app-id", KeysCLI.appID, "--recipient", "alice"], cwd: dir.url)
        try #require(g.status == 0, "\(g.err)")
        let lines = "{\"recipient\":\"alice\",\"notification\":{\"title\":\"a\"}}\n{\"recipient\":\"nobody\",\"notification\":{\"title\":\"a\"}}\n"
        let r = try SecretOutputCLITests.run("push-seal", ["batch", "--app-id", KeysCLI.appID, "--keychain", "srv", "--json"], cwd: dir.url, stdin: Array(lines.utf8))
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.hasPrefix("push-seal: error: 1 of 2 lines failed (unknownRecipient: 1; see their error lines)\nhint: "), "\(r.err)")
        let out = r.out.split(separator: "\n")
        #expect(out.count == 2, "one line per input line, no summary object: \(r.out)")
        #expect(!r.out.contains("linesFailed"))
    }
}

/// The identity option group, in process: one set of rules for every tool.
@Suite struct IdentityOptionsTests {
    func identity(_ argv: [String], prefix: String = "") throws -> IdentityOptions {
        let specs: [OptionSpec] = ["entitlements", "access-group", "app-group", "application-identifier"].map {
            .value("--\(prefix)\($0)", "X", "", repeatable: $0.hasSuffix("group"))
        }
        return IdentityOptions(parsing: try Arguments(argv, specs: specs), prefix: prefix)
    }

    @Test func rulesAreCheckedInValidate() throws {
        #expect(try identity([]).isEmpty)
        try identity(["--access-group", "A", "--access-group", "B", "--app-group", "G"]).validate()
        try identity(["--entitlements", "e.json", "--access-group", "A"]).validate()
        let bad: [[String]] = [
            ["--entitlements", "e.json", "--app-group", "G"],
            ["--entitlements", "e.json", "--access-group", "A", "--access-group", "B"],
            ["--entitlements", "e.json", "--application-identifier", "T.app"],
            ["--access-group", ""],
            ["--application-identifier", ""],
        ]
        for argv in bad {
            #expect(throws: CLIError.self, "\(argv)") { try identity(argv).validate() }
        }
        #expect(throws: CLIError.self) { try identity(["--device-entitlements", "e", "--device-app-group", "G"], prefix: "device-").validate() }
    }

    @Test func resolveMapsAMissingFileAndBuildsPartsInOrder() throws {
        let parts = try identity(["--access-group", "A", "--access-group", "B", "--app-group", "G", "--application-identifier", "T.app"])
        let made = try parts.resolve(load: { _ in ("file", [String]()) }, make: { id, groups, apps in (id ?? "", groups + apps) })
        #expect(made?.entitlements.0 == "T.app" && made?.entitlements.1 == ["A", "B", "G"] && made?.accessGroup == nil)
        let none = try identity([]).resolve(load: { _ in 0 }, make: { _, _, _ in 1 })
        #expect(none == nil)
        let file = try identity(["--entitlements", "e.json", "--access-group", "A"])
        let loaded = try file.resolve(load: { $0 }, make: { _, _, _ in "" })
        #expect(loaded?.entitlements == "e.json" && loaded?.accessGroup == "A")
    }
}
