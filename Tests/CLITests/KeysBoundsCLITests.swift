import Foundation
import PushSealKeychain
import PushSealKeyRecords
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The built tools on extreme times, a keychain before first unlock, links inside a keychain and
/// loose lock and audit files: documented exit codes, one error line (plus a hint), never a
/// crash, and not one byte of either keychain changed.
@Suite struct KeysBoundsCLITests {
    let r = "alice-iphone"
    static let app = KeysCLI.appID

    static func tool(_ name: String) -> String { KeysCLI.buildDirectory.appendingPathComponent(name).path }

    /// Every file below `dir` (relative path → bytes and mode).
    static func snapshot(_ dir: String) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        guard let walker = FileManager.default.enumerator(atPath: dir) else { return out }
        for case let relative as String in walker {
            let path = dir + "/" + relative
            var st = stat()
            guard lstat(path, &st) == 0 else { continue }
            out[relative + "#mode"] = Array(String(st.st_mode, radix: 8).utf8)
            if st.st_mode & S_IFMT == S_IFREG { out[relative] = Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
        }
        return out
    }

    /// A server keychain `srv` with a keyset for `r` (and a pending key), a device keychain `dev`
    /// holding its record, and the record file `rec.json`.
    func setUp() throws -> (dir: URL, srv: String, dev: String, first: String, pending: String) {
        let dir = try KeysCLI.scratch()
        let srv = dir.appendingPathComponent("srv").path, dev = dir.appendingPathComponent("dev").path
        let g = try KeysCLI.keys(["generate", "--keychain", srv, "--app-id", Self.app, "--recipient", r, "--now", "1767225600"])
        #expect(g.status == 0, "\(g.stderr)")
        let p = try KeysCLI.keys(["rotate", "--keychain", srv, "--app-id", Self.app, "--recipient", r, "--no-promote", "--now", "1767225601"])
        #expect(p.status == 0, "\(p.stderr)")
        let rec = dir.appendingPathComponent("rec.json").path
        #expect(try KeysCLI.keys(["export", "--keychain", srv, "--app-id", Self.app, "--recipient", r, "--out", rec]).status == 0)
        let i = try KeysCLI.keys(["import", "--keychain", dev, "--entitlements", dir.appendingPathComponent("app.json").path, rec, "--now", "1767225602"])
        #expect(i.status == 0, "\(i.stderr)")
        return (dir, srv, dev, g.stdout.trimmingCharacters(in: .newlines), p.stdout.trimmingCharacters(in: .newlines))
    }

