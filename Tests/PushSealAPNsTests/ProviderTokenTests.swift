import Foundation
import Testing
import PushSealCrypto
@testable import PushSealAPNs
import PushSealTestSupport

@Suite("Provider tokens (ES256 JWT) and the 20/60-minute rules")
struct ProviderTokenTests {
    static func key(_ dir: URL) throws -> ProviderKey {
        let path = dir.appendingPathComponent("AuthKey.p8").path
        try TestKey.write(to: path)
        return try ProviderKey(p8Path: path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID)
    }

    static func temporaryDirectory() throws -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("apns-token-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }

    @Test("a token is header {alg, kid}, claims {iss, iat}, a 64-byte signature that verifies; Python's cryptography agrees")
    func shape() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = try Self.key(dir)
        let token = try ProviderToken.mint(key: key, issuedAt: 1_700_000_000)
        let parts = token.jwt.split(separator: ".")
        #expect(parts.count == 3)
        #expect(APNsText.base64urlDecode(String(parts[0])) == Array("{\"alg\":\"ES256\",\"kid\":\"ABC123DEFG\"}".utf8))
        #expect(APNsText.base64urlDecode(String(parts[1])) == Array("{\"iss\":\"TEAM123456\",\"iat\":1700000000}".utf8))
        #expect(APNsText.base64urlDecode(String(parts[2]))?.count == 64)
        let claims = try #require(ProviderToken.verify(token.jwt, publicKey: try key.signingKey.publicKey()))
        #expect(claims == ProviderToken.Claims(algorithm: "ES256", keyID: "ABC123DEFG", teamID: "TEAM123456", issuedAt: 1_700_000_000))
        // Tampered claims or another key: refused.
        let forged = parts[0] + "." + APNsText.base64url(Array("{\"iss\":\"TEAM123456\",\"iat\":1800000000}".utf8)) + "." + parts[2]
        #expect(ProviderToken.verify(forged, publicKey: try key.signingKey.publicKey()) == nil)
        let other = try Self.key(try Self.temporaryDirectory())
        #expect(ProviderToken.verify(token.jwt, publicKey: try other.signingKey.publicKey()) == nil)
        // An independent verifier: Python's cryptography with the .p8's public key.
        let script = """
        import sys, base64
        from cryptography.hazmat.primitives import serialization, hashes
        from cryptography.hazmat.primitives.asymmetric import ec, utils
        key = serialization.load_pem_private_key(open(sys.argv[1], 'rb').read(), None).public_key()
        h, c, s = sys.argv[2].split('.')
        raw = base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))
        sig = utils.encode_dss_signature(int.from_bytes(raw[:32], 'big'), int.from_bytes(raw[32:], 'big'))
        key.verify(sig, (h + '.' + c).encode(), ec.ECDSA(hashes.SHA256()))
        print('ok')
        """
        let r = try runTool(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, dir.appendingPathComponent("AuthKey.p8").path, token.jwt])
        #expect(r.status == 0 && r.stdout == "ok\n", "Python could not verify the JWT: \(r.stderr)")
    }

    @Test("one token is reused; a new one only after 50 minutes, never one used 60 minutes after its iat")
    func refreshRules() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clock = TestClock()
        let cache = ProviderTokenCache(key: try Self.key(dir), clock: clock)
        let first = try cache.current()
        #expect(try cache.current() == first)
        clock.advance(seconds: 19 * 60)
        #expect(try cache.current() == first)
        #expect(cache.mintCount == 1)
        // Three hours minute by minute: every token in use is younger than 60 minutes, and
        // two mints are at least 20 minutes apart.
        var lastMint = clock.wallSeconds() - 19 * 60
        var seen: Set<Int> = [first.generation]
        for _ in 0..<180 {
            clock.advance(seconds: 60)
            let t = try cache.current()
            #expect(clock.wallSeconds() - t.issuedAt < ProviderTokenCache.maximumAgeSeconds)
            if !seen.contains(t.generation) {
                #expect(t.issuedAt - lastMint >= ProviderTokenCache.minimumRefreshSeconds)
                lastMint = t.issuedAt
                seen.insert(t.generation)
            }
        }
        #expect(cache.mintCount == seen.count)
        #expect(seen.count == 4, "a new token every 50 minutes over 199 minutes")
    }

    @Test("after ExpiredProviderToken: the newer token if there is one, a new one from 20 minutes of age, else none")
    func refreshAfterRejection() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let clock = TestClock()
        let cache = ProviderTokenCache(key: try Self.key(dir), clock: clock)
        let first = try cache.current()
        clock.advance(seconds: 5 * 60)
        #expect(try cache.refresh(afterRejecting: first.generation) == nil, "5 minutes old: minting again would break the 20-minute rule")
        #expect(cache.mintCount == 1)
        clock.advance(seconds: 16 * 60)
        let second = try #require(try cache.refresh(afterRejecting: first.generation))
        #expect(second.generation == 2 && second.issuedAt == first.issuedAt + 21 * 60)
        // Another request signed with the first token is rejected too: it gets the second, no mint.
        #expect(try cache.refresh(afterRejecting: first.generation) == second)
        #expect(cache.mintCount == 2)
    }

    @Test("key files: unreadable, not a key, a P-384 key and malformed ids are badProviderKey")
    func badKeys() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(throws: APNsError(.badProviderKey, "")) { try ProviderKey(p8Path: dir.appendingPathComponent("missing.p8").path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID) }
        let text = dir.appendingPathComponent("text.p8")
        try Data("hello\n".utf8).write(to: text)
        #expect(throws: APNsError(.badProviderKey, "")) { try ProviderKey(p8Path: text.path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID) }
        let p384 = dir.appendingPathComponent("p384.p8").path
        try TestKey.write(to: p384, arguments: ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])
        #expect(throws: APNsError(.badProviderKey, "")) { try ProviderKey(p8Path: p384, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID) }
        let good = dir.appendingPathComponent("good.p8").path
        try TestKey.write(to: good)
        #expect(throws: APNsError(.badProviderKey, "")) { try ProviderKey(p8Path: good, keyID: "abc", teamID: MockAPNs.teamID) }
        #expect(throws: APNsError(.badProviderKey, "")) { try ProviderKey(p8Path: good, keyID: MockAPNs.keyID, teamID: "team123456") }
        #expect(throws: Never.self) { try ProviderKey(p8Path: good, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID) }
    }

    /// The fault `ProviderKey(p8Path:…)` threw for `path`, as the tools classify it.
    static func fault(_ path: String, keyID: String = MockAPNs.keyID) -> ProviderKey.FileFault? {
        do {
            _ = try ProviderKey(p8Path: path, keyID: keyID, teamID: MockAPNs.teamID)
            return nil
        } catch let e as APNsError {
            return ProviderKey.fileFault(of: e, path: path)
        } catch {
            return nil
        }
    }

    @Test("fileFault: missing and unreadable, not private (mode, link), not a key (text, P-384, bad id)")
    func fileFaults() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(Self.fault(dir.appendingPathComponent("missing.p8").path) == .unreadable)
        #expect(Self.fault(dir.path) != nil && Self.fault(dir.path) != .notAKey, "a directory is not read as a key")
        let good = dir.appendingPathComponent("good.p8").path
        try TestKey.write(to: good)
        #expect(Self.fault(good) == nil)
        #expect(Self.fault(good, keyID: "abc") == .notAKey)
        let link = dir.appendingPathComponent("link.p8").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: good)
        #expect(Self.fault(link) == .notPrivate)
        let text = dir.appendingPathComponent("text.p8").path
        try TestKey.write(to: text)
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: text))
        #expect(Self.fault(text) == .notAKey)
        #expect(chmod(text, 0o644) == 0)
        #expect(Self.fault(text) == .notPrivate)
        let p384 = dir.appendingPathComponent("p384.p8").path
        try TestKey.write(to: p384, arguments: ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])
        #expect(Self.fault(p384) == .notAKey)
    }
}

