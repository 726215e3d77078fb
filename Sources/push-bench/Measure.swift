import Foundation
import PushSealSystem

/// How much to run: `iterations` calls per repetition, after `warmupIterations` untimed calls;
/// `spawns` process starts per cold-start figure; `batchRuns` runs of `batchLines` lines per
/// batch figure; an `imageBytes`-byte image for the media cold start (0: skip it).
struct BenchSettings {
    var name: String
    var iterations: Int
    var warmupIterations: Int
    var repetitions: Int
    var spawns: Int
    var batchLines: Int
    var batchRuns: Int
    var imageBytes: Int

    static let full = BenchSettings(name: "full", iterations: 20_000, warmupIterations: 5_000, repetitions: 11,
                                    spawns: 21, batchLines: 1_000_000, batchRuns: 3, imageBytes: 9_000_000)
    static let quick = BenchSettings(name: "quick", iterations: 5_000, warmupIterations: 500, repetitions: 3,
                                     spawns: 5, batchLines: 20_000, batchRuns: 1, imageBytes: 9_000_000)
    /// The smallest run that still exercises every figure (the CLI smoke test).
    static let selfTest = BenchSettings(name: "self-test", iterations: 200, warmupIterations: 20, repetitions: 1,
                                        spawns: 2, batchLines: 500, batchRuns: 1, imageBytes: 256 * 1024)

    /// These settings with `iterations` and `warmupIterations` divided by `divisor` (at least 1
    /// each), for sections whose operations cost far more than an AES-GCM seal (HPKE).
    func dividingIterations(by divisor: Int) -> BenchSettings {
        var s = self
        s.iterations = max(1, iterations / divisor)
        s.warmupIterations = max(1, warmupIterations / divisor)
        return s
    }

    /// True for the full settings (`make bench` without `--quick`/`--self-test`/`--batch-lines`):
    /// only such runs may be compared with each other and with README's table.
    var isFull: Bool {
        let f = BenchSettings.full
        return iterations == f.iterations && warmupIterations == f.warmupIterations && repetitions == f.repetitions
            && spawns == f.spawns && batchLines == f.batchLines && batchRuns == f.batchRuns && imageBytes == f.imageBytes
    }

    /// For a reduced run, one sentence saying so and why its figures are not comparable with a
    /// full run's; `nil` for the full settings.
    var notComparableNote: String? {
        guard !isFull else { return nil }
        return "Reduced run (\(name) settings: \(iterations) operations x \(repetitions) repetitions, \(spawns) spawns, "
            + "\(batchRuns) batch run(s) of \(batchLines) lines): not comparable with a full `make bench` run. "
            + "Fewer repetitions give less stable medians, and a smaller batch input changes payloads/s and peak RSS."
    }

    /// These settings with one repetition (a peer run between repetitions of PushSeal's).
    var oneRepetition: BenchSettings {
        var s = self
        s.repetitions = 1
        return s
    }

    /// The peer scripts' timing options: `--n N --warmup W --reps R`.
    var peerArguments: [String] {
        ["--n", String(iterations), "--warmup", String(warmupIterations), "--reps", String(repetitions)]
    }
}

/// The run's output: `RESULT` lines and `#` progress lines go to stdout as they come (with
/// `--markdown`, only the report is printed); skipped peers are listed under the table.
///
/// `@unchecked Sendable`: all state is behind `lock`.
final class Output: @unchecked Sendable {
    static let shared = Output()
    private let lock = NSLock()
    private var quiet = false
    private var kept: [String] = []
    private var skipped: [String] = []

    /// With `true`, lines are kept for the report but not printed.
    var markdownOnly: Bool {
        get { lock.withLock { quiet } }
        set { lock.withLock { quiet = newValue } }
    }

    /// Prints (unless `markdownOnly`) and keeps one `RESULT` line.
    func result(_ line: String) {
        let print = lock.withLock { () -> Bool in
            kept.append(line)
            return !quiet
        }
        if print { Swift.print(line) }
    }

    /// A `# skipped: …` line: printed now and listed under the table.
    func skip(_ why: String) {
        let print = lock.withLock { () -> Bool in
            guard !skipped.contains(why) else { return false }
            skipped.append(why)
            return !quiet
        }
        if print { Swift.print("# skipped: \(why)") }
    }

    /// A `# …` progress line (not kept).
    func progress(_ text: String) {
        if !markdownOnly { Swift.print("# \(text)") }
    }

    var resultLines: [String] { lock.withLock { kept } }
    var skips: [String] { lock.withLock { skipped } }
}

/// One measured figure: `impl` doing `op` on `size`-byte inputs; `body` is one operation.
struct BenchCase {
    let impl: String
    let op: String
    let size: Int
    let body: () throws -> Void
}

/// Identifies a series of repetitions.
struct SeriesKey: Hashable {
    let impl: String
    let op: String
    let size: Int
}

