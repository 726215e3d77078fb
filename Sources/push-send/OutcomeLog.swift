import PushSealJSON
import PushSealSystem
import PushSealAPNs
import PushSealCLI
#if canImport(Glibc)
import Glibc
#endif

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

    private let fd: Int32
    private let invalidationsFD: Int32?
    private var pending: [UInt8] = []
    private var pendingInvalidations: [UInt8] = []
    private var counts = Counts()
    private var writeErrno: Int32?
    private let lock = Lock()
    private let progress: Bool
    private var lastProgress: UInt64 = 0

    init(fd: Int32, invalidationsFD: Int32?, progress: Bool) {
        self.fd = fd
        self.invalidationsFD = invalidationsFD
        self.progress = progress
    }

    /// Records a final outcome from the client.
    func add(_ o: APNsOutcome) {
        var w = "{\"line\":\(o.tag),\"deviceToken\":\(Output.json(.string(o.deviceToken))),\"outcome\":\"\(o.kind.rawValue)\""
        if let s = o.status { w += ",\"status\":\(s)" }
        if let r = o.reason { w += ",\"reason\":\(Output.json(.string(r)))" }
        w += ",\"apnsId\":\"\(o.apnsID)\""
        if let u = o.apnsUniqueID { w += ",\"apnsUniqueId\":\(Output.json(.string(u)))" }
        if let t = o.timestampMilliseconds { w += ",\"timestamp\":\(t)" }
        w += ",\"attempts\":\(o.attempts)"
        if let c = o.connection { w += ",\"connection\":\(c)" }
        let micros = o.latencyNanoseconds / 1000
        w += ",\"latencyMs\":\(micros / 1000).\(String(micros % 1000 + 1000).dropFirst())}\n"
        lock.locked {
            pending.append(contentsOf: w.utf8)
            count(o.kind.rawValue, status: o.status, reason: o.reason)
            counts.latency.add(nanoseconds: o.latencyNanoseconds)
        }
    }

    /// Records a line that was not sent (bad input): outcome `failed`, attempts 0.
    func addInvalid(line: Int, deviceToken: String, code: String, message: String) {
        let w = "{\"line\":\(line),\"deviceToken\":\(Output.json(.string(deviceToken))),\"outcome\":\"failed\",\"reason\":\(Output.json(.string(code))),"
            + "\"error\":{\"code\":\(Output.json(.string(code))),\"message\":\(Output.json(.string(message)))},\"attempts\":0}\n"
        lock.locked {
            pending.append(contentsOf: w.utf8)
            count("invalid", status: nil, reason: code)
            if pending.count > 1 << 16 { flushLocked() }
        }
    }

    /// Records a token to delete (the `--invalidations` file).
    func addInvalidation(_ i: APNsInvalidation) {
        guard invalidationsFD != nil else { return }
        var w = "{\"line\":\(i.tag),\"deviceToken\":\(Output.json(.string(i.deviceToken))),\"reason\":\(Output.json(.string(i.reason)))"
        if let t = i.timestampMilliseconds { w += ",\"timestamp\":\(t)" }
        w += "}\n"
        lock.locked { pendingInvalidations.append(contentsOf: w.utf8) }
    }

    /// Writes what is pending (one `write(2)` per file); shows progress on a terminal.
    func flush() {
        lock.locked {
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
        if writeErrno == nil, !pending.isEmpty, let e = writeAll(fd, pending) { writeErrno = e }
        pending.removeAll(keepingCapacity: true)
        if let ifd = invalidationsFD, writeErrno == nil, !pendingInvalidations.isEmpty, let e = writeAll(ifd, pendingInvalidations) { writeErrno = e }
        pendingInvalidations.removeAll(keepingCapacity: true)
    }

    /// The first failed write's errno, if any.
    var failedWriteErrno: Int32? { lock.locked { writeErrno } }

    /// The counts so far.
    var snapshot: Counts { lock.locked { counts } }

    private func count(_ outcome: String, status: Int?, reason: String?) {
        counts.total += 1
        counts.byOutcome[outcome, default: 0] += 1
        if let reason { counts.byReason["\(outcome) \(status.map(String.init) ?? "-") \(reason)", default: 0] += 1 }
    }
}

/// `write(2)` until all is written; the errno of a failure.
func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
    var done = 0
    while done < bytes.count {
        let n = bytes.withUnsafeBytes { b -> Int in
            guard let base = b.baseAddress else { return 0 }
            return write(fd, base + done, b.count - done)
        }
        if n < 0 {
            if errno == EINTR { continue }
            return errno
        }
        done += n
    }
    return nil
}

/// Latency percentiles in bounded memory: buckets 1% wide from 1 µs to 1000 s.
struct LatencyHistogram {
    private static let growth = 1.01
    private var buckets = [Int](repeating: 0, count: 2100)
    private(set) var count = 0

    mutating func add(nanoseconds: UInt64) {
        let micros = max(1, Double(nanoseconds) / 1000)
        let i = min(buckets.count - 1, Int(log(micros) / log(Self.growth)))
        buckets[i] += 1
        count += 1
    }

    /// The latency at `q` (0…1) in milliseconds (the bucket's upper edge), `nil` when empty.
    func quantile(_ q: Double) -> Double? {
        guard count > 0 else { return nil }
        let target = max(1, Int((q * Double(count)).rounded(.up)))
        var seen = 0
        for (i, n) in buckets.enumerated() {
            seen += n
            if seen >= target { return pow(Self.growth, Double(i + 1)) / 1000 }
        }
        return nil
    }
}

/// A `pthread_mutex_t` lock for push-send's two threads.
///
/// `@unchecked Sendable` is safe: the mutex is the synchronization itself.
final class Lock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(mutex, nil) }
    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
    func locked<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds.
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
