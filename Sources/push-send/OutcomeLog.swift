import PushSealJSON
import PushSealSystem
import PushSealAPNs
import PushSealCLI

/// Where outcome lines go (standard output or the `--outcomes` file, appended), with the
/// counts for the summary. Thread-safe: the client's thread and the reading thread both add.
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
    private var pending: [UInt8] = []
    private var pendingInvalidations: [UInt8] = []
    private var counts = Counts()
    /// Why the first failed write failed (`strerror` text), if one did.
    private var writeFailure: String?
    private let lock = PosixLock()
    private let progress: Bool
    private var lastProgress: UInt64 = 0

    /// The outcome file is a terminal (looked up once, not per line).
    private let terminal: Bool
    /// Reused for each outcome line.
    private var line = JSONWriter(reservingCapacity: 512)

    init(file: FileDescriptor, invalidationsFile: FileDescriptor?, progress: Bool) {
        self.file = file
        self.invalidationsFile = invalidationsFile
        self.progress = progress
        terminal = file.isTerminal
    }

    /// Records a final outcome from the client. The line is written by a reused `JSONWriter`
    /// (no `String` per line); to a terminal it goes through `Output.terminalSafeJSON` as
    /// every other JSON the tools print.
    func add(_ o: APNsOutcome) {
        lock.withLock {
            var w = JSONWriter()
            swap(&w, &line)
            defer { swap(&w, &line) }
            w.reset()
            w.beginObject()
            w.key(static: "line"); w.integer(o.tag)
            w.key(static: "deviceToken"); w.string(o.deviceToken)
            w.key(static: "outcome"); w.string(o.kind.rawValue)
            if let s = o.status { w.key(static: "status"); w.integer(s) }
            if let r = o.reason { w.key(static: "reason"); w.string(r) }
            w.key(static: "apnsId"); w.string(o.apnsID)
            if let u = o.apnsUniqueID { w.key(static: "apnsUniqueId"); w.string(u) }
            if let t = o.timestampMilliseconds { w.key(static: "timestamp"); w.integer(t) }
            w.key(static: "attempts"); w.integer(o.attempts)
            if let c = o.connection { w.key(static: "connection"); w.integer(c) }
            w.key(static: "latencyMs"); w.decimal(Int64(clamping: o.latencyNanoseconds / 1000), fractionDigits: 3)
            w.endObject()
            if terminal {
                pending.append(contentsOf: Output.terminalSafeJSON(String(decoding: w.bytes, as: UTF8.self)).utf8)
            } else {
                pending.append(contentsOf: w.bytes)
            }
            pending.append(UInt8(ascii: "\n"))
            count(o.kind.rawValue, status: o.status, reason: o.reason)
            counts.latency.add(nanoseconds: o.latencyNanoseconds)
        }
    }

    /// Records a line that was not sent (bad input): outcome `failed`, attempts 0.
    func addInvalid(line: Int, deviceToken: String, code: String, message: String) {
        let w = "{\"line\":\(line),\"deviceToken\":\(Output.json(.string(deviceToken))),\"outcome\":\"failed\",\"reason\":\(Output.json(.string(code))),"
            + "\"error\":{\"code\":\(Output.json(.string(code))),\"message\":\(Output.json(.string(message)))},\"attempts\":0}\n"
        lock.withLock {
            pending.append(contentsOf: w.utf8)
            count("invalid", status: nil, reason: code)
            if pending.count > 1 << 16 { flushLocked() }
        }
    }

    /// Records a token to delete (the `--invalidations` file).
    func addInvalidation(_ i: APNsInvalidation) {
        guard invalidationsFile != nil else { return }
        var w = "{\"line\":\(i.tag),\"deviceToken\":\(Output.json(.string(i.deviceToken))),\"reason\":\(Output.json(.string(i.reason)))"
        if let t = i.timestampMilliseconds { w += ",\"timestamp\":\(t)" }
        w += "}\n"
        lock.withLock { pendingInvalidations.append(contentsOf: w.utf8) }
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
        if !pending.isEmpty { write(pending, to: file) }
        pending.removeAll(keepingCapacity: true)
        if let i = invalidationsFile, !pendingInvalidations.isEmpty { write(pendingInvalidations, to: i) }
        pendingInvalidations.removeAll(keepingCapacity: true)
    }

    /// One `write(2)` (more after a short write) unless an earlier one failed; keeps why.
    private func write(_ bytes: [UInt8], to target: FileDescriptor) {
        guard writeFailure == nil else { return }
        do {
            try target.writeAll(bytes)
        } catch let e as SystemError {
            writeFailure = errnoText(e.errno)
        } catch {
            writeFailure = "\(error)"
        }
    }

    /// Why the first failed write failed, if one did.
    var failedWrite: String? { lock.withLock { writeFailure } }

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