/// A ratio to print in the summary: `numerator` / `denominator` medians. Against another
/// implementation the numerator is the other one and the denominator PushSeal (the report's one
/// direction: above 1, the other takes longer); within PushSeal (full seal / core seal) the
/// label names both sides.
struct Comparison {
    let label: String
    let numerator: SeriesKey
    let denominator: SeriesKey
}

/// A part of the benchmark (crypto core, sender, extension…): one file each.
protocol BenchSection {
    /// A short title for the summary table.
    var title: String { get }
    /// The cases to time; run interleaved, repetition by repetition.
    func cases() throws -> [BenchCase]
    /// Ratios worth printing in the summary.
    func comparisons() -> [Comparison]
}

/// Times cases and keeps ns-per-operation samples.
final class Measurer {
    /// Times `cases` with a measurer of its own (`settings`) and hands the samples to the report
    /// like a peer's (``PeerResults``): for a section that runs fewer iterations than the rest.
    /// `slices` as in ``run(_:slices:)``.
    static func runAsOwnSection(_ cases: [BenchCase], settings: BenchSettings, slices: Int = 1) throws {
        let measurer = Measurer(settings: settings)
        try measurer.run(cases, slices: slices)
        measurer.handToReport()
    }

    /// Hands this measurer's samples to the report like a peer's (``PeerResults``).
    func handToReport() {
        for (key, values) in samples {
            for value in values { PeerResults.shared.add(key, value) }
        }
    }

    let settings: BenchSettings
    private(set) var samples: [SeriesKey: [Double]] = [:]

    init(settings: BenchSettings) { self.settings = settings }

    /// Runs every case `repetitions` times, interleaving cases within each repetition so that
    /// slow drifts of a shared machine hit all implementations alike. Prints one `RESULT` line
    /// per repetition: `RESULT impl=… op=… size=… rep=… n=… ns=…`.
    ///
    /// With `slices` above 1 a repetition is cut into that many rounds of `iterations / slices`
    /// operations per case, the cases taking turns round by round and each case's time summed
    /// over its rounds: every case of a repetition then spans the same stretch of time, so load
    /// that comes and goes within it (other builds on a shared machine) hits them all alike —
    /// for sections whose ratios matter more than their absolute times (HPKE against its floor).
    func run(_ cases: [BenchCase], slices: Int = 1) throws {
        try warmUp(cases)
        for rep in 0..<settings.repetitions { try runRepetition(cases, index: rep, slices: slices) }
    }

    /// The untimed `warmupIterations` calls of every case (``run(_:slices:)`` begins with them).
    func warmUp(_ cases: [BenchCase]) throws {
        for c in cases {
            for _ in 0..<settings.warmupIterations { try c.body() }
        }
    }

    /// Repetition `index` of ``run(_:slices:)`` alone, for a section that runs something else
    /// (a peer) between repetitions.
    func runRepetition(_ cases: [BenchCase], index rep: Int, slices: Int = 1) throws {
        let rounds = max(1, min(slices, settings.iterations))
        let perRound = max(1, settings.iterations / rounds)
        do {
            var elapsed = [UInt64](repeating: 0, count: cases.count)
            for _ in 0..<rounds {
                for (i, c) in cases.enumerated() {
                    let start = monotonicNanoseconds()
                    for _ in 0..<perRound { try c.body() }
                    elapsed[i] += monotonicNanoseconds() - start
                }
            }
            let n = perRound * rounds
            for (i, c) in cases.enumerated() {
                let ns = Double(elapsed[i]) / Double(n)
                samples[SeriesKey(impl: c.impl, op: c.op, size: c.size), default: []].append(ns)
                Output.shared.result("RESULT impl=\(c.impl) op=\(c.op) size=\(c.size) rep=\(rep) n=\(n) ns=\(format(ns, decimals: 1))")
            }
        }
    }

    /// Median ns per operation of a series (or, for series measured outside, the recorded
    /// unit), or nil if it was not run.
    func median(_ key: SeriesKey) -> Double? {
        guard let values = samples[key] ?? PeerResults.shared.values(key), !values.isEmpty else { return nil }
        return medianOf(values)
    }
}

/// The median of `values` (mean of the middle two for an even count); nil when empty.
func medianOf(_ values: [Double]) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/// `value` with a fixed number of decimals (no Foundation needed).
func format(_ value: Double, decimals: Int) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    var text = String(rounded)
    if let dot = text.firstIndex(of: ".") {
        let have = text.distance(from: dot, to: text.endIndex) - 1
        if have < decimals { text += String(repeating: "0", count: decimals - have) }
        if decimals == 0 { text = String(text[..<dot]) }
    } else if decimals > 0 {
        text += "." + String(repeating: "0", count: decimals)
    }
    return text
}

/// Pads `text` on the left to `width` characters.
func leftPad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
}

/// Prevents the optimiser from discarding a result.
@inline(never)
func consume<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
