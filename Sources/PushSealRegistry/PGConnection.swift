internal import CLibPQ
import PushSealSystem

/// A value bound to a statement parameter: text, or bytes (sent in binary format, for `bytea`).
/// `nil` in a parameter list is SQL NULL.
enum PGValue {
    case text(String)
    case bytes([UInt8])
}

extension PGValue {
    static func int(_ v: Int64) -> PGValue { .text(String(v)) }
    static func uint(_ v: UInt64) -> PGValue { .text(String(v)) }
}

/// The rows of a statement, copied out of libpq (text format; `bytea` as `\x` hex).
struct PGRows {
    var rows: [[String?]]
    /// `PQcmdTuples`: rows affected by an INSERT/UPDATE/DELETE.
    var affected: Int

    /// Column `c` of row `r` as an integer, or `nil` for NULL.
    func int(_ r: Int, _ c: Int) throws -> Int64? {
        guard let s = rows[r][c] else { return nil }
        guard let v = Int64(s) else { throw RegistryError(.corrupt, "column \(c) holds \"\(s.prefix(20))\", not an integer") }
        return v
    }

    /// Column `c` of row `r` decoded from `bytea`'s hex output (`\x0a1b…`), or `nil` for NULL.
    func bytes(_ r: Int, _ c: Int) throws -> [UInt8]? {
        guard let s = rows[r][c] else { return nil }
        guard s.hasPrefix("\\x") else { throw RegistryError(.corrupt, "a bytea column is not in hex output format") }
        guard let out = Hex.decode(String(s.dropFirst(2))) else { throw RegistryError(.corrupt, "a bytea column holds a non-hex digit or an odd count") }
        return out
    }
}

/// One libpq connection (`PGconn`). Not for concurrent use: the pool hands it to one thread at a
/// time. Every statement is parameterized (`PQexecParams`); no value is ever spliced into SQL.
final class PGConnection {
    /// The libpq connection (the outbox's LISTEN reads its socket and notifications).
    let conn: OpaquePointer
    /// Set while a COMMIT is on the wire: a connection lost then leaves the outcome unknown.
    var committing = false

    /// Connects with a libpq connection string or URI (`postgresql://…`, `host=… dbname=…`, or
    /// empty for the `PG*` environment variables alone).
    /// - Throws: `RegistryError` `.unavailable` (with libpq's message), `.invalidConnectionString`.
    init(_ conninfo: String) throws {
        var err: UnsafeMutablePointer<CChar>?
        if let options = PQconninfoParse(conninfo, &err) {
            PQconninfoFree(options)
        } else {
            let text = err.map { String(cString: $0) } ?? "out of memory"
            if let err { PQfreemem(err) }
            throw RegistryError(.invalidConnectionString,
                "the registry connection string is not valid: \(Self.redacted(Self.clean(text))) (check its keywords, quoting and %XX percent-encoding)")
        }
        guard let c = Self.connect(conninfo) else { throw RegistryError(.unavailable, "libpq could not allocate a connection") }
        guard PQstatus(c) == CONNECTION_OK else {
            let message = Self.redacted(Self.clean(String(cString: PQerrorMessage(c))))
            PQfinish(c)
            throw RegistryError(.unavailable, "cannot connect to the registry: \(message)")
        }
        conn = c
        // Quiet NOTICEs (CREATE TABLE IF NOT EXISTS …) instead of printing them on stderr.
        PQsetNoticeProcessor(c, { _, _ in }, nil)
    }

    deinit { PQfinish(conn) }

    /// Seconds a connection attempt may take when neither the connection string nor
    /// `PGCONNECT_TIMEOUT` says: libpq's own default is to wait for the operating system (minutes
    /// for a black-holed host), and a registry that cannot be reached should fail fast.
    static let defaultConnectTimeoutSeconds = "10"

    /// `PQconnectdbParams` with `connect_timeout` first and the connection string expanded after
    /// it, so a `connect_timeout` the string gives wins (libpq: later keywords override earlier).
    private static func connect(_ conninfo: String) -> OpaquePointer? {
        let timeout = Environment.value("PGCONNECT_TIMEOUT") == nil ? defaultConnectTimeoutSeconds : nil
        return conninfo.withCString { info in
            "dbname".withCString { dbname in
                "connect_timeout".withCString { timeoutKey in
                    (timeout ?? "").withCString { timeoutValue in
                        let keys: [UnsafePointer<CChar>?] = timeout == nil ? [dbname, nil] : [timeoutKey, dbname, nil]
                        let values: [UnsafePointer<CChar>?] = timeout == nil ? [info, nil] : [timeoutValue, info, nil]
                        return PQconnectdbParams(keys, values, 1)
                    }
                }
            }
        }
    }

