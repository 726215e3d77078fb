import Foundation
import PushSealSystem

/// A throwaway PostgreSQL for the tests: `initdb` into a temporary directory, a Unix socket in
/// that directory (no TCP listener at all), started and stopped with `pg_ctl`. PostgreSQL refuses
/// to run as root, so under root (CI) the server runs as the unprivileged system user
/// `pushseal-test` (made by scripts/install-deps.sh) and the directory is owned by it.
///
/// Stopped when the test process exits (`atexit`), and by a watchdog process that stops it if the
/// test process dies without exiting normally (a crash, SIGKILL), so no server is left running.
///
/// Foundation only: PushSealAPNsTests uses the same file (a symlink) for the device token loop
/// on the registry; the registry fixtures are in RegistryFixtures.swift.
final class PostgresServer: @unchecked Sendable {
    // @unchecked: every property is immutable after init; stop() is idempotent through `stopped`,
    // guarded by `lock`.
    let dir: URL
    let bin: URL
    let user: String?
    private let lock = NSLock()
    private var stopped = false

    /// The server every suite shares (each test makes its own database in it).
    static let shared: Result<PostgresServer, any Error> = Result { try PostgresServer() }

    static func sharedServer() throws -> PostgresServer { try shared.get() }

    static var binDirectory: URL? {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).compactMap(Int.init).sorted()
        for v in versions.reversed() {
            let b = root.appendingPathComponent("\(v)/bin")
            if FileManager.default.isExecutableFile(atPath: b.appendingPathComponent("initdb").path) { return b }
        }
        return nil
    }

    init() throws {
        guard let bin = Self.binDirectory else {
            throw TestFailure("PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin: run scripts/install-deps.sh (Debian package postgresql)")
        }
        self.bin = bin
        user = getuid() == 0 ? "pushseal-test" : nil
        if let user, getpwnam(user) == nil {
            throw TestFailure("running as root, PostgreSQL needs the unprivileged user \(user): run scripts/install-deps.sh")
        }
        dir = URL(fileURLWithPath: "/tmp").appendingPathComponent("pushseal-pg-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        if let user, let pw = getpwnam(user) {
            guard chown(dir.path, pw.pointee.pw_uid, pw.pointee.pw_gid) == 0 else { throw TestFailure("cannot chown \(dir.path) to \(user)") }
        }
        try run("initdb", ["-D", dataDir, "-U", "pushseal", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
        Self.register(self)
        startWatchdog()
        try start()
    }

    var dataDir: String { dir.appendingPathComponent("data").path }
    var socketDir: String { dir.path }

    /// `host=DIR user=pushseal dbname=NAME`: the Unix socket only.
    func connectionString(database: String) -> String { "host=\(socketDir) port=5432 user=pushseal dbname=\(database)" }

    /// Starts (or restarts after ``stopServer()``) the server and waits until it accepts connections.
    func start() throws {
        try run("pg_ctl", ["-D", dataDir, "-l", dir.appendingPathComponent("log").path, "-w", "-t", "60",
                           "-o", "-k \(socketDir) -c listen_addresses= -c port=5432 -F -c max_connections=200", "start"])
    }

    /// Stops the server (fast shutdown: connections are closed), leaving the data directory.
    func stopServer() throws { try run("pg_ctl", ["-D", dataDir, "-w", "-t", "60", "-m", "fast", "stop"]) }

    /// A fresh, empty database; returns its connection string.
    func createDatabase() throws -> String {
        let name = "t_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        try run("psql", ["-X", "-q", "-h", socketDir, "-p", "5432", "-U", "pushseal", "-d", "postgres", "-c", "CREATE DATABASE \(name)"], asServerUser: false)
        return connectionString(database: name)
    }

    /// Runs psql with `sql` on the database of `connectionString`; returns its output.
    @discardableResult
    func psql(_ connectionString: String, _ sql: String) throws -> String {
        try run("psql", ["-X", "-q", "-At", "-d", connectionString, "-c", sql], asServerUser: false)
    }

    /// Runs a PostgreSQL program from the server's bin directory (as the server user for the
    /// server's own programs), returning stdout; throws with stderr on failure.
    @discardableResult
    func run(_ program: String, _ args: [String], asServerUser: Bool = true) throws -> String {
        let exe = bin.appendingPathComponent(program).path
        let argv = (asServerUser && user != nil) ? ["/usr/sbin/runuser", "-u", user ?? "", "--", exe] + args : [exe] + args
        let r = try spawn(argv)
        guard r.status == 0 else {
            throw TestFailure("\(program) \(args.joined(separator: " ")) exited \(r.status): \(r.stderr)")
        }
        return r.stdout
    }

    /// Stops the server for good and removes its directory. Idempotent.
    func stop() {
        lock.lock()
        let was = stopped
        stopped = true
        lock.unlock()
        guard !was else { return }
        _ = try? run("pg_ctl", ["-D", dataDir, "-w", "-t", "30", "-m", "immediate", "stop"])
        try? FileManager.default.removeItem(at: dir)
    }

    /// A detached shell that waits for this process to go away, then stops the server: the
    /// safety net for a test process that dies without running its `atexit` handlers.
    private func startWatchdog() {
        let stop = (user.map { "/usr/sbin/runuser -u \($0) -- " } ?? "") + "\(bin.path)/pg_ctl -D \(dataDir) -m immediate stop"
        // Never waited for: it outlives this process on purpose (ChildProcess keeps no monitor
        // thread, and its descriptors are only /dev/null).
        _ = ChildProcess.spawn(["/bin/sh", "-c", "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(stop) >/dev/null 2>&1; rm -rf \(dir.path)"])
    }

    private nonisolated(unsafe) static var servers: [PostgresServer] = []
    private static let serversLock = NSLock()

    private static func register(_ s: PostgresServer) {
        serversLock.lock()
        let first = servers.isEmpty
        servers.append(s)
        serversLock.unlock()
        if first { atexit { PostgresServer.stopAll() } }
    }

    static func stopAll() {
        serversLock.lock()
        let all = servers
        serversLock.unlock()
        for s in all { s.stop() }
    }
}

/// A test precondition that failed (no PostgreSQL, a tool exiting non-zero).
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Runs `argv` (posix_spawn, waitpid: no Foundation run loop), stdin from /dev/null, stdout
/// and stderr into temporary files (`pg_ctl start` leaves the server holding inherited
/// descriptors, so pipes would never reach end-of-file).
func spawn(_ argv: [String], environment: [String]? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
    let base = NSTemporaryDirectory() + "pushseal-pg-run-\(UUID().uuidString)"
    defer { unlink(base + ".out"); unlink(base + ".err") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, base + ".out", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, base + ".err", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    // Nothing else of the test process's: `pg_ctl start` leaves a server running, which would
    // otherwise hold another child's pipe end (its reader would not see end of file) for good.
    closeFrom3(&actions)
    var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
    defer { for a in cargs { free(a) } }
    var pid: pid_t = 0
    var cenv: [UnsafeMutablePointer<CChar>?] = (environment ?? []).map { strdup($0) } + [nil]
    defer { for e in cenv { free(e) } }
    let rc = environment == nil ? posix_spawn(&pid, argv[0], &actions, nil, &cargs, environ) : posix_spawn(&pid, argv[0], &actions, nil, &cargs, &cenv)
    guard rc == 0 else { throw TestFailure("cannot run \(argv[0]): \(String(cString: strerror(rc)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let out = String(decoding: FileManager.default.contents(atPath: base + ".out") ?? Data(), as: UTF8.self)
    let err = String(decoding: FileManager.default.contents(atPath: base + ".err") ?? Data(), as: UTF8.self)
    let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return (code, out, err)
}

/// A child process whose stdout is a pipe read line by line (posix_spawn; stderr to /dev/null).
final class PipedChild {
    let pid: pid_t
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var eof = false

    init(_ argv: [String]) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw TestFailure("pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_addclose(&actions, fds[1])
        closeFrom3(&actions)
        var cargs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for a in cargs { free(a) } }
        var p: pid_t = 0
        let rc = posix_spawn(&p, argv[0], &actions, nil, &cargs, environ)
        close(fds[1])
        guard rc == 0 else { close(fds[0]); throw TestFailure("cannot run \(argv[0]): \(String(cString: strerror(rc)))") }
        pid = p
        fd = fds[0]
    }

    /// The next line of stdout (blocking), or `nil` at end of file.
    func readLine() -> String? {
        while true {
            if let i = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<i], as: UTF8.self)
                buffer.removeSubrange(...i)
                return line
            }
            if eof { return nil }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { eof = true; continue }
            buffer += chunk[0..<n]
        }
    }

    /// Every remaining line, then the exit status (128 + signal for a killed child).
    func finish() -> (lines: [String], status: Int32) {
        var lines: [String] = []
        while let l = readLine() { lines.append(l) }
        return (lines, wait())
    }

    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        close(fd)
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
