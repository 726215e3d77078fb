import PushSealJSON
import PushSealSystem
import PushSealAPNs
import PushSealCLI

/// Where outcome lines go (standard output or the `--outcomes` file, appended), with the
/// counts for the summary. Thread-safe: the client's thread and the reading thread both add.
///
/// With `intents` (an `--outcomes` file), each request's ``APNsIntent`` is written as
/// `{"line":N,"intent":"send","apnsId":"…"}` before any of its bytes go out, in the same
/// `write(2)` as the outcomes pending then (``recordIntents(_:)``); `--resume` reads both.
/// The first failed write is kept (``failedWrite``), calls the failure handler once (push-send
/// stops sending), and nothing more is written.
///
/// `@unchecked Sendable` is safe: every stored property is reached only under `lock`.
final class OutcomeLog: @unchecked Sendable {
    struct Counts {
        var byOutcome: [String: Int] = [:]
        var byReason: [String: Int] = [:]
        var latency = LatencyHistogram()
        var total = 0
    }

    private let file: FileDescriptor
    private let invalidationsFile: FileDescriptor?
    /// The lines not written yet: each line is written straight into it (``APNsOutcomeLine``).
    private var pending = JSONWriter(reservingCapacity: 1 << 16)
    private var pendingInvalidations = JSONWriter()
    private var counts = Counts()
    /// Why the first failed write failed (`strerror` text), if one did.
    private var writeFailure: String?
    private let lock = PosixLock()
    private let progress: Bool
    private var lastProgress: UInt64 = 0
    private let intents: Bool
    private var failureHandler: (@Sendable () -> Void)?
    /// `recipient` and notification `id` of the lines in flight, by tag (line number).
    private var contexts: [Int: LineContext] = [:]

    /// What an input line says about its notification, repeated in its outcome line.
    typealias LineContext = APNsOutcomeLine.Context

    /// The outcome file is a terminal (looked up once, not per line).
    private let terminal: Bool

    init(file: FileDescriptor, invalidationsFile: FileDescriptor?, progress: Bool, intents: Bool = false) {
        self.file = file
        self.invalidationsFile = invalidationsFile
        self.progress = progress
        self.intents = intents
        terminal = file.isTerminal
    }

    /// Records a final outcome from the client: its line is written straight into `pending`;
    /// to a terminal it goes through `Output.terminalSafeJSON` as every other JSON the tools
    /// print.
    func add(_ o: APNsOutcome) {
        lock.withLock {
            let context = contexts.removeValue(forKey: o.tag) ?? LineContext()
            writeLine { APNsOutcomeLine.write(o, context: context, to: &$0) }
            count(o.kind.rawValue, status: o.status, reason: o.reason)
            counts.latency.add(nanoseconds: o.latencyNanoseconds)
        }
    }

    /// Writes one line into `pending` with `body`, or, to a terminal, made terminal-safe.
    private func writeLine(_ body: (inout JSONWriter) -> Void) {
        guard terminal else { return body(&pending) }
        var w = JSONWriter(reservingCapacity: 512)
        body(&w)
        pending.bytes.append(contentsOf: Output.terminalSafeJSON(String(decoding: w.bytes.dropLast(), as: UTF8.self)).utf8)
        pending.endLine()
    }

    /// Records a line that was not sent (bad input): outcome `failed`, attempts 0.
    func addInvalid(line: Int, deviceToken: String, code: String, message: String, context: LineContext = LineContext()) {
        lock.withLock {
            writeLine { APNsOutcomeLine.writeNotSent(line: line, deviceToken: deviceToken, code: code, message: message, context: context, to: &$0) }
            count("invalid", status: nil, reason: code)
            if pending.byteCount > 1 << 16 { flushLocked() }
        }
    }

    /// Records a line `--resume` does not send again because an earlier run recorded its intent
    /// and no outcome (it may have reached APNs, and has no collapse id): outcome `failed`,
    /// reason `mayHaveBeenDelivered`.
    func addUnconfirmed(line: Int, deviceToken: String, context: LineContext) {
        lock.withLock {
            writeLine { APNsOutcomeLine.writeUnconfirmed(line: line, deviceToken: deviceToken, context: context, to: &$0) }
            count("failed", status: nil, reason: APNsOutcomeLine.mayHaveBeenDelivered)
            if pending.byteCount > 1 << 16 { flushLocked() }
        }
    }

