import PushSealTestSupport
import Foundation
import PushSealKeychain
@testable import PushSealKeyRecords
@testable import PushSealServerKeys
import Testing

/// Runs the built `push-seal` binary and checks stdout, stderr and exit codes.
@Suite struct PushSealCLITests {
    /// The push-seal built beside this test bundle (so `--scratch-path .build/asan` tests its
    /// own sanitized build), else `.build/debug` or `.build/release`.
    static let binary: URL? = builtTool("push-seal")

    struct Run { var status: Int32; var out: String; var err: String; var outBytes: Data }

    /// A scratch directory with a server keychain `keys` (0700): alice has a primary key, bob's
    /// primary was revoked (disabled), dave's primary was destroyed, erin's primary is one seal
    /// short of the 2^32 limit.
    final class Scratch {
        static let appID = "com.example.app"
        let temporary: TemporaryDirectory
        var dir: URL { temporary.url }
        let keychain: URL
        let store: KeyStore
        init() throws {
            temporary = try TemporaryDirectory("push-seal-cli")
            keychain = temporary.appending("keys")
            try Keychain.create(at: keychain)
            store = try KeyStore(keychain: try Keychain(opening: keychain, as: KeyStore.serverIdentity))
            try store.generate(appID: Self.appID, recipient: "alice")
            let bob = try store.generate(appID: Self.appID, recipient: "bob")
            try store.revoke(appID: Self.appID, recipient: "bob", keyID: bob.keyID)
            try store.generate(appID: Self.appID, recipient: "dave")
            try store.mutate(appID: Self.appID, recipient: "dave") { ks, _ in
                for i in ks.keys.indices where ks.keys[i].info.status == .primary {
                    ks.keys[i].info.status = .destroyed
                    ks.keys[i].secret = nil
                }
                return [KeyStore.AuditEvent(event: "testDestroy", time: KeyTime.now())]
            }
            let erin = try store.generate(appID: Self.appID, recipient: "erin")
            try store.setSealCount(appID: Self.appID, recipient: "erin", keyID: erin.keyID, to: KeyInfo.sealLimit - 1)
        }
        deinit {
            try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: keychain.path)
            try? FileManager.default.removeItem(at: dir)
        }
        func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
        func write(_ name: String, _ data: Data, mode: Int = 0o644) throws {
            try data.write(to: dir.appendingPathComponent(name))
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path(name))
        }
        var keyArgs: [String] { ["--app-id", Self.appID, "--keychain", keychain.path] }
    }

    func run(_ args: [String], stdin: Data? = nil) throws -> Run {
        guard let binary = Self.binary else { throw CancellationError() }
        let tmp = FileManager.default.temporaryDirectory
        let inURL = tmp.appendingPathComponent("push-seal-in-\(UUID().uuidString)")
        let errURL = tmp.appendingPathComponent("push-seal-err-\(UUID().uuidString)")
        try (stdin ?? Data()).write(to: inURL)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: inURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let p = try TestChild([binary.path] + args, stdinFile: inURL.path, stderr: .file(errURL.path))
        let o = p.readOutputToEnd()
        let exit = p.wait()
        let e = try Data(contentsOf: errURL)
        return Run(status: exit.signal ?? exit.status, out: String(decoding: o, as: UTF8.self), err: String(decoding: e, as: UTF8.self), outBytes: o)
    }

    func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func binaryIsBuilt() {
        #expect(Self.binary != nil, "build push-seal first: swift build --build-tests")
    }

    @Test func sealsFromOptionsAndPrintsHeaders() throws {
        guard Self.binary != nil else { return }
        let s = try Scratch()
        let r = try run(s.keyArgs + ["--recipient", "alice", "--title", "Ana", "--body", "Dinner at 8?", "--ttl", "1h", "--collapse-id", "x", "--with-headers"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.isEmpty)
        let o = try object(r.out)
        let headers = try #require(o["headers"] as? [String: String])
        #expect(headers["apns-push-type"] == "alert")
        #expect(headers["apns-topic"] == "com.example.app")
        #expect(headers["apns-priority"] == "10")
        #expect(headers["apns-collapse-id"] == "x")
        #expect(Int64(headers["apns-expiration"] ?? "") ?? 0 > Int64(Date().timeIntervalSince1970))
        let payload = try #require(o["payload"] as? [String: Any])
        let aps = try #require(payload["aps"] as? [String: Any])
        #expect((aps["mutable-content"] as? NSNumber)?.intValue == 1)
        #expect(!r.out.contains("Dinner"))
        #expect(r.out.contains("\"mutable-content\":1"))
    }

    @Test func overBudgetIsExit3UnlessFit() throws {
        guard Self.binary != nil else { return }
        let s = try Scratch()
        let body = String(repeating: "é", count: 2500)
        let r = try run(s.keyArgs + ["--recipient", "alice", "--title", "T", "--body", body])
        #expect(r.status == 3)
        #expect(r.out.isEmpty)
        #expect(r.err.hasPrefix("push-seal: error: the payload is "))
        #expect(r.err.contains("APNs allows 4096"))
        #expect(r.err.contains("hint: add --fit"))
        let f = try run(s.keyArgs + ["--recipient", "alice", "--title", "T", "--body", body, "--fit"])
        #expect(f.status == 0)
        #expect(f.outBytes.count - 1 <= 4096)
        #expect(f.err.contains("push-seal: warning: fit: shortened the body"))
    }

    @Test func whiteSpaceOnlyTextIsRefusedAsAnEmptyOneIs() throws {
        guard Self.binary != nil else { return }
        let s = try Scratch()
        // The receiver's rule (blankContent): title, subtitle and body all empty or white space.
        try s.write("spaces.json", Data(#"{"title":"   ","subtitle":"\u00a0","body":"\t\n"}"#.utf8))
        try s.write("locale.json", Data(#"{"title":"Hi","localizations":{"fr":{"title":" "},"de":{"title":"Hallo"}}}"#.utf8))
        try s.write("ok.json", Data(#"{"title":" ","body":" x "}"#.utf8))
        let cases: [([String], String)] = [
            (["--title", "  ", "--body", "\t"], "not empty or white space only"),
            (["--title", "\u{2003}"], "not empty or white space only"),
            ([s.path("spaces.json")], "not empty or white space only"),
            ([s.path("locale.json")], "localizations.fr:"),
        ]
        for (args, message) in cases {
            let r = try run(s.keyArgs + ["--recipient", "alice"] + args)
            #expect(r.status == 65, "\(args): \(r.err)")
            #expect(r.err.hasPrefix("push-seal: error: "), "\(r.err)")
            #expect(r.err.contains(message), "\(r.err)")
            #expect(r.err.contains("hint: give --title or --body"), "\(r.err)")
            #expect(r.out.isEmpty)
        }
        // One visible character anywhere is enough; the text is sealed as given.
        #expect(try run(s.keyArgs + ["--recipient", "alice", s.path("ok.json")]).status == 0)
        // In a batch, such a line fails alone with the same code.
        try s.write("lines.jsonl", Data("{\"recipient\":\"alice\",\"notification\":{\"title\":\" \"}}\n{\"recipient\":\"alice\",\"notification\":{\"title\":\"t\"}}\n".utf8))
        let b = try run(["batch"] + s.keyArgs + [s.path("lines.jsonl")])
        let lines = b.out.split(separator: "\n")
        #expect(lines.count == 2, "\(b.out) \(b.err)")
        #expect(lines.first?.contains("emptyNotification") == true, "\(b.out)")
        #expect(lines.last?.contains("encrypted_data") == true, "\(b.out)")
    }

    @Test func badInputGivesTheDocumentedExitCodes() throws {
        guard Self.binary != nil else { return }
        let s = try Scratch()
        try s.write("empty.json", Data("{\"title\":\"\",\"body\":\"\"}".utf8))
        try s.write("types.json", Data("{\"title\":[1],\"body\":\"b\"}".utf8))
        try s.write("latin1.json", Data([0x7B, 0x22, 0x74, 0x69, 0x74, 0x6C, 0x65, 0x22, 0x3A, 0x22, 0xE9, 0x22, 0x7D]))
        try s.write("huge.json", Data(("{\"title\":\"" + String(repeating: "a", count: 10 << 20) + "\"}").utf8))
        let cases: [([String], Int32, String)] = [
            (["--recipient", "alice", s.path("empty.json")], 65, "not empty or white space only"),
            (["--recipient", "alice", s.path("types.json")], 65, "title must be a string, got array"),
            (["--recipient", "alice", s.path("latin1.json")], 65, "UTF-8"),
            (["--recipient", "alice", s.path("huge.json")], 65, "larger than"),
            (["--recipient", "alice", s.path("missing.json")], 66, "no such file"),
            (["--recipient", "carol", "--title", "t"], 67, "no keyset for recipient carol"),
            (["--recipient", "bob", "--title", "t"], 67, "was disabled"),
            (["--recipient", "dave", "--title", "t"], 67, "was destroyed"),
            (["--recipient", "alice", "--title", "t", "--priority", "7"], 64, "apns-priority must be 10 or 5"),
            (["--recipient", "alice", "--title", "t", "--fallback-title", ""], 64, "fallback alert"),
            (["--recipient", "alice", "--title", "t", "--collapse-id", String(repeating: "c", count: 65)], 64, "apns-collapse-id"),
        ]
        for (args, status, message) in cases {
            let r = try run(s.keyArgs + args)
            #expect(r.status == status, "\(args.last ?? ""): \(r.err)")
            #expect(r.err.hasPrefix("push-seal: error: "), "\(r.err)")
            #expect(r.err.contains(message), "\(r.err)")
            #expect(r.out.isEmpty)
        }
        // An unreadable key store: group- and world-readable (77) and missing (66).
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: s.keychain.path)
        let open = try run(s.keyArgs + ["--recipient", "alice", "--title", "t"])
        #expect(open.status == 77, "\(open.err)")
        #expect(open.err.contains("hint: chmod 700"), "\(open.err)")
        let json = try run(s.keyArgs + ["--recipient", "alice", "--title", "t", "--json"])
        #expect(json.status == 77)
        #expect((try object(json.out)["error"] as? [String: Any])?["code"] as? String == "keyStoreInsecure")
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: s.keychain.path)
        let gone = try run(["--app-id", "a", "--keychain", s.path("nope"), "--recipient", "alice", "--title", "t"])
        #expect(gone.status == 66, "\(gone.err)")
        #expect(gone.err.contains("hint: create one with: push-keys generate"), "\(gone.err)")
    }

    @Test func missingRequiredOptionsAreReportedInUsageOrderWithAHint() throws {
        guard Self.binary != nil else { return }
        let s = try Scratch()
        let cases: [([String], String, String)] = [
            ([], "missing --app-id APP", "push-seal --help"),
            (["--keychain", s.keychain.path, "--title", "t"], "missing --app-id APP", "push-seal --help"),
            (["--app-id", Scratch.appID, "--title", "t"], "missing --recipient R", "push-seal --help"),
            (["--app-id", Scratch.appID, "--recipient", "alice", "--title", "t"], "missing --keychain DIR", "push-seal --help"),
            (["batch"], "missing --app-id APP", "push-seal batch --help"),
            (["batch", "--app-id", Scratch.appID], "missing --keychain DIR", "push-seal batch --help"),
        ]
        for (args, message, help) in cases {
            let r = try run(args)
            #expect(r.status == 64, "\(args): \(r.err)")
            #expect(r.err == "push-seal: error: \(message)\nhint: see '\(help)'\n", "\(args)")
            #expect(r.out.isEmpty)
        }
    }

    @Test func batchInputThatIsADirectoryIsExit66NamingIt() throws {
        guard Self.binary != nil else { return }
        let s = try Scratch()
        let single = try run(s.keyArgs + ["--recipient", "alice", s.dir.path])
        let batch = try run(["batch"] + s.keyArgs + [s.dir.path])
        for r in [single, batch] {
            #expect(r.status == 66, "\(r.err)")
            #expect(r.err == "push-seal: error: \(s.dir.path) is a directory\n", "\(r.err)")
            #expect(r.out.isEmpty)
        }
        // A blank line is skipped but still counted: "line" is the input's own line number.
        try s.write("two.jsonl", Data("{\"recipient\":\"alice\",\"notification\":{\"title\":\"a\"}}\n\n{\"recipient\":\"alice\",\"notification\":{\"title\":\"b\"}}\n".utf8))
        let two = try run(["batch"] + s.keyArgs + [s.path("two.jsonl")])
        #expect(two.status == 0, "\(two.err)")
        #expect(try two.out.split(separator: "\n").map { (try object(String($0))["line"] as? NSNumber)?.intValue } == [1, 3])
    }

    @Test func sealLimitIsExit4AndCounted() throws {
        guard Self.binary != nil else { return }
        let s = try Scratch()
        let first = try run(s.keyArgs + ["--recipient", "erin", "--title", "t"])
        #expect(first.status == 0, "\(first.err)")
        #expect(try s.store.keyset(appID: Scratch.appID, recipient: "erin").primary?.sealCount == KeyInfo.sealLimit)
        let second = try run(s.keyArgs + ["--recipient", "erin", "--title", "t"])
        #expect(second.status == 4, "\(second.err)")
        #expect(second.err.contains("2^32"))
        #expect(second.err.contains("hint: rotate the keyset: push-keys rotate"))
        #expect(second.out.isEmpty)
        let json = try run(s.keyArgs + ["--recipient", "erin", "--title", "t", "--json"])
        #expect(json.status == 4)
        let error = try #require(try object(json.out)["error"] as? [String: Any])
        #expect(error["code"] as? String == "sealLimitReached")
    }

    @Test func batchAcrossRecipientsOfOneKeychain() throws {
        guard Self.binary != nil else { return }
        let s = try Scratch()
        let recipients = ["alice", "bob", "frank", "alice", "dave", "gina", "alice"]
        try s.store.generate(appID: Scratch.appID, recipient: "frank")
        try s.store.generate(appID: Scratch.appID, recipient: "gina")
        let input = recipients.map { "{\"recipient\":\"\($0)\",\"notification\":{\"title\":\"hi \($0)\"}}\n" }.joined()
        let b = try run(["batch"] + s.keyArgs + ["--jobs", "2"], stdin: Data(input.utf8))
        #expect(b.status == 2, "\(b.err)")
        let lines = try b.out.split(separator: "\n").map { try object(String($0)) }
        #expect(lines.count == recipients.count)
        #expect(lines.map { $0["recipient"] as? String } == recipients)
        // alice appears three times: "line" tells her outputs apart.
        #expect(lines.map { ($0["line"] as? NSNumber)?.intValue } == Array(1...recipients.count))
        var keyIDs: [String: String] = [:]
        for (r, o) in zip(recipients, lines) {
            if r == "bob" || r == "dave" {
                #expect((o["error"] as? [String: Any])?["code"] as? String == "keyUnavailable")
                continue
            }
            let payload = try #require(o["payload"] as? [String: Any])
            let kid = try #require(payload["key_id"] as? String)
            let expected = try s.store.keyset(appID: Scratch.appID, recipient: r).primary?.keyID
            #expect(kid == expected)
            if let k = keyIDs[r] { #expect(k == kid) }
            keyIDs[r] = kid
        }
        #expect(Set(keyIDs.values).count == 3)
        // Every seal was counted (reserved in blocks, so the stored count is at least the seals made).
        #expect((try s.store.keyset(appID: Scratch.appID, recipient: "alice").primary?.sealCount ?? 0) >= 3)
    }

    @Test func helpListsExitCodes() throws {
        guard Self.binary != nil else { return }
        for args in [["--help"], ["seal", "--help"], ["batch", "--help"], ["media", "--help"]] {
            let r = try run(args)
            #expect(r.status == 0)
            for section in ["OVERVIEW:", "USAGE:", "OPTIONS:", "EXAMPLES:", "EXIT CODES:"] { #expect(r.out.contains(section)) }
        }
        let r = try run(["--help"])
        #expect(r.out.contains("67  unknown recipient"))
        #expect(r.out.contains("4   the recipient's primary key reached 2^32 seals"))
        #expect(!r.out.contains("--key-table"))
        #expect(r.out.contains("New message"))
        // The top-level USAGE shows every option of media.
        #expect(r.out.contains("\n  push-seal media FILE --out BLOB [--url URL] [--type MIME] [--descriptor-out FILE] [--force]\n"))
        // The single seal is 'push-seal seal'; the bare form stays, documented as the alias.
        #expect(r.out.contains("\n  push-seal seal --app-id APP --recipient R --keychain DIR [options] [NOTIFICATION.json | -]\n"))
        #expect(r.out.contains("\n  push-seal --app-id APP --recipient R --keychain DIR [options] [NOTIFICATION.json | -]\n"))
        // Message text on argv is visible to other users: the help says so and shows stdin.
        #expect(r.out.contains("visible to other users"))
        #expect(r.out.contains("| push-seal seal --app-id com.example.app --recipient alice --keychain server-kc -\n"))
        // Each command lists exactly the exit codes it can return (1: PushSealCLI's internal error).
        let expected: [[String]: [Int]] = [
            ["--help"]: [0, 1, 3, 4, 64, 65, 66, 67, 69, 74, 77, 78],
            ["seal", "--help"]: [0, 1, 3, 4, 64, 65, 66, 67, 69, 74, 77, 78],
            ["batch", "--help"]: [0, 1, 2, 64, 66, 69, 74, 77, 78, 130],
            ["media", "--help"]: [0, 1, 64, 65, 66, 73, 74, 77],
        ]
        for (args, codes) in expected {
            #expect(Self.exitCodes(try run(args).out) == codes, "push-seal \(args.joined(separator: " "))")
        }
        // --ttl says which units it accepts.
        let ttl = r.out.components(separatedBy: "\n  --ttl DURATION")[1].components(separatedBy: "\n  --")[0]
        #expect(ttl.split(whereSeparator: \.isWhitespace).joined(separator: " ").contains("s, m, h, d or w"))
    }

    /// The codes of a help's EXIT CODES section, in order.
    static func exitCodes(_ help: String) -> [Int] {
        guard let section = help.components(separatedBy: "\nEXIT CODES:\n").last?.components(separatedBy: "\n\n").first else { return [] }
        return section.split(separator: "\n").compactMap { line in Int(line.dropFirst(2).prefix { $0.isNumber }) }
    }

    @Test func batchWithBadLinesInTheMiddleOutputsEveryGoodLine() throws {
        guard Self.binary != nil else { return }
        let s = try Scratch()
        var input = ""
        for i in 1...40 {
            switch i {
            case 5: input += "{\"recipient\":\"alice\",\"notification\":{\"title\":5}}\n"
            case 9: input += "{\"recipient\":\"carol\",\"notification\":{\"title\":\"x\"}}\n"
            case 13: input += "{\"recipient\":\"alice\",\"notification\":{\"title\":\"" + String(repeating: "z", count: 10 << 20) + "\"}}\n"
            case 17: input += "{\"recipient\":\"alice\",\"notification\":{\"title\":\"\u{FFFD}\(String(decoding: [0xC3, 0x28], as: UTF8.self))\"}}\n"
            case 21: input += "{oops\n"
            default: input += "{\"recipient\":\"alice\",\"notification\":{\"title\":\"n\(i)\",\"body\":\"b\"}}\n"
            }
        }
        var bytes = Data(input.utf8)
        bytes.append(contentsOf: Array("{\"recipient\":\"alice\",\"notification\":{\"title\":\"".utf8) + [0xFF] + Array("\"}}\n".utf8))
        let b = try run(["batch"] + s.keyArgs + ["-"], stdin: bytes)
        #expect(b.status == 2)
        #expect(b.err.contains("failed"))
        let lines = b.out.split(separator: "\n")
        #expect(lines.count == 41)
        var failedLines: [Int] = []
        for (i, line) in lines.enumerated() {
            let o = try object(String(line))
            // Every output line, sealed or failed, names its 1-based input line.
            #expect((o["line"] as? NSNumber)?.intValue == i + 1, "\(line.prefix(80))")
            if let error = o["error"] as? [String: Any] {
                #expect(error["message"] is String)
                failedLines.append(i + 1)
            } else {
                #expect(o["recipient"] as? String == "alice")
                #expect(o["payload"] is [String: Any])
                #expect(o["headers"] is [String: Any])
            }
        }
        #expect(failedLines == [5, 9, 13, 21, 41])
        let ok = try run(["batch"] + s.keyArgs, stdin: Data("{\"recipient\":\"alice\",\"notification\":{\"title\":\"a\"}}\n".utf8))
        #expect(ok.status == 0)
        #expect(ok.err.isEmpty)
    }

    @Test func mediaWritesA0644BlobAndPrintsTheKeyOnlyInTheDescriptor() throws {
        guard Self.binary != nil else { return }
        let s = try Scratch()
        let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0] + (0..<4000).map { UInt8($0 & 0xFF) })
        try s.write("cat.jpg", jpeg)
        let r = try run(["media", s.path("cat.jpg"), "--out", s.path("cat.sealed"), "--url", "https://cdn/cat.sealed"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.isEmpty)
        let d = try object(r.out)
        #expect(d["url"] as? String == "https://cdn/cat.sealed")
        #expect(d["type"] as? String == "image/jpeg")
        let keyText = try #require(d["key"] as? String)
        #expect(Data(base64Encoded: keyText)?.count == 32)
        let attributes = try FileManager.default.attributesOfItem(atPath: s.path("cat.sealed"))
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o644)
        let blob = try Data(contentsOf: URL(fileURLWithPath: s.path("cat.sealed")))
        #expect(blob.count == jpeg.count + 28)
        #expect(!blob.contains(jpeg.prefix(64)))
        let again = try run(["media", s.path("cat.jpg"), "--out", s.path("cat.sealed")])
        #expect(again.status == 73)
        #expect(!again.err.contains(keyText))
    }
}
