import PushSealSystem
import Foundation

/// The run's scratch directory (0700, removed at exit): OpenBench's `key.hex` and
/// `payload-<size>.json`, ProcessBench's keychains, payloads and media.
///
/// `@unchecked Sendable`: all state is behind `lock`.
final class BenchDirectory: @unchecked Sendable {
    static let shared = BenchDirectory()
    private let lock = NSLock()
    private var made: URL?

    /// The directory, created on first use.
    func url() throws -> URL {
        try lock.withLock {
            if let made { return made }
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("push-bench-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            made = url
            return url
        }
    }

    /// Removes the directory if it was made.
    func remove() {
        lock.withLock {
            if let made { try? FileManager.default.removeItem(at: made) }
            made = nil
        }
    }
}

/// Whole processes, PushSeal's CLIs next to the peers doing the same job:
/// - `op=batch-v2` (impl `pushseal`): the same `push-seal batch` for a recipient with a v2
///   registration (made by `push-keys device generate` and `register`), the app with a sender
///   key: HPKE auth mode, both cores as v1 (the sealer is the same).
/// - `op=batch` (ns of wall time per payload, all cores) and `op=batch-rss` (peak RSS, `kb=`):
///   `push-seal batch` with a real server keychain (made by `push-keys generate`) fed
///   `batchLines` 1 KB JSON Lines on a pipe, output discarded; the peers run
///   `seal_peer.{py,js} --batch KEY.hex` (a fixed key, no keychain), one process per core, each fed
///   its share of the lines; the peak RSS is the largest of them.
/// - `op=coldstart` (wall ns of one spawn-to-exit, `n=1` per spawn) and `op=coldstart-rss`
///   (from a second, untimed spawn under `/usr/bin/time`, see ``PeakRSS``):
///   `push-open` on a 1 KB payload (device keychain made by `push-keys keychain init` and
///   `import`) against `open_peer.{py,js} --once FILE` (interpreter start included); spawns
///   interleaved so machine noise hits all three alike.
/// - `op=coldstart-image` / `coldstart-image-rss`: `push-open` on a payload carrying an encrypted
///   `imageBytes`-byte image served by a local `python3` HTTP server (PushSeal only).
struct ProcessBench {
    let settings: BenchSettings
    static let appID = "com.example.app"

    /// PushSeal's CLIs, beside the running push-bench.
    struct Tools {
        let pushSeal: String
        let pushKeys: String
        let pushOpen: String

        init() throws {
            let dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            pushSeal = dir.appendingPathComponent("push-seal").path
            pushKeys = dir.appendingPathComponent("push-keys").path
            pushOpen = dir.appendingPathComponent("push-open").path
            for tool in [pushSeal, pushKeys, pushOpen] where !FileManager.default.isExecutableFile(atPath: tool) {
                throw BenchError("\(tool) is missing (build every product: swift build -c release)")
            }
        }
    }

