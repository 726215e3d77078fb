import Foundation
import Testing

/// `push-bench --self-test`: the smallest settings, run from the repository (so the peers in
/// Benchmarks/peers are found). Checks shape only — never timings.
@Suite(.serialized)
struct BenchCLITests {
    static var bench: String { KeysCLI.buildDirectory.appendingPathComponent("push-bench").path }

    /// `RESULT impl=… op=… size=… rep=… n=… ns=…` (or `kb=…` for memory figures).
    static func isWellFormed(_ line: Substring) -> Bool {
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 7, parts[0] == "RESULT" else { return false }
        let names = ["impl", "op", "size", "rep", "n"]
        for (part, name) in zip(parts[1...5], names) {
            let pair = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2, pair[0] == name, !pair[1].isEmpty else { return false }
            if ["size", "rep", "n"].contains(name), Int(pair[1]) == nil { return false }
        }
        let last = parts[6].split(separator: "=", maxSplits: 1)
        guard last.count == 2, let value = Double(last[1]), value >= 0 else { return false }
        return last[0] == "ns" || (last[0] == "kb" && Int(last[1]) != nil)
    }

    /// The Markdown table's rows (header, rule, body), each split into trimmed cells.
    static func table(_ text: String) -> [[String]] {
        text.split(separator: "\n").filter { $0.hasPrefix("|") }.map { line in
            line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    @Test func selfTestPrintsWellFormedResultsAndOneTable() throws {
        let r = try KeysCLI.run(Self.bench, ["--self-test"], cwd: KeysCLI.repo)
        #expect(r.status == 0, "stderr: \(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        let results = lines.filter { $0.hasPrefix("RESULT") }
        #expect(!results.isEmpty)
        for line in results { #expect(Self.isWellFormed(line), "malformed: \(line)") }
        let series = Set(results.compactMap { line -> String? in
            let f = line.split(separator: " ")
            return f.count > 2 ? "\(f[1]) \(f[2])" : nil
        })
        for op in ["seal", "fullseal", "coreseal", "open", "fullopen", "batch", "coldstart", "coldstart-image"] {
            #expect(series.contains("impl=pushseal op=\(op)"), "no pushseal \(op) figure")
        }
        #expect(series.contains("impl=openssl-raw op=seal"))
        #expect(r.stdout.contains("## Benchmark"))
        #expect(r.stdout.contains("load average"))
        #expect(r.stdout.contains("nproc"))
        #expect(r.stdout.contains("other runnable threads"))
        // A reduced run says so in its '#' lines and in the report.
        let notComparable = "not comparable with a full `make bench` run"
        #expect(lines.contains { $0.hasPrefix("# Reduced run (self-test settings") && $0.contains(notComparable) })
        #expect(lines.contains { $0.hasPrefix("**Reduced run (self-test settings") && $0.contains(notComparable) })
        // One ratio direction: every '#' ratio line and every ratio column is other / PushSeal
        // (within PushSeal, the overhead lines and the v2 cache line name both sides; a
        // `bound:` line is a peer against the raw floor, the best any implementation can do).
        for line in lines where line.hasPrefix("# ") && line.contains(" / ") {
            #expect(line.contains("/ pushseal") || line.contains("overhead: full seal") || line.contains("/ cached pair")
                    || line.contains("bound: "), "\(line)")
        }

        let rows = Self.table(r.stdout)
        #expect(rows.count >= 2 + 16, "header, rule and at least 16 figures")
        guard rows.count >= 3 else { return }
        let header = rows[0]
        #expect(header.first == "figure")
        #expect(header.contains("PushSeal"))
        #expect(header.contains("OpenSSL raw"))
        let ratioColumns = header.filter { $0.contains(" / ") }
        #expect(ratioColumns == ["OpenSSL raw / PushSeal", "Python / PushSeal", "Node / PushSeal"])
        #expect(r.stdout.contains("Ratios, one direction everywhere: the other implementation's time (or memory) divided by PushSeal's"))
        #expect(r.stdout.contains("why PushSeal can beat OpenSSL raw") && r.stdout.contains("`RAND_bytes`"))
        #expect(rows[1].allSatisfy { $0.hasSuffix("-") || $0.hasSuffix(":") })
        let ours = header.firstIndex(of: "PushSeal") ?? 0
        for row in rows.dropFirst(2) {
            #expect(row.count == header.count, "ragged row: \(row)")
            guard row.count == header.count else { continue }
            // Every figure has a PushSeal number (payloads/s with thousands separators).
            #expect(Double(row[ours].replacingOccurrences(of: ",", with: "")) != nil, "no PushSeal figure in \(row)")
        }
        // Each peer either has its numbers in the table or is reported as skipped.
        for (peer, column) in [("python", "Python `cryptography`"), ("node", "Node `crypto`")] {
            guard let index = header.firstIndex(of: column) else {
                Issue.record("no \(column) column")
                continue
            }
            let hasFigures = rows.dropFirst(2).contains { $0.count > index && Double($0[index].replacingOccurrences(of: ",", with: "")) != nil }
            #expect(hasFigures || r.stdout.contains("skipped: \(peer)"), "\(peer): neither figures nor a skipped line")
        }
    }

    @Test func markdownModePrintsOnlyTheReport() throws {
        let r = try KeysCLI.run(Self.bench, ["--self-test", "--markdown"], cwd: KeysCLI.repo)
        #expect(r.status == 0, "stderr: \(r.stderr)")
        #expect(r.stdout.hasPrefix("## Benchmark\n"))
        let lines = r.stdout.split(separator: "\n")
        #expect(!lines.contains { $0.hasPrefix("RESULT") || $0.hasPrefix("#  ") || $0.hasPrefix("# ") })
        let rows = Self.table(r.stdout)
        #expect(rows.count >= 2 + 16)
        #expect(rows.allSatisfy { $0.count == rows.first?.count })
        #expect(r.stdout.contains("Reduced input"), "self-test batches fewer than 1,000,000 lines and must say so")
        #expect(r.stdout.contains("**Reduced run (self-test settings"), "a reduced run is marked as not comparable")
    }

    /// `--section v2`: that section's rows and ratios only (every v2 op, the cached device key
    /// import), no whole-process rows and no report; an unknown section is a usage error.
    @Test func sectionRunsOnlyThatSection() throws {
        let r = try KeysCLI.run(Self.bench, ["--self-test", "--section", "v2"], cwd: KeysCLI.repo)
        #expect(r.status == 0, "\(r.stderr)")
        let results = r.stdout.split(separator: "\n").filter { $0.hasPrefix("RESULT ") }
        #expect(results.allSatisfy(Self.isWellFormed))
        for op in ["v2-fullseal", "v2-auth-fullseal", "v2-fullopen", "v2-auth-fullopen", "x25519-import", "x25519-cached-import"] {
            #expect(results.contains { $0.contains(" op=\(op) ") }, "no \(op) figure")
        }
        #expect(!results.contains { $0.contains(" op=seal ") || $0.contains(" op=batch") }, "a row of another section")
        #expect(!r.stdout.contains("## Benchmark"))
        let bad = try KeysCLI.run(Self.bench, ["--section", "everything"])
        #expect(bad.status == 64)
        #expect(bad.stderr.hasPrefix("push-bench: error: --section"))
    }

    @Test(arguments: ["zz", String(repeating: "a", count: 63), String(repeating: "g", count: 64)])
    func mediaWithABadDigestIsAUsageErrorBeforeAnyDownload(_ digest: String) throws {
        // The URL is never fetched (nothing listens there): the digest is refused first.
        let r = try KeysCLI.run(Self.bench, ["media", "http://127.0.0.1:9/a.jpg", "--sha256", digest])
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stderr.hasPrefix("push-bench: error: --sha256 must be 64 hex digits") && r.stderr.contains("hint: "))
        #expect(r.stdout.isEmpty)
    }

    @Test func unknownOptionIsAUsageError() throws {
        let r = try KeysCLI.run(Self.bench, ["--fastest"])
        #expect(r.status == 64)
        #expect(r.stderr.hasPrefix("push-bench: error: "))
        #expect(r.stdout.isEmpty)
    }
}
