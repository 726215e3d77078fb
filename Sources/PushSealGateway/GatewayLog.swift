#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import PushSealJSON
public import PushSealServer
import PushSealSystem

/// One JSON object a line on standard error: a line per request and per final outcome. Lines
/// carry ids, recipients, statuses and codes, never a notification's text, a full device token
/// or a key (callers pass only those; ``deviceTokenHint(_:)`` shortens a token). Characters a
/// terminal or a line-splitting tool acts on (C1, U+2028, U+2029, bidirectional controls: a
/// recipient name may hold them) are written as `\uXXXX` (`JSONWriter.terminalSafe`).
public final class GatewayLog: Sendable {
    private let lock = PosixLock()
    private let fd: Int32
    private let enabled: Bool

    /// A log on `fd` (2, standard error, by default).
    /// - Parameters:
    ///   - fd: where lines go.
    ///   - enabled: `false` writes nothing (tests).
    public init(fd: Int32 = 2, enabled: Bool = true) {
        self.fd = fd
        self.enabled = enabled
    }

    /// Writes one line: `{"time": ms since 1970, "event": event, …members}`.
    public func write(_ event: String, _ members: [(key: String, value: JSONValue)]) {
        write([(event, members)])
    }

    /// Writes one line per entry, as ``write(_:_:)`` does, with one `write(2)` for all (a batch
    /// request's 500 accept lines were 500 system calls under the lock).
    public func write(_ entries: [(event: String, members: [(key: String, value: JSONValue)])]) {
        guard enabled, !entries.isEmpty else { return }
        let time = unixTimeMilliseconds()
        var bytes: [UInt8] = []
        for e in entries {
            let object = JSONObject([("time", .integer(time)), ("event", .string(e.event))] + e.members)
            guard let line = try? JSONWriter.serialize(.object(object)) else { continue }
            bytes += JSONWriter.terminalSafe(line)  // a recipient name may hold U+2028 or a bidi override
            bytes.append(10)
        }
        lock.withLock {
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// The `outcome` line of a notification's final status: `id`, `apnsId`, `recipient`,
    /// `status`, `httpStatus`, `reason`, `apnsUniqueId`, `attempts` (what ``OutboxWorker``'s
    /// `onFinal` reports; never the payload or the device token).
    public func outcome(_ f: OutboxWorker.FinalOutcome) {
        var members: [(key: String, value: JSONValue)] = [("id", .string(f.id)), ("apnsId", .string(f.apnsID)), ("recipient", .string(f.recipient)),
                                                          ("status", .string(f.status))]
        if let v = f.httpStatus { members.append(("httpStatus", .integer(Int64(v)))) }
        if let v = f.reason { members.append(("reason", .string(v))) }
        if let v = f.apnsUniqueID { members.append(("apnsUniqueId", .string(v))) }
        members.append(("attempts", .integer(Int64(f.attempts))))
        write("outcome", members)
    }

    /// The first 8 hex digits of a device token and its length (`7f3a09c1…(64)`): enough to tell
    /// tokens apart in a log, not enough to send to one.
    public static func deviceTokenHint(_ token: String) -> String {
        "\(token.prefix(8))…(\(token.utf8.count))"
    }
}