@Suite("Retry policy table and invalidation guard")
struct RetryPolicyTests {
    let policy = APNsRetryPolicy(maxAttempts: 5, baseDelaySeconds: 1, maxDelaySeconds: 60)

    func decide(_ status: Int, _ reason: String?, retryAfter: Double? = nil, attempt: Int = 1, refreshed: Bool = false) -> APNsRetryPolicy.Decision {
        policy.decide(after: .answered(status: status, reason: reason.map(APNsReason.init), retryAfterSeconds: retryAfter), attempt: attempt,
                      hasCollapseID: false, tokenRefreshed: refreshed, jitter: 0.5)
    }

    @Test("each status and reason of docs/apns.md")
    func table() {
        #expect(decide(200, nil) == .accept)
        for reason in ["BadDeviceToken", "BadTopic", "TopicDisallowed", "BadCollapseId", "BadPriority", "MissingTopic", "PayloadEmpty", "InvalidPushType", "DeviceTokenNotForTopic", "BadExpirationDate"] {
            #expect(decide(400, reason) == .reject, "400 \(reason)")
        }
        #expect(decide(403, "InvalidProviderToken") == .reject)
        #expect(decide(403, "ExpiredProviderToken") == .retry(delaySeconds: 0, newConnection: true, refreshToken: true))
        #expect(decide(403, "ExpiredProviderToken", refreshed: true) == .reject, "only once")
        #expect(decide(404, "BadPath") == .reject)
        #expect(decide(405, "MethodNotAllowed") == .reject)
        #expect(decide(410, "Unregistered") == .unregister)
        #expect(decide(410, "ExpiredToken") == .unregister)
        #expect(decide(413, "PayloadTooLarge") == .reject)
        // 429: jittered exponential back-off (base 1 s · 2^(n-1), scaled into [0.5, 1)), at least Retry-After.
        #expect(decide(429, "TooManyRequests", attempt: 1) == .retry(delaySeconds: 0.75, newConnection: false, refreshToken: false))
        #expect(decide(429, "TooManyRequests", attempt: 3) == .retry(delaySeconds: 3, newConnection: false, refreshToken: false))
        #expect(decide(429, "TooManyRequests", retryAfter: 30, attempt: 1) == .retry(delaySeconds: 30, newConnection: false, refreshToken: false))
        #expect(decide(429, "TooManyProviderTokenUpdates") == .retry(delaySeconds: 0.75, newConnection: false, refreshToken: false))
        #expect(decide(500, "InternalServerError") == .retry(delaySeconds: 0.75, newConnection: true, refreshToken: false))
        #expect(decide(503, "ServiceUnavailable", attempt: 2) == .retry(delaySeconds: 1.5, newConnection: true, refreshToken: false))
        #expect(decide(503, "Shutdown", attempt: 20) == .fail(reason: .apns(.shutdown)), "attempts capped")
        #expect(decide(500, "InternalServerError", attempt: 5) == .fail(reason: .apns(.internalServerError)))
        #expect(policy.backoff(30, 0.999) <= 60)
        // A reason APNs may add later is kept as its text, and decided by its status alone.
        #expect(decide(429, "SlowDownPlease", attempt: 5) == .fail(reason: .other("SlowDownPlease")))
        #expect(decide(400, "SomethingNew") == .reject)
    }

