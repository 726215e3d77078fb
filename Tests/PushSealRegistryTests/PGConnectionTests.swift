import Foundation
@testable import PushSealRegistry
import Testing

/// The connection's prepared statements and pipelines (issue 23, speed): each statement with
/// parameters is parsed once per connection and gives the same answers as unprepared; a pipeline
/// is one implicit transaction (a `set_config(…, true)` in it holds for the statements after it and ends
/// with it; a failure rolls every statement back and leaves the connection usable).
@Suite struct PGConnectionTests {
    /// A connection to a fresh database of the shared server, with a table `t (k int primary key, v text)`.
    static func connection() throws -> PGConnection {
        let server = try PostgresServer.sharedServer()
        let c = try PGConnection(try server.createDatabase())
        try c.exec("CREATE TABLE t (k integer PRIMARY KEY, v text NOT NULL)")
        return c
    }

    /// Server-side prepared statements of this connection (`pg_prepared_statements`).
    static func preparedCount(_ c: PGConnection) throws -> Int64 {
        try c.exec("SELECT count(*) FROM pg_prepared_statements").int(0, 0) ?? -1
    }

    @Test func aStatementWithParametersIsPreparedOnceAndAnswersAsUnprepared() throws {
        let c = try Self.connection()
        #expect(try Self.preparedCount(c) == 0)
        for k in 1...5 {
            try c.exec("INSERT INTO t (k, v) VALUES ($1, $2)", [.int(Int64(k)), .text("value \(k)")])
        }
        #expect(try Self.preparedCount(c) == 1)
        let read = try c.exec("SELECT v FROM t WHERE k = ANY($1::integer[]) ORDER BY k", [.text("{2,4}")])
        #expect(read.rows == [["value 2"], ["value 4"]])
        #expect(try Self.preparedCount(c) == 2)
        // Statements without parameters (transaction control, SET, DDL) are never prepared.
        try c.exec("BEGIN")
        try c.exec("SET LOCAL enable_seqscan = off")
        try c.exec("COMMIT")
        #expect(try Self.preparedCount(c) == 2)
        // Every call planned for its own values (a generic plan cannot see an array's length).
        #expect(try c.exec("SHOW plan_cache_mode").rows == [["force_custom_plan"]])
    }

    /// The registry's slowly changing tables are read on a generic plan made once; every other
    /// statement, and those reads inside an explicit transaction, are planned per call; the
    /// setting ends with the read.
    @Test func readsOnGenericPlansAndEveryOtherStatementIsPlannedPerCall() throws {
        let c = try Self.connection()
        for k in 1...20 { try c.exec("INSERT INTO t (k, v) VALUES ($1, $2)", [.int(Int64(k)), .text("value \(k)")]) }
        let cached = "SELECT v FROM t WHERE k = ANY($1::integer[])"
        let perCall = "SELECT v FROM t WHERE k = ANY($1::integer[]) ORDER BY v"
        for k in 1...8 {
            #expect(try c.execOnGenericPlan(cached, [.text("{\(k)}")]).rows == [["value \(k)"]])
            #expect(try c.exec(perCall, [.text("{\(k)}")]).rows == [["value \(k)"]])
            #expect(!c.committing)
        }
        func plans(_ sql: String) throws -> (generic: Int64?, custom: Int64?) {
            let r = try c.exec("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", [.text(sql)])
            return (try r.int(0, 0), try r.int(0, 1))
        }
        let afterCached = try plans(cached)
        #expect(afterCached.generic == 8 && afterCached.custom == 0, "\(afterCached)")
        #expect(try plans(perCall).generic == 0 && plans(perCall).custom == 8)
        #expect(try c.exec("SHOW plan_cache_mode").rows == [["force_custom_plan"]])
        try c.exec("BEGIN")
        _ = try c.execOnGenericPlan(cached, [.text("{1}")])
        try c.exec("COMMIT")
        #expect(try plans(cached).generic == afterCached.generic)
    }

    @Test func aFailingPreparedStatementInATransactionLeavesTheConnectionUsableAfterRollback() throws {
        let c = try Self.connection()
        try c.exec("INSERT INTO t (k, v) VALUES ($1, $2)", [.int(1), .text("one")])
        try c.exec("BEGIN")
        #expect(throws: RegistryError.self) { try c.exec("INSERT INTO t (k, v) VALUES ($1, $2)", [.int(1), .text("again")]) }
        // A new text in the aborted transaction is not prepared (only ROLLBACK may follow).
        #expect(throws: RegistryError.self) { try c.exec("SELECT v FROM t WHERE k = $1", [.int(1)]) }
        try c.exec("ROLLBACK")
        #expect(try c.exec("SELECT v FROM t WHERE k = $1", [.int(1)]).rows == [["one"]])
        // A statement the server refuses to prepare throws its own error, not another.
        let e = #expect(throws: RegistryError.self) { try c.exec("SELECT nope FROM t WHERE k = $1", [.int(1)]) }
        #expect(e?.sqlState == "42703")
        #expect(try c.exec("SELECT count(*) FROM t WHERE k > $1", [.int(0)]).int(0, 0) == 1)
    }

    @Test func aPipelineIsOneTransactionWhoseLocalSettingHoldsForTheStatementsAfterIt() throws {
        let c = try Self.connection()
        let answers = try c.pipeline([
            ("SELECT set_config('enable_bitmapscan', 'off', true)", []),
            ("SELECT current_setting('enable_bitmapscan') || $1", [.text("!")]),
            ("INSERT INTO t (k, v) VALUES ($1, $2) RETURNING k", [.int(7), .text("seven")]),
        ])
        #expect(answers.count == 3)
        #expect(answers[1].rows == [["off!"]])
        #expect(answers[2].rows == [["7"]])
        #expect(!c.committing)
        // The setting ended with the pipeline's transaction; the insert was committed.
        #expect(try c.exec("SHOW enable_bitmapscan").rows == [["on"]])
        #expect(try PGConnection(try Self.otherConnectionString(c)).exec("SELECT v FROM t WHERE k = $1", [.int(7)]).rows == [["seven"]])
    }

    @Test func aFailureInAPipelineRollsBackEveryStatementAndThrowsItsOwnError() throws {
        let c = try Self.connection()
        try c.exec("INSERT INTO t (k, v) VALUES ($1, $2)", [.int(1), .text("one")])
        let e = #expect(throws: RegistryError.self) {
            try c.pipeline([
                ("INSERT INTO t (k, v) VALUES ($1, $2)", [.int(2), .text("two")]),
                ("INSERT INTO t (k, v) VALUES ($1, $2)", [.int(1), .text("duplicate")]),
                ("INSERT INTO t (k, v) VALUES ($1, $2)", [.int(3), .text("three")]),
            ])
        }
        #expect(e?.code == .query)
        #expect(e?.sqlState == "23505")
        #expect(!c.committing)
        #expect(try c.exec("SELECT k FROM t ORDER BY k").rows == [["1"]])
        // The connection is usable at once, in and out of a pipeline.
        #expect(try c.pipeline([("SELECT count(*) FROM t WHERE k >= $1", [.int(1)])])[0].rows == [["1"]])
    }

    /// The connection string of `c`'s database (a second connection sees only what was committed).
    static func otherConnectionString(_ c: PGConnection) throws -> String {
        let server = try PostgresServer.sharedServer()
        guard let db = try c.exec("SELECT current_database()").rows.first?.first ?? nil else { throw TestFailure("no database name") }
        return server.connectionString(database: db)
    }
}
