import Foundation
import Testing
import PushSealSystem
import PushSealTestSupport

/// Standard error of a child, read on a thread into a buffer the test polls (a full pipe would
/// stall the child's log writes).
final class ChildLog: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""
    private let done = DispatchSemaphore(value: 0)

    init(_ pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        Thread {
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                self.lock.withLock { self.text += String(decoding: chunk, as: UTF8.self) }
            }
            self.done.signal()
        }.start()
    }

    /// Everything read so far.
    var contents: String { lock.withLock { text } }

    /// The JSON lines read so far.
    var events: [[String: Any]] {
        contents.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Waits for the writer to close (the child exited); returns at once after the first time.
    func waitForEnd() {
        done.wait()
        done.signal()
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

/// Runs `push-gateway` with `arguments` expecting it to exit (a refusal): its status and
/// standard error; a child still running after `seconds` is killed and reported as -1.
func runGatewayExpectingExit(_ arguments: [String], seconds: Double = 60) throws -> (status: Int32, stderr: String) {
    let tool = try #require(builtTool("push-gateway"), "push-gateway is not built")
    let p = Process()
    p.executableURL = tool
    p.arguments = arguments
    let err = Pipe()
    p.standardError = err
    p.standardOutput = FileHandle.nullDevice
    p.standardInput = FileHandle.nullDevice
    let log = ChildLog(err)
    try p.run()
    if !waitUntil(seconds: seconds, every: 0.05, { !p.isRunning }) {
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        log.waitForEnd()
        return (-1, log.contents)
    }
    p.waitUntilExit()
    log.waitForEnd()
    return (p.terminationStatus, log.contents)
}

/// A `push-gateway serve` child: started, waited for until it logs `listening`, stopped by
/// SIGTERM or SIGKILL.
final class GatewayChild: @unchecked Sendable {
    let process = Process()
    let log: ChildLog
    private(set) var port = 0

    /// Starts `push-gateway serve` with `arguments` (after `serve`).
    init(_ arguments: [String]) throws {
        let tool = try #require(builtTool("push-gateway"), "push-gateway is not built")
        process.executableURL = tool
        process.arguments = ["serve"] + arguments
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        log = ChildLog(err)
        try process.run()
        let start = monotonicNanoseconds()
        waitUntil(seconds: 120) { !process.isRunning || log.events.contains { $0["event"] as? String == "listening" } }
        guard let listening = log.events.first(where: { $0["event"] as? String == "listening" }), let p = listening["port"] as? Int else {
            // Still running without having listened (a start slower than the wait, on a loaded
            // machine): killed, so the test fails with its log instead of waiting for an exit
            // that never comes.
            let running = process.isRunning
            if running { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            log.waitForEnd()
            if running {
                throw TestFailure("push-gateway serve did not log listening within \((monotonicNanoseconds() - start) / 1_000_000_000) s (killed): \(log.contents.suffix(2000))")
            }
            throw TestFailure("push-gateway serve did not start (exit \(process.terminationStatus)): \(log.contents.suffix(2000))")
        }
        port = p
    }

    /// The `outcome` lines logged so far.
    var outcomes: [[String: Any]] { log.events.filter { $0["event"] as? String == "outcome" } }

    /// SIGTERM and the exit status.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        log.waitForEnd()
        return process.terminationStatus
    }

    /// SIGKILL, waited for.
    func kill9() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        log.waitForEnd()
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
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
        let created = try runTool(tool, ["keys", "create", "--registry", cs, "--name", "ci", "--scope", "send,register,admin"])
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
