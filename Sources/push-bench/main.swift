// push-bench: times PushSeal against raw library loops in the same process and against the
// same jobs by the Python and Node peers (Benchmarks/peers), then prints one Markdown table.
// One file per section (CryptoBench.swift, …); add a section to `sections` below.
import Foundation
import PushSealCLI
import PushSealSystem

let usage = """
    OVERVIEW: time PushSeal against raw OpenSSL in the same process and against the same jobs
              in Python `cryptography` and Node `crypto` (Benchmarks/peers), side by side, and
              print one Markdown table with ratios

    USAGE: push-bench [--quick | --self-test] [--markdown] [--batch-lines N]
           push-bench [--quick | --self-test] --section NAME...
           push-bench media URL [--key BASE64] [--sha256 HEX]
           push-bench probe fullseal|coreseal|fullopen SIZE N
           push-bench --version

    OPTIONS:
      --quick            fewer iterations (5,000 per repetition, 3 repetitions, 5 spawns, 20,000
                         batch lines, 1 run) for a fast look, about a minute on 2 cores (full:
                         20,000 x 11, 21 spawns, 3 batch runs of 1,000,000 lines; about 3 minutes);
                         its figures are marked as not comparable with a full run's
      --self-test        the smallest settings (200 iterations, 1 repetition, 2 spawns, 500
                         batch lines, a 256 KiB image): checks that every figure can be made
      --markdown         print only the Markdown report (no RESULT or '#' lines), ready to
                         paste into README.md's Benchmark section
      --batch-lines N    lines per batch run (default 1,000,000; also PUSH_BENCH_BATCH_LINES)
      --section NAME     time only this section's rows (repeatable): crypto, hpke, sender, open,
                         v2; prints its RESULT lines and its ratios ('#' lines), without the
                         whole-process rows and without the Markdown report
      probe JOB SIZE N   run one job N times and nothing else (make perf-check counts its
                         instructions under callgrind; scripts/perf-check.sh)
      --version          print the version (PushSeal's, one for every tool)
      -h, --help         show this help

    OUTPUT:
      one line per figure: RESULT impl=<impl> op=<op> size=<bytes> rep=<n> n=<iterations> ns=<ns per op>
      (memory figures end in kb=<peak RSS KiB> instead of ns=), '# …' progress and '# skipped: …'
      lines, then the Markdown report: machine, load, the table, how it was measured. Every
      ratio is the other implementation's time (or memory) divided by PushSeal's: above 1, the
      other is slower (or larger); payloads/s rows are inverted to time per payload first

    EXAMPLES:
      make bench
      make bench BENCH_ARGS=--markdown > bench.md
      .build/release/push-bench --quick | grep '^RESULT'
      .build/release/push-bench --section v2

    EXIT CODES:
      0 ok, 64 usage, 70 a measured operation failed
    """

/// Writes `text` to standard error (fd 2).
func writeStandardError(_ text: String) {
    try? FileDescriptor.standardError.writeAll(text)
}

func fail(_ message: String, code: Int32) -> Never {
    writeStandardError("push-bench: error: \(message)\n")
    ProcessControl.exit(code)
}

if CommandLine.arguments.dropFirst().first == "media" { ProcessControl.exit(runMediaProbe(Array(CommandLine.arguments.dropFirst(2)))) }
if CommandLine.arguments.dropFirst().first == "probe" { ProcessControl.exit(runInstructionProbe(Array(CommandLine.arguments.dropFirst(2)))) }

