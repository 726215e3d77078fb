import Foundation
import PushSealCLI
import PushSealKeychain
import Testing

private let devFullPresent = FileManager.default.fileExists(atPath: "/dev/full")
private let noDevFull = Comment(rawValue: "/dev/full is not available on this system: the disk-full cases need it")

/// What every tool promises about its output and its error lines (docs/cli.md, the general
/// section): a failed write to stdout is exit 74, a closed pipe a quiet 74, every error one line
/// with no raw control character, and arguments that are not UTF-8 refused.
@Suite struct OutputSafetyCLITests {
    typealias Scratch = PushSealCLITests.Scratch

    static let noSpace = String(cString: strerror(ENOSPC))

    /// A device keychain for push-open (no items: a payload that iOS would not hand to the
    /// extension needs none) in `dir`.
    static func deviceKeychain(in s: Scratch) throws -> String {
        let url = s.dir.appendingPathComponent("device")
        try Keychain.create(at: url)
        return url.path
    }

    static let notInvokedPayload = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

    // MARK: stdout write failures

    @Test(.enabled(if: devFullPresent, noDevFull))
    func everyToolExits74WhenStandardOutputIsFull() throws {
        let s = try Scratch()
        let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0] + (0..<2000).map { UInt8($0 & 0xFF) })
        try s.write("cat.jpg", jpeg)
        let device = try Self.deviceKeychain(in: s)
        let cases: [(tool: String, args: [String], stdin: [UInt8])] = [
            ("push-seal", s.keyArgs + ["--recipient", "alice", "--title", "T"], []),
            ("push-seal", s.keyArgs + ["--recipient", "alice", "--title", "T", "--with-headers"], []),
            ("push-seal", ["media", s.path("cat.jpg"), "--out", s.path("cat.sealed"), "--force"], []),
            ("push-seal", ["batch"] + s.keyArgs, Array(#"{"recipient":"alice","notification":{"title":"a"}}"#.utf8) + [0x0A]),
            ("push-seal", ["--help"], []),
            ("push-keys", ["list", "--keychain", s.keychain.path], []),
            ("push-keys", ["keychain", "device-state", "--keychain", device], []),
            ("push-keys", ["--version"], []),
            ("push-open", ["--keychain", device, "--app-id", Scratch.appID, "--access-group", "T.shared", "-"], Self.notInvokedPayload),
        ]
        for c in cases {
            // The same command succeeds (or, for push-open, exits 2 with its result) when stdout works.
            let fine = try RawToolRun.run(c.tool, c.args, stdin: c.stdin)
            #expect([0, 2].contains(fine.status), "\(c.tool) \(c.args): \(fine.err)")
            #expect(!fine.stdout.isEmpty, "\(c.tool) \(c.args)")
            let full = try RawToolRun.run(c.tool, c.args, stdin: c.stdin, stdout: .file("/dev/full"))
            #expect(full.status == 74, "\(c.tool) \(c.args): \(full.err)")
            #expect(full.err == "\(c.tool): error: cannot write to standard output: \(Self.noSpace)\n", "\(c.tool) \(c.args)")
        }
        // The blob of `media` was written before the descriptor was lost: it is there, 0644.
        #expect(FileManager.default.fileExists(atPath: s.path("cat.sealed")))
    }

    @Test(.enabled(if: devFullPresent, noDevFull))
    func aCommandErrorKeepsItsCodeWhenItsJSONCannotBeWritten() throws {
        let s = try Scratch()
        let r = try RawToolRun.run("push-seal", s.keyArgs + ["--recipient", "carol", "--title", "T", "--json"], stdout: .file("/dev/full"))
        #expect(r.status == 67, "\(r.err)")
        #expect(r.errLines.first?.hasPrefix("push-seal: error: no keyset for recipient carol") == true, "\(r.err)")
    }

    @Test func aClosedPipeIsAQuietExit74() throws {
        let s = try Scratch()
        var lines: [UInt8] = []
        for i in 0..<3000 { lines += Array(#"{"recipient":"alice","notification":{"title":"n\#(i)"}}"#.utf8) + [0x0A] }
        let cases: [(tool: String, args: [String], stdin: [UInt8])] = [
            ("push-seal", s.keyArgs + ["--recipient", "alice", "--title", "T"], []),
            ("push-seal", ["batch", "--jobs", "2"] + s.keyArgs, lines),
            ("push-keys", ["list", "--keychain", s.keychain.path], []),
            ("push-keys", ["--help"], []),
        ]
        for c in cases {
            let r = try RawToolRun.run(c.tool, c.args, stdin: c.stdin, stdout: .closedPipe)
            // Not killed by SIGPIPE (141), though the child started with SIGPIPE at its default.
            #expect(r.status == 74, "\(c.tool) \(c.args): \(r.err)")
            #expect(r.err.isEmpty, "\(c.tool) \(c.args)")
        }
    }

    // MARK: one line per error, no raw control characters

    /// No C0 control but the line ends, no DEL, no C1, no U+2028/U+2029 anywhere in `text`.
    static func hasRawControls(_ text: String) -> Bool {
        text.unicodeScalars.contains { c in
            (c.value < 0x20 && c != "\n") || (0x7F...0x9F).contains(c.value) || c.value == 0x2028 || c.value == 0x2029
        }
    }

    @Test func userTextInErrorLinesIsEscapedOntoOneLine() throws {
        let s = try Scratch()
        let memberJSON = #"{"title":"T","bo\ngus\u001b[31m\u0085\u2028\u007f":1}"#
        let cases: [(args: [String], stdin: String, lineCount: Int, shows: String)] = [
            (s.keyArgs + ["--recipient", "alice", "-"], memberJSON, 1, #"'bo\ngus\u{1B}[31m\u{85}\u{2028}\u{7F}'"#),
            // A malformed recipient is a usage error with no hint: one line.
            (s.keyArgs + ["--recipient", "a\nb\u{1B}]0;x\u{07}", "--title", "T"], "", 1, #"a\nb\u{1B}]0;x\u{7}"#),
            (s.keyArgs + ["--recipient", "alice", s.path("no\nsuch\r.json")], "", 1, #"no\nsuch\r.json"#),
            (["--keychain", "kc\nx\t", "--app-id", Scratch.appID, "--recipient", "alice", "--title", "T"], "", 2, #"kc\nx\t"#),
        ]
        for c in cases {
            let r = try RawToolRun.run("push-seal", c.args, stdin: Array(c.stdin.utf8))
            #expect(r.status != 0)
            #expect(r.errLines.count == c.lineCount, "\(r.err)")
            #expect(r.errLines.first?.hasPrefix("push-seal: error: ") == true, "\(r.err)")
            #expect(r.err.contains(c.shows), "\(r.err)")
            #expect(!r.stderr.contains(0x1B), "a raw ESC reached stderr: \(r.err)")
            #expect(!Self.hasRawControls(r.err), "\(r.err)")
        }
    }

    @Test func jsonErrorsKeepTheOriginalTextAsValidJSON() throws {
        let s = try Scratch()
        let recipient = "a\nb\u{1B}[31m\u{85}\u{2028}"
        let r = try RawToolRun.run("push-seal", s.keyArgs + ["--recipient", recipient, "--title", "T", "--json"])
        #expect(r.status != 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any])
        let error = try #require(object["error"] as? [String: Any])
        let message = try #require(error["message"] as? String)
        #expect(message.contains(recipient), "\(message)")
        #expect(r.out.split(separator: "\n").count == 1)
        #expect(!Self.hasRawControls(r.err))
    }

    // MARK: arguments that are not UTF-8

    @Test func argumentsThatAreNotUTF8AreRefusedWithTheDocumentedCode() throws {
        let s = try Scratch()
        let device = try Self.deviceKeychain(in: s)
        let bad: [UInt8] = [0xFF, 0xFE]
        func args(_ words: [String], then raw: [UInt8]) -> [[UInt8]] { words.map { Array($0.utf8) } + [raw] }
        let cases: [(tool: String, args: [[UInt8]], status: Int32, message: String)] = [
            ("push-seal", args(s.keyArgs + ["--recipient", "alice", "--title"], then: bad), 65,
             "argument 8 (the value of --title) is not valid UTF-8: byte 0xFF at byte offset 0 of 2 (the value is not shown: it may be a secret)"),
            ("push-seal", args(s.keyArgs + ["--recipient", "alice"], then: Array("--body=ok".utf8) + [0xC3, 0x28]), 65,
             "argument 7 (the value of --body) is not valid UTF-8: byte 0xC3 at byte offset 2 of 4 (the value is not shown: it may be a secret)"),
            ("push-seal", args(s.keyArgs + ["--recipient", "alice", "--title", "T"], then: Array("note".utf8) + [0xE9] + Array(".json".utf8)), 65,
             "argument 9 is not valid UTF-8: byte 0xE9 at byte offset 4 of 10"),
            ("push-seal", args(["batch"] + s.keyArgs + ["--sound"], then: bad), 64,
             #"argument 7 (the value of --sound) is not valid UTF-8"#),
            ("push-keys", args(["list", "--keychain"], then: bad), 64, "argument 3 (the value of --keychain) is not valid UTF-8"),
            ("push-open", args(["--keychain", device, "--app-id", Scratch.appID, "--access-group"], then: bad), 64,
             "argument 6 (the value of --access-group) is not valid UTF-8"),
        ]
        for c in cases {
            let r = try RawToolRun.run(c.tool, c.args)
            #expect(r.status == c.status, "\(r.err)")
            #expect(r.errLines.first == "\(c.tool): error: \(c.message)" || r.errLines.first?.hasPrefix("\(c.tool): error: \(c.message)") == true, "\(r.err)")
            #expect(r.stdout.isEmpty, "nothing was sealed or printed")
        }
        // The value itself is never echoed (it may be a key): a secret with one bad byte.
        let secret = Array("U0VDUkVULUtFWS1CWVRFUw==".utf8) + [0xFF]
        let leak = try RawToolRun.run("push-keys", args(["keychain", "add", "--keychain", device, "--access-group", "T.shared", "--service", "s",
                                                          "--account", "a", "--label"], then: secret) + [Array("--json".utf8)])
        #expect(leak.status == 64, "\(leak.err)")
        #expect(!leak.err.contains("U0VDUkVU") && !leak.out.contains("U0VDUkVU"), "the secret argument was echoed: \(leak.err) \(leak.out)")
        #expect(leak.err.contains("byte 0xFF at byte offset 24 of 25"), "\(leak.err)")
        // Valid UTF-8 beyond ASCII is not refused.
        let ok = try RawToolRun.run("push-seal", s.keyArgs + ["--recipient", "alice", "--title", "Ana 🍝", "--body", "é\u{2028}"])
        #expect(ok.status == 0, "\(ok.err)")
    }

    // MARK: batch lines

    @Test func batchSkipsBlankLinesAndKeepsTheirNumbers() throws {
        let s = try Scratch()
        let good = #"{"recipient":"alice","notification":{"title":"a"}}"#
        let input = good + "\n\n   \n\t \r\n\r\n" + good + "\r\n" + #"{"recipient":"alice","extra":1,"notification":{"title":"a"}}"# + "\n"
        let r = try RawToolRun.run("push-seal", ["batch"] + s.keyArgs, stdin: Array(input.utf8))
        #expect(r.status == 2, "\(r.err)")
        let lines = try r.out.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(lines.map { ($0["line"] as? NSNumber)?.intValue } == [1, 6, 7])
        #expect(lines[0]["payload"] != nil && lines[1]["payload"] != nil)
        // The unknown member's error line still names the valid recipient.
        #expect(lines[2]["recipient"] as? String == "alice")
        #expect((lines[2]["error"] as? [String: Any])?["code"] as? String == "invalidNotification")
    }

    @Test func batchLineLimitDoesNotCountTheLineEnding() throws {
        let s = try Scratch()
        let limit = 1 << 20
        func padded(_ count: Int) -> [UInt8] {
            let json = Array(#"{"recipient":"alice","notification":{"title":"a"}}"#.utf8)
            return json + [UInt8](repeating: 0x20, count: count - json.count)
        }
        // Exactly at the limit, with CRLF (the CR falls at a 64 KiB read boundary for the first
        // line); one byte over, with CRLF and with LF.
        let input = padded(limit) + [0x0D, 0x0A] + padded(limit) + [0x0D, 0x0A] + padded(limit + 1) + [0x0D, 0x0A] + padded(limit + 1) + [0x0A]
        let r = try RawToolRun.run("push-seal", ["batch"] + s.keyArgs, stdin: input)
        #expect(r.status == 2, "\(r.err)")
        let lines = try r.out.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(lines.count == 4)
        #expect(lines[0]["payload"] != nil, "\(lines[0])")
        #expect(lines[1]["payload"] != nil, "\(lines[1])")
        for line in lines[2...] {
            let error = try #require(line["error"] as? [String: Any])
            #expect(error["code"] as? String == "lineTooLong")
            #expect(error["message"] as? String == "the line is \(limit + 1) bytes, longer than the limit")
        }
    }

    // MARK: keychain hints

    @Test func permissionHintsNameTheFileAndItsMode() throws {
        let s = try Scratch()
        let items = s.keychain.appendingPathComponent("items")
        let itemPaths = try FileManager.default.contentsOfDirectory(atPath: items.path).map { items.appendingPathComponent($0).path }
        #expect(itemPaths.count == 8)  // 4 keysets, each with its generation counter item
        for p in itemPaths { try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: p) }
        let seal = try RawToolRun.run("push-seal", s.keyArgs + ["--recipient", "alice", "--title", "T"])
        let list = try RawToolRun.run("push-keys", ["list", "--keychain", s.keychain.path])
        for r in [seal, list] {
            #expect(r.status == 77, "\(r.err)")
            #expect(r.errLines.count == 2, "\(r.err)")
            // The hint fixes exactly the file the error names (whichever item was read first).
            let named = itemPaths.first { r.errLines.first == "\(r.err.prefix { $0 != ":" }): error: \($0) is accessible by group or others (mode 644)" }
            let file = try #require(named, "\(r.err)")
            #expect(r.errLines.last == "hint: chmod 600 \(file)  # a keychain's files must be 0600, its directories 0700", "\(r.err)")
        }
        for p in itemPaths { try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: p) }
        try FileManager.default.setAttributes([.posixPermissions: 0o750], ofItemAtPath: items.path)
        let dir = try RawToolRun.run("push-seal", s.keyArgs + ["--recipient", "alice", "--title", "T"])
        #expect(dir.status == 77)
        #expect(dir.errLines.last?.hasPrefix("hint: chmod 700 \(items.path)") == true, "\(dir.err)")
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: items.path)
    }

    @Test func aSymlinkedKeychainIsRefusedNamingItsTarget() throws {
        let s = try Scratch()
        let link = s.dir.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: s.keychain.path)
        let real = s.keychain.resolvingSymlinksInPath().path
        let seal = try RawToolRun.run("push-seal", ["--app-id", Scratch.appID, "--keychain", link.path, "--recipient", "alice", "--title", "T"])
        let list = try RawToolRun.run("push-keys", ["list", "--keychain", link.path])
        let initialize = try RawToolRun.run("push-keys", ["keychain", "init", "--keychain", link.path])
        for (r, status) in [(seal, Int32(66)), (list, 66), (initialize, 73)] {
            #expect(r.status == status, "\(r.err)")
            #expect(r.errLines.first?.contains("\(link.path) is a symbolic link") == true, "\(r.err)")
            #expect(r.errLines.last?.hasSuffix("real path: \(real)") == true, "\(r.err)")
        }
        // The real path works.
        #expect(try RawToolRun.run("push-seal", s.keyArgs + ["--recipient", "alice", "--title", "T"]).status == 0)
    }
}

/// ``Output/terminalSafe(_:)`` on each class of character docs/cli.md names.
@Suite struct TerminalSafeTests {
    @Test func escapesControlsAndKeepsEverythingElse() {
        let cases: [(String, String)] = [
            ("plain text, é, 🍝, \\ and 'quotes'", "plain text, é, 🍝, \\ and 'quotes'"),
            ("a\nb\rc\td", #"a\nb\rc\td"#),
            ("\u{0}\u{1B}[31m\u{7F}", #"\u{0}\u{1B}[31m\u{7F}"#),
            ("\u{80}\u{85}\u{9F}\u{A0}", #"\u{80}\u{85}\u{9F}"# + "\u{A0}"),
            ("x\u{2028}y\u{2029}z", #"x\u{2028}y\u{2029}z"#),
            ("\u{202E}evil\u{2066}", #"\u{202E}evil\u{2066}"#),
        ]
        for (input, expected) in cases {
            #expect(Output.terminalSafe(input) == expected)
        }
    }
}
