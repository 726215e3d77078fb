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
    private var pending: [UInt8] = []
    private var pendingInvalidations: [UInt8] = []
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
    struct LineContext {
        var recipient: String?
        var id: String?
        var isEmpty: Bool { recipient == nil && id == nil }
    }

    /// The outcome file is a terminal (looked up once, not per line).
    private let terminal: Bool
    /// Reused for each outcome line.
    private var line = JSONWriter(reservingCapacity: 512)

    init(file: FileDescriptor, invalidationsFile: FileDescriptor?, progress: Bool, intents: Bool = false) {
        self.file = file
        self.invalidationsFile = invalidationsFile
        self.progress = progress
        self.intents = intents
        terminal = file.isTerminal
    }

    /// Records a final outcome from the client. The line is built in a stack buffer when all
    /// its strings are plain ASCII (``PlainLine``: the common case, hex tokens and UUIDs), else
    /// by a reused `JSONWriter`; to a terminal it goes through `Output.terminalSafeJSON` as
    /// every other JSON the tools print. Both give the same bytes for the same outcome.
    func add(_ o: APNsOutcome) {
        lock.withLock {
            let context = contexts.removeValue(forKey: o.tag) ?? LineContext()
            if terminal || !appendPlain(o, context) { appendWritten(o, context) }
            pending.append(UInt8(ascii: "\n"))
            count(o.kind.rawValue, status: o.status, reason: o.reason)
            counts.latency.add(nanoseconds: o.latencyNanoseconds)
        }
    }

    /// Appends `o`'s line to `pending` if every string in it is plain ASCII; else `false`, nothing written.
    private func appendPlain(_ o: APNsOutcome, _ context: LineContext) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1024) { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            var l = PlainLine(base: base, capacity: buffer.count)
            l.raw("{\"line\":"); l.integer(Int64(o.tag))
            if let r = context.recipient { l.raw(",\"recipient\":"); l.string(r) }
            if let i = context.id { l.raw(",\"id\":"); l.string(i) }
            l.raw(",\"deviceToken\":"); l.string(o.deviceToken)
            l.raw(",\"outcome\":"); l.string(o.kind.rawValue)
            if let s = o.status { l.raw(",\"status\":"); l.integer(Int64(s)) }
            if let r = o.reason { l.raw(",\"reason\":"); l.string(r) }
            l.raw(",\"apnsId\":"); l.string(o.apnsID)
            if let u = o.apnsUniqueID { l.raw(",\"apnsUniqueId\":"); l.string(u) }
            if let t = o.timestampMilliseconds { l.raw(",\"timestamp\":"); l.integer(t) }
            l.raw(",\"attempts\":"); l.integer(Int64(o.attempts))
            if let c = o.connection { l.raw(",\"connection\":"); l.integer(Int64(c)) }
            let micros = Int64(clamping: o.latencyNanoseconds / 1000)
            l.raw(",\"latencyMs\":"); l.integer(micros / 1000); l.raw(".")
            l.integer(micros % 1000 / 100); l.integer(micros % 100 / 10); l.integer(micros % 10)
            l.raw("}")
            guard l.ok else { return false }
            pending.append(contentsOf: UnsafeBufferPointer(start: base, count: l.count))
            return true
        }
    }

    /// Appends `o`'s line to `pending` by the reused `JSONWriter` (any strings, escaped).
    private func appendWritten(_ o: APNsOutcome, _ context: LineContext) {
        var w = JSONWriter()
        swap(&w, &line)
        defer { swap(&w, &line) }
        w.reset()
        w.beginObject()
        w.key(static: "line"); w.integer(o.tag)
        if let r = context.recipient { w.key(static: "recipient"); w.string(r) }
        if let i = context.id { w.key(static: "id"); w.string(i) }
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
    }

    /// Records a line that was not sent (bad input): outcome `failed`, attempts 0.
    func addInvalid(line: Int, deviceToken: String, code: String, message: String, context: LineContext = LineContext()) {
        let w = "{\"line\":\(line),\(Self.contextMembers(context))\"deviceToken\":\(Output.json(.string(deviceToken))),\"outcome\":\"failed\",\"reason\":\(Output.json(.string(code))),"
            + "\"error\":{\"code\":\(Output.json(.string(code))),\"message\":\(Output.json(.string(message)))},\"attempts\":0}\n"
        lock.withLock {
            pending.append(contentsOf: w.utf8)
            count("invalid", status: nil, reason: code)
            if pending.count > 1 << 16 { flushLocked() }
        }
    }

    /// Records a line `--resume` does not send again because an earlier run recorded its intent
    /// and no outcome (it may have reached APNs, and has no collapse id): outcome `failed`,
    /// reason `mayHaveBeenDelivered`.
    func addUnconfirmed(line: Int, deviceToken: String, context: LineContext) {
        let w = "{\"line\":\(line),\(Self.contextMembers(context))\"deviceToken\":\(Output.json(.string(deviceToken))),\"outcome\":\"failed\",\"reason\":\"mayHaveBeenDelivered\",\"resumed\":true,\"attempts\":0}\n"
        lock.withLock {
            pending.append(contentsOf: w.utf8)
            count("failed", status: nil, reason: "mayHaveBeenDelivered")
            if pending.count > 1 << 16 { flushLocked() }
        }
    }

    /// `"recipient":…,"id":…,` (those present), escaped.
    private static func contextMembers(_ c: LineContext) -> String {
        var out = ""
        if let r = c.recipient { out += "\"recipient\":\(Output.json(.string(r))),"}
        if let i = c.id { out += "\"id\":\(Output.json(.string(i))),"}
        return out
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
            for i in list {
                pending.append(contentsOf: "{\"line\":\(i.tag),\"intent\":\"send\",\"apnsId\":\(Output.json(.string(i.apnsID)))}\n".utf8)
            }
            flushLocked()
            return writeFailure == nil
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

/// An outcome line built in a fixed buffer: static pieces, decimal integers, and strings of
/// plain ASCII (U+0020–U+007E but `"` and `\\`: written as they are, no escape needed). Any
/// other string, or running out of room, clears ``ok`` (the caller then uses `JSONWriter`).
struct PlainLine {
    let base: UnsafeMutablePointer<UInt8>
    let capacity: Int
    private(set) var count = 0
    private(set) var ok = true

    init(base: UnsafeMutablePointer<UInt8>, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    private mutating func copy(_ from: UnsafePointer<UInt8>, _ n: Int) {
        guard ok, count + n <= capacity else {
            ok = false
            return
        }
        (base + count).update(from: from, count: n)
        count += n
    }

    mutating func raw(_ text: StaticString) { copy(text.utf8Start, text.utf8CodeUnitCount) }

    mutating func integer(_ value: Int64) {
        guard ok, count + DecimalText.maxByteCount <= capacity else {
            ok = false
            return
        }
        count += DecimalText.write(value, to: base + count)
    }

    mutating func string(_ value: String) {
        var v = value
        v.withUTF8 { u in
            guard Self.isPlain(u) else {
                ok = false
                return
            }
            raw("\"")
            if let p = u.baseAddress { copy(p, u.count) }
            raw("\"")
        }
    }

    /// Every byte in U+0020–U+007E but `"` and `\\` (8 bytes a step: a byte is flagged when
    /// below 0x20, at or above 0x7F, or equal to one of the two).
    static func isPlain(_ u: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let p = u.baseAddress else { return true }
        let ones: UInt64 = 0x0101_0101_0101_0101, high: UInt64 = 0x8080_8080_8080_8080
        func flagged(_ x: UInt64) -> Bool {
            let quote = x ^ (ones &* 0x22), backslash = x ^ (ones &* 0x5C)
            let below = (x &- ones &* 0x20) & ~x
            let above = (x &+ ones &* 0x01) | x  // 0x7F + 1 and 0x80… set the high bit
            let zeroQuote = (quote &- ones) & ~quote, zeroBackslash = (backslash &- ones) & ~backslash
            return (below | above | zeroQuote | zeroBackslash) & high != 0
        }
        var i = 0
        while i + 8 <= u.count {
            if flagged(UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)) { return false }
            i += 8
        }
        while i < u.count {
            let b = p[i]
            if b < 0x20 || b > 0x7E || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { return false }
            i += 1
        }
        return true
    }
}
