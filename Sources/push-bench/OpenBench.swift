import PushSealJSON
import PushSealSystem
import Foundation
import PushSealCrypto
import PushSealWire
import PushSealSender
import PushSealExtension

/// Receiver: the full in-process open of one notification — APNs payload bytes in,
/// `PushNotification` out (JSONReader, the three sealed fields, base64, AES-256-GCM with
/// the AAD, inner JSON) — for payloads carrying 256 B, 1 KB and 2 KB notifications (SenderBench's
/// inputs, sealed by `NotificationSealer`, so Padmé-padded with `iat`). Key lookup is not timed.
///
/// Side by side, the same job on the same payload bytes by `Benchmarks/peers/open_peer.py`
/// (Python `cryptography`, `json`, `base64`) and `open_peer.js` (Node `crypto`), spawned as
/// subprocesses before our own runs; each prints `RESULT impl=python|node op=fullopen …`
/// lines, echoed here and fed into the summary. A peer whose interpreter or library is
/// missing is skipped with a `# skipped:` line. Also `op=b64decode`: the table base64 decoder
/// against libsodium's constant-time one, on the 1 KB payload's `encrypted_data`; and
/// `op=open-step-parse` / `open-step-fields`: the first steps alone (payload parse; parse +
/// sealed fields + base64), to see where the full open's time goes.
struct OpenBench: BenchSection {
    let settings: BenchSettings
    let title = "receiver (full open: APNs payload in, notification out)"
    static let sizes = SenderBench.sizes
    static let appID = "com.example.app"

    func cases() throws -> [BenchCase] {
        let keyBytes = SecureRandom.bytes(AES256GCM.keyByteCount)
        // key.hex and payload-<size>.json stay in the bench directory for ProcessBench's cold start.
        let key = SecretBytes(copying: keyBytes)
        let keys = InMemorySealingKeys([(Self.appID, "alice", SealingKey(keyID: "key-1", key: key))])
        let sealer = try NotificationSealer(appID: Self.appID, keys: keys, registry: Self.registry)
        let directory = try BenchDirectory.shared.url()
        try Data(keyBytes.map { String(format: "%02x", $0) }.joined().utf8).write(to: directory.appendingPathComponent("key.hex"))

        var all: [BenchCase] = []
        var box1K = ""
        for size in Self.sizes {
            let payload = try sealer.seal(notificationJSON: SenderBench.notification(size: size), for: "alice").payload
            try Data(payload).write(to: directory.appendingPathComponent("payload-\(size).json"))
            guard try Self.fullOpen(payload, key: key).title == "Dinner plans" else {
                throw BenchError("open bench payload of \(size) B does not open to its title")
            }
            if size == 1024 { box1K = try JSONReader.parse(payload)["encrypted_data"]?.stringValue ?? "" }
            all.append(BenchCase(impl: "pushseal", op: "fullopen", size: size) { consume(try Self.fullOpen(payload, key: key)) })
            // Where the time goes: the payload parse alone, then parse + sealed fields + base64.
            all.append(BenchCase(impl: "pushseal", op: "open-step-parse", size: size) { consume(try JSONReader.parse(payload)) })
            all.append(BenchCase(impl: "pushseal", op: "open-step-fields", size: size) {
                consume(try SealedPayload(payload: try JSONReader.parse(payload), registry: Self.registry))
            })
        }
        let text = Array(box1K.utf8)
        all.append(BenchCase(impl: "pushseal", op: "b64decode", size: text.count) {
            consume(try text.withUnsafeBytes { try WireBase64.decode($0) })
        })
        all.append(BenchCase(impl: "libsodium", op: "b64decode", size: text.count) {
            consume(try text.withUnsafeBytes { try WireBase64.decodeSecret($0) })
        })
        PeerResults.shared.b64Size = text.count

        for peer in Peer.all { peer.run("open_peer", settings.peerArguments + [directory.path]) }
        return all
    }

    /// The envelope algorithms, the same table the sender and the extension use.
    static let registry = EnvelopeRegistry.standard

    /// The job being timed: payload bytes → plaintext (the extension's opener, parse once).
    static func fullOpen(_ payload: [UInt8], key: SecretBytes) throws -> PushNotification {
        let opener = WireFormatOpener(registry: registry)
        return try opener.open(try opener.envelope(in: try JSONReader.parse(payload)), with: key, appID: appID)
    }

    func comparisons() -> [Comparison] {
        var list: [Comparison] = []
        for size in Self.sizes {
            let ours = SeriesKey(impl: "pushseal", op: "fullopen", size: size)
            for peer in ["python", "node"] {
                list.append(Comparison(label: "full open \(size) B \(peer) / pushseal", numerator: SeriesKey(impl: peer, op: "fullopen", size: size),
                                       denominator: ours))
            }
        }
        let b64 = PeerResults.shared.b64Size
        list.append(Comparison(label: "base64 decode \(b64) chars libsodium / pushseal", numerator: SeriesKey(impl: "libsodium", op: "b64decode", size: b64),
                               denominator: SeriesKey(impl: "pushseal", op: "b64decode", size: b64)))
        return list
    }
}

/// A benchmark peer (an interpreter and its crypto library) running scripts from `Benchmarks/peers`.
struct Peer: Sendable {
    /// `python` or `node`: the `impl=` of its `RESULT` lines.
    let name: String
    /// The column title in the report.
    let title: String
    /// The command on `PATH`: `python3` or `node`.
    let command: String
    /// The script suffix: `py` or `js`.
    let suffix: String
    /// Arguments whose success shows the peer can run (the library imports); prints the
    /// interpreter's executable path.
    let probe: [String]

