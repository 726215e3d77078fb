#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealSystem

/// One structured diagnostic line, like an `os_log` entry: a stage, an outcome and
/// key–value fields (durations in milliseconds, sizes in bytes).
///
/// Entries never carry plaintext, ciphertext or key bytes: callers put only names, codes,
/// counts, sizes and durations in ``fields``.
public struct DiagnosticEntry: Sendable, Hashable, CustomStringConvertible {
    /// The stage, e.g. `host`, `keyLookup`, `open`, `localize`, `download`, `attach`.
    public let stage: String
    /// What happened: `ok`, `failed`, `skipped`, `delivered`, `dropped`, ….
    public let event: String
    /// Extra fields in order, e.g. `("durationMs", "1.204")`, `("byteCount", "5120")`.
    public let fields: [(key: String, value: String)]

    /// Creates an entry.
    /// - Parameters:
    ///   - stage: the stage name (no spaces).
    ///   - event: the outcome (no spaces).
    ///   - fields: key–value pairs in order; values with spaces are quoted when printed.
    public init(stage: String, event: String, fields: [(key: String, value: String)] = []) {
        self.stage = stage
        self.event = event
        self.fields = fields
    }

    /// One line: `stage=open event=ok durationMs=0.081 byteCount=214 reason="…"`.
    public var description: String {
        var line = "stage=\(stage) event=\(event)"
        for f in fields {
            let needsQuotes = f.value.isEmpty || f.value.contains { $0 == " " || $0 == "\"" || $0 == "=" }
            let value = needsQuotes ? "\"" + f.value.replacing("\"", with: "'") + "\"" : f.value
            line += " \(f.key)=\(value)"
        }
        return line
    }

    public static func == (lhs: DiagnosticEntry, rhs: DiagnosticEntry) -> Bool { lhs.description == rhs.description }
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }
}

/// Where diagnostics go. Libraries take one as a parameter; nothing is global.
public protocol DiagnosticLogger: Sendable {
    /// Records one entry. Called from any thread.
    func log(_ entry: DiagnosticEntry)
}

/// Discards every entry.
public struct NullLogger: DiagnosticLogger {
    /// Creates a logger that discards entries.
    public init() {}
    /// Does nothing.
    public func log(_ entry: DiagnosticEntry) {}
}

/// Keeps every entry in memory, in order; thread-safe. The host uses one per notification
/// for its result; tests use it to inspect what was logged.
public final class CollectingLogger: DiagnosticLogger {
    private let entries = Locked<[DiagnosticEntry]>([])
    private let forward: (any DiagnosticLogger)?

    /// Creates an empty collector.
    /// - Parameter forward: another logger that also receives every entry, or `nil`.
    public init(forwardingTo forward: (any DiagnosticLogger)? = nil) { self.forward = forward }

    /// Appends `entry` and forwards it.
    public func log(_ entry: DiagnosticEntry) {
        entries.withLock { $0.append(entry) }
        forward?.log(entry)
    }

    /// The entries so far, in order.
    public var snapshot: [DiagnosticEntry] { entries.withLock { $0 } }

    /// The entries so far as lines.
    public var lines: [String] { snapshot.map(\.description) }
}

/// Writes each entry as one line to standard error, prefixed (e.g. `push-open: `).
public struct StandardErrorLogger: DiagnosticLogger {
    private let prefix: String

    /// Creates a logger writing to stderr.
    /// - Parameter prefix: text before each line, e.g. `"push-open: "`.
    public init(prefix: String = "") { self.prefix = prefix }

    /// Writes one line to stderr.
    public func log(_ entry: DiagnosticEntry) {
        // Standard error: best effort, there is nowhere left to report a failed write.
        try? FileDescriptor.standardError.writeAll(prefix + entry.description + "\n")
    }
}

/// Milliseconds since `start`, for duration fields, with three decimals.
func millisecondsSince(_ start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}

/// Formats a duration in milliseconds with three decimals, for log fields.
func formatMilliseconds(_ ms: Double) -> String {
    // Not String(format:): that goes through Foundation's locale machinery (slow, and it
    // pages in ICU data, which costs push-open cold start and RSS).
    guard ms.isFinite, abs(ms) < 1e15 else { return "0.000" }
    let micro = Int64((ms * 1000).rounded())
    let magnitude = micro.magnitude
    let fraction = magnitude % 1000
    let pad = fraction < 10 ? "00" : fraction < 100 ? "0" : ""
    return (micro < 0 ? "-" : "") + "\(magnitude / 1000)." + pad + "\(fraction)"
}
