// push-bench: times PushSeal against raw library loops in the same process and against the
// same jobs by the Python and Node peers (Benchmarks/peers), then prints one Markdown table.
// One file per section (CryptoBench.swift, …); add a section to `sections` below.
import Foundation
import PushSealSystem

let usage = """
    OVERVIEW: time PushSeal against raw OpenSSL in the same process and against the same jobs
              in Python `cryptography` and Node `crypto` (Benchmarks/peers), side by side, and
              print one Markdown table with ratios

    USAGE: push-bench [--quick | --self-test] [--markdown] [--batch-lines N]
           push-bench media URL [--key BASE64] [--sha256 HEX]

    OPTIONS:
      --quick            fewer iterations (5,000 per repetition, 3 repetitions, 5 spawns, 20,000
                         batch lines, 1 run) for a fast look (full: 20,000 x 11, 21 spawns,
                         3 batch runs of 1,000,000 lines; about 3 minutes)
      --self-test        the smallest settings (200 iterations, 1 repetition, 2 spawns, 500
                         batch lines, a 256 KiB image): checks that every figure can be made
      --markdown         print only the Markdown report (no RESULT or '#' lines), ready to
                         paste into README.md's Benchmark section
      --batch-lines N    lines per batch run (default 1,000,000; also PUSH_BENCH_BATCH_LINES)
      -h, --help         show this help

    OUTPUT:
      one line per figure: RESULT impl=<impl> op=<op> size=<bytes> rep=<n> n=<iterations> ns=<ns per op>
      (memory figures end in kb=<peak RSS KiB> instead of ns=), '# …' progress and '# skipped: …'
      lines, then the Markdown report: machine, load average, the table, how it was measured

    EXAMPLES:
      make bench
      make bench BENCH_ARGS=--markdown > bench.md
      .build/release/push-bench --quick | grep '^RESULT'

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

ProcessControl.ignoreBrokenPipe()
var settings = BenchSettings.full
var markdownOnly = false
var batchLines = ProcessInfo.processInfo.environment["PUSH_BENCH_BATCH_LINES"].flatMap { Int($0) }
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    switch argument {
    case "--quick": settings = .quick
    case "--self-test": settings = .selfTest
    case "--markdown": markdownOnly = true
    case "--batch-lines":
        guard let value = arguments.first.flatMap({ Int($0) }), value > 0 else {
            writeStandardError("push-bench: error: --batch-lines needs a positive number\nhint: push-bench --batch-lines 1000000\n")
            ProcessControl.exit(64)
        }
        arguments.removeFirst()
        batchLines = value
    case "-h", "--help":
        print(usage)
        ProcessControl.exit(0)
    default:
        writeStandardError("push-bench: error: unknown option '\(argument)'\nhint: push-bench --quick\n")
        ProcessControl.exit(64)
    }
}
if let batchLines { settings.batchLines = batchLines }
Output.shared.markdownOnly = markdownOnly

var machine = Machine.current()
let date = ISO8601DateFormatter().string(from: Date())
Output.shared.progress("push-bench (\(settings.name)): \(machine.cores) cores, \(machine.cpuModel), load average \(machine.loadAtStart.map { format($0, decimals: 2) }.joined(separator: ", "))")

let sections: [any BenchSection] = [
    CryptoBench(),
    SenderBench(settings: settings),
    OpenBench(settings: settings),
]

let measurer = Measurer(settings: settings)
do {
    for section in sections {
        Output.shared.progress(section.title)
        try measurer.run(section.cases())
    }
    try ProcessBench(settings: settings).run()
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
    for section in sections {
        print("# \(section.title)")
        for comparison in section.comparisons() {
            guard let ours = measurer.median(comparison.numerator), let reference = measurer.median(comparison.denominator) else { continue }
            print("# \(leftPad(comparison.label, 46)) \(leftPad(format(ours, decimals: 1), 9)) \(leftPad(format(reference, decimals: 1), 9)) \(leftPad(format(ours / reference, decimals: 2), 6))")
        }
    }
    print("")
}
print(report.markdown())
