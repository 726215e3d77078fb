import CPushSealSIMD
import Foundation
import PushSealSystem

/// The machine the run happened on: cores, CPU model, memory, load averages (start and end).
struct Machine {
    let cores: Int
    let cpuModel: String
    let memoryKiB: Int
    var loadAtStart: [Double]
    var loadAtEnd: [Double] = []

    static func current() -> Machine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let meminfo = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        let mem = meminfo.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }
            .flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
        return Machine(cores: activeProcessorCount, cpuModel: model, memoryKiB: mem, loadAtStart: loadAverages())
    }

    /// The 1, 5 and 15 minute load averages (`/proc/loadavg`, as `uptime` prints them).
    static func loadAverages() -> [Double] {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).compactMap { Double($0) }
    }

    /// True when the 1-minute load average at the start or the end exceeds half the cores:
    /// other work was competing for the CPU.
    var noisy: Bool {
        let limit = Double(cores) / 2
        return (loadAtStart.first ?? 0) > limit || (loadAtEnd.first ?? 0) > limit
    }
}

/// The one table of the run, as Markdown: rows = figures, columns = PushSeal, the raw OpenSSL
/// loop (crypto core rows only), the Python and Node peers, and the ratios.
struct Report {
    let machine: Machine
    let settings: BenchSettings
    let measurer: Measurer
    let date: String

    private static let sizes = [(256, "256 B"), (1024, "1 KB"), (2048, "2 KB")]

    private struct Row {
        let label: String
        let unit: String
        let op: String
        let size: Int
        let convert: (Double) -> Double
        let decimals: Int
        var openssl = false
        /// Higher is better (throughput): ratios still peer / PushSeal, noted in the text.
        var perSecond = false
    }

    func markdown() -> String {
        var out: [String] = []
        let load = { (l: [Double]) in l.map { format($0, decimals: 2) }.joined(separator: ", ") }
        out.append("## Benchmark")
        out.append("")
        out.append("`make bench` (\(settings.name) settings), \(date). Machine: \(machine.cores) cores (nproc), \(machine.cpuModel), "
                   + "\(format(Double(machine.memoryKiB) / 1_048_576, decimals: 1)) GiB memory; load average (1, 5, 15 min) "
                   + "\(load(machine.loadAtStart)) at the start, \(load(machine.loadAtEnd)) at the end.")
        if machine.noisy {
            out.append("")
            out.append("**Noisy machine:** the 1-minute load average was above half the cores (other work was running); "
                       + "absolute figures are inflated, ratios of interleaved runs less so.")
        }
        out.append("")
        let rows = rowsToPrint()
        let peers = Peer.all
        var header = "| figure | unit | PushSeal | OpenSSL raw | PushSeal / OpenSSL |"
        var rule = "|---|---|--:|--:|--:|"
        for peer in peers { header += " \(peer.title) |"; rule += "--:|" }
        for peer in peers { header += " \(peer.name.capitalized) / PushSeal |"; rule += "--:|" }
        out.append(header)
        out.append(rule)
        for row in rows {
            let ours = value(row, "pushseal")
            var line = "| \(row.label) | \(row.unit) | \(show(ours, row)) |"
            if row.openssl {
                let raw = value(row, "openssl-raw")
                line += " \(show(raw, row)) | \(ratio(ours, raw)) |"
            } else {
                line += " | |"
            }
            for peer in peers { line += " \(show(value(row, peer.name), row)) |" }
            for peer in peers { line += " \(ratio(value(row, peer.name), ours)) |" }
            out.append(line)
        }
        out.append("")
        let s = settings
        out.append("Medians: per-notification rows over \(s.repetitions) repetitions of \(s.iterations) operations "
                   + "(after \(s.warmupIterations) warm-up), in one process per implementation; batch over \(s.batchRuns) run(s) of "
                   + "\(s.batchLines) lines (peak RSS: the largest of the runs); cold start over \(s.spawns) spawns, interleaved. "
                   + "Ratios are peer / PushSeal of the figures shown (> 1: the peer takes more time or memory; "
                   + "for payloads/s, < 1: the peer is slower).")
        out.append("")
        out.append("- Same job, same inputs and outputs: `Benchmarks/peers/` (Python `cryptography`, Node `crypto`). "
                   + "Seal = notification JSON in, APNs payload out (parse, validate, `iat`, Padmé, AES-256-GCM, base64); "
                   + "open = APNs payload in, notification out; crypto core = AES-256-GCM of that many bytes with the 40-byte AAD "
                   + "and a fresh nonce. OpenSSL raw = one reused EVP context in C style, in push-bench's process.")
        out.append("- Batch: `push-seal batch` with a real server keychain (each recipient's keyset checked once per 2,048-line chunk, every seal counted), "
                   + "all cores, 1 KB lines on a pipe, output discarded; the peers run `seal_peer --batch` with a fixed key "
                   + "(no keychain), one process per core. The in-process row is SenderBench's 64-line chunk through `BatchSealer` on every core, for scale. \(s.batchLines == 1_000_000 ? "" : "**Reduced input** (\(grouped(s.batchLines)) lines); the full 1,000,000-line input: `make bench BENCH_ARGS='--batch-lines 1000000'`.")")
        out.append("- Cold start = spawn to exit, wall clock; the peers' `open_peer --once FILE` includes the interpreter's start (the interpreter's own executable, as `sys.executable`/`process.execPath` name it: no pyenv or nvm shim). "
                   + "`push-open` reads its key from the emulated device keychain and prints its full result object. "
                   + "Peak RSS: `/usr/bin/time -f %M` on a second, untimed spawn (a direct child's `ru_maxrss` would include push-bench's own pages from before `exec`). The image row: `push-open` downloads and decrypts an encrypted "
                   + "\(format(Double(s.imageBytes) / 1_000_000, decimals: 1)) MB image from a local HTTP server (no peer).")
        let fullOverCore = Self.sizes.compactMap { size, name -> String? in
            guard let full = measurer.median(SeriesKey(impl: "pushseal", op: "fullseal", size: size)),
                  let core = measurer.median(SeriesKey(impl: "pushseal", op: "seal", size: size)) else { return nil }
            return "\(format(full / core, decimals: 2)) at \(name)"
        }
        if !fullOverCore.isEmpty {
            let paths = ["portable Swift", "SSSE3/SSE2", "AVX2"]
            let level = Int(pushseal_simd_level())
            out.append("- Full seal / crypto-core seal: \(fullOverCore.joined(separator: ", ")) (target: at most 2). "
                       + "Base64 and the JSON string scan ran on `CPushSealSIMD`'s \(paths[min(max(level, 0), 2)]) path "
                       + "(`PUSHSEAL_SIMD=0` forces the portable one).")
        }
        for why in Output.shared.skips { out.append("- skipped: \(why)") }
        return out.joined(separator: "\n")
    }

