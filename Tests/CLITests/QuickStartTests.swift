import Foundation
import Testing

/// README's quick start, run as a new user would in a clone: `git add -A` afterwards must not
/// pick up a key (a keychain, its entitlements or a key record).
@Suite struct QuickStartTests {
    /// The shell block under "Using the tools yourself" in README.md.
    static func quickStartCommands() throws -> String {
        let readme = try String(contentsOf: KeysCLI.repo.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "### Using the tools yourself"), "README has no \"Using the tools yourself\" section")
        let rest = readme[section.upperBound...]
        let open = try #require(rest.range(of: "```sh\n"), "no sh block in the quick start")
        let close = try #require(rest[open.upperBound...].range(of: "\n```"), "unterminated sh block")
        return String(rest[open.upperBound..<close.lowerBound])
    }

    @Test func quickStartLeavesNoKeyForGitAddAll() throws {
        let git = ["/usr/bin/git", "/usr/local/bin/git", "/bin/git"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let gitPath = try #require(git, "git is needed to check what `git add -A` would commit")
        let commands = try Self.quickStartCommands()
        #expect(commands.contains("push-keys generate") && commands.contains("--out"), "the quick start still makes a key and a record")

        // A clone's worth of what matters: the ignore files and the scripts the commands call.
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clone = dir.appendingPathComponent("clone")
        try FileManager.default.createDirectory(at: clone.appendingPathComponent("Keys"), withIntermediateDirectories: true)
        let fm = FileManager.default
        try fm.copyItem(at: KeysCLI.repo.appendingPathComponent(".gitignore"), to: clone.appendingPathComponent(".gitignore"))
        for name in try fm.contentsOfDirectory(atPath: KeysCLI.repo.appendingPathComponent("Keys").path) {
            try fm.copyItem(at: KeysCLI.repo.appendingPathComponent("Keys/" + name), to: clone.appendingPathComponent("Keys/" + name))
        }
        #expect(try KeysCLI.run(gitPath, ["init", "-q", clone.path]).status == 0)

        let path = KeysCLI.buildDirectory.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let r = try KeysCLI.run("/bin/bash", ["-euo", "pipefail", "-c", commands], env: ["PATH": path], cwd: clone)
        #expect(r.status == 0, "quick start failed: \(r.stderr)")
        for made in ["server-kc", "device-kc", "device-kc.entitlements", "alice.key.json"] {
            #expect(fm.fileExists(atPath: clone.appendingPathComponent(made).path), "the quick start no longer creates \(made)")
        }

        let added = try KeysCLI.run(gitPath, ["-C", clone.path, "add", "-A", "--dry-run"])
        #expect(added.status == 0, "\(added.stderr)")
        let paths = added.stdout.split(separator: "\n").map { line -> String in
            var p = line.hasPrefix("add '") ? String(line.dropFirst(5)) : String(line)
            if p.hasSuffix("'") { p.removeLast() }
            return p
        }
        // Only the non-secret inputs and outputs may be added (the notification and its sealed payload).
        let allowed: Set<String> = [".gitignore", "note.json", "payload.json"]
        let keyish = paths.filter { !allowed.contains($0) && !($0.hasPrefix("Keys/") && !$0.dropFirst(5).contains("/")
                                                                 && ($0.hasSuffix(".sh") || $0.hasSuffix("README.md") || $0.hasSuffix(".gitignore"))) }
        #expect(keyish.isEmpty, "git add -A would commit: \(keyish)")
    }
}
