import Foundation
import Testing
@testable import PushSealAPNs
import PushSealSystem
import PushSealTestSupport

/// A mock APNs in a child process: started with a config, waited for until it prints
/// `listening PORT CAFILE`, stopped by ``stop()`` (and by the end of its standard input if the
/// test process dies). `.node` is Tests/MockAPNs/mock-apns.mjs (Node's http2, every config member
/// including the fault scripts); `.native` is Tests/MockAPNs/native (C on libnghttp2, the same
/// answers without fault scripts), built into .build/mock-apns-native by scripts/build-mock-apns.sh.
final class MockAPNs: @unchecked Sendable {
    /// Which mock runs.
    enum Kind: String, Sendable, CaseIterable { case node, native }

    static let keyID = "ABC123DEFG"
    static let teamID = "TEAM123456"
    static let topic = "com.example.app"
    static let mockDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("MockAPNs")
    static let script = mockDirectory.appendingPathComponent("mock-apns.mjs").path

    /// The native mock's binary, built (or found up to date) once per test run: the path, or why it could not be built.
    static let nativeBuild: Result<String, MockFailure> = {
        let root = mockDirectory.deletingLastPathComponent().deletingLastPathComponent()
        let r: ToolResult
        do { r = try runTool(root.appendingPathComponent("scripts/build-mock-apns.sh"), []) } catch {
            return .failure(MockFailure(description: "scripts/build-mock-apns.sh did not run: \(error)"))
        }
        let path = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard r.status == 0, !r.signaled, !path.isEmpty else {
            return .failure(MockFailure(description: "the native mock APNs could not be built (scripts/build-mock-apns.sh): \(r.stderr)"))
        }
        return .success(path)
    }()

    /// Whether the native mock is built (tests that need it are enabled only then).
    static var nativeAvailable: Bool { if case .success = nativeBuild { true } else { false } }

    let kind: Kind
    let directory: URL
    let p8Path: String
    let recordPath: String
    let port: Int
    let caFile: String
    /// The mock, started with `posix_spawn` (``ChildProcess``), not Foundation's `Process`: its
    /// Linux monitor thread reaps children one at a time, so a child still running could hold up
    /// noticing this one's exit, and a test waiting for it hung.
    private let process: ChildProcess
    /// The parent's end of the mock's standard input (close-on-exec): the mock exits at its end
    /// of file, so also when the test process dies.
    private let stdin: FileDescriptor
    private let lock = NSLock()
    private var stopped = false

    /// Starts a mock (`kind`: Node by default). `config` is merged over the defaults (one key, one topic, a record file).
    init(_ config: [String: Any] = [:], p8Path existingKey: String? = nil, kind: Kind = .node) throws {
        self.kind = kind
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mock-apns-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        p8Path = existingKey ?? directory.appendingPathComponent("AuthKey.p8").path
        if existingKey == nil { try TestKey.write(to: p8Path) }
        recordPath = directory.appendingPathComponent("record.jsonl").path
        var full: [String: Any] = ["keys": [["keyId": Self.keyID, "teamId": Self.teamID, "p8": p8Path]],
                                   "topics": [Self.topic], "record": recordPath]
        for (k, v) in config { full[k] = v }
        let configPath = directory.appendingPathComponent("config.json")
        try JSONSerialization.data(withJSONObject: full).write(to: configPath)
        let argv: [String]
        switch kind {
        case .node: argv = ["/usr/bin/env", "node", Self.script, "--config", configPath.path]
        case .native: argv = [try Self.nativeBuild.get(), "--config", configPath.path]
        }
        let input = try FileDescriptor.makePipe()
        let out = try FileDescriptor.makePipe()
        guard let child = ChildProcess.spawn(argv, stdin: .descriptor(input.read.rawValue), stdout: .descriptor(out.write.rawValue),
                                             stderr: .descriptor(FileDescriptor.standardError.rawValue)) else {
            throw MockFailure(description: "mock APNs (\(kind)) could not be started: \(argv[0])")
        }
        input.read.close()
        out.write.close()
        process = child
        stdin = input.write
        // Wait for the ready line (a blocking read: the event itself, no sleep).
        let (line, words) = Self.readyLine(out.read)
        out.read.close()
        guard words.count >= 3, words[0] == "listening", let port = Int(words[1]) else {
            child.kill()
            _ = child.wait()
            let hint = kind == .node ? "is node 20 installed?" : "its error is on stderr; fault scripts need the Node mock"
            throw MockFailure(description: "mock APNs (\(kind)) did not start (\(hint)): \(String(decoding: line, as: UTF8.self))")
        }
        self.port = port
        caFile = String(words[2])
    }