    func run() throws {
        let tools = try Tools()
        let dir = try BenchDirectory.shared.url()
        let serverKC = dir.appendingPathComponent("server-kc").path
        let deviceKC = dir.appendingPathComponent("device-kc").path
        let appEnts = dir.appendingPathComponent("app.entitlements.json").path
        let extEnts = dir.appendingPathComponent("ext.entitlements.json").path
        let record = dir.appendingPathComponent("alice.keyrecord.json").path
        try write(#"{"application-identifier":"ABCDE12345.com.example.app","keychain-access-groups":["ABCDE12345.com.example.app.shared"],"application-groups":["group.com.example.app"]}"#, to: appEnts)
        try write(#"{"application-identifier":"ABCDE12345.com.example.app.NotificationService","keychain-access-groups":["ABCDE12345.com.example.app.shared"],"application-groups":["group.com.example.app"]}"#, to: extEnts)
        try check([tools.pushKeys, "generate", "--keychain", serverKC, "--app-id", Self.appID, "--recipient", "alice"])
        try check([tools.pushKeys, "export", "--keychain", serverKC, "--app-id", Self.appID, "--recipient", "alice", "--out", record])
        try check([tools.pushKeys, "keychain", "init", "--keychain", deviceKC])
        try check([tools.pushKeys, "import", "--keychain", deviceKC, "--entitlements", appEnts, "--app-id", Self.appID, record])
        try? FileManager.default.removeItem(atPath: record)
        // Version 2: bob's app makes its key pair and registers it; the app has a sender key (auth mode).
        let registration = dir.appendingPathComponent("bob.registration.json").path
        try check([tools.pushKeys, "device", "generate", "--keychain", deviceKC, "--entitlements", appEnts, "--app-id", Self.appID], stdout: registration)
        try check([tools.pushKeys, "register", "--keychain", serverKC, "--recipient", "bob", registration])
        try check([tools.pushKeys, "sender", "generate", "--keychain", serverKC, "--app-id", Self.appID])

        try batch(tools: tools, keychain: serverKC, dir: dir)
        let openArgs = [tools.pushOpen, "--keychain", deviceKC, "--app-id", Self.appID, "--entitlements", extEnts, "--allow-insecure-loopback"]
        try coldStart(tools: tools, keychain: serverKC, openArgs: openArgs, dir: dir)
        try image(tools: tools, keychain: serverKC, openArgs: openArgs, dir: dir)
    }

    // MARK: batch

    private func batch(tools: Tools, keychain: String, dir: URL) throws {
        let lines = settings.batchLines
        let line = Array("{\"recipient\":\"alice\",\"notification\":".utf8) + SenderBench.notification(size: 1024) + Array("}\n".utf8)
        let cores = activeProcessorCount
        let shares = (0..<cores).map { lines / cores + ($0 < lines % cores ? 1 : 0) }
        let v2Line = Array("{\"recipient\":\"bob\",\"notification\":".utf8) + SenderBench.notification(size: 1024) + Array("}\n".utf8)
        let pushSeal = [tools.pushSeal, "batch", "--app-id", Self.appID, "--keychain", keychain, "-"]
        var jobs: [(impl: String, op: String, line: [UInt8], commands: [[String]], shares: [Int])] = [
            ("pushseal", "batch", line, [pushSeal], [lines]),
            // The same batch to a v2 registration (HPKE auth mode): `op=batch-v2`.
            ("pushseal", "batch-v2", v2Line, [pushSeal], [lines]),
        ]
        let keyHex = dir.appendingPathComponent("key.hex").path
        for peer in Peer.all {
            guard let script = peer.script("seal_peer") else { continue }
            jobs.append((peer.name, "batch", line, Array(repeating: [peer.interpreter, script, "--batch", keyHex], count: cores), shares))
        }
        Output.shared.progress("batch: \(lines) lines of 1 KB per run, \(settings.batchRuns) runs")
        for rep in 0..<settings.batchRuns {
            for job in jobs {
                let meters = job.commands.indices.map { PeakRSS(dir: dir, name: "rss-\($0)") }
                let commands = zip(job.commands, meters).map { command, meter in meter?.wrap(command) ?? command }
                let r = runFed(commands, line: job.line, lines: job.shares)
                guard r.status == 0 else {
                    if job.impl == "pushseal" { throw BenchError("push-seal batch exited \(r.status)") }
                    Output.shared.skip("\(job.impl) batch failed (exit status \(r.status))")
                    continue
                }
                record(job.impl, job.op, 1024, rep: rep, n: lines, ns: Double(r.wallNanoseconds) / Double(lines))
                let peaks = meters.compactMap { $0?.read() }
                if job.op == "batch", peaks.count == meters.count, let kb = peaks.max() { record(job.impl, "batch-rss", 1024, rep: rep, n: lines, kb: kb) }
            }
        }
    }

    // MARK: cold start

    private func coldStart(tools: Tools, keychain: String, openArgs: [String], dir: URL) throws {
        // A 1 KB notification; push-seal gives it an id, so every spawn opens it with
        // --no-replay-guard (the guard would refuse the second open as replayed).
        let head = "{\"title\":\"Dinner plans\",\"body\":\""
        let note = head + String(repeating: "x", count: 1024 - head.utf8.count - 2) + "\"}"
        let notePath = dir.appendingPathComponent("note-1024.json").path
        let payloadPath = dir.appendingPathComponent("open-1024.payload.json").path
        try write(note, to: notePath)
        try check([tools.pushSeal, "--app-id", Self.appID, "--recipient", "alice", "--keychain", keychain, notePath], stdout: payloadPath)
        var commands: [(impl: String, argv: [String])] = [("pushseal", openArgs + ["--no-replay-guard", payloadPath])]
        let peerPayload = dir.appendingPathComponent("payload-1024.json").path
        for peer in Peer.all {
            guard let script = peer.script("open_peer") else { continue }
            commands.append((peer.name, [peer.interpreter, script, "--once", peerPayload]))
        }
        Output.shared.progress("cold start: \(settings.spawns) spawns each")
        try spawnSeries(commands, op: "coldstart", size: 1024, dir: dir)
    }

    /// Spawns every command `spawns` times, interleaved, after one checked warm-up spawn each
    /// (which must print a decrypted result); records wall ns and peak RSS per spawn.
    private func spawnSeries(_ commands: [(impl: String, argv: [String])], op: String, size: Int, dir: URL) throws {
        let out = dir.appendingPathComponent("spawn.out").path
        var live: [(impl: String, argv: [String])] = []
        for command in commands {
            let r = runChild(command.argv, stdout: .file(out))
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            if r.status == 0, text.contains("\"decrypted\"") {
                live.append(command)
            } else if command.impl == "pushseal" {
                throw BenchError("push-open did not decrypt the \(op) payload (exit status \(r.status))")
            } else {
                Output.shared.skip("\(command.impl) \(op) (the single-shot open failed: exit status \(r.status))")
            }
        }
        for rep in 0..<settings.spawns {
            for command in live {
                let r = runChild(command.argv)
                guard r.status == 0 else { throw BenchError("\(command.impl) \(op) exited \(r.status)") }
                record(command.impl, op, size, rep: rep, n: 1, ns: Double(r.wallNanoseconds))
                // Peak RSS from a second spawn under /usr/bin/time (see PeakRSS), not timed.
                guard let rss = PeakRSS(dir: dir) else { continue }
                let m = runChild(rss.wrap(command.argv))
                if m.status == 0, let kb = rss.read() { record(command.impl, "\(op)-rss", size, rep: rep, n: 1, kb: kb) }
            }
        }
    }

    // MARK: image

    private func image(tools: Tools, keychain: String, openArgs: [String], dir: URL) throws {
        guard settings.imageBytes > 0 else { return }
        let www = dir.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        var bytes = [UInt8](repeating: 0, count: settings.imageBytes)
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]
        for i in png.indices { bytes[i] = png[i] }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for i in png.count..<bytes.count {  // incompressible filler, so no layer can shortcut it
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            bytes[i] = UInt8(truncatingIfNeeded: state >> 56)
        }
        let imagePath = dir.appendingPathComponent("image.png").path
        try Data(bytes).write(to: URL(fileURLWithPath: imagePath))
        bytes = []
        guard let server = LocalHTTPServer(root: www.path) else {
            Output.shared.skip("push-open with a \(settings.imageBytes)-byte image (python3 is needed for the local HTTP server)")
            return
        }
        defer { server.stop() }
        let descriptorPath = dir.appendingPathComponent("media.json").path
        try check([tools.pushSeal, "media", imagePath, "--out", www.appendingPathComponent("image.sealed").path,
                   "--url", "http://127.0.0.1:\(server.port)/image.sealed"], stdout: descriptorPath)
        let descriptor = try String(contentsOfFile: descriptorPath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let notePath = dir.appendingPathComponent("note-image.json").path
        try write("{\"title\":\"Photo\",\"body\":\"The lighthouse at dusk\",\"media\":\(descriptor)}", to: notePath)
        let payloadPath = dir.appendingPathComponent("image.payload.json").path
        try check([tools.pushSeal, "--app-id", Self.appID, "--recipient", "alice", "--keychain", dir.appendingPathComponent("server-kc").path, notePath],
                  stdout: payloadPath)
        Output.shared.progress("cold start with a \(settings.imageBytes)-byte image: \(settings.spawns) spawns")
        try spawnSeries([("pushseal", openArgs + ["--no-replay-guard", payloadPath])], op: "coldstart-image", size: settings.imageBytes, dir: dir)
    }

    // MARK: helpers

    private func record(_ impl: String, _ op: String, _ size: Int, rep: Int, n: Int, ns: Double) {
        PeerResults.shared.add(SeriesKey(impl: impl, op: op, size: size), ns)
        Output.shared.result("RESULT impl=\(impl) op=\(op) size=\(size) rep=\(rep) n=\(n) ns=\(format(ns, decimals: 1))")
    }

    private func record(_ impl: String, _ op: String, _ size: Int, rep: Int, n: Int, kb: Int) {
        PeerResults.shared.add(SeriesKey(impl: impl, op: op, size: size), Double(kb))
        Output.shared.result("RESULT impl=\(impl) op=\(op) size=\(size) rep=\(rep) n=\(n) kb=\(kb)")
    }

    private func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    private func check(_ argv: [String], stdout: String? = nil) throws {
        let r = runChild(argv, stdout: stdout.map { .file($0) } ?? .null)
        guard r.status == 0 else {
            throw BenchError("\(URL(fileURLWithPath: argv[0]).lastPathComponent) \(argv.dropFirst().prefix(2).joined(separator: " ")) exited \(r.status)")
        }
    }
}

/// Peak RSS of one command, measured by `/usr/bin/time -f %M` (KiB), which forks the command
/// from its own small process. `wait4`'s `ru_maxrss` of a child spawned directly by push-bench
/// is useless here: Linux carries the high-water mark of the address space a child had before
/// `exec` (with `posix_spawn`, push-bench's own ~40 MiB) into the child's `maxrss`.
/// Nil (with a `# skipped:` line) when `/usr/bin/time` is missing.
struct PeakRSS {
    let file: String

    init?(dir: URL, name: String = "rss") {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/time") else {
            Output.shared.skip("peak RSS figures (/usr/bin/time is not installed)")
            return nil
        }
        file = dir.appendingPathComponent("\(name).txt").path
    }

    func wrap(_ argv: [String]) -> [String] { ["/usr/bin/time", "-f", "%M", "-o", file] + argv }

    /// The KiB figure of the last wrapped run.
    func read() -> Int? {
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }
}

/// `python3`'s `http.server` on 127.0.0.1 (an ephemeral port), serving `root`, quiet; started
/// by push-bench and stopped by pid.
final class LocalHTTPServer {
    let child: ChildProcess
    let port: Int

    init?(root: String) {
        let script = """
            import http.server, os, sys
            os.chdir(sys.argv[1])
            class H(http.server.SimpleHTTPRequestHandler):
                def log_message(self, *a): pass
            s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
            print(s.server_address[1], flush=True)
            s.serve_forever()
            """
        guard let pipe = try? FileDescriptor.makePipe() else { return nil }
        let spawned = ChildProcess.spawn(["python3", "-c", script, root], stdout: .descriptor(pipe.write.rawValue))
        pipe.write.close()
        guard let spawned else { return nil }
        var text: [UInt8] = []
        while let byte = try? pipe.read.read(upToCount: 1).first, byte != UInt8(ascii: "\n") { text.append(byte) }
        guard let port = Int(String(decoding: text, as: UTF8.self)) else {
            spawned.kill()
            _ = spawned.wait()
            return nil
        }
        child = spawned
        self.port = port
    }

    /// Kills the server (SIGKILL: it holds no state worth a clean exit) and reaps it.
    func stop() {
        child.kill()
        _ = child.wait()
    }
}