    private func rowsToPrint() -> [Row] {
        let us = { (ns: Double) in ns / 1000 }
        let ms = { (ns: Double) in ns / 1e6 }
        let mib = { (kb: Double) in kb / 1024 }
        var rows: [Row] = []
        for (size, name) in Self.sizes {
            rows.append(Row(label: "seal \(name), crypto core", unit: "µs", op: "seal", size: size, convert: us, decimals: 2, openssl: true))
        }
        for (size, name) in Self.sizes {
            rows.append(Row(label: "seal \(name), full payload", unit: "µs", op: "fullseal", size: size, convert: us, decimals: 2))
        }
        for (size, name) in Self.sizes {
            rows.append(Row(label: "open \(name), crypto core", unit: "µs", op: "open", size: size, convert: us, decimals: 2, openssl: true))
        }
        for (size, name) in Self.sizes {
            rows.append(Row(label: "open \(name), full payload", unit: "µs", op: "fullopen", size: size, convert: us, decimals: 2))
        }
        let lines = settings.batchLines
        rows.append(Row(label: "batch `push-seal batch`, 1 KB lines, \(machine.cores) cores", unit: "payloads/s", op: "batch", size: 1024,
                        convert: { 1e9 / $0 }, decimals: 0, perSecond: true))
        rows.append(Row(label: "batch in process (`BatchSealer`, fixed key, no I/O)", unit: "payloads/s", op: "batch64", size: 1024,
                        convert: { 64e9 / $0 }, decimals: 0, perSecond: true))
        rows.append(Row(label: "batch peak RSS, \(grouped(lines))-line input", unit: "MiB", op: "batch-rss", size: 1024, convert: mib, decimals: 1))
        rows.append(Row(label: "`push-open` cold start, 1 KB", unit: "ms", op: "coldstart", size: 1024, convert: ms, decimals: 1))
        rows.append(Row(label: "`push-open` peak RSS, 1 KB", unit: "MiB", op: "coldstart-rss", size: 1024, convert: mib, decimals: 1))
        if settings.imageBytes > 0 {
            let mb = format(Double(settings.imageBytes) / 1_000_000, decimals: 1)
            rows.append(Row(label: "`push-open` cold start, \(mb) MB image", unit: "ms", op: "coldstart-image", size: settings.imageBytes,
                            convert: ms, decimals: 1))
            rows.append(Row(label: "`push-open` peak RSS, \(mb) MB image", unit: "MiB", op: "coldstart-image-rss", size: settings.imageBytes,
                            convert: mib, decimals: 1))
        }
        return rows
    }

    /// The row's figure for `impl` in the row's unit: the median, except the batch's peak RSS
    /// (the largest of the runs).
    private func value(_ row: Row, _ impl: String) -> Double? {
        let key = SeriesKey(impl: impl, op: row.op, size: row.size)
        if row.op == "batch-rss" { return PeerResults.shared.values(key)?.max().map(row.convert) }
        return measurer.median(key).map(row.convert)
    }

    private func show(_ v: Double?, _ row: Row) -> String {
        guard let v else { return "—" }
        return row.perSecond ? grouped(Int(v.rounded())) : format(v, decimals: row.decimals)
    }

    private func ratio(_ a: Double?, _ b: Double?) -> String {
        guard let a, let b, b > 0 else { return "—" }
        return format(a / b, decimals: 2)
    }

    private func grouped(_ n: Int) -> String {
        let digits = Array(String(n))
        var out = ""
        for (i, d) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(d)
        }
        return out
    }
}
