import PushSealCrypto
import PushSealWire
import PushSealSender

/// Sender: the full seal job — notification JSON in, APNs payload bytes out (parse, validate,
/// `iat`, plaintext JSON, Padmé padding, AES-256-GCM with a fresh nonce, base64, payload
/// writer) — at 256 B, 1 KB and 2 KB of input JSON, compared with the crypto core's seal of
/// the same size (CryptoBench's `impl=pushseal op=seal` job, timed here again as
/// `op=coreseal`, interleaved with the full seal in each repetition). Also batch sealing on every core:
/// `op=batch64` is one chunk of 64 one-kilobyte lines through `BatchSealer` (divide by 64 for
/// ns per payload). The Python and Node peers doing the same job are
/// `Benchmarks/peers/seal_peer.py` and `seal_peer.js` (same inputs, same `RESULT` lines), spawned
/// from ``cases()`` before our own runs; they also time their crypto core seal (`op=seal`).
/// Keys come from `InMemorySealingKeys` (a fixed key, like the peers); with the server keychain
/// (`KeychainSealingKeys`) every seal also reads the recipient's keyset item, which
/// `Benchmarks/peers/batch_rss.py` measures end to end.
struct SenderBench: BenchSection {
    let settings: BenchSettings
    let title = "sender (full seal: notification JSON in, APNs payload out)"
    static let sizes = [256, 1024, 2048]
    static let appID = "com.example.app"

    /// The benchmark input: `{"title":"Dinner plans","body":"xxx…","id":"bench-1"}` of exactly
    /// `size` bytes, the same bytes the peers build.
    static func notification(size: Int) -> [UInt8] {
        let head = "{\"title\":\"Dinner plans\",\"body\":\""
        let tail = "\",\"id\":\"bench-1\"}"
        let n = max(0, size - head.utf8.count - tail.utf8.count)
        return Array((head + String(repeating: "x", count: n) + tail).utf8)
    }

    func cases() throws -> [BenchCase] {
        let key = SealingKey(keyID: "key-1", key: SecretBytes(randomByteCount: 32))
        let keys = InMemorySealingKeys([(Self.appID, "alice", key)])
        let sealer = try NotificationSealer(appID: Self.appID, keys: keys, registry: OpenBench.registry)
        var all: [BenchCase] = []
        for size in Self.sizes {
            let input = Self.notification(size: size)
            guard input.count == size else { throw BenchError("sender bench input is \(input.count) bytes, wanted \(size)") }
            let payload = try sealer.seal(notificationJSON: input, for: "alice").payload
            guard payload.count <= SealOptions.maxPayloadByteCount else { throw BenchError("sender bench payload over budget") }
            all.append(BenchCase(impl: "pushseal", op: "fullseal", size: size) {
                consume(try sealer.seal(notificationJSON: input, for: "alice"))
            })
            // CryptoBench's core seal of the same size, timed again here, interleaved with the
            // full seal in every repetition: the overhead ratio compares two series measured
            // side by side, not two sections minutes apart on a shared machine.
            let plaintext = SecureRandom.bytes(size)
            all.append(BenchCase(impl: "pushseal", op: "coreseal", size: size) {
                consume(try AES256GCM.seal(plaintext, with: key.key, authenticating: CryptoBench.aad))
            })
        }
        let batch = BatchSealer(sealer: sealer)
        let line = Array("{\"recipient\":\"alice\",\"notification\":".utf8) + Self.notification(size: 1024) + [UInt8(ascii: "}")]
        let lines = (1...64).map { BatchSealer.Line(number: $0, bytes: line) }
        guard batch.seal(lines).failureCount == 0 else { throw BenchError("sender bench batch failed") }
        all.append(BenchCase(impl: "pushseal", op: "batch64", size: 1024) { consume(batch.seal(lines)) })
        // The same jobs by the peers (crypto core `op=seal` and `op=fullseal`), side by side.
        for peer in Peer.all { peer.run("seal_peer", settings.peerArguments) }
        return all
    }

    func comparisons() -> [Comparison] {
        Self.sizes.map { size in
            Comparison(label: "overhead: full seal \(size) B / core seal \(size) B", numerator: SeriesKey(impl: "pushseal", op: "fullseal", size: size),
                       denominator: SeriesKey(impl: "pushseal", op: "coreseal", size: size))
        }
    }
}