    /// `true` while libpq thinks the connection is usable.
    var isOK: Bool { PQstatus(conn) == CONNECTION_OK }

    /// Database name, host (or socket directory) and port, for messages (never a password).
    var target: String {
        let db = PQdb(conn).map { String(cString: $0) } ?? "?"
        let host = PQhost(conn).map { String(cString: $0) } ?? "?"
        let port = PQport(conn).map { String(cString: $0) } ?? "?"
        return "postgresql database \(db) on \(host) port \(port)"
    }

    /// libpq's message with every quoted part (`"…"`) replaced by `"…"`: libpq quotes pieces
    /// of the connection string it could not parse, which may be a password (security review G12).
    /// A quoted lone punctuation mark (`missing "=" after …`) is kept.
    static func redacted(_ s: String) -> String {
        var out = ""
        var quoted: String?
        for ch in s {
            if ch == "\"" {
                if let q = quoted {
                    out += (q.count == 1 && q.allSatisfy { $0.isPunctuation || $0.isSymbol } ? q : "…") + "\""
                    quoted = nil
                } else {
                    out.append(ch)
                    quoted = ""
                }
            } else if quoted != nil {
                quoted?.append(ch)
            } else {
                out.append(ch)
            }
        }
        if quoted != nil { out.append("…") }
        return out
    }

    /// One line of libpq's message: no trailing newline, tabs and newlines as spaces.
    static func clean(_ s: String) -> String {
        s.split(whereSeparator: { $0 == "\n" || $0 == "\t" }).map { $0.trimmingCharacters() }.filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// Runs one parameterized statement.
    /// - Parameters:
    ///   - sql: the statement with `$1 …` placeholders.
    ///   - params: the values (`nil` = NULL).
    /// - Returns: the rows (empty for commands).
    /// - Throws: `RegistryError` `.query` with the SQLSTATE; `.unavailable` when the connection
    ///   was lost (SQLSTATE class 08, the server shutting down: 57P01-57P03, or a failure with
    ///   no SQLSTATE: libpq's own, while sending or reading).
    @discardableResult
    func exec(_ sql: String, _ params: [PGValue?] = []) throws -> PGRows {
        // Each parameter in its own C buffer (text NUL-terminated), zeroed and freed after the call.
        var buffers: [UnsafeMutableBufferPointer<UInt8>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        for p in params {
            switch p {
            case .none:
                buffers.append(nil); lengths.append(0); formats.append(0)
            case .text(let s):
                let u = Array(s.utf8)
                let b = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: u.count + 1)
                _ = b.initialize(from: u)
                b[u.count] = 0
                buffers.append(b); lengths.append(0); formats.append(0)
            case .bytes(let bytes):
                let b = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
                b[0] = 0
                _ = b.initialize(from: bytes)
                buffers.append(b); lengths.append(Int32(bytes.count)); formats.append(1)
            }
        }
        defer {
            for b in buffers {
                guard let b else { continue }
                b.update(repeating: 0)
                b.deallocate()
            }
        }
        let pointers: [UnsafePointer<CChar>?] = buffers.map { b in
            b?.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }
        }
        let result = PQexecParams(conn, sql, Int32(params.count), nil, pointers, lengths, formats, 0)
        guard let result else {
            throw RegistryError(.unavailable, "the registry connection failed: \(Self.clean(String(cString: PQerrorMessage(conn))))")
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = Self.clean(String(cString: PQresultErrorMessage(result)))
            // Every error the server sends has a SQLSTATE; one without is libpq's own, i.e. the
            // connection failed while the statement was sent or its answer read ("server closed
            // the connection unexpectedly"), even while PQstatus still reads OK (R8).
            if state == nil { _ = PQconsumeInput(conn) }
            if state == nil || !isOK || state.map({ $0.hasPrefix("08") || $0 == "57P01" || $0 == "57P02" || $0 == "57P03" }) == true {
                throw RegistryError(.unavailable, "the registry connection was lost: \(message)", sqlState: state)
            }
            throw RegistryError(.query, "registry statement failed (SQLSTATE \(state ?? "?")): \(message)", sqlState: state)
        }
        let n = Int(PQntuples(result)), m = Int(PQnfields(result))
        var rows: [[String?]] = []
        rows.reserveCapacity(n)
        for r in 0..<n {
            var row: [String?] = []
            row.reserveCapacity(m)
            for c in 0..<m {
                if PQgetisnull(result, Int32(r), Int32(c)) != 0 {
                    row.append(nil)
                } else {
                    row.append(String(cString: PQgetvalue(result, Int32(r), Int32(c))))
                }
            }
            rows.append(row)
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        return PGRows(rows: rows, affected: affected)
    }
}

extension Substring {
    func trimmingCharacters() -> String {
        var s = self[...]
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
