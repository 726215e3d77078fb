import CPushSealSIMD
import Foundation
import PushSealSystem

/// The machine the run happened on: cores, CPU model, memory, load averages (start and end),
/// and the other work competing for the CPU (sampled at the start and before the whole-process
/// rows).
struct Machine {
    let cores: Int
    let cpuModel: String
    let memoryKiB: Int
    var loadAtStart: [Double]
    var loadAtEnd: [Double] = []
    /// Other runnable threads at the start, before any timing (``otherRunnableThreads()``).
    var otherAtStart: Double = 0
    /// The same just before the whole-process rows (batch, cold start); nil if not reached.
    var otherBeforeProcesses: Double?

    static func current() -> Machine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let meminfo = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        let mem = meminfo.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }
            .flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
        return Machine(cores: activeProcessorCount, cpuModel: model, memoryKiB: mem, loadAtStart: loadAverages(),
                       otherAtStart: otherRunnableThreads())
    }

    /// How many threads other than push-bench's were runnable, on average: `procs_running` of
    /// `/proc/stat` read `samples` times `intervalMilliseconds` apart (0.5 s by default), minus
    /// the one thread of push-bench doing the reading (call it while push-bench runs nothing
    /// else). Unlike the 1-minute load average this is not still counting the build `make bench`
    /// ran just before, nor push-bench's own batch. 0 when `/proc/stat` cannot be read.
    static func otherRunnableThreads(samples: Int = 20, intervalMilliseconds: Int = 25) -> Double {
        var total = 0.0
        var count = 0
        for i in 0..<samples {
            if i > 0 { Thread.sleep(forTimeInterval: Double(intervalMilliseconds) / 1000) }
            let stat = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)) ?? ""
            guard let line = stat.split(separator: "\n").first(where: { $0.hasPrefix("procs_running ") }),
                  let running = line.split(separator: " ").last.flatMap({ Int($0) }) else { continue }
            total += Double(max(0, running - 1))
            count += 1
        }
        return count == 0 ? 0 : total / Double(count)
    }

    /// The 1, 5 and 15 minute load averages (`/proc/loadavg`, as `uptime` prints them).
    static func loadAverages() -> [Double] {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).compactMap { Double($0) }
    }

    /// How much the other work got in the run's way. The per-notification rows run on one
    /// thread, so they compete only when the others leave no core free (at least `cores − 0.5`
    /// runnable on average); the whole-process rows use every core (`push-seal batch` and the
    /// peers' one process per core), so half a thread of other work already slows them.
    enum Contention { case none, wholeProcessRows, allRows }

    /// The contention, from the larger of the two samples.
    var contention: Contention {
        let other = max(otherAtStart, otherBeforeProcesses ?? 0)
        if other >= Double(cores) - 0.5 { return .allRows }
        if other >= 0.5 { return .wholeProcessRows }
        return .none
    }
}