    /// Remembers a line's `recipient` and `id` for its outcome line (before it is sent).
    func note(_ context: LineContext, tag: Int) {
        guard !context.isEmpty else { return }
        lock.withLock { contexts[tag] = context }
    }

    /// The handler called once, on the first failed write (push-send stops sending).
    func onFirstFailure(_ handler: @escaping @Sendable () -> Void) {
        lock.withLock { failureHandler = handler }
    }

    /// Writes the intents (with the outcomes pending) before their requests go out; `false`
    /// when that write failed (or an earlier one did): the requests must not be sent.
    /// Without intents (outcomes on standard output), only `true`.
    func recordIntents(_ list: [APNsIntent]) -> Bool {
        guard intents else { return lock.withLock { writeFailure == nil } }
        return lock.withLock {
            for i in list { APNsOutcomeLine.write(i, to: &pending) }
            flushLocked()
            return writeFailure == nil
        }
    }

    /// Records a token to delete (the `--invalidations` file).
    func addInvalidation(_ i: APNsInvalidation) {
        guard invalidationsFile != nil else { return }
        lock.withLock { APNsOutcomeLine.write(i, to: &pendingInvalidations) }
    }

    /// Writes what is pending (one `write(2)` per file); shows progress on a terminal.
    func flush() {
        lock.withLock {
            flushLocked()
            if progress {
                let now = monotonicNanoseconds()
                if now &- lastProgress > 200_000_000 {
                    lastProgress = now
                    Output.stderr("\rpush-send: \(counts.total) done, \(counts.byOutcome["accepted"] ?? 0) accepted ")
                }
            }
        }
    }

    private func flushLocked() {
        if pending.byteCount > 0 { write(pending.bytes, to: file) }
        pending.reset()
        if let i = invalidationsFile, pendingInvalidations.byteCount > 0 { write(pendingInvalidations.bytes, to: i) }
        pendingInvalidations.reset()
    }

    /// One `write(2)` (more after a short write) unless an earlier one failed; keeps why.
    private func write(_ bytes: [UInt8], to target: FileDescriptor) {
        guard writeFailure == nil else { return }
        do {
            try target.writeAll(bytes)
            return
        } catch let e as SystemError {
            writeFailure = errnoText(e.errno)
            brokenPipe = e.errno == SystemError.brokenPipe
        } catch {
            writeFailure = "\(error)"
        }
        failureHandler?()
    }

    /// Why the first failed write failed, if one did.
    var failedWrite: String? { lock.withLock { writeFailure } }
    /// That failure was a closed pipe (the reader went away: a quiet 74).
    private var brokenPipe = false
    /// The first failed write was EPIPE.
    var failedOnBrokenPipe: Bool { lock.withLock { brokenPipe } }

    /// The counts so far.
    var snapshot: Counts { lock.withLock { counts } }

    private func count(_ outcome: String, status: Int?, reason: String?) {
        counts.total += 1
        counts.byOutcome[outcome, default: 0] += 1
        if let reason { counts.byReason["\(outcome) \(status.map(String.init) ?? "-") \(reason)", default: 0] += 1 }
    }
}

/// Latency percentiles in bounded memory: buckets 1% wide from 1 µs to 1000 s.
struct LatencyHistogram {
    /// The upper edge of each bucket in microseconds: 1.01^(i+1).
    private static let edges: [Double] = {
        var out: [Double] = []
        out.reserveCapacity(2100)
        var edge = 1.01
        for _ in 0..<2100 {
            out.append(edge)
            edge *= 1.01
        }
        return out
    }()
    private var buckets = [Int](repeating: 0, count: 2100)
    private(set) var count = 0

    mutating func add(nanoseconds: UInt64) {
        let micros = max(1, Double(nanoseconds) / 1000)
        // The first bucket whose upper edge is above `micros` (binary search).
        var lo = 0, hi = Self.edges.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if Self.edges[mid] > micros { hi = mid } else { lo = mid + 1 }
        }
        buckets[lo] += 1
        count += 1
    }

    /// The latency at `q` (0…1) in milliseconds (the bucket's upper edge), `nil` when empty.
    func quantile(_ q: Double) -> Double? {
        guard count > 0 else { return nil }
        let target = max(1, Int((q * Double(count)).rounded(.up)))
        var seen = 0
        for (i, n) in buckets.enumerated() {
            seen += n
            if seen >= target { return Self.edges[i] / 1000 }
        }
        return nil
    }
}
