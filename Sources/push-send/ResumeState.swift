import PushSealAPNs
import PushSealCLI
import PushSealJSON
import PushSealSystem

/// What an earlier run's outcome file says about each line, for `--resume`: read line by line
/// (any size; memory is a bit per line number seen, in pages of 2^18 line numbers), applied
/// in file order by ``APNsResumeRule``:
/// - an outcome line (`"outcome"`): final and not to be repeated (``isFinal``; ``isSuccess``
///   when `accepted`), or a `failed` that never reached APNs (resent);
/// - an intent line (`"intent"`, written before the request's bytes went out): if no outcome
///   follows it, the notification may have reached APNs (``hasIntentOnly``).
/// A damaged line (a killed run's partial last line, garbage) is passed over.
struct ResumeState {
    private var final = LineSet()
    private var success = LineSet()
    private var intentOnly = LineSet()
    private var rejected = LineSet()
    private var retried = LineSet()
    /// Lines read that were neither form (damaged, or another tool's).
    private(set) var ignoredLineCount = 0

    /// The earlier run gave line `line` a final outcome that is not to be repeated.
    func isFinal(_ line: Int) -> Bool { final.contains(line) }
    /// That final outcome is `accepted`.
    func isSuccess(_ line: Int) -> Bool { success.contains(line) }
    /// Line `line` has an intent after its last outcome (or with none): it may have reached APNs.
    func hasIntentOnly(_ line: Int) -> Bool { intentOnly.contains(line) }
    /// That final outcome is `rejected` or `unregistered` (an answer of APNs).
    func isRejected(_ line: Int) -> Bool { rejected.contains(line) }
    /// Its last outcome is a `failed` that never reached APNs (it is sent again).
    func wasFailedOrInterrupted(_ line: Int) -> Bool { retried.contains(line) }

    /// Reads `path` (an outcome file of push-send; intents included).
    /// - Throws: `CLIError` 66 (missing), 74 (unreadable).
    static func read(_ path: String) throws -> ResumeState {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .readOnly)
        } catch let e as SystemError {
            throw InputReader.openError(path, errno: e.errno)
        }
        var lines = JSONLinesReader(input: file, maxLineByteCount: SendInput.maxLineByteCount)
        var state = ResumeState()
        while case .line(let read) = try lines.next(.block) {
            if read.overlongByteCount != nil || read.bytes.isEmpty { continue }
            state.apply(read.bytes)
        }
        return state
    }

    /// Applies one line of the file (read by ``APNsOutcomeLine/read(_:)``).
    mutating func apply(_ bytes: [UInt8]) {
        guard let r = APNsOutcomeLine.read(bytes), let n = r.line, n >= 1, n <= Int64(Int32.max) else {
            ignoredLineCount += 1
            return
        }
        let line = Int(n)
        if let kind = r.kind {
            intentOnly.remove(line)
            if APNsResumeRule.isResendable(kind: kind, status: r.status, reason: r.reason) {
                final.remove(line)
                success.remove(line)
                rejected.remove(line)
                retried.insert(line)
            } else {
                final.insert(line)
                retried.remove(line)
                if kind == .accepted { success.insert(line) } else { success.remove(line) }
                if kind == .rejected || kind == .unregistered { rejected.insert(line) } else { rejected.remove(line) }
            }
        } else if r.isIntent {
            intentOnly.insert(line)
        } else {
            ignoredLineCount += 1
        }
    }

    /// The decision for line `line` (``APNsResumeRule/decide(finalOutcome:intentAfterOutcome:hasCollapseID:)``).
    func decision(_ line: Int, hasCollapseID: Bool) -> APNsResumeRule.Decision {
        APNsResumeRule.decide(finalOutcome: isFinal(line) ? (isSuccess(line) ? .accepted : .failed) : nil,
                              intentAfterOutcome: hasIntentOnly(line), hasCollapseID: hasCollapseID)
    }
}

/// A set of line numbers (1…2^31) as bits in pages of 2^18 numbers (32 KiB each), made on use.
struct LineSet {
    private static let pageShift = 18
    private var pages: [Int: [UInt64]] = [:]

    func contains(_ n: Int) -> Bool {
        guard let page = pages[n >> Self.pageShift] else { return false }
        let bit = n & ((1 << Self.pageShift) - 1)
        return page[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }

    mutating func insert(_ n: Int) {
        let bit = n & ((1 << Self.pageShift) - 1)
        pages[n >> Self.pageShift, default: [UInt64](repeating: 0, count: (1 << Self.pageShift) / 64)][bit >> 6] |= 1 << UInt64(bit & 63)
    }

    mutating func remove(_ n: Int) {
        let key = n >> Self.pageShift
        guard pages[key] != nil else { return }
        let bit = n & ((1 << Self.pageShift) - 1)
        pages[key]?[bit >> 6] &= ~(1 << UInt64(bit & 63))
    }
}

/// What `--resume` did with the lines of the earlier runs, for the summary and the exit code.
struct ResumeCounts {
    /// Lines not sent again: accepted before.
    var skippedAccepted = 0
    /// Lines not sent again: rejected or unregistered by APNs before.
    var skippedRejected = 0
    /// Lines not sent again: failed before in a way that must not be repeated (may have been
    /// delivered, or bad input).
    var skippedFailed = 0
    /// Lines sent again: their last outcome was a failure that never reached APNs.
    var resent = 0
    /// Lines with an intent and no outcome, without a collapse id: recorded `mayHaveBeenDelivered`.
    var unconfirmed = 0

    mutating func skip(success: Bool, rejected: Bool) {
        if success { skippedAccepted += 1 } else if rejected { skippedRejected += 1 } else { skippedFailed += 1 }
    }

    /// `push-send: resumed from FILE: …` for stderr.
    func summary(path: String) -> String {
        let skipped = skippedAccepted + skippedRejected + skippedFailed
        return "push-send: resumed from \(Output.terminalSafe(quoted(path))): \(skipped) lines not sent again (\(skippedAccepted) accepted, \(skippedRejected) rejected or unregistered, \(skippedFailed) failed for good), "
            + "\(resent) failed lines sent again, \(unconfirmed) marked mayHaveBeenDelivered (sent by an interrupted run, no outcome)\n"
    }
}
