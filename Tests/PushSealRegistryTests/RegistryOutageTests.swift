import Foundation
import PushSealCrypto
import PushSealKeyRecords
import PushSealServerKeys
@testable import PushSealRegistry
import PushSealSystem
import PushSealWire
import Testing

/// Reliability review R6: a registry outage longer than the reconnect wait costs one wait per
/// process, not one per recipient and line, and SIGTERM cuts the back-off short; R8: a connection
/// lost under a statement is retried (or 69/75), never a statement error. Each test stops its own
/// PostgreSQL server (the shared one must not stop under other tests).
@Suite(.serialized) struct RegistryOutageTests {
    static let app = "com.example.app"

    /// A Unix socket listening where the stopped server's was: every connection attempt is
    /// accepted and closed at once (libpq: "server closed the connection unexpectedly"), and
    /// counted, so a test sees a client retrying without sleeping.
    final class FakeServerSocket: @unchecked Sendable {
        let path: String
        let fd: Int32
        let attempts = DispatchSemaphore(value: 0)

        init(path: String) throws {
            self.path = path
            unlink(path)
            let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { p in
                for (i, b) in path.utf8.prefix(p.count - 1).enumerated() { p[i] = b }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard s >= 0, bound == 0, listen(s, 64) == 0 else { throw TestFailure("cannot listen on \(path)") }
            fd = s
            chmod(path, 0o777)
            let attempts = self.attempts
            Thread.detachNewThread {
                while true {
                    let c = accept(s, nil, nil)
                    if c < 0 { if errno == EINTR { continue }; return }
                    Glibc.close(c)
                    attempts.signal()
                }
            }
        }

        /// Waits for `n` more connection attempts.
        func waitForAttempts(_ n: Int) { for _ in 0..<n { attempts.wait() } }

        func close() {
            shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
            unlink(path)
        }
    }

    /// A server of its own with `recipients` v1 keysets, a KEK file, and a store on it.
    static func setUp(recipients: [String], wait: Double) throws -> (PostgresServer, String, String, PostgresKeyStore) {
        let server = try PostgresServer()
        let cs = try server.createDatabase()
        _ = try PostgresKeyStore.migrate(connectionString: cs)
        let kek = KeyEncryptionKey.generate()
        let kekPath = try Registry.kekFile(kek)
        let store = try PostgresKeyStore(connectionString: cs, kek: kek, reconnectWaitSeconds: wait)
        for r in recipients { try store.generate(appID: app, recipient: r, now: KeyTime.now()) }
        return (server, cs, kekPath, store)
    }

    @Test func aLongOutageCostsOneWaitThenEveryCallFailsAtOnceUntilTheServerAnswers() throws {
        let names = (0..<20).map { "r\($0)" }
        let (server, _, _, store) = try Self.setUp(recipients: names, wait: 0.5)
        defer { server.stop() }
        try server.stopServer()
        store.closeIdleConnections()
        #expect(throws: RegistryError.self) { try store.sealingPrimary(appID: Self.app, recipient: "r0") }
        #expect(store.pool.isMarkedDown)
        let pauses = store.pool.backoffPauses.withLock { $0 }
        #expect(pauses > 0, "the first call waited with back-off")
        for r in names.dropFirst() {
            do {
                _ = try store.sealingPrimary(appID: Self.app, recipient: r)
                Issue.record("\(r) sealed during the outage")
            } catch let e as RegistryError {
                #expect(e.code == .unavailable && e.reason.contains("failing at once"), "\(e)")
            }
        }
        #expect(store.pool.backoffPauses.withLock { $0 } == pauses, "no call waited again")
        try server.start()
        #expect(try store.sealingPrimary(appID: Self.app, recipient: "r1").keyID.count > 0, "one attempt per call: it answers again")
        #expect(!store.pool.isMarkedDown)
    }

