import Foundation
import Testing

/// `make perf-check`'s comparison (scripts/perf-check.sh --figures): the committed thresholds
/// against figures given here, so the verdicts are tested without callgrind's minutes. The
/// measurement itself runs in `.ci/run` (`make perf-check`).
@Suite struct PerfCheckTests {
    static var script: String { KeysCLI.repo.appendingPathComponent("scripts/perf-check.sh").path }
    static var committed: URL { KeysCLI.repo.appendingPathComponent("Benchmarks/perf-thresholds.txt") }

    /// The committed thresholds as (name, instructions).
    static func thresholds() throws -> [(String, Int)] {
        try String(contentsOf: committed, encoding: .utf8).split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard !line.hasPrefix("#"), parts.count == 2, let value = Int(parts[1]) else { return nil }
            return (String(parts[0]), value)
        }
    }

    /// Runs the comparison of `figures` against `thresholds` (each `name value` lines).
    static func compare(figures: [(String, Int)], thresholds: [(String, Int)]) throws -> KeysCLI.Result {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let lines = { (list: [(String, Int)]) in list.map { "\($0.0) \($0.1)\n" }.joined() }
        let f = dir.appendingPathComponent("figures.txt"), t = dir.appendingPathComponent("thresholds.txt")
        try Data(lines(figures).utf8).write(to: f)
        try Data(("# a comment\n" + lines(thresholds)).utf8).write(to: t)
        return try KeysCLI.run("/bin/bash", [script, "--figures", f.path, "--thresholds", t.path])
    }

    @Test func committedThresholdsNameEveryFigure() throws {
        let names = try Self.thresholds().map(\.0)
        #expect(names == ["fullseal-256", "fullseal-1024", "fullopen-256", "fullopen-1024", "batch-line-1024", "send-notification"])
    }

    @Test func figuresAtTheirThresholdsPass() throws {
        let t = try Self.thresholds()
        let r = try Self.compare(figures: t, thresholds: t)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        // 3 % either way is still within bounds.
        let near = t.map { ($0.0, $0.1 * 1025 / 1000) }
        #expect(try Self.compare(figures: near, thresholds: t).status == 0)
    }

    @Test func aRegressionFails() throws {
        let t = try Self.thresholds()
        var figures = t
        figures[0].1 = t[0].1 * 105 / 100
        let r = try Self.compare(figures: figures, thresholds: t)
        #expect(r.status == 1)
        #expect(r.stdout.contains("REGRESSION"))
        #expect(r.stderr.hasPrefix("perf-check: error:") && r.stderr.contains("hint:"))
    }

    @Test func aThresholdRaisedByHandFails() throws {
        let t = try Self.thresholds()
        var raised = t
        raised[5].1 = t[5].1 * 110 / 100
        let r = try Self.compare(figures: t, thresholds: raised)
        #expect(r.status == 1)
        #expect(r.stdout.contains("STALE-THRESHOLD"))
    }

    @Test func aMissingFigureFails() throws {
        let t = try Self.thresholds()
        let r = try Self.compare(figures: Array(t.dropLast()), thresholds: t)
        #expect(r.status == 1)
        #expect(r.stdout.contains("missing"))
    }
}