    /// Probe results, once per peer. `@unchecked Sendable`: all state is behind `lock`.
    final class Resolved: @unchecked Sendable {
        private let lock = NSLock()
        private var paths: [String: String?] = [:]

        func path(for peer: Peer) -> String? {
            if let known = lock.withLock({ paths[peer.name] }) { return known }
            let result = Peer.spawn([peer.command] + peer.probe)
            let path = result.output.split(separator: "\n").last.map(String.init)
            let found = result.status == 0 && path.map { FileManager.default.isExecutableFile(atPath: $0) } == true ? path : nil
            lock.withLock { paths[peer.name] = .some(found) }
            return found
        }
    }

    static let resolved = Resolved()

    static let all = [
        Peer(name: "python", title: "Python `cryptography`", command: "python3", suffix: "py",
             probe: ["-c", "import sys, cryptography.hazmat.primitives.ciphers.aead; print(sys.executable)"]),
        Peer(name: "node", title: "Node `crypto`", command: "node", suffix: "js",
             probe: ["-e", "require('crypto').createDecipheriv; console.log(process.execPath)"]),
    ]

    /// The interpreter's own executable (`sys.executable`, `process.execPath`) as printed by the
    /// probe, so that no launcher (a pyenv or nvm shim adds ~50 ms to every start) is timed;
    /// nil when the probe fails.
    var interpreterPath: String? { Self.resolved.path(for: self) }

    /// The interpreter to run: the resolved executable, or the bare command.
    var interpreter: String { interpreterPath ?? command }

    /// `Benchmarks/peers`, found from the working directory or the executable's location.
    static func peersDirectory() -> URL? {
        var candidates = [URL(fileURLWithPath: FileManager.default.currentDirectoryPath)]
        var up = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            candidates.append(up)
            up = up.deletingLastPathComponent()
        }
        return candidates.map { $0.appendingPathComponent("Benchmarks/peers") }
            .first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("open_peer.py").path) }
    }

    /// The path of `<base>.<suffix>` in `Benchmarks/peers` if this peer can run (its interpreter
    /// and library are installed and the script is found); otherwise prints why it is skipped
    /// (once per peer and reason) and returns nil.
    func script(_ base: String) -> String? {
        guard let peers = Self.peersDirectory() else {
            Output.shared.skip("\(name) (Benchmarks/peers/\(base).\(suffix) not found from the working directory or the executable)")
            return nil
        }
        guard interpreterPath != nil else {
            Output.shared.skip("\(name) (`\(command)` or its crypto library is not installed)")
            return nil
        }
        return peers.appendingPathComponent("\(base).\(suffix)").path
    }

    /// Runs `/usr/bin/env <arguments>` (``ChildProcess``: posix_spawn, reaped by pid); returns
    /// the exit status (127 when it could not start) and standard output (at most 16 MiB).
    static func spawn(_ arguments: [String]) -> (status: Int32, output: String) {
        guard let pipe = try? FileDescriptor.makePipe() else { return (127, "") }
        guard let child = ChildProcess.spawn(["/usr/bin/env"] + arguments, stdout: .descriptor(pipe.write.rawValue)) else {
            pipe.write.close()
            pipe.read.close()
            return (127, "")
        }
        pipe.write.close()
        let output = (try? pipe.read.readAll(limit: 16 << 20)) ?? []
        pipe.read.close()
        return (child.wait().status, String(decoding: output, as: UTF8.self))
    }

    /// Runs the peer's `<base>` script with `arguments`, echoing and recording its `RESULT` lines.
    func run(_ base: String, _ arguments: [String]) {
        guard let path = script(base) else { return }
        let result = Self.spawn([interpreter, path] + arguments)
        var count = 0
        for line in result.output.split(separator: "\n") where line.hasPrefix("RESULT ") {
            Output.shared.result(String(line))
            var fields: [Substring: Substring] = [:]
            for part in line.split(separator: " ").dropFirst() {
                let pair = part.split(separator: "=", maxSplits: 1)
                if pair.count == 2 { fields[pair[0]] = pair[1] }
            }
            if let impl = fields["impl"], let op = fields["op"], let size = fields["size"].flatMap({ Int($0) }),
               let ns = fields["ns"].flatMap({ Double($0) }) {
                PeerResults.shared.add(SeriesKey(impl: String(impl), op: String(op), size: size), ns)
                count += 1
            }
        }
        if result.status != 0 || count == 0 {
            Output.shared.skip("\(name) \(base) failed (exit status \(result.status))")
        }
    }
}

/// Samples measured by peer subprocesses, consulted by ``Measurer/median(_:)`` for series it
/// did not run itself.
///
/// `@unchecked Sendable`: all state is behind `lock`.
final class PeerResults: @unchecked Sendable {
    static let shared = PeerResults()
    private let lock = NSLock()
    private var samples: [SeriesKey: [Double]] = [:]
    private var base64Size = 0

    /// The `size` of the `b64decode` series (characters of the 1 KB payload's box).
    var b64Size: Int {
        get { lock.withLock { base64Size } }
        set { lock.withLock { base64Size = newValue } }
    }

    func add(_ key: SeriesKey, _ ns: Double) { lock.withLock { samples[key, default: []].append(ns) } }

    func values(_ key: SeriesKey) -> [Double]? { lock.withLock { samples[key] } }
}
