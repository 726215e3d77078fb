// registry-stress: a test helper for PushSealRegistryTests (multi-process and SIGKILL tests on one
// PostgreSQL registry). Not a user tool. Usage:
//   registry-stress seal CONNINFO KEKFILE APP COUNT R1 [R2 ...]
//     seals COUNT messages round-robin over the recipients through ServerKeyring (batch chunks of
//     64 seals), printing one line per seal as it is made: "RECIPIENT KEYID HEX(nonce‖ciphertext‖tag)"
//     (plaintext "RECIPIENT|i", AAD the recipient), flushed at once, so a test that kills the process
//     knows every seal it made.
//   registry-stress rotate-stop CONNINFO KEKFILE APP R STEP
//     rotates the keyset (grace 1 h, promote) and, after rotation step STEP (added, promoted,
//     finished), prints "at STEP" and blocks forever: a test SIGKILLs it between two of the
//     rotation's transactions.
//   registry-stress lock-stop CONNINFO KEKFILE APP R
//     opens a change of the keyset (its rows locked FOR UPDATE, the transaction open), prints
//     "locked" and blocks forever: a test SIGKILLs it mid-transaction.
//   registry-stress bulk-load CONNINFO KEKFILE APP N
//     (the benchmark, scripts/bench-registry.sh) creates N keysets "r0" ... "r(N-1)" of APP, one
//     primary key of 32 random bytes each, through PostgresKeyStore.bulkCopyIn (the path of
//     `push-keys registry import`, 500 keysets a transaction), and prints "N SECONDS".
// Exit 0 on success; on an error prints it to stderr and exits 1.
import PushSealCrypto
import PushSealKeyRecords
import PushSealServerKeys
import PushSealRegistry
import PushSealSystem

func fail(_ s: String) -> Never {
    emit(2, "registry-stress: error: \(s)\n")
    ProcessControl.exit(1)
}

/// Blocks the process until it is killed.
func blockForever() -> Never {
    while true { pauseThread(seconds: 3600) }
}

let args = CommandLine.arguments
if args.count == 7, args[1] == "rotate-stop" {
    do {
        let store = try PostgresKeyStore(connectionString: args[2], kek: try KeyEncryptionKey(file: args[3]), reconnectWaitSeconds: 30)
        try store.rotate(appID: args[4], recipient: args[5], graceSeconds: 3600, device: nil, promote: true, now: KeyTime.now()) { step in
            guard step.rawValue == args[6] else { return }
            emit(1, "at \(step.rawValue)\n")
            blockForever()
        }
        fail("the rotation finished without reaching step \(args[6])")
    } catch {
        fail("\(error)")
    }
}
if args.count == 6, args[1] == "lock-stop" {
    do {
        let store = try PostgresKeyStore(connectionString: args[2], kek: try KeyEncryptionKey(file: args[3]), reconnectWaitSeconds: 30)
        _ = try store.transact(appID: args[4], recipient: args[5], allowCreate: false) { _, _ in
            emit(1, "locked\n")
            blockForever()
        }
    } catch {
        fail("\(error)")
    }
}
if args.count == 6, args[1] == "bulk-load", let n = Int(args[5]), n >= 0 {
    do {
        let store = try PostgresKeyStore(connectionString: args[2], kek: try KeyEncryptionKey(file: args[3]), reconnectWaitSeconds: 30)
        let now = KeyTime.now()
        let app = args[4]
        let states = (0..<n).lazy.map { i in
            KeysetState(appID: app, recipient: "r\(i)",
                        keys: [(KeyInfo(keyID: KeyID.generate(), status: .primary, createdAt: now, promotedAt: now), SecretBytes(randomByteCount: AES256GCM.keyByteCount))],
                        rotation: nil)
        }
        let start = monotonicSeconds()
        let result = try store.bulkCopyIn(states, now: now)
        emit(1, "\(result.created) \(monotonicSeconds() - start)\n")
        ProcessControl.exit(0)
    } catch {
        fail("\(error)")
    }
}
guard args.count >= 7, args[1] == "seal", let count = Int(args[5]) else {
    fail("usage: registry-stress seal CONNINFO KEKFILE APP COUNT R... | rotate-stop CONNINFO KEKFILE APP R STEP | lock-stop CONNINFO KEKFILE APP R | bulk-load CONNINFO KEKFILE APP N")
}
/// One whole line per write(2): nothing buffered that a SIGKILL could lose after the seal.
func emit(_ fd: Int32, _ s: String) {
    try? FileDescriptor(borrowing: fd, path: fd == 1 ? "standard output" : "standard error").writeAll(s)
}

do {
    let store = try PostgresKeyStore(connectionString: args[2], kek: try KeyEncryptionKey(file: args[3]), reconnectWaitSeconds: 30)
    let keyring = ServerKeyring(store: store)
    let app = args[4]
    let recipients = Array(args[6...])
    for i in 0..<count {
        if i % 64 == 0 { keyring.beginBatchChunk() }
        let r = recipients[i % recipients.count]
        let (keyID, key) = try keyring.primaryKeyForSealing(appID: app, recipient: r)
        let box = try AES256GCM.seal(Array("\(r)|\(i)".utf8), with: key, authenticating: Array(r.utf8))
        emit(1, "\(r) \(keyID) \(Hex.encode(box.combined))\n")
    }
} catch {
    fail("\(error)")
}
