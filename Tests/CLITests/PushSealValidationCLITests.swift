import PushSealJSON
import Foundation
import PushSealKeychain
@testable import PushSealServerKeys
import Testing

/// push-seal refuses what a device would reject, with the documented exit codes: the flags the
/// same as the members of NOTIFICATION.json, bad names and --ttl as usage errors, a locked
/// keychain as 77, and a clear part over budget named as the cause.
@Suite struct PushSealValidationCLITests {
    let cli = PushSealCLITests()
    typealias Scratch = PushSealCLITests.Scratch

    @Test func mediaURLFlagIsRefusedLikeTheJSONMember() throws {
        guard PushSealCLITests.binary != nil else { return }
        let s = try Scratch()
        for url in ["not a url", "", "ftp://x/y", "javascript:alert(1)", "file:///etc/passwd"] {
            let flag = try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "T", "--media-url", url, "--media-sha256", Self.digest])
            var w = Data("{\"title\":\"T\",\"media\":{\"url\":".utf8)
            w += try JSONSerialization.data(withJSONObject: url, options: .fragmentsAllowed)
            w += Data("}}".utf8)
            let file = try cli.run(s.keyArgs + ["--recipient", "alice", "-"], stdin: w)
            for r in [flag, file] {
                #expect(r.status == 65, "'\(url)': \(r.err)")
                #expect(r.err == "push-seal: error: media.url: expected an absolute https:// or http:// URL\n", "'\(url)'")
                #expect(r.out.isEmpty)
            }
        }
        let good = try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "T", "--media-url", "https://cdn.example.com/a.jpg", "--media-sha256", Self.digest])
        #expect(good.status == 0, "\(good.err)")
    }

    static let digest = String(repeating: "ab", count: 32)

    @Test("F8: --media-url without --media-sha256 is a usage error with a hint; with it the sealed media carries the digest")
    func plainMediaNeedsADigest() throws {
        guard PushSealCLITests.binary != nil else { return }
        let s = try Scratch()
        let bare = try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "T", "--media-url", "https://cdn.example.com/a.jpg"])
        #expect(bare.status == 64 && bare.out.isEmpty, "\(bare.err)")
        #expect(bare.err.hasPrefix("push-seal: error: --media-url needs --media-sha256") && bare.err.contains("\nhint: sha256sum FILE"), "\(bare.err)")
        let short = try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "T", "--media-url", "https://cdn.example.com/a.jpg", "--media-sha256", "abc"])
        #expect(short.status == 64, "\(short.err)")
        let orphan = try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "T", "--media-sha256", Self.digest])
        #expect(orphan.status == 64, "\(orphan.err)")
    }

    @Test func malformedAppIDAndRecipientAreUsageErrorsNamingTheRule() throws {
        guard PushSealCLITests.binary != nil else { return }
        let s = try Scratch()
        let cases: [([String], String)] = [
            (["--app-id", "bad app", "--keychain", s.keychain.path, "--recipient", "alice", "--title", "t"],
             "push-seal: error: app id \"bad app\" is not a bundle identifier (1-255 characters of A-Z a-z 0-9 . -)\n"),
            (s.keyArgs + ["--recipient", "../../etc/passwd", "--title", "t"],
             "push-seal: error: recipient \"../../etc/passwd\" must be 1-255 bytes without control characters or /\n"),
            // Before the keychain is opened: a missing keychain does not hide the usage error.
            (["--app-id", "bad app", "--keychain", s.path("nope"), "--recipient", "alice", "--title", "t"],
             "push-seal: error: app id \"bad app\" is not a bundle identifier (1-255 characters of A-Z a-z 0-9 . -)\n"),
            (["batch", "--app-id", "bad app", "--keychain", s.keychain.path],
             "push-seal: error: app id \"bad app\" is not a bundle identifier (1-255 characters of A-Z a-z 0-9 . -)\n"),
        ]
        for (args, message) in cases {
            let r = try cli.run(args, stdin: Data("{\"recipient\":\"alice\",\"notification\":{\"title\":\"t\"}}\n".utf8))
            #expect(r.status == 64, "\(args): \(r.err)")
            #expect(r.err == message, "\(args)")
            #expect(!r.err.contains("list the keysets"))
            #expect(r.out.isEmpty)
        }
        let json = try cli.run(s.keyArgs + ["--recipient", "../x", "--title", "t", "--json"])
        #expect(json.status == 64)
        #expect((try cli.object(json.out)["error"] as? [String: Any])?["code"] as? String == "invalidOption")
        // An unknown but well-formed recipient is still 67 with the hint.
        let unknown = try cli.run(s.keyArgs + ["--recipient", "carol", "--title", "t"])
        #expect(unknown.status == 67)
        #expect(unknown.err.contains("hint: list the keysets"))
    }

    @Test func ttlTooLargeIsAUsageErrorLikeEveryOtherBadTTL() throws {
        guard PushSealCLITests.binary != nil else { return }
        let s = try Scratch()
        for ttl in ["9223372036854775807s", "15250284452471w", "300000000000"] {
            let r = try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "t", "--ttl", ttl])
            #expect(r.status == 64, "\(ttl): \(r.err)")
            #expect(r.err.hasPrefix("push-seal: error: ttl "), "\(r.err)")
            #expect(r.err.hasSuffix(" seconds is too large: exp would be after 9999-12-31T23:59:59Z (253402300799)\n"), "\(r.err)")
            #expect(r.out.isEmpty)
            let batch = try cli.run(["batch"] + s.keyArgs + ["--ttl", ttl], stdin: Data("{\"recipient\":\"alice\",\"notification\":{\"title\":\"t\"}}\n".utf8))
            #expect(batch.status == 64, "batch \(ttl): \(batch.err)")
        }
        for ttl in ["1x", "-5s", "99999999999999999999s"] {
            #expect(try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "t", "--ttl", ttl]).status == 64, "\(ttl)")
        }
        // The latest exp itself is accepted and sent as apns-expiration.
        let now = Int64(Date().timeIntervalSince1970)
        let latest = try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "t", "--with-headers", "-"],
                                 stdin: Data("{\"title\":\"t\",\"iat\":\(now),\"exp\":253402300799}".utf8))
        #expect(latest.status == 0, "\(latest.err)")
        #expect((try cli.object(latest.out)["headers"] as? [String: String])?["apns-expiration"] == "253402300799")
    }

    @Test func timesOutOfRangeInTheNotificationAreBadData() throws {
        guard PushSealCLITests.binary != nil else { return }
        let s = try Scratch()
        let cases: [(String, String)] = [
            ("{\"title\":\"t\",\"exp\":9223372036854775807}", "exp 9223372036854775807 is after 9999-12-31T23:59:59Z (253402300799)"),
            ("{\"title\":\"t\",\"iat\":253402300800}", "iat 253402300800 is after 9999-12-31T23:59:59Z (253402300799)"),
            ("{\"title\":\"t\",\"iat\":2000,\"exp\":1999}", "exp 1999 is earlier than iat 2000"),
            ("{\"title\":\"t\",\"exp\":1000}", "exp 1000 is earlier than iat "),
            ("{\"title\":\"t\",\"ttl\":9223372036854775807}", "ttl 9223372036854775807 seconds is too large"),
            ("{\"title\":\"t\",\"ttl\":-5}", "ttl must not be negative"),
        ]
        for (json, message) in cases {
            let r = try cli.run(s.keyArgs + ["--recipient", "alice", "--with-headers", "-"], stdin: Data(json.utf8))
            #expect(r.status == 65, "\(json): \(r.err)")
            #expect(r.err.hasPrefix("push-seal: error: ") && r.err.contains(message), "\(json): \(r.err)")
            #expect(r.out.isEmpty, "\(json)")
        }
    }

    @Test func aKeychainBeforeFirstUnlockIsExit77WithAHint() throws {
        guard PushSealCLITests.binary != nil else { return }
        let s = try Scratch()
        try Keychain(opening: s.keychain, as: KeyStore.serverIdentity).setDeviceState(.beforeFirstUnlock)
        let r = try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "t"])
        #expect(r.status == 77, "\(r.err)")
        let lines = r.err.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3 && lines[2].isEmpty, "\(r.err)")
        #expect(lines.first?.hasPrefix("push-seal: error: keyset com.example.app/alice cannot be read") == true, "\(r.err)")
        #expect(r.err.contains("errSecInteractionNotAllowed (-25308)"))
        #expect(lines.count > 1 && lines[1] == "hint: unlock the keychain: push-keys keychain device-state --keychain DIR unlocked (add --passcode-file F if it has a passcode)")
        #expect(r.out.isEmpty)
        let json = try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "t", "--json"])
        #expect(json.status == 77)
        #expect((try cli.object(json.out)["error"] as? [String: Any])?["code"] as? String == "keyStoreLocked")
        // The help documents it under 77.
        let help = try cli.run(["--help"])
        let line77 = help.out.components(separatedBy: "\n  77  ").last?.components(separatedBy: "\n\n").first ?? ""
        #expect(line77.contains("errSecInteractionNotAllowed"), "\(line77)")
        // A batch fails every line with keyStoreLocked, says so in its summary and gives the hint once.
        let line = #"{"recipient":"alice","notification":{"title":"t"}}"#
        let batch = try cli.run(["batch"] + s.keyArgs + ["-"], stdin: Data(Array(repeating: line, count: 3).joined(separator: "\n").utf8))
        #expect(batch.status == 2, "\(batch.err)")
        let batchLines = batch.err.split(separator: "\n").map(String.init)
        #expect(batchLines == ["push-seal: error: 3 of 3 lines failed (keyStoreLocked: 3; see their error lines)",
                               "hint: unlock the keychain: push-keys keychain device-state --keychain DIR unlocked (add --passcode-file F if it has a passcode)"],
                "\(batch.err)")
        #expect(batch.out.split(separator: "\n").count == 3)
        // Unlocked, the same command seals.
        try Keychain(opening: s.keychain, as: KeyStore.serverIdentity).setDeviceState(.unlocked)
        #expect(try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "t"]).status == 0)
    }

    @Test func aClearPartOverBudgetIsNamedNotBlamedOnTheText() throws {
        guard PushSealCLITests.binary != nil else { return }
        let s = try Scratch()
        let big = String(repeating: "a", count: 5000)
        for (option, named) in [("--fallback-title", "the fallback title alone is 5000 bytes"), ("--sound", "aps.sound alone is 5000 bytes")] {
            for fit in [[], ["--fit"]] {
                let r = try cli.run(s.keyArgs + ["--recipient", "alice", "--title", "t", option, big] + fit)
                #expect(r.status == 3, "\(option) \(fit): \(r.err)")
                #expect(r.err.contains(named), "\(r.err)")
                #expect(r.err.contains("hint: shorten what travels in clear: --fallback-title, --fallback-body, --sound"), "\(r.err)")
                #expect(!r.err.contains("shorten the title, subtitle"), "\(r.err)")
                #expect(!r.err.contains("add --fit"), "\(r.err)")
                #expect(r.out.isEmpty)
            }
        }
        // A sealed title too long to fit still gets the hint about the sealed text.
        let title = try cli.run(s.keyArgs + ["--recipient", "alice", "--title", String(repeating: "t", count: 5000), "--fit"])
        #expect(title.status == 3)
        #expect(title.err.contains("hint: shorten the title, subtitle, localizations or data"), "\(title.err)")
    }

    @Test func mediaURLAndTypeFlagsAreCheckedLikeTheSealerDoes() throws {
        guard PushSealCLITests.binary != nil else { return }
        let s = try Scratch()
        try s.write("cat.jpg", Data([0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3]))
        let cases: [([String], String)] = [
            (["--url", "not a url"], "push-seal: error: --url needs an absolute https:// or http:// URL, got 'not a url'\n"),
            (["--url", "ftp://x/y"], "push-seal: error: --url needs an absolute https:// or http:// URL, got 'ftp://x/y'\n"),
            (["--type", "bad type"], "push-seal: error: --type needs a MIME type type/subtype of token characters, got 'bad type'\n"),
            (["--type", "image"], "push-seal: error: --type needs a MIME type type/subtype of token characters, got 'image'\n"),
        ]
        for (flags, message) in cases {
            let r = try cli.run(["media", s.path("cat.jpg"), "--out", s.path("blob")] + flags)
            #expect(r.status == 64, "\(flags): \(r.err)")
            #expect(r.err.hasPrefix(message), "\(flags): \(r.err)")
            #expect(r.err.contains("\nhint: e.g. "), "\(r.err)")
            #expect(r.out.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: s.path("blob")), "\(flags): a blob was written")
        }
        // Good flags: the descriptor seals as the notification's media.
        let ok = try cli.run(["media", s.path("cat.jpg"), "--out", s.path("blob"), "--url", "https://cdn.example.com/cat.jpg.sealed", "--type", "image/jpeg"])
        #expect(ok.status == 0, "\(ok.err)")
        let media = ok.out.trimmingCharacters(in: .whitespacesAndNewlines)
        let sealed = try cli.run(s.keyArgs + ["--recipient", "alice", "-"], stdin: Data("{\"title\":\"t\",\"media\":\(media)}".utf8))
        #expect(sealed.status == 0, "\(sealed.err)")
    }

    @Test func helpDocumentsTheTimeBounds() throws {
        guard PushSealCLITests.binary != nil else { return }
        let help = try cli.run(["--help"]).out
        let words = help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("exp and iat since 1970 UTC, 0 to 253402300799 = 9999-12-31T23:59:59Z, exp not before iat"))
        let ttl = help.components(separatedBy: "\n  --ttl DURATION")[1].components(separatedBy: "\n  --")[0]
        #expect(ttl.contains("9999-12-31T23:59:59Z"))
    }
}