ProcessControl.ignoreBrokenPipe()
let sectionNames = ["crypto", "hpke", "sender", "open", "v2"]
guard let options = BenchOptions.parse(Array(CommandLine.arguments.dropFirst()), BenchOptions.main, positionals: 0, hint: "push-bench --quick") else {
    ProcessControl.exit(64)
}
if options[Arguments.helpFlag] {
    print(usage)
    ProcessControl.exit(0)
}
if options[BenchOptions.version] {
    print(PushSealVersion.line(tool: "push-bench"))
    ProcessControl.exit(0)
}
if options[BenchOptions.quick] && options[BenchOptions.selfTest] {
    writeStandardError("push-bench: error: give --quick or --self-test, not both\nhint: push-bench --quick\n")
    ProcessControl.exit(64)
}
var settings = options[BenchOptions.selfTest] ? BenchSettings.selfTest : options[BenchOptions.quick] ? .quick : .full
let markdownOnly = options[BenchOptions.markdown]
var batchLines = ProcessInfo.processInfo.environment["PUSH_BENCH_BATCH_LINES"].flatMap { Int($0) }
if let text = options[BenchOptions.batchLines] {
    guard let value = Int(text), value > 0 else {
        writeStandardError("push-bench: error: --batch-lines needs a positive number\nhint: push-bench --batch-lines 1000000\n")
        ProcessControl.exit(64)
    }
    batchLines = value
}
let onlySections = options[BenchOptions.section]
if let unknown = onlySections.first(where: { !sectionNames.contains($0) }) {
    writeStandardError("push-bench: error: --section needs one of \(sectionNames.joined(separator: ", ")), got '\(unknown)'\nhint: push-bench --section v2\n")
    ProcessControl.exit(64)
}
if let batchLines { settings.batchLines = batchLines }
Output.shared.markdownOnly = markdownOnly

var machine = Machine.current()
let date = ISO8601DateFormatter().string(from: Date())
Output.shared.progress("push-bench (\(settings.name)): \(machine.cores) cores, \(machine.cpuModel), load average \(machine.loadAtStart.map { format($0, decimals: 2) }.joined(separator: ", ")), "
                       + "other runnable threads \(format(machine.otherAtStart, decimals: 1))")
if let note = settings.notComparableNote { Output.shared.progress(note) }

let allSections: [(name: String, section: any BenchSection)] = [
    ("crypto", CryptoBench()),
    ("hpke", HPKEBench(settings: settings)),
    ("sender", SenderBench(settings: settings)),
    ("open", OpenBench(settings: settings)),
    ("v2", V2Bench(settings: settings, runsPyhpke: !(onlySections.isEmpty || onlySections.contains("hpke")))),
]
let sections = allSections.filter { onlySections.isEmpty || onlySections.contains($0.name) }.map(\.section)

let measurer = Measurer(settings: settings)
do {
    for section in sections {
        Output.shared.progress(section.title)
        try measurer.run(section.cases())
    }
    // Sampled again here, while push-bench runs one thread: the whole-process rows use every core.
    machine.otherBeforeProcesses = Machine.otherRunnableThreads()
    if onlySections.isEmpty { try ProcessBench(settings: settings).run() }
} catch {
    BenchDirectory.shared.remove()
    fail("\(error)", code: 70)
}
BenchDirectory.shared.remove()
machine.loadAtEnd = Machine.loadAverages()

let report = Report(machine: machine, settings: settings, measurer: measurer, date: date)
if !markdownOnly {
    // The sections' own ratios (implementation detail: nonce sources, full/core, base64), as '#' lines.
    print("#")
    print("# \(leftPad("other / pushseal (above 1: other slower)", 46)) \(leftPad("other ns", 9)) \(leftPad("ours ns", 9)) \(leftPad("ratio", 6))")
    for section in sections {
        print("# \(section.title)")
        for comparison in section.comparisons() {
            guard let top = measurer.median(comparison.numerator), let bottom = measurer.median(comparison.denominator) else { continue }
            print("# \(leftPad(comparison.label, 46)) \(leftPad(format(top, decimals: 1), 9)) \(leftPad(format(bottom, decimals: 1), 9)) \(leftPad(format(top / bottom, decimals: 2), 6))")
        }
    }
    if let note = settings.notComparableNote { print("# \(note)") }
    print("")
}
if onlySections.isEmpty {
    print(report.markdown())
} else {
    print("# --section \(onlySections.joined(separator: " ")): no whole-process rows and no report; load average at the end "
          + machine.loadAtEnd.map { format($0, decimals: 2) }.joined(separator: ", "))
}