    /// `127.0.0.1:PORT` with the mock's CA.
    func endpoint() throws -> APNsEndpoint { try APNsEndpoint(hostAndPort: "127.0.0.1:\(port)", caFile: caFile) }

    /// Every stream the mock saw, in order (answered and refused).
    func records() throws -> [[String: Any]] {
        guard let data = FileManager.default.contents(atPath: recordPath) else { return [] }
        return try String(decoding: data, as: UTF8.self).split(separator: "\n").map {
            guard let o = try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] else {
                throw MockFailure(description: "record line is not an object")
            }
            return o
        }
    }

    /// The answered requests (not refused streams).
    func answered() throws -> [[String: Any]] { try records().filter { $0["refused"] == nil } }

    /// Stops the mock (SIGTERM, then SIGKILL if it has not ended within 30 s) and reaps it (the
    /// record file is complete afterwards). Idempotent.
    func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        process.send(SIGTERM)
        let deadline = monotonicNanoseconds() + 30_000_000_000
        while process.poll() == nil {
            if monotonicNanoseconds() > deadline {
                process.kill()
                _ = process.wait()
                break
            }
            pauseThread(seconds: 0.01)
        }
        stdin.close()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

extension MockAPNs {
    /// A child's first line on `out` (a blocking read until its newline or end), and its words:
    /// the mocks' and the fault proxy's `listening PORT …`.
    static func readyLine(_ out: Pipe) -> (line: Data, words: [Substring]) {
        readyLine { out.fileHandleForReading.availableData }
    }

    /// ``readyLine(_:)`` from a descriptor.
    static func readyLine(_ out: FileDescriptor) -> (line: Data, words: [Substring]) {
        readyLine { Data((try? out.read(upToCount: 1)) ?? []) }
    }

    private static func readyLine(_ next: () -> Data) -> (line: Data, words: [Substring]) {
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = next()
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        return (line, String(decoding: line, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" }))
    }
}

struct MockFailure: Error, CustomStringConvertible {
    let description: String
}

/// Provider keys made by the `openssl` command line.
enum TestKey {
    /// Writes a fresh PKCS#8 P-256 key (an Apple `.p8` file's shape) to `path`.
    static func write(to path: String, arguments: [String] = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]) throws {
        let r = try runTool(URL(fileURLWithPath: "/usr/bin/env"), ["openssl"] + arguments + ["-out", path])
        guard r.status == 0, !r.signaled else { throw MockFailure(description: "openssl genpkey failed: \(r.stderr)") }
    }
}

/// A clock a test moves by hand: monotonic and wall time advance together.
final class TestClock: APNsClock, @unchecked Sendable {
    private let lock = NSLock()
    private var offsetSeconds: Int64 = 0
    private let start = SystemAPNsClock()

    /// Moves both clocks forward.
    func advance(seconds: Int64) { lock.withLock { offsetSeconds += seconds } }

    func monotonicNanoseconds() -> UInt64 {
        start.monotonicNanoseconds() + UInt64(lock.withLock { offsetSeconds }) * 1_000_000_000
    }

    func wallSeconds() -> Int64 { start.wallSeconds() + lock.withLock { offsetSeconds } }
}
