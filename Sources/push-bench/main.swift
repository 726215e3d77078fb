// push-bench: times PushSeal against raw library loops in the same process.
// One file per section (CryptoBench.swift, …); add a section to `sections` below.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let usage = """
    OVERVIEW: time PushSeal against raw OpenSSL/libsodium loops in the same process

    USAGE: push-bench [--quick]

    OPTIONS:
      --quick     fewer iterations (5,000 per repetition, 3 repetitions) for a fast look
      -h, --help  show this help

    OUTPUT:
      one line per figure: RESULT impl=<impl> op=<seal|open> size=<bytes> rep=<n> n=<iterations> ns=<ns per op>
      then a summary table of medians and ratios (lines starting with '#')

    EXAMPLES:
      make bench
      .build/release/push-bench --quick | grep '^RESULT'

    EXIT CODES:
      0 ok, 64 usage, 70 a measured operation failed
    """

/// Writes `text` to standard error (fd 2).
func writeStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
}

func fail(_ message: String, code: Int32) -> Never {
    writeStandardError("push-bench: error: \(message)\n")
    exit(code)
}

if CommandLine.arguments.dropFirst().first == "media" { exit(runMediaProbe(Array(CommandLine.arguments.dropFirst(2)))) }

var settings = BenchSettings.full
for argument in CommandLine.arguments.dropFirst() {
    switch argument {
    case "--quick": settings = .quick
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        writeStandardError("push-bench: error: unknown option '\(argument)'\nhint: push-bench --quick\n")
        exit(64)
    }
}

let sections: [any BenchSection] = [
    CryptoBench(),
    SenderBench(),
    OpenBench(),
]

let measurer = Measurer(settings: settings)
do {
    for section in sections {
        try measurer.run(section.cases())
    }
} catch {
    fail("\(error)", code: 70)
}

print("#")
print("# medians over \(settings.repetitions) repetitions of \(settings.iterations) operations, ns per operation")
for section in sections {
    print("# \(section.title)")
    print("# \(leftPad("figure", 46)) \(leftPad("ours", 9)) \(leftPad("reference", 9)) \(leftPad("ratio", 6))")
    for comparison in section.comparisons() {
        guard let ours = measurer.median(comparison.numerator), let reference = measurer.median(comparison.denominator) else { continue }
        print("# \(leftPad(comparison.label, 46)) \(leftPad(format(ours, decimals: 1), 9)) \(leftPad(format(reference, decimals: 1), 9)) \(leftPad(format(ours / reference, decimals: 2), 6))")
    }
}
