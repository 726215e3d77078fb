import Foundation
import Testing

/// docs/cli.md is generated from the tools' own --help by scripts/gen-cli-docs.sh: regenerate
/// it from the built binaries and fail when the checked-in file differs.
@Suite struct CLIDocsTests {
    static var docs: URL { KeysCLI.repo.appendingPathComponent("docs/cli.md") }
    static var script: URL { KeysCLI.repo.appendingPathComponent("scripts/gen-cli-docs.sh") }

    @Test func cliReferenceMatchesTheToolsHelp() throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString).md")
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try KeysCLI.run(Self.script.path, ["--bin", KeysCLI.buildDirectory.path, "--in", Self.docs.path, "--out", out.path])
        try #require(r.status == 0, "scripts/gen-cli-docs.sh failed: \(r.stderr)")
        let expected = try String(contentsOf: out, encoding: .utf8)
        let actual = try String(contentsOf: Self.docs, encoding: .utf8)
        if expected != actual {
            let e = expected.components(separatedBy: "\n"), a = actual.components(separatedBy: "\n")
            let line = (0..<min(e.count, a.count)).first { e[$0] != a[$0] } ?? min(e.count, a.count)
            Issue.record("""
                docs/cli.md differs from the tools' --help (first at line \(line + 1)): run scripts/gen-cli-docs.sh
                  docs/cli.md: \(line < a.count ? a[line] : "<end>")
                  --help:      \(line < e.count ? e[line] : "<end>")
                """)
        }
    }

    @Test func everyCommandHasASectionWithItsHelp() throws {
        let text = try String(contentsOf: Self.docs, encoding: .utf8)
        // Commands as the tools list them: push-keys' COMMANDS, push-seal's USAGE subcommands.
        let keysHelp = try KeysCLI.keys(["--help"]).stdout
        var commands = keysHelp.split(separator: "\n").filter { $0.hasPrefix("  push-keys ") }.map { $0.trimmingCharacters(in: .whitespaces) }
        commands += ["push-keys", "push-open", "push-seal", "push-seal seal", "push-seal batch", "push-seal media", "push-seal retract", "push-send",
                     "push-gateway", "push-gateway serve", "push-gateway keys create", "push-gateway keys list", "push-gateway keys revoke", "push-gateway migrate"]
        #expect(commands.count >= 16)
        for c in commands {
            #expect(text.contains("\n### `\(c)`\n\n```text\nOVERVIEW: "), "docs/cli.md has no section for \(c)")
        }
        // Each command section is one complete help: as many EXIT CODES as command sections bar push-keys' and push-gateway's indexes.
        let sections = text.components(separatedBy: "\n### `").count - 1
        let exitCodeBlocks = text.components(separatedBy: "\nEXIT CODES:\n").count - 1
        #expect(sections == commands.count && exitCodeBlocks == sections - 2)
    }

    @Test func introLinksResolve() throws {
        let text = try String(contentsOf: Self.docs, encoding: .utf8)
        for target in ["fallback.md", "keys.md", "keychain.md", "FORMAT.md", "../Examples/server/README.md", "../Keys/README.md"] {
            #expect(text.contains("](\(target)"), "docs/cli.md links \(target)")
            let path = KeysCLI.repo.appendingPathComponent("docs").appendingPathComponent(target).standardized.path
            #expect(FileManager.default.fileExists(atPath: path), "\(target) exists")
        }
    }

    @Test func generatorIsStrict() throws {
        let text = try String(contentsOf: Self.script, encoding: .utf8)
        #expect(text.hasPrefix("#!/usr/bin/env bash") && text.contains("\nset -euo pipefail\n"))
    }

    /// The installed shellcheck (scripts/install-deps.sh installs it), or nil.
    static let shellcheck = ["/usr/bin/shellcheck", "/usr/local/bin/shellcheck", "/bin/shellcheck"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Reported as skipped, not passed, on a machine without shellcheck.
    @Test(.enabled(if: shellcheck != nil, "shellcheck is not installed (scripts/install-deps.sh installs it)"))
    func generatorIsShellcheckClean() throws {
        let sc = try #require(Self.shellcheck)
        let r = try KeysCLI.run(sc, [Self.script.path])
        #expect(r.status == 0, "shellcheck scripts/gen-cli-docs.sh: \(r.stdout)\(r.stderr)")
    }
}
