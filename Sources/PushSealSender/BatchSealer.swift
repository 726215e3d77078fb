#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import PushSealFormat

/// Seals JSON Lines in chunks on every core, keeping input order.
///
/// Input line: `{"recipient": "…", "notification": {…}}`. Output line, one per input line in
/// the same order: `{"recipient":…,"payload":{…},"headers":{…}}` (plus `"changes":[…]` when the
/// fit ladder changed something) or `{"recipient":…|null,"line":N,"error":{"code":…,"message":…}}`.
/// A bad line never stops the batch. The caller streams: it reads a bounded chunk, calls
/// ``seal(_:)``, writes the result, and repeats, so memory stays flat for any input length.
public struct BatchSealer: Sendable {
    /// One input line.
    public struct Line: Sendable {
        /// 1-based line number in the input.
        public var number: Int
        /// The line's bytes without the newline (empty when it was too long).
        public var bytes: [UInt8]
        /// When the line was longer than the reader's limit: its length in bytes; its bytes were dropped.
        public var overlongByteCount: Int?

        /// Creates a line.
        public init(number: Int, bytes: [UInt8], overlongByteCount: Int? = nil) {
            self.number = number
            self.bytes = bytes
            self.overlongByteCount = overlongByteCount
        }
    }

    /// The result of one chunk.
    public struct Chunk: Sendable {
        /// The output JSON Lines, each ending in `\n`, in input order.
        public var output: [UInt8]
        /// How many lines failed.
        public var failureCount: Int
    }

    private let sealer: NotificationSealer
    /// Worker threads per chunk (at least 1).
    public let concurrency: Int

    /// Creates a batch sealer.
    /// - Parameters:
    ///   - sealer: the configured sealer (app id, keys, options).
    ///   - concurrency: worker threads; defaults to the active processor count.
    public init(sealer: NotificationSealer, concurrency: Int? = nil) {
        self.sealer = sealer
        self.concurrency = max(1, concurrency ?? ProcessInfoCores.active)
    }

    /// Seals `lines` in parallel and returns their output lines in order.
    public func seal(_ lines: [Line]) -> Chunk {
        let results = UnsafeMutableBufferPointer<(bytes: [UInt8], failed: Bool)>.allocate(capacity: lines.count)
        results.initialize(repeating: ([], false))
        defer { results.deinitialize(); results.deallocate() }
        let workers = min(concurrency, max(1, lines.count / 8))
        let perWorker = (lines.count + workers - 1) / max(workers, 1)
        let slots = ResultSlots(buffer: results)
        DispatchQueue.concurrentPerform(iterations: workers) { w in
            let start = w * perWorker
            let end = min(start + perWorker, lines.count)
            guard start < end else { return }
            for i in start..<end { slots.buffer[i] = sealLine(lines[i]) }
        }
        var total = 0
        var failures = 0
        for r in results { total += r.bytes.count; if r.failed { failures += 1 } }
        var out: [UInt8] = []
        out.reserveCapacity(total)
        for r in results { out.append(contentsOf: r.bytes) }
        return Chunk(output: out, failureCount: failures)
    }

    /// Seals one line into its output line (with the trailing newline).
    public func sealLine(_ line: Line) -> (bytes: [UInt8], failed: Bool) {
        var recipient: String?
        do {
            if let n = line.overlongByteCount {
                throw SenderError(.invalidJSON, "the line is \(n) bytes, longer than the limit")
            }
            let value: JSONValue
            do {
                value = try JSONReader.parse(line.bytes, limits: JSONReader.Limits(maxByteCount: 2 << 20))
            } catch let e as FormatError {
                throw SenderError(.invalidJSON, "the line is not valid JSON: \(e.reason)")
            }
            guard case .object(let o) = value else {
                throw SenderError(.invalidNotification, "a line must be an object {recipient, notification}, got \(value.typeName)")
            }
            for m in o where m.key != "recipient" && m.key != "notification" {
                throw SenderError(.invalidNotification, "unknown member \(OutgoingNotification.excerpt(m.key)) (known: recipient, notification)")
            }
            guard case .string(let r)? = o["recipient"], !r.isEmpty else {
                throw SenderError(.invalidNotification, "the line needs a non-empty string recipient")
            }
            recipient = r
            guard let n = o["notification"] else { throw SenderError(.invalidNotification, "the line needs a notification") }
            let sealed = try sealer.seal(OutgoingNotification(json: n), for: r)
            var w = PayloadWriter(capacity: sealed.payload.count + 256)
            w.raw("{\"recipient\":")
            w.string(r)
            w.raw(",\"payload\":")
            w.bytes.append(contentsOf: sealed.payload)
            w.raw(",\"headers\":")
            sealed.headers.write(to: &w)
            if !sealed.changes.isEmpty {
                w.raw(",\"changes\":[")
                for (i, c) in sealed.changes.enumerated() {
                    if i > 0 { w.byte(UInt8(ascii: ",")) }
                    w.string(c.description)
                }
                w.byte(UInt8(ascii: "]"))
            }
            w.raw("}\n")
            return (w.bytes, false)
        } catch {
            let (code, message) = BatchSealer.describe(error)
            var w = PayloadWriter(capacity: 256)
            w.raw("{\"recipient\":")
            if let recipient { w.string(recipient) } else { w.raw("null") }
            w.raw(",\"line\":")
            w.integer(Int64(line.number))
            w.raw(",\"error\":{\"code\":")
            w.string(code)
            w.raw(",\"message\":")
            w.string(message)
            w.raw("}}\n")
            return (w.bytes, true)
        }
    }

    /// A stable code and a message for any error a line can raise.
    public static func describe(_ error: any Error) -> (code: String, message: String) {
        if let e = error as? SenderError { return (e.code.name, e.reason) }
        if let e = error as? any SenderErrorConvertible { let s = e.senderError; return (s.code.name, s.reason) }
        return ("internal", String(describing: error))
    }
}

/// The per-line result buffer shared by the workers of one chunk.
/// `@unchecked Sendable` is safe: each worker writes only its own disjoint index range, and the
/// buffer is read only after `concurrentPerform` has returned (which joins every worker).
struct ResultSlots: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<(bytes: [UInt8], failed: Bool)>
}

/// An error a key provider throws that maps onto a ``SenderError`` for reporting.
public protocol SenderErrorConvertible: Error {
    /// The equivalent sender error.
    var senderError: SenderError { get }
}

/// The number of processors available to this process.
enum ProcessInfoCores {
    static var active: Int {
        #if canImport(Glibc)
        return max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        #else
        return 2
        #endif
    }
}