    @Test func extremeTimesAndDurationsAreUsageErrorsThatChangeNothing() throws {
        let (dir, srv, dev, first, pending) = try setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let app = dir.appendingPathComponent("app.json").path, rec = dir.appendingPathComponent("rec.json").path
        let name = ["--app-id", Self.app, "--recipient", r]
        let fresh = dir.appendingPathComponent("fresh").path
        let cases: [(args: [String], option: String)] = [
            (["rotate", "--keychain", srv] + name + ["--grace", "9223372036854775807", "--device-keychain", dev, "--device-entitlements", app], "--grace"),
            (["rotate", "--keychain", srv] + name + ["--now", "9223372036854775807"], "--now"),
            (["rotate", "--keychain", srv] + name + ["--now", "253402300799", "--grace", "1"], "--grace"),
            (["rotate", "--keychain", srv] + name + ["--now", "-1"], "--now"),
            (["due", "--keychain", srv, "--now", "-9223372036854775808"], "--now"),
            (["due", "--keychain", srv, "--period", "9223372036854775807"], "--period"),
            (["due", "--keychain", srv, "--max-seals", "-1"], "--max-seals"),
            (["promote", "--keychain", srv] + name + ["--key-id", pending, "--grace", "15250284452w"], "--grace"),
            (["promote", "--keychain", srv] + name + ["--key-id", pending, "--now", "253402300800"], "--now"),
            (["revoke", "--keychain", srv] + name + ["--key-id", first, "--now", "-9223372036854775808"], "--now"),
            (["prune", "--keychain", srv, "--now", "9223372036854775807"], "--now"),
            (["import", "--keychain", dev, "--entitlements", app, rec, "--grace", "9223372036854775807s"], "--grace"),
            (["import", "--keychain", dev, "--entitlements", app, rec, "--now", "-5"], "--now"),
            // Commands that create the keychain check first: nothing is created.
            (["generate", "--keychain", fresh] + name + ["--now", "-1"], "--now"),
            (["import", "--keychain", fresh, rec, "--now", "253402300800"], "--now"),
        ]
        let server = try Self.snapshot(srv), device = try Self.snapshot(dev)
        for (args, option) in cases {
            let res = try KeysCLI.keys(args)
            #expect(!res.signaled && res.status == 64, "\(args): \(res.status) \(res.stderr)")
            #expect(res.stdout.isEmpty, "\(args)")
            #expect(res.stderr.hasPrefix("push-keys: error: \(option) ") && res.stderr.split(separator: "\n").count == 1, "\(args): \(res.stderr)")
            #expect(try Self.snapshot(srv) == server, "\(args) changed the server keychain")
            #expect(try Self.snapshot(dev) == device, "\(args) changed the device keychain")
            #expect(!FileManager.default.fileExists(atPath: fresh), "\(args) created \(fresh)")
        }
        let json = try KeysCLI.keys(["rotate", "--keychain", srv] + name + ["--grace", "9223372036854775807", "--json"])
        #expect(json.status == 64 && (KeysCLI.json(json.stdout)["error"] as? [String: Any])?["code"] as? String == "timeOutOfRange", "\(json.stdout)")
        #expect(try KeysCLI.keys(["list", "--keychain", srv, "--json"]).stdout.contains("\"rotationKeyId\":\"\(pending)\""))
        // The bound itself is a time: a grace ending exactly at 9999-12-31T23:59:59Z is accepted.
        let last = try KeysCLI.keys(["promote", "--keychain", srv] + name + ["--key-id", pending, "--now", "253402300000", "--grace", "799", "--json"])
        #expect(last.status == 0, "\(last.stderr)")
        let keys = KeysCLI.json(last.stdout)["keys"] as? [[String: Any]] ?? []
        #expect(keys.first { $0["keyId"] as? String == first }?["notAfter"] as? Int == 253_402_300_799, "\(last.stdout)")
        // push-open's --now has the same range.
        for now in ["-1", "253402300800", "-9223372036854775808"] {
            let open = try KeysCLI.run(Self.tool("push-open"), ["--keychain", dev, "--app-id", Self.app, "--entitlements", app, "--now", now, "-"],
                                       stdin: Array("{}".utf8))
            #expect(!open.signaled && open.status == 64, "\(now): \(open.stderr)")
            #expect(open.stderr.hasPrefix("push-open: error: --now \(now) is out of range"), "\(open.stderr)")
        }
    }

