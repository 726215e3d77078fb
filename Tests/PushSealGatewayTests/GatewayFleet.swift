import Foundation
import Testing
import PushSealSystem
import PushSealTestSupport

/// Standard error of a child, read on a thread into a buffer the test polls (a full pipe would
/// stall the child's log writes).
final class ChildLog: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""
    private var ended = false
    private let source: FileDescriptor

    /// Reads `source` (the parent's read end of the child's standard error) until end of file,
    /// then closes it.
    init(_ source: FileDescriptor) {
        self.source = source
        Thread {
            let source = self.source
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let n = (try? buffer.withUnsafeMutableBytes { try source.read(into: $0) }) ?? 0
                if n == 0 { break }
                let chunk = String(decoding: buffer[..<n], as: UTF8.self)
                self.lock.withLock { self.text += chunk }
            }
            source.close()
            self.lock.withLock { self.ended = true }
        }.start()
    }

    /// Everything read so far.
    var contents: String { lock.withLock { text } }

    /// The JSON lines read so far.
    var events: [[String: Any]] {
        contents.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Waits up to `seconds` for end of file (every writer closed: the child and anything it
    /// left running); whether it came.
    @discardableResult
    func waitForEnd(seconds: Double = 30) -> Bool {
        waitUntil(seconds: seconds, every: 0.01) { lock.withLock { ended } }
    }
}

/// Polls `condition` until it holds or `seconds` pass (waiting for an event, not a fixed time).
@discardableResult
func waitUntil(seconds: Double, every pause: Double = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
    let start = monotonicNanoseconds()
    while Double(monotonicNanoseconds() - start) / 1e9 < seconds {
        if try condition() { return true }
        pauseThread(seconds: pause)
    }
    return try condition()
}

/// A `push-gateway` child started with `posix_spawn` (``ChildProcess``: only descriptors 0–2
/// open, a clean signal state) and reaped by its own pid. Not Foundation's `Process`: on Linux
/// its monitor thread reaps children one at a time with a blocking `wait4`, so a gateway still
/// running could keep the exit of another from being noticed, and a test waiting for that exit
/// before it stopped the first hung (seen in `GatewayChaosTests`). Every wait here has a
/// deadline.
final class GatewayProcess: @unchecked Sendable {
    private let child: ChildProcess
    let log: ChildLog
    private let lock = NSLock()
    private var exit: Int32?

    /// Starts `push-gateway` with `arguments`; standard input and output are `/dev/null`,
    /// standard error goes to ``log``.
    init(_ arguments: [String]) throws {
        let tool = try #require(builtTool("push-gateway"), "push-gateway is not built")
        let pipe = try FileDescriptor.makePipe()
        guard let child = ChildProcess.spawn([tool.path] + arguments, stderr: .descriptor(pipe.write.rawValue)) else {
            throw TestFailure("cannot start \(tool.path)")
        }
        pipe.write.close()
        self.child = child
        log = ChildLog(pipe.read)
    }

    /// The child's pid.
    var pid: Int32 { child.pid }

    /// The exit status (128 + the signal for a signal) once the child has ended, else `nil`.
    var status: Int32? {
        lock.withLock {
            if exit == nil, let ended = child.poll() { exit = ended.status }
            return exit
        }
    }

    /// Whether the child has not ended yet.
    var isRunning: Bool { status == nil }

    /// Sends `signal` unless the child has ended (and been reaped: its pid could be reused).
    func signal(_ signal: Int32) {
        lock.withLock { if exit == nil { child.send(signal) } }
    }

    /// Waits up to `seconds` for the child to end, then (still running) SIGKILLs it and waits
    /// for that; then waits for the end of its log. The status, or `nil` when it outlived the
    /// wait and had to be killed.
    @discardableResult
    func waitForExit(seconds: Double) -> Int32? {
        let ended = waitUntil(seconds: seconds, every: 0.01) { status != nil }
        if !ended {
            signal(SIGKILL)
            waitUntil(seconds: 60, every: 0.01) { status != nil }
        }
        log.waitForEnd()
        return ended ? status : nil
    }

    deinit { signal(SIGKILL); _ = waitUntil(seconds: 10, every: 0.01) { status != nil } }
}

/// Runs `push-gateway` with `arguments` expecting it to exit (a refusal): its status and
/// standard error; a child still running after `seconds` is killed and reported as -1.
func runGatewayExpectingExit(_ arguments: [String], seconds: Double = 60) throws -> (status: Int32, stderr: String) {
    let p = try GatewayProcess(arguments)
    let status = p.waitForExit(seconds: seconds) ?? -1
    return (status, p.log.contents)
}

/// A `push-gateway serve` child: started, waited for until it logs `listening`, stopped by
/// SIGTERM or SIGKILL.
final class GatewayChild: @unchecked Sendable {
    let process: GatewayProcess
    private(set) var port = 0

    /// The child's standard error.
    var log: ChildLog { process.log }

    /// Starts `push-gateway serve` with `arguments` (after `serve`).
    init(_ arguments: [String]) throws {
        process = try GatewayProcess(["serve"] + arguments)
        let start = monotonicNanoseconds()
        let log = process.log
        waitUntil(seconds: 120) { !process.isRunning || log.events.contains { $0["event"] as? String == "listening" } }
        guard let listening = log.events.first(where: { $0["event"] as? String == "listening" }), let p = listening["port"] as? Int else {
            // Still running without having listened (a start slower than the wait, on a loaded
            // machine): killed, so the test fails with its log.
            let status = process.waitForExit(seconds: 0)
            if status == nil {
                throw TestFailure("push-gateway serve did not log listening within \((monotonicNanoseconds() - start) / 1_000_000_000) s (killed): \(log.contents.suffix(2000))")
            }
            throw TestFailure("push-gateway serve did not start (exit \(status ?? -1)): \(log.contents.suffix(2000))")
        }
        port = p
    }

    /// The `outcome` lines logged so far.
    var outcomes: [[String: Any]] { log.events.filter { $0["event"] as? String == "outcome" } }

    /// SIGTERM and the exit status; -1 when it did not exit within 120 s (then SIGKILLed).
    @discardableResult
    func stop() -> Int32 {
        process.signal(SIGTERM)
        return process.waitForExit(seconds: 120) ?? -1
    }

    /// SIGKILL, waited for.
    func kill9() {
        process.signal(SIGKILL)
        process.waitForExit(seconds: 60)
    }
}

/// A database made ready for gateway children: a KEK file, the schema (`push-gateway migrate`),
/// an API key with every scope; the mock APNs the children send to.
final class GatewayFleet: @unchecked Sendable {
    static let appID = MockAPNs.topic
    let dir: TemporaryDirectory
    let cs: String
    let kek: String
    let apiKey: String
    let mock: MockAPNs

    /// - Parameters:
    ///   - server: the PostgreSQL to make the database in.
    ///   - mockConfig: members merged over the mock's defaults (`badTokens`, `unregistered`).
    init(server: PostgresServer, mockConfig: [String: Any] = [:]) throws {
        dir = try TemporaryDirectory("gateway-fleet")
        cs = try server.createDatabase()
        kek = dir.appending("kek").path
        guard FileManager.default.createFile(atPath: kek, contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }),
                                             attributes: [.posixPermissions: 0o600]) else { throw TestFailure("cannot write the KEK") }
        let tool = try #require(builtTool("push-gateway"))
        let migrated = try runTool(tool, ["migrate", "--registry", cs, "--kek-file", kek])
        guard migrated.status == 0 else { throw TestFailure("migrate: \(migrated.stderr)") }
        let created = try runTool(tool, ["keys", "create", "--registry", cs, "--kek-file", kek, "--name", "ci", "--scope", "send,register,admin"])
        guard created.status == 0 else { throw TestFailure("keys create: \(created.stderr)") }
        apiKey = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        mock = try MockAPNs(mockConfig, kind: .native)
    }

    /// The arguments of an instance sending to the mock (development tokens), plus `extra`.
    func serveArguments(_ extra: [String] = []) -> [String] {
        ["--registry", cs, "--kek-file", kek, "--app-id", Self.appID, "--listen", "127.0.0.1:0",
         "--rate", "1000000", "--burst", "1000000", "--drain-seconds", "5", "--environment", "development",
         "--p8", mock.p8Path, "--key-id", MockAPNs.keyID, "--team-id", MockAPNs.teamID,
         "--host", "127.0.0.1:\(mock.port)", "--ca-file", mock.caFile] + extra
    }

    /// Starts an instance.
    func start(_ extra: [String] = ["--threads", "2"]) throws -> GatewayChild { try GatewayChild(serveArguments(extra)) }

    /// `Authorization` and `Content-Type` for the API key.
    var headers: [(String, String)] { [("Authorization", "Bearer \(apiKey)"), ("Content-Type", "application/json")] }

    /// Registers `recipient` through `POST /v1/devices` with the API key.
    func register(port: Int, recipient: String, deviceToken: String, upload: [UInt8]? = nil) throws {
        let body = try upload ?? GatewayEndToEndTests.upload(token: deviceToken)
        let r = try #require(try rawHTTP(port: UInt16(port), "POST", "/v1/devices?recipient=\(recipient)", headers: headers, body: body))
        guard r.status == 201 || r.status == 200 else { throw TestFailure("register \(recipient): \(r.status) \(r.text)") }
    }

    /// `POST /v1/notifications` of `json`; the ids queued, in order.
    func send(port: Int, _ json: String, idempotencyKey: String? = nil) throws -> [String] {
        var h = headers
        if let idempotencyKey { h.append(("Idempotency-Key", idempotencyKey)) }
        let r = try #require(try rawHTTP(port: UInt16(port), "POST", "/v1/notifications", headers: h, body: Array(json.utf8)))
        guard r.status == 202, let items = r.json?["notifications"] as? [[String: Any]] else { throw TestFailure("send: \(r.status) \(r.text)") }
        return items.compactMap { $0["id"] as? String }
    }

    /// `GET /v1/notifications/{id}`'s JSON.
    func status(port: Int, _ id: String) throws -> [String: Any]? {
        try rawHTTP(port: UInt16(port), "GET", "/v1/notifications/\(id)", headers: [headers[0]])?.json
    }

    /// `GET /metrics`' text.
    func metrics(port: Int) throws -> String {
        try #require(try rawHTTP(port: UInt16(port), "GET", "/metrics", headers: [headers[0]])).text
    }

    deinit {
        mock.stop()
        dir.remove()
    }
}

/// The value of the unlabelled metric `name` in Prometheus text.
func metricValue(_ text: String, _ name: String) -> Double? {
    for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
        return Double(line.dropFirst(name.count + 1))
    }
    return nil
}
