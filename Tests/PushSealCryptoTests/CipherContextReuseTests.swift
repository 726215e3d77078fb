import Dispatch
import Testing
@testable import PushSealCrypto

/// Each thread reuses one EVP_CIPHER_CTX; these check that no state leaks between operations.
@Suite("AES-256-GCM context reuse")
struct CipherContextReuseTests {
    @Test("alternating keys, directions and failures on one thread all behave as if fresh")
    func alternating() throws {
        let keys = (0..<4).map { _ in SecretBytes(randomByteCount: 32) }
        var boxes: [(SealedBox, [UInt8], Int)] = []
        for round in 0..<64 {
            let k = round % keys.count
            let message = SecureRandom.bytes(round * 7)
            let aad = round % 3 == 0 ? [] : [UInt8(round)]
            boxes.append((try AES256GCM.seal(message, with: keys[k], authenticating: aad), message, k))
            // A failure in the middle must not poison the next operation.
            if round % 5 == 0, let (box, _, j) = boxes.first {
                let wrong = keys[(j + 1) % keys.count]
                seedOpenSSLError()
                #expect(cryptoErrorCode { _ = try AES256GCM.open(box, with: wrong, authenticating: []) } == .authenticationFailed)
                #expect(openSSLErrorQueueIsEmpty())
            }
        }
        for (round, (box, message, k)) in boxes.enumerated() {
            let aad = round % 3 == 0 ? [] : [UInt8(round)]
            #expect(try AES256GCM.open(box, with: keys[k], authenticating: aad) == message, "round \(round)")
            // The same box under the next key fails, then the right key still works.
            #expect(cryptoErrorCode { _ = try AES256GCM.open(box, with: keys[(k + 1) % keys.count], authenticating: aad) } == .authenticationFailed)
            #expect(try AES256GCM.open(box, with: keys[k], authenticating: aad) == message, "round \(round) after a failure")
        }
    }

    @Test("known answers stay exact after other keys used the thread's context")
    func knownAnswerAfterOtherWork() throws {
        // Wycheproof tcId 91 (aes_gcm_256_test.json), inlined so this test needs no files.
        let key = SecretBytes(copying: try hex("92ace3e348cd821092cd921aa3546374299ab46209691bc28b8752d17f123c20"))
        let nonce = try hex("00112233445566778899aabb"), aad = try hex("00000000ffffffff")
        let msg = try hex("00010203040506070809"), expected = try hex("e27abdd2d2a53d2f136b" + "9a4a2579529301bcfb71c78d4060f52c")
        _ = try AES256GCM.seal(SecureRandom.bytes(100), with: SecretBytes(randomByteCount: 32), authenticating: [1, 2, 3])
        #expect(Array(try sealKAT(msg, key: key, nonce: nonce, aad: aad).combined.dropFirst(12)) == expected)
        _ = cryptoErrorCode { _ = try AES256GCM.open(try SealedBox(combined: [UInt8](repeating: 0, count: 40)), with: key) }
        #expect(Array(try sealKAT(msg, key: key, nonce: nonce, aad: aad).combined.dropFirst(12)) == expected)
    }

    @Test("many threads seal and open concurrently with their own keys")
    func concurrent() {
        let threads = 8, perThread = 300
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            let key = SecretBytes(randomByteCount: 32)
            let other = SecretBytes(randomByteCount: 32)
            for i in 0..<perThread {
                let message = [UInt8](repeating: UInt8(truncatingIfNeeded: t &* 31 &+ i), count: (i * 13) % 700)
                do {
                    let box = try AES256GCM.seal(message, with: key, authenticating: [UInt8(t)])
                    if try AES256GCM.open(box, with: key, authenticating: [UInt8(t)]) != message { failures.add() }
                    if cryptoErrorCode({ _ = try AES256GCM.open(box, with: other, authenticating: [UInt8(t)]) }) != .authenticationFailed { failures.add() }
                    if !openSSLErrorQueueIsEmpty() { failures.add() }
                } catch {
                    failures.add()
                }
            }
        }
        #expect(failures.value == 0)
    }
}

/// A tiny thread-safe counter for the concurrent test.
final class Counter: @unchecked Sendable {
    // Safe: every access goes through `lock`.
    private let lock = DispatchSemaphore(value: 1)
    private var count = 0
    func add() { lock.wait(); count += 1; lock.signal() }
    var value: Int { lock.wait(); defer { lock.signal() }; return count }
}