    @Test("reasons are typed: every known text round-trips, any other text is kept")
    func typedReasons() {
        for s in APNsReason.Server.allCases { #expect(APNsReason(s.rawValue) == .apns(s) && APNsReason(s.rawValue).text == s.rawValue) }
        for c in APNsReason.Client.allCases { #expect(APNsReason(c.rawValue) == .client(c) && APNsReason(c.rawValue).text == c.rawValue) }
        #expect(APNsReason.Server.allCases.count == 32 && APNsReason.Client.allCases.count == 10)
        #expect(APNsReason("BadEnvironmentKeyInToken") == .apns(.badEnvironmentKeyInToken))
        #expect(APNsReason("badDeviceToken") == .other("badDeviceToken"), "APNs' spelling only")
        #expect(!APNsReason("<script>").isKnown && APNsReason.labelValue("<script>") == "other" && APNsReason.labelValue("Unregistered") == "Unregistered")
    }

    @Test("transport failures: resent only when not sent yet or with a collapse id")
    func transport() {
        let notSent = APNsRetryPolicy.Result.transportFailed(reason: .connectionFailed, maybeSent: false, retryable: true)
        let maybe = APNsRetryPolicy.Result.transportFailed(reason: .timeout, maybeSent: true, retryable: true)
        let tls = APNsRetryPolicy.Result.transportFailed(reason: .tlsVerificationFailed, maybeSent: false, retryable: false)
        #expect(policy.decide(after: notSent, attempt: 1, hasCollapseID: false, tokenRefreshed: false, jitter: 0) == .retry(delaySeconds: 0.5, newConnection: true, refreshToken: false))
        #expect(policy.decide(after: maybe, attempt: 1, hasCollapseID: false, tokenRefreshed: false, jitter: 0) == .fail(reason: .client(.mayHaveBeenDelivered)))
        #expect(policy.decide(after: maybe, attempt: 1, hasCollapseID: true, tokenRefreshed: false, jitter: 0) == .retry(delaySeconds: 0.5, newConnection: false, refreshToken: false),
                "a timeout is a busy connection: the same pool")
        let lost = APNsRetryPolicy.Result.transportFailed(reason: .connectionLost, maybeSent: true, retryable: true)
        #expect(policy.decide(after: lost, attempt: 1, hasCollapseID: true, tokenRefreshed: false, jitter: 0) == .retry(delaySeconds: 0.5, newConnection: true, refreshToken: false))
        #expect(policy.decide(after: tls, attempt: 1, hasCollapseID: true, tokenRefreshed: false, jitter: 0) == .fail(reason: .client(.tlsVerificationFailed)))
        #expect(policy.decide(after: notSent, attempt: 5, hasCollapseID: false, tokenRefreshed: false, jitter: 0) == .fail(reason: .client(.connectionFailed)))
    }

    func bad(_ i: Int) -> APNsInvalidation { APNsInvalidation(tag: i, deviceToken: token(i), reason: "BadDeviceToken", timestampMilliseconds: nil) }

    @Test("BadDeviceToken in a burst never invalidates; alone, after 10 accepted, it does; 410 always does")
    func burstGuard() {
        var g = InvalidationGuard()
        var released: [APNsInvalidation] = []
        // A development token batch sent to production: every answer is BadDeviceToken.
        for i in 0..<50 { released += g.record(kind: .rejected, status: 400, reason: "BadDeviceToken", invalidation: bad(i)) }
        let gone = APNsInvalidation(tag: 99, deviceToken: "aa", reason: "Unregistered", timestampMilliseconds: 5)
        released += g.record(kind: .unregistered, status: 410, reason: "Unregistered", invalidation: gone)
        for _ in 0..<100 { released += g.record(kind: .accepted, status: 200, reason: nil, invalidation: nil) }
        released += g.record(kind: .rejected, status: 400, reason: "BadDeviceToken", invalidation: bad(200))
        g.finish()
        #expect(g.burstDetected)
        #expect(released == [gone])
        #expect(g.suppressedCount == 51)

        var h = InvalidationGuard()
        released = []
        released += h.record(kind: .rejected, status: 400, reason: "BadDeviceToken", invalidation: bad(1)) // held
        #expect(released.isEmpty)
        for _ in 0..<10 { released += h.record(kind: .accepted, status: 200, reason: nil, invalidation: nil) }
        #expect(released == [bad(1)])
        for i in 2..<5 { released += h.record(kind: .rejected, status: 400, reason: "BadDeviceToken", invalidation: bad(i)) }
        #expect(released == [bad(1), bad(2), bad(3), bad(4)])
        #expect(!h.burstDetected)
    }

    @Test("410 timestamps: delete a registration older than the timestamp, keep one made after it")
    func timestamps() {
        let i = APNsInvalidation(tag: 1, deviceToken: "aa", reason: "Unregistered", timestampMilliseconds: 1_700_000_000_500)
        #expect(i.shouldDelete(registeredAtMilliseconds: 1_700_000_000_499))
        #expect(!i.shouldDelete(registeredAtMilliseconds: 1_700_000_000_500))
        #expect(!i.shouldDelete(registeredAtMilliseconds: 1_700_000_001_000), "registered again after APNs saw it dead: keep it")
    }

    @Test("requests APNs would refuse are refused before sending")
    func validation() {
        func check(_ n: APNsNotification, _ code: APNsError.Code) {
            #expect(throws: APNsError(code, "")) { try n.validate() }
        }
        check(APNsNotification(deviceToken: "xyz1", payload: [1], topic: "a"), .badDeviceToken)
        check(APNsNotification(deviceToken: "abc", payload: [1], topic: "a"), .badDeviceToken)
        check(APNsNotification(deviceToken: "", payload: [1], topic: "a"), .badDeviceToken)
        check(APNsNotification(deviceToken: "ab", payload: [UInt8](repeating: 0x20, count: 4097), topic: "a"), .payloadTooLarge)
        #expect(throws: Never.self) { try APNsNotification(deviceToken: "ab", payload: [UInt8](repeating: 0x20, count: 5120), pushType: .voip, topic: "a.voip").validate() }
        check(APNsNotification(deviceToken: "ab", payload: [UInt8](repeating: 0x20, count: 5121), pushType: .voip, topic: "a.voip"), .payloadTooLarge)
        check(APNsNotification(deviceToken: "ab", payload: [], topic: "a"), .payloadEmpty)
        check(APNsNotification(deviceToken: "ab", payload: [1], pushType: .background, topic: "a", priority: 10), .badPriority)
        check(APNsNotification(deviceToken: "ab", payload: [1], topic: "a", priority: 7), .badPriority)
        check(APNsNotification(deviceToken: "ab", payload: [1], topic: "a", collapseID: String(repeating: "c", count: 65)), .badCollapseID)
        check(APNsNotification(deviceToken: "ab", payload: [1], pushType: .voip, topic: "a"), .badTopic)
        check(APNsNotification(deviceToken: "ab", payload: [1], topic: "a", expiration: -1), .badExpiration)
        #expect(throws: Never.self) { try APNsNotification(deviceToken: String(repeating: "ab", count: 100), payload: [1], topic: "a", expiration: 0).validate() }
        #expect(APNsPushType(rawValue: "alertz") == nil)
        #expect(APNsPushType.voip.topic(forBundleID: "com.x") == "com.x.voip")
    }
}
