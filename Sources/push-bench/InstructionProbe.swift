import PushSealCrypto
import PushSealSender
import PushSealWire

/// `push-bench probe OP SIZE N`: runs one benchmark job `N` times and nothing else, for
/// `scripts/perf-check.sh`, which runs it under callgrind twice (two values of `N`) and divides
/// the difference of the two instruction totals by the difference of the two `N`: the set-up
/// (keys, the sealed input, process start) cancels out, so the figure is the job's own cost in
/// instructions, the same on an idle or a busy machine.
///
/// The jobs are the timed rows of `make bench`, on the same inputs:
/// - `fullseal`: SenderBench's notification JSON of `SIZE` bytes in, APNs payload out;
/// - `coreseal`: AES-256-GCM of `SIZE` bytes with the 40-byte AAD (the denominator of the
///   full-seal ratio, so the check can report the ratio too);
/// - `fullopen`: OpenBench's full open of the payload sealed from that notification.
/// - Returns: the process exit code: 0 ok, 64 usage, 70 the job failed.
func runInstructionProbe(_ arguments: [String]) -> Int32 {
    let usageLine = "hint: push-bench probe fullseal|coreseal|fullopen SIZE N   (SIZE 64-4096 bytes, N >= 1)\n"
    guard arguments.count == 3, let size = Int(arguments[1]), (64...4096).contains(size),
          let count = Int(arguments[2]), count >= 1 else {
        writeStandardError("push-bench: error: probe takes a job, a size in bytes and a count\n" + usageLine)
        return 64
    }
    do {
        let job = try probeJob(named: arguments[0], size: size)
        guard let job else {
            writeStandardError("push-bench: error: unknown probe job '\(arguments[0])'\n" + usageLine)
            return 64
        }
        for _ in 0..<count { try job() }
        return 0
    } catch {
        writeStandardError("push-bench: error: probe \(arguments[0]) failed: \(error)\n")
        return 70
    }
}

/// The closure one probe iteration runs, or nil for an unknown name. Keys and inputs are made
/// here, once, outside the counted difference.
private func probeJob(named name: String, size: Int) throws -> (() throws -> Void)? {
    let key = SealingKey(keyID: "key-1", key: SecretBytes(randomByteCount: AES256GCM.keyByteCount))
    let keys = InMemorySealingKeys([(SenderBench.appID, "alice", key)])
    let sealer = try NotificationSealer(appID: SenderBench.appID, keys: keys, registry: OpenBench.registry)
    let input = SenderBench.notification(size: size)
    switch name {
    case "fullseal":
        return { consume(try sealer.seal(notificationJSON: input, for: "alice")) }
    case "coreseal":
        let plaintext = SecureRandom.bytes(size)
        return { consume(try AES256GCM.seal(plaintext, with: key.key, authenticating: CryptoBench.aad)) }
    case "fullopen":
        let payload = try sealer.seal(notificationJSON: input, for: "alice").payload
        return { consume(try OpenBench.fullOpen(payload, key: key.key)) }
    default:
        return nil
    }
}
