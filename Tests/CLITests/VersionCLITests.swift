import Foundation
import PushSealCLI
import Testing

/// One version for the whole package (`PushSealVersion.current`): every tool's `--version`
/// prints it, and CHANGELOG.md and README.md describe that release.
@Suite struct VersionCLITests {
    @Test(arguments: ["push-seal", "push-open", "push-keys", "push-bench"])
    func everyToolPrintsThePackageVersion(_ tool: String) throws {
        let r = try KeysCLI.run(KeysCLI.buildDirectory.appendingPathComponent(tool).path, ["--version"])
        #expect(r.status == 0, "\(tool) --version: \(r.stderr)")
        #expect(r.stdout == "\(tool) \(PushSealVersion.current) (PushSeal, wire formats v1 and v2)\n")
        #expect(r.stderr.isEmpty)
    }

    @Test func versionIsSemanticVersioning() {
        let parts = PushSealVersion.current.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && UInt($0) != nil },
                "\(PushSealVersion.current) is not MAJOR.MINOR.PATCH")
        #expect(!parts.contains { $0.count > 1 && $0.hasPrefix("0") }, "no leading zeros (semver 2.0.0 §2)")
    }

    @Test func changelogHasASectionForThisVersionAndTheFirstRelease() throws {
        let text = try String(contentsOf: KeysCLI.repo.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let headings = text.split(separator: "\n").filter { $0.hasPrefix("## ") }
        #expect(headings.first?.hasPrefix("## \(PushSealVersion.current) — ") == true, "the newest section is this version: \(headings)")
        #expect(headings.contains { $0.hasPrefix("## 0.1.0 — ") })
        // The section being written keeps the four headings engineers add entries under.
        let current = text.components(separatedBy: "\n## ").dropFirst().first ?? ""
        for kind in ["Added", "Changed", "Fixed", "Security"] {
            #expect(current.contains("\n### \(kind)\n"), "\(PushSealVersion.current) has a \(kind) heading")
        }
    }

    @Test func readmeSaysHowVersionsAreTagged() throws {
        let text = try String(contentsOf: KeysCLI.repo.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(text.contains("v\(PushSealVersion.current)"))
        #expect(text.contains("CHANGELOG.md") && text.contains("semver.org"))
        #expect(FileManager.default.fileExists(atPath: KeysCLI.repo.appendingPathComponent("LICENSE").path))
    }
}
