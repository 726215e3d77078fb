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
        guard var s = rows[r][c] else { return nil }
        return try s.withUTF8 { u in
            guard u.count >= 2, u[0] == UInt8(ascii: "\\"), u[1] == UInt8(ascii: "x") else {
                throw RegistryError(.corrupt, "a bytea column is not in hex output format")
            }
            guard let out = Hex.decode(utf8: UnsafeBufferPointer(rebasing: u[2...])) else {
                throw RegistryError(.corrupt, "a bytea column holds a non-hex digit or an odd count")
            }
            return out
        }
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
        // Prepared statements (``exec(_:_:)``) are planned anew for each call's values: a
        // generic plan, which PostgreSQL may switch to after five calls, cannot see how many ids
        // an `= ANY($n)` array holds and chose whole-table scans (the outcome write went from
        // 0.3 to 1.5 ms, bench-gateway). Parsing once is the saving; the plans stay as before.
        let set = PQexec(c, "SET plan_cache_mode = force_custom_plan")
        let setOK = PQresultStatus(set) == PGRES_COMMAND_OK
        PQclear(set)
        guard setOK else {
            let message = Self.redacted(Self.clean(String(cString: PQerrorMessage(c))))
            PQfinish(c)
            throw RegistryError(.unavailable, "cannot set up the registry connection: \(message)")
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

    /// Statement names by SQL text: the statements prepared on this connection (server side,
    /// for the session's life). A statement with parameters is parsed and planned once per
    /// connection instead of per call (`PQprepare`, then `PQexecPrepared`): at 500 single
    /// notifications/s that parsing and planning was most of PostgreSQL's CPU beside the
    /// statements' own execution (bench-gateway, pg_stat_statements).
    private var prepared: [String: String] = [:]
    /// Set when the connection must not be reused (a prepared statement's cached plan was
    /// invalidated by a change of a table's columns): the pool drops it.
    var discard = false
    /// Statements prepared on one connection at most; texts beyond it run unprepared. The texts
    /// are the registry's own (a multi-row statement has one text per row count), so the cap
    /// only bounds the server's memory per connection.
    static let maxPreparedStatements = 128
    /// Statements with more parameters run unprepared (a multi-row statement of hundreds of rows
    /// runs once per hundreds of rows: its parsing is not worth a cached plan's memory).
    static let maxPreparedParameters = 256

    /// `false` when `PUSHSEAL_PREPARED_STATEMENTS=off`: every statement runs unprepared (for a
    /// pooler that cannot keep prepared statements, e.g. PgBouncer before 1.21 in transaction mode).
    static let prepares = Environment.value("PUSHSEAL_PREPARED_STATEMENTS") != "off"

    /// The name `sql` is prepared under on this connection, preparing it first when it is new;
    /// `nil` to run it unprepared (no parameters: transaction control, `SET`, DDL; too many
    /// parameters; the cache full; a transaction in error, where only ROLLBACK may follow).
    /// - Throws: as ``exec(_:_:)`` (the error of preparing is the statement's own error).
    private func preparedName(_ sql: String, parameterCount: Int) throws -> String? {
        if let name = prepared[sql] { return name }
        guard Self.prepares, parameterCount > 0, parameterCount <= Self.maxPreparedParameters, prepared.count < Self.maxPreparedStatements,
              PQtransactionStatus(conn) != PQTRANS_INERROR else { return nil }
        let name = "pushseal_\(prepared.count + 1)"
        let result = PQprepare(conn, name, sql, Int32(parameterCount), nil)
        defer { PQclear(result) }
        _ = try check(result)
        prepared[sql] = name
        return name
    }

    /// A statement's parameters in C buffers (text NUL-terminated, bytes as binary), lent to
    /// `body` with their lengths and formats, zeroed and freed after it.
    private func withParameters<R>(_ params: [PGValue?], _ body: ([UnsafePointer<CChar>?], [Int32], [Int32]) throws -> R) rethrows -> R {
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
        return try body(pointers, lengths, formats)
    }

    /// Runs one parameterized statement (prepared on this connection when it has parameters:
    /// ``preparedName(_:parameterCount:)``).
    /// - Parameters:
    ///   - sql: the statement with `$1 …` placeholders.
    ///   - params: the values (`nil` = NULL).
    /// - Returns: the rows (empty for commands).
    /// - Throws: `RegistryError` `.query` with the SQLSTATE; `.unavailable` when the connection
    ///   was lost (SQLSTATE class 08, the server shutting down: 57P01-57P03, or a failure with
    ///   no SQLSTATE: libpq's own, while sending or reading).
    @discardableResult
    func exec(_ sql: String, _ params: [PGValue?] = []) throws -> PGRows {
        let name = try preparedName(sql, parameterCount: params.count)
        let result = withParameters(params) { pointers, lengths, formats in
            if let name { return PQexecPrepared(conn, name, Int32(params.count), pointers, lengths, formats, 0) }
            return PQexecParams(conn, sql, Int32(params.count), nil, pointers, lengths, formats, 0)
        }
        defer { PQclear(result) }
        return try rows(of: check(result))
    }

    /// Runs a read of the registry's slowly changing tables by name (registrations and their
    /// lists, device tokens) on the statement's generic plan, made once per connection
    /// (`plan_cache_mode = force_generic_plan` for its implicit transaction, set in the same
    /// round trip: ``pipeline(_:readOnly:)``), instead of planning it per call: on the
    /// single-request path those two reads were planned ~3,500 times in 10 s, 1.3 s of
    /// PostgreSQL's CPU against 0.8 s of executing them (bench-gateway, pg_stat_statements'
    /// planning time). Only equality and `= ANY` on a unique index belong here: the generic plan
    /// finds rows through it for any number of names (checked on 200,000 device tokens), while
    /// for a range it may prefer reading the whole table. A plan made while a table was small
    /// is made again when autovacuum's ANALYZE sees it grow (PostgreSQL invalidates it).
    /// Every other statement is planned per call (the connection's `force_custom_plan`): the
    /// outbox fills and empties in seconds, faster than its statistics follow.
    /// Inside an explicit transaction, or with prepared statements off, it runs as ``exec(_:_:)``.
    /// - Throws: as ``exec(_:_:)`` (a lost connection is `.unavailable`: nothing was written).
    func execOnGenericPlan(_ sql: String, _ params: [PGValue?]) throws -> PGRows {
        guard Self.prepares, PQtransactionStatus(conn) == PQTRANS_IDLE else { return try exec(sql, params) }
        return try pipeline([("SELECT set_config('plan_cache_mode', $1, true)", [.text("force_generic_plan")]), (sql, params)], readOnly: true)[1]
    }

    /// Runs `statements` in ONE round trip (libpq's pipeline mode, one `Sync`): PostgreSQL runs
    /// them in order as one implicit transaction (a `set_config(name, value, true)` among them
    /// holds for the ones after it; `SET LOCAL` too, with a warning in the server's log) and
    /// commits it when the last succeeds; the first that fails rolls every one
    /// back, and the rest are not run. For the outbox's claim and outcome writes, which were a
    /// `BEGIN`, a `SET LOCAL`, the statement and a `COMMIT`: four round trips, each a wake-up
    /// on both sides (bench-gateway, single requests at 500/s). The commit is on the wire for
    /// the whole call (``committing``): a connection lost during it leaves the outcome unknown.
    /// - Parameter readOnly: the statements write nothing: a connection lost during the call
    ///   leaves nothing unknown (not ``committing``; the pool runs the call again).
    /// - Returns: each statement's rows, in order.
    /// - Throws: as ``exec(_:_:)``: the first failing statement's error.
    func pipeline(_ statements: [(sql: String, params: [PGValue?])], readOnly: Bool = false) throws -> [PGRows] {
        guard !statements.isEmpty else { return [] }
        var names: [String?] = []
        for s in statements { names.append(try preparedName(s.sql, parameterCount: s.params.count)) }
        guard PQenterPipelineMode(conn) == 1 else { throw lost() }
        committing = !readOnly
        defer { _ = PQexitPipelineMode(conn) }
        for (s, name) in zip(statements, names) {
            let sent = withParameters(s.params) { pointers, lengths, formats in
                if let name { return PQsendQueryPrepared(conn, name, Int32(s.params.count), pointers, lengths, formats, 0) }
                return PQsendQueryParams(conn, s.sql, Int32(s.params.count), nil, pointers, lengths, formats, 0)
            }
            guard sent == 1 else { throw lost() }
        }
        guard PQpipelineSync(conn) == 1 else { throw lost() }
        // One result and a NULL per statement (PGRES_PIPELINE_ABORTED after a failure), then
        // the Sync's PGRES_PIPELINE_SYNC; every one is read before the first error is thrown.
        var out: [PGRows] = []
        var failure: (any Error)?
        for _ in statements {
            guard let result = PQgetResult(conn) else { throw lost() }
            defer { PQclear(result) }
            if PQresultStatus(result) != PGRES_PIPELINE_ABORTED, failure == nil {
                do { out.append(try rows(of: check(result))) } catch { failure = error }
            }
            while let extra = PQgetResult(conn) { PQclear(extra) }
        }
        guard let sync = PQgetResult(conn) else { throw lost() }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        if let failure {
            // Rolled back: nothing of it was committed.
            if synced { committing = false }
            throw failure
        }
        guard synced, out.count == statements.count else { throw lost() }
        committing = false
        return out
    }

    /// The error of a connection libpq reports failed (sending, or reading a result).
    private func lost() -> RegistryError {
        RegistryError(.unavailable, "the registry connection failed: \(Self.clean(String(cString: PQerrorMessage(conn))))")
    }

    /// `result` when it is a success; its error otherwise (classified as ``exec(_:_:)`` says).
    /// The caller clears `result` either way.
    /// A prepared statement whose cached plan a table change invalidated (SQLSTATE 0A000,
    /// "cached plan must not change result type") marks the connection ``discard``.
    private func check(_ result: OpaquePointer?) throws -> OpaquePointer {
        guard let result else { throw lost() }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = Self.clean(String(cString: PQresultErrorMessage(result)))
            if state == "0A000" { discard = true }
            // Every error the server sends has a SQLSTATE; one without is libpq's own, i.e. the
            // connection failed while the statement was sent or its answer read ("server closed
            // the connection unexpectedly"), even while PQstatus still reads OK (R8).
            if state == nil { _ = PQconsumeInput(conn) }
            if state == nil || !isOK || state.map({ $0.hasPrefix("08") || $0 == "57P01" || $0 == "57P02" || $0 == "57P03" }) == true {
                throw RegistryError(.unavailable, "the registry connection was lost: \(message)", sqlState: state)
            }
            throw RegistryError(.query, "registry statement failed (SQLSTATE \(state ?? "?")): \(message)", sqlState: state)
        }
        return result
    }

    /// The rows of a successful result, copied out (the caller clears it).
    private func rows(of result: OpaquePointer) -> PGRows {
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