    @Test func aKeychainBeforeFirstUnlockIs77WithTheHintPushSealGives() throws {
        let (dir, srv, _, first, pending) = try setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(try KeysCLI.keys(["keychain", "device-state", "--keychain", srv, "beforeFirstUnlock"]).status == 0)
        let server = try Self.snapshot(srv)
        let name = ["--app-id", Self.app, "--recipient", r]
        let seal = try KeysCLI.run(Self.tool("push-seal"), ["--keychain", srv] + name + ["--title", "t"])
        #expect(seal.status == 77, "\(seal.stderr)")
        let sealHint = seal.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(sealHint.hasPrefix("hint: unlock the keychain"), "\(seal.stderr)")
        let commands: [[String]] = [
            ["list"], ["due"], ["prune"], ["export"] + name, ["rotate"] + name, ["promote", "--key-id", pending] + name,
            ["revoke", "--key-id", first] + name, ["generate", "--app-id", Self.app, "--recipient", "bob"],
            ["keychain", "get", "--access-group", "pushseal.server", "--service", KeychainNames.service(appID: Self.app), "--account", r],
        ]
        for c in commands {
            let res = try KeysCLI.keys([c[0]] + (c[0] == "keychain" ? [c[1], "--keychain", srv] + c.dropFirst(2) : ["--keychain", srv] + c.dropFirst()))
            #expect(res.status == 77, "\(c): \(res.status) \(res.stderr)")
            let lines = res.stderr.split(separator: "\n").map(String.init)
            #expect(lines.count == 2, "\(c): \(res.stderr)")
            #expect(lines.first?.hasPrefix("push-keys: error: an afterFirstUnlockThisDeviceOnly item is not accessible while the device is before first unlock") == true,
                    "\(c): \(res.stderr)")
            #expect(lines.first?.hasSuffix("errSecInteractionNotAllowed (-25308)") == true, "\(c): \(res.stderr)")
            #expect(lines.last == sealHint, "\(c): \(res.stderr)")
            #expect(try Self.snapshot(srv) == server, "\(c) changed the keychain")
        }
        let json = try KeysCLI.keys(["list", "--keychain", srv, "--json"])
        let error = KeysCLI.json(json.stdout)["error"] as? [String: Any]
        #expect(json.status == 77 && error?["code"] as? String == "errSecInteractionNotAllowed" && error?["hint"] as? String == String(sealHint.dropFirst(6)),
                "\(json.stdout)")
        // Each command's help documents it under 77, no longer under 1.
        for c in [["list"], ["due"], ["prune"], ["export"], ["import"], ["rotate"], ["promote"], ["revoke"], ["generate"],
                  ["keychain", "get"], ["keychain", "add"], ["keychain", "update"]] {
            let help = try KeysCLI.keys(c + ["--help"]).stdout
            let codes = help.components(separatedBy: "EXIT CODES:").last ?? ""
            // Every 77 line (a registry's own 77 line, SQLSTATE 42501, may follow the keychain's).
            let line77 = codes.components(separatedBy: "\n  77  ").dropFirst().map { $0.components(separatedBy: "\n  78").first ?? $0 }.joined(separator: " | ")
            let line1 = codes.components(separatedBy: "\n  1   ").last?.components(separatedBy: "\n  6").first ?? ""
            #expect(codes.contains("\n  77  ") && line77.contains("errSecInteractionNotAllowed"), "\(c): \(line77)")
            #expect(!line1.contains("errSecInteractionNotAllowed"), "\(c): \(line1)")
        }
        // Unlocked again, the same commands work.
        #expect(try KeysCLI.keys(["keychain", "device-state", "--keychain", srv, "unlocked"]).status == 0)
        #expect(try KeysCLI.keys(["list", "--keychain", srv]).status == 0)
    }

    @Test func aLinkInsideAKeychainIs74InEveryTool() throws {
        let (dir, srv, dev, _, _) = try setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let app = dir.appendingPathComponent("app.json").path
        let name = ["--app-id", Self.app, "--recipient", r]
        let payload = try KeysCLI.run(Self.tool("push-seal"), ["--keychain", srv] + name + ["--title", "t"]).stdout
        // The keyset item (not its generation counter): every run below reads it. Headers are clear text.
        let item = try #require(FileManager.default.contentsOfDirectory(atPath: srv + "/items").first { name in
            name.hasSuffix(".item") && ((try? String(decoding: Data(contentsOf: URL(fileURLWithPath: srv + "/items/" + name)), as: UTF8.self))?
                .contains(KeychainNames.service(appID: Self.app)) ?? false)
        })
        let runs: [(what: String, run: () throws -> KeysCLI.Result)] = [
            ("push-keys list", { try KeysCLI.keys(["list", "--keychain", srv]) }),
            ("push-keys export", { try KeysCLI.keys(["export", "--keychain", srv] + name) }),
            ("push-keys keychain get", { try KeysCLI.keys(["keychain", "get", "--keychain", srv, "--access-group", "pushseal.server",
                                                          "--service", KeychainNames.service(appID: Self.app), "--account", self.r]) }),
            ("push-seal", { try KeysCLI.run(Self.tool("push-seal"), ["--keychain", srv] + name + ["--title", "t"]) }),
        ]
        for path in [srv + "/items/" + item, srv + "/items", srv + "/tmp"] {
            #expect(rename(path, path + ".real") == 0 && symlink(path + ".real", path) == 0)
            let before = try Self.snapshot(srv)
            for (what, run) in runs {
                let res = try run()
                #expect(res.status == 74, "\(what) with \(path) a link: \(res.status) \(res.stderr)")
                let lines = res.stderr.split(separator: "\n").map(String.init)
                #expect(lines.first?.hasSuffix(": error: \(path) is a symbolic link: links inside a keychain are refused, never followed") == true,
                        "\(what): \(res.stderr)")
                #expect(lines.count == 2 && lines.last?.hasPrefix("hint: replace the link with the file or directory it points to") == true,
                        "\(what): \(res.stderr)")
            }
            #expect(try Self.snapshot(srv) == before)
            #expect(unlink(path) == 0 && rename(path + ".real", path) == 0)
        }
        // push-open opens the device keychain: a linked items/ there is 74 too.
        let items = dev + "/items"
        #expect(rename(items, items + ".real") == 0 && symlink(items + ".real", items) == 0)
        let open = try KeysCLI.run(Self.tool("push-open"), ["--keychain", dev, "--app-id", Self.app, "--entitlements", app, "-"], stdin: Array(payload.utf8))
        #expect(open.status == 74 && open.stderr.hasPrefix("push-open: error: \(items) is a symbolic link"), "\(open.stderr)")
        #expect(unlink(items) == 0 && rename(items + ".real", items) == 0)
        // A linked parent directory is fine (only the keychain directory and what it holds are checked).
        let parent = dir.appendingPathComponent("parent-link").path
        #expect(symlink(dir.path, parent) == 0)
        #expect(try KeysCLI.keys(["list", "--keychain", parent + "/srv"]).status == 0)
        #expect(try KeysCLI.run(Self.tool("push-seal"), ["--keychain", parent + "/srv"] + name + ["--title", "t"]).status == 0)
        // The keychain itself as a link: 66, and the message says what is checked.
        let link = dir.appendingPathComponent("srv-link").path
        #expect(symlink(srv, link) == 0)
        let linked = try KeysCLI.keys(["list", "--keychain", link])
        #expect(linked.status == 66)
        #expect(linked.stderr.hasPrefix("push-keys: error: \(link) is a symbolic link: the keychain directory itself and everything inside it must not be links (directories above it may be)\n"),
                "\(linked.stderr)")
    }

    @Test func looseLockAndAuditFilesAre77NamingTheFile() throws {
        let (dir, srv, _, _, _) = try setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let name = ["--app-id", Self.app, "--recipient", r]
        for (file, mode) in [("keys-audit.log", mode_t(0o644)), ("keys.lock", 0o666), (".lock", 0o666)] {
            let path = srv + "/" + file
            #expect(chmod(path, mode) == 0)
            let before = try Self.snapshot(srv)
            for res in [try KeysCLI.keys(["list", "--keychain", srv]), try KeysCLI.keys(["rotate", "--keychain", srv] + name),
                        try KeysCLI.run(Self.tool("push-seal"), ["--keychain", srv] + name + ["--title", "t"])] {
                #expect(res.status == 77, "\(file): \(res.stderr)")
                let lines = res.stderr.split(separator: "\n").map(String.init)
                #expect(lines.first?.hasSuffix(": error: \(path) is accessible by group or others (mode \(String(mode, radix: 8)))") == true, "\(res.stderr)")
                #expect(lines.last == "hint: chmod 600 \(path)  # a keychain's files must be 0600, its directories 0700", "\(res.stderr)")
            }
            #expect(try Self.snapshot(srv) == before)
            #expect(chmod(path, 0o600) == 0)
        }
        #expect(try KeysCLI.keys(["list", "--keychain", srv]).status == 0)
    }
}