    /// The acceptance of R6 through the built tool: during an outage `push-seal batch` fails
    /// every line (keyStoreUnreadable, exit 2) after one reconnect wait — 0031154 waited 30 s per
    /// recipient (here 20 recipients: 10 minutes; the watchdog ends it at 150 s) — and SIGTERM
    /// during the back-off ends the batch within 5 s (exit 130).
    @Test func aBatchFailsItsLinesDuringAnOutageAndStopsOnSIGTERM() throws {
        let names = (0..<20).map { "r\($0)" }
        let (server, cs, kekPath, _) = try Self.setUp(recipients: ["alice", "bob"] + names, wait: 30)
        defer { server.stop() }
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-outage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: dir) }
        func line(_ r: String) -> String { "{\"recipient\":\"\(r)\",\"notification\":{\"title\":\"hi\",\"body\":\"there\"}}\n" }

        /// Starts a batch reading a FIFO; returns the child and the FIFO's write end, after the
        /// first line (alice, database up) came out sealed.
        func startBatch(_ name: String) throws -> (PipedChild, FileHandle) {
            let fifo = dir.appendingPathComponent(name).path
            guard mkfifo(fifo, 0o600) == 0 else { throw TestFailure("mkfifo") }
            let child = try PipedChild(["/bin/sh", "-c", "exec \"$@\" < \"$0\"", fifo, RegistryCLITests.tool("push-seal"), "batch",
                                        "--app-id", Self.app, "--registry", cs, "--kek-file", kekPath])
            let input = try #require(FileHandle(forWritingAtPath: fifo))
            input.write(Data(line("alice").utf8))
            let first = try #require(child.readLine())
            #expect(first.contains("\"encrypted_data\""), "\(first)")
            return (child, input)
        }
        func watchdog(_ child: PipedChild, seconds: Double) -> Locked<Bool> {
            let finished = Locked(false)
            let pid = child.pid
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                finished.withLock { if !$0 { kill(pid, SIGKILL) } }
            }
            return finished
        }
        let socketPath = "\(server.socketDir)/.s.PGSQL.5432"

        // A: the outage fails every line, after one wait.
        var (child, input) = try startBatch("a")
        try server.stopServer()
        var fake = try FakeServerSocket(path: socketPath)
        for r in names { for _ in 0..<5 { input.write(Data(line(r).utf8)) } }
        try input.close()
        var finished = watchdog(child, seconds: 150)
        var (lines, status) = child.finish()
        finished.withLock { $0 = true }
        #expect(status == 2, "exit \(status) (137: still stalled after 150 s)")
        #expect(lines.count == 100 && lines.allSatisfy { $0.contains("keyStoreUnreadable") }, "\(lines.count) lines: \(lines.prefix(2))")
        fake.close()

        // B: SIGTERM during the back-off ends the batch within 5 s.
        try server.start()
        (child, input) = try startBatch("b")
        try server.stopServer()
        fake = try FakeServerSocket(path: socketPath)
        defer { fake.close() }
        input.write(Data(line("bob").utf8))
        fake.waitForAttempts(2)  // bob's lookup failed once and is retrying: it is in its back-off
        kill(child.pid, SIGTERM)
        finished = watchdog(child, seconds: 5)
        (lines, status) = child.finish()
        finished.withLock { $0 = true }
        try? input.close()
        #expect(status == 130, "exit \(status) (137: SIGTERM did not end the batch within 5 s)")
        #expect(lines.count == 1 && lines.first?.contains("keyStoreUnreadable") == true, "\(lines)")
    }

    /// A PostgreSQL server of a few bytes on a Unix socket: it takes the startup message, answers
    /// AuthenticationOk and ReadyForQuery, then answers the first statement with an error
    /// that has no SQLSTATE — what libpq reports when the connection failed while the statement
    /// was sent ("server closed the connection unexpectedly") — and closes.
    final class NoSQLStateServer: @unchecked Sendable {
        let directory: String
        let fd: Int32

        init() throws {
            directory = NSTemporaryDirectory() + "pgfake-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            let path = directory + "/.s.PGSQL.5432"
            let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { p in
                for (i, b) in path.utf8.prefix(p.count - 1).enumerated() { p[i] = b }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard s >= 0, bound == 0, listen(s, 8) == 0 else { throw TestFailure("cannot listen on \(path)") }
            fd = s
            Thread.detachNewThread {
                while true {
                    let c = accept(s, nil, nil)
                    if c < 0 { if errno == EINTR { continue }; return }
                    Self.serve(c)
                    Glibc.close(c)
                }
            }
        }

        var connectionString: String { "host=\(directory) port=5432 user=x dbname=x" }

        static func serve(_ c: Int32) {
            func readExactly(_ n: Int) -> [UInt8]? {
                var out = [UInt8](repeating: 0, count: n), got = 0
                while got < n {
                    let r = out.withUnsafeMutableBytes { read(c, $0.baseAddress! + got, n - got) }
                    if r <= 0 { return nil }
                    got += r
                }
                return out
            }
            func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { write(c, $0.baseAddress, $0.count) } }
            func message(_ type: Character, _ body: [UInt8]) -> [UInt8] {
                let n = UInt32(body.count + 4)
                return [UInt8(ascii: type.unicodeScalars.first!), UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + body
            }
            guard let length = readExactly(4) else { return }
            let n = Int(length[0]) << 24 | Int(length[1]) << 16 | Int(length[2]) << 8 | Int(length[3])
            guard n >= 8, readExactly(n - 4) != nil else { return }
            send(message("R", [0, 0, 0, 0]) + message("Z", [UInt8(ascii: "I")]))
            var buffer = [UInt8](repeating: 0, count: 65536)
            // The connection's own setting (`SET plan_cache_mode …`) succeeds; the statement after it fails.
            _ = buffer.withUnsafeMutableBytes { read(c, $0.baseAddress, $0.count) }
            send(message("C", Array("SET".utf8) + [0]) + message("Z", [UInt8(ascii: "I")]))
            _ = buffer.withUnsafeMutableBytes { read(c, $0.baseAddress, $0.count) }
            let fields = Array("SERROR".utf8) + [0] + Array("Mserver closed the connection unexpectedly".utf8) + [0, 0]
            send(message("E", fields) + message("Z", [UInt8(ascii: "I")]))
        }

        func close() {
            shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// R8: a statement failing without a SQLSTATE (libpq's own error: the connection failed
    /// while it was sent) is a lost connection — `.unavailable` (69, retried within the wait) —
    /// never a statement error (`.query`, exit 1, which 0031154 reported).
    @Test func aFailureWithoutASQLStateIsALostConnection() throws {
        let fake = try NoSQLStateServer()
        defer { fake.close() }
        let pool = ConnectionPool(conninfo: fake.connectionString, reconnectWaitSeconds: 0)
        do {
            _ = try pool.run { c in try c.exec("SELECT 1") }
            Issue.record("the statement succeeded")
        } catch let e as RegistryError {
            #expect(e.code == .unavailable, "\(e)")
        }
    }

    /// R8: the backend of a pooled connection dies (SIGKILL: no error message, libpq sees the
    /// connection close under the next statement); the statement is retried on a new
    /// connection once the server is back, never reported as a statement error (exit 1).
    @Test func aConnectionLostUnderAStatementIsRetried() throws {
        let (server, _, _, store) = try Self.setUp(recipients: ["alice"], wait: 60)
        defer { server.stop() }
        let pid = try store.pool.run { c in try c.exec("SELECT pg_backend_pid()").int(0, 0) } ?? 0
        #expect(pid > 0)
        kill(pid_t(pid), SIGKILL)
        // The next statement goes out on the same (idle, now dead) connection.
        let rotated = try store.rotate(appID: Self.app, recipient: "alice", graceSeconds: 60, device: nil, promote: true, now: KeyTime.now(), afterStep: { _ in })
        #expect(try store.sealingPrimary(appID: Self.app, recipient: "alice").keyID == rotated.keyID)
    }
}