/// The ceiling `push-open`'s peak RSS with an image must stay under, in MiB (issue 28: iOS ends a
/// Notification Service Extension near 24 MB; the media path decrypts in bounded chunks), shown
/// beside the measured peak in the image row.
let pushOpenRSSCapMiB = 20

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
        /// Higher is better (throughput): the ratio is inverted (PushSeal's rate / the other's) so
        /// that it stays a time ratio, like every other row's.
        var perSecond = false
        /// The OpenSSL-raw series shown, when not the row's own op and size (HPKE rows: the X25519 floor).
        var raw: SeriesKey? = nil
    }

    func markdown() -> String {
        var out: [String] = []
        let load = { (l: [Double]) in l.map { format($0, decimals: 2) }.joined(separator: ", ") }
        out.append("## Benchmark")
        out.append("")
        let other = { (v: Double?) in v.map { format($0, decimals: 1) } ?? "—" }
        out.append("`make bench` (\(settings.name) settings), \(date). Machine: \(machine.cores) cores (nproc), \(machine.cpuModel), "
                   + "\(format(Double(machine.memoryKiB) / 1_048_576, decimals: 1)) GiB memory; load average (1, 5, 15 min) "
                   + "\(load(machine.loadAtStart)) at the start, \(load(machine.loadAtEnd)) at the end; other runnable threads "
                   + "\(other(machine.otherAtStart)) at the start and \(other(machine.otherBeforeProcesses)) before the whole-process rows "
                   + "(`procs_running` in /proc/stat, 20 samples over 0.5 s, push-bench excluded).")
        if let note = settings.notComparableNote {
            out.append("")
            out.append("**\(note)**")
        }
        switch machine.contention {
        case .none:
            break
        case .wholeProcessRows:
            out.append("")
            out.append("**Busy machine:** other work kept about \(other(max(machine.otherAtStart, machine.otherBeforeProcesses ?? 0))) threads "
                       + "runnable; the batch rows (every core) shared the CPU with it, so their payloads/s are low. The per-notification "
                       + "rows (one thread) still had a core of their own.")
        case .allRows:
            out.append("")
            out.append("**Noisy machine:** other work kept about \(other(max(machine.otherAtStart, machine.otherBeforeProcesses ?? 0))) threads "
                       + "runnable on \(machine.cores) cores, leaving none free: every absolute figure is inflated; ratios of "
                       + "interleaved runs less so.")
        }
        out.append("")
        let rows = rowsToPrint()
        let peers = Peer.all
        var header = "| figure | unit | PushSeal | OpenSSL raw |"
        var rule = "|---|---|--:|--:|"
        for peer in peers { header += " \(peer.title) |"; rule += "--:|" }
        header += " OpenSSL raw / PushSeal |"
        rule += "--:|"
        for peer in peers { header += " \(peer.name.capitalized) / PushSeal |"; rule += "--:|" }
        out.append(header)
        out.append(rule)
        for row in rows {
            let ours = value(row, "pushseal")
            let raw = row.openssl ? (row.raw.flatMap { key in measurer.median(key).map(row.convert) } ?? value(row, "openssl-raw")) : nil
            var line = "| \(row.label) | \(row.unit) | \(show(ours, row)) | \(row.openssl ? show(raw, row) : "") |"
            for peer in peers { line += " \(show(value(row, peer.name), row)) |" }
            line += " \(row.openssl ? ratio(raw, ours, row) : "") |"
            for peer in peers { line += " \(ratio(value(row, peer.name), ours, row)) |" }
            out.append(line)
        }
        out.append("")
        let s = settings
        out.append("Ratios, one direction everywhere: the other implementation's time (or memory) divided by PushSeal's, "
                   + "so above 1 the other is slower (or larger) and below 1 faster (or smaller); "
                   + "for payloads/s, where higher is better, the ratio is PushSeal's rate divided by the other's (the same time ratio).")
        out.append("")
        out.append("Medians: per-notification rows over \(s.repetitions) repetitions of \(s.iterations) operations "
                   + "(after \(s.warmupIterations) warm-up), in one process per implementation; batch over \(s.batchRuns) run(s) of "
                   + "\(s.batchLines) lines (peak RSS: the largest of the runs); cold start over \(s.spawns) spawns, interleaved.")
        out.append("")
        out.append("- Same job, same inputs and outputs: `Benchmarks/peers/` (Python `cryptography`, Node `crypto`). "
                   + "Seal = notification JSON in, APNs payload out (parse, validate, `iat`, Padmé, AES-256-GCM, base64); "
                   + "open = APNs payload in, notification out; crypto core = AES-256-GCM of that many bytes with the 40-byte AAD "
                   + "and a fresh nonce. OpenSSL raw = one reused EVP context in C style, in push-bench's process.")
        out.append(cryptoCoreNote())
        out.append("- HPKE rows: RFC 9180 DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / AES-256-GCM single-shot, 57-byte v2 info, no AAD; "
                   + "their OpenSSL-raw column is the X25519 floor (seal: one keygen + one DH; open: one DH; auth mode alike, as its "
                   + "static-static DH is computed once per sender key and registration, `HPKE.AuthPairCache`, SECURITY.md), "
                   + "so OpenSSL raw / PushSeal below 1 is the overhead over the unavoidable curve work (1 = none). The Python column of the HPKE rows "
                   + "is `pyhpke` (`Benchmarks/peers/hpke_peer.py`).")
        out.append("- Batch: `push-seal batch` with a real server keychain (each recipient's keyset checked once per chunk of at most 2,048 lines, every seal counted), "
                   + "all cores, 1 KB lines on a pipe, output discarded; the peers run `seal_peer --batch` with a fixed key "
                   + "(no keychain), one process per core. The in-process row is SenderBench's 64-line chunk through `BatchSealer` on every core, for scale. \(s.batchLines == 1_000_000 ? "" : "**Reduced input** (\(grouped(s.batchLines)) lines); the full 1,000,000-line input: `make bench BENCH_ARGS='--batch-lines 1000000'`.")")
        out.append("- Cold start = spawn to exit, wall clock; the peers' `open_peer --once FILE` includes the interpreter's start (the interpreter's own executable, as `sys.executable`/`process.execPath` name it: no pyenv or nvm shim). "
                   + "`push-open` reads its key from the emulated device keychain and prints its full result object. "
                   + "Peak RSS: `/usr/bin/time -f %M` on a second, untimed spawn (a direct child's `ru_maxrss` would include push-bench's own pages from before `exec`). The image row: `push-open` downloads and decrypts an encrypted "
                   + "\(format(Double(s.imageBytes) / 1_000_000, decimals: 1)) MB image from a local HTTP server (no peer).")
        let fullOverCore = Self.sizes.compactMap { size, name -> String? in
            guard let full = measurer.median(SeriesKey(impl: "pushseal", op: "fullseal", size: size)),
                  let core = measurer.median(SeriesKey(impl: "pushseal", op: "coreseal", size: size))
                    ?? measurer.median(SeriesKey(impl: "pushseal", op: "seal", size: size)) else { return nil }
            return "\(format(full / core, decimals: 2)) at \(name)"
        }
        if !fullOverCore.isEmpty {
            let paths = ["portable Swift", "SSSE3/SSE2", "AVX2"]
            let level = Int(pushseal_simd_level())
            out.append("- Full seal / crypto-core seal (the core seal timed again in the sender section, interleaved with the full seal): \(fullOverCore.joined(separator: ", ")) (target: at most 2). "
                       + "Base64 and the JSON string scan ran on `CPushSealSIMD`'s \(paths[min(max(level, 0), 2)]) path "
                       + "(`PUSHSEAL_SIMD=0` forces the portable one).")
        }
        for why in Output.shared.skips { out.append("- skipped: \(why)") }
        return out.joined(separator: "\n")
    }

    /// Why PushSeal's crypto-core seal can beat "OpenSSL raw": the nonce source, with this run's
    /// figures for the raw loop's variants at 1 KB.
    private func cryptoCoreNote() -> String {
        let median = { (impl: String) in measurer.median(SeriesKey(impl: impl, op: "seal", size: 1024)) }
        let us = { (v: Double?) in v.map { format($0 / 1000, decimals: 2) } ?? "—" }
        let ours = median("pushseal"), sameNonce = median("openssl-raw-sodiumrand")
        var note = "- Crypto core, why PushSeal can beat OpenSSL raw: the raw loop draws each 12-byte nonce with OpenSSL's "
            + "`RAND_bytes` (its DRBG, through the provider layer), PushSeal with libsodium's `randombytes_buf` (`SecureRandom`), "
            + "so the seal rows compare nonce sources as much as AES-GCM. This run's seal at 1 KB: PushSeal \(us(ours)) µs; the raw loop "
            + "\(us(median("openssl-raw"))) µs with `RAND_bytes`, \(us(sameNonce)) µs with libsodium's nonce, "
            + "\(us(median("openssl-raw-nonce-fixed"))) µs drawing no nonce."
        if let ours, let sameNonce {
            note += sameNonce < ours
                ? " With the same nonce source the raw loop is faster: PushSeal also allocates its result and re-keys its cipher "
                    + "context with zeros after every call (no key material left behind), which is why its open (no nonce) is slower too."
                : " Even with the same nonce source PushSeal is not slower than the raw loop."
        }
        return note
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
        rows.append(Row(label: "X25519 keygen + DH (the HPKE floor)", unit: "µs", op: "x25519-floor", size: 0, convert: us, decimals: 2,
                        openssl: true))
        let hpke = [("hpke-seal", "HPKE seal", "base", "x25519-floor"), ("hpke-auth-seal", "HPKE seal", "auth", "x25519-floor"),
                    ("hpke-open", "HPKE open", "base", "x25519-dh"), ("hpke-auth-open", "HPKE open", "auth", "x25519-dh")]
        for (op, what, mode, floor) in hpke {
            for (size, name) in Self.sizes {
                rows.append(Row(label: "\(what) \(name), core (\(mode))", unit: "µs", op: op, size: size, convert: us, decimals: 2,
                                openssl: true, raw: SeriesKey(impl: "openssl-raw", op: floor, size: 0)))
            }
        }
        let lines = settings.batchLines
        rows.append(Row(label: "batch `push-seal batch`, 1 KB lines, \(machine.cores) cores", unit: "payloads/s", op: "batch", size: 1024,
                        convert: { 1e9 / $0 }, decimals: 0, perSecond: true))
        rows.append(Row(label: "batch `push-seal batch` v2 (HPKE auth mode, a registration), 1 KB lines, \(machine.cores) cores", unit: "payloads/s",
                        op: "batch-v2", size: 1024, convert: { 1e9 / $0 }, decimals: 0, perSecond: true))
        rows.append(Row(label: "batch in process (`BatchSealer`, fixed key, no I/O)", unit: "payloads/s", op: "batch64", size: 1024,
                        convert: { 64e9 / $0 }, decimals: 0, perSecond: true))
        rows.append(Row(label: "batch peak RSS, \(grouped(lines))-line input", unit: "MiB", op: "batch-rss", size: 1024, convert: mib, decimals: 1))
        rows.append(Row(label: "`push-open` cold start, 1 KB", unit: "ms", op: "coldstart", size: 1024, convert: ms, decimals: 1))
        rows.append(Row(label: "`push-open` peak RSS, 1 KB", unit: "MiB", op: "coldstart-rss", size: 1024, convert: mib, decimals: 1))
        if settings.imageBytes > 0 {
            let mb = format(Double(settings.imageBytes) / 1_000_000, decimals: 1)
            rows.append(Row(label: "`push-open` cold start, \(mb) MB image", unit: "ms", op: "coldstart-image", size: settings.imageBytes,
                            convert: ms, decimals: 1))
            rows.append(Row(label: "`push-open` peak RSS, \(mb) MB image (cap \(pushOpenRSSCapMiB) MiB; iOS ends an extension near 24 MB)", unit: "MiB",
                            op: "coldstart-image-rss", size: settings.imageBytes,
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

    /// `other / ours` in time or memory: for a payloads/s row, `ours / other` (the same time ratio).
    private func ratio(_ other: Double?, _ ours: Double?, _ row: Row) -> String {
        guard let other, let ours, other > 0, ours > 0 else { return "—" }
        return format(row.perSecond ? ours / other : other / ours, decimals: 2)
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
