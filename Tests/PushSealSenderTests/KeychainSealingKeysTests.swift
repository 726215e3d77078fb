import PushSealTestSupport
import Foundation
import PushSealCrypto
import PushSealWire
@testable import PushSealKeyRecords
@testable import PushSealServerKeys
@testable import PushSealServerKeyProviders
import PushSealKeychain
@testable import PushSealSender
import Testing

/// The real key provider (PushSealServerKeyProviders, injected into the sender) against a scratch
/// server keychain.
@Suite struct KeychainSealingKeysTests {
    static let appID = "com.example.app"

    /// A server keychain in a scratch directory (0700), removed by `cleanup()`.
    struct Scratch {
        let temporary: TemporaryDirectory
        var root: URL { temporary.url }
        let dir: URL
        let store: KeyStore
        init() throws {
            temporary = try TemporaryDirectory("sender-keys")
            dir = temporary.appending("server")
            try Keychain.create(at: dir)
            store = try KeyStore(keychain: try Keychain(opening: dir, as: KeyStore.serverIdentity))
        }
        func cleanup() {
            try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: dir.path)
            try? FileManager.default.removeItem(at: root)
        }
        func sealer() throws -> NotificationSealer {
            try NotificationSealer(appID: KeychainSealingKeysTests.appID, keys: try KeychainSealingKeys(keychainAt: dir))
        }
    }

    func expectSender<R>(_ code: SenderError.Code, _ contains: String = "", sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R) {
        do {
            _ = try body()
            Issue.record("expected \(code), got success", sourceLocation: sourceLocation)
        } catch let e as SenderError {
            #expect(e.code == code, "got \(e.code): \(e.reason)", sourceLocation: sourceLocation)
            #expect(contains.isEmpty || e.reason.contains(contains), "\(e.reason)", sourceLocation: sourceLocation)
        } catch let e as any SenderErrorConvertible {
            // The provider's own errors (SealingKeyError), as the sender and push-seal report them.
            let m = e.senderError
            #expect(m.code == code, "got \(m.code): \(m.reason)", sourceLocation: sourceLocation)
            #expect(contains.isEmpty || m.reason.contains(contains), "\(m.reason)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected SenderError \(code), got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func sealsWithThePrimaryKeyAndTheDeviceOpens() throws {
        let s = try Scratch()
        defer { s.cleanup() }
        let info = try s.store.generate(appID: Self.appID, recipient: "alice")
        let sealed = try s.sealer().seal(notificationJSON: Array("{\"title\":\"Ana\",\"body\":\"hi\"}".utf8), for: "alice")
        #expect(sealed.keyID == info.keyID)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(sealed.payload)) as? [String: Any])
        #expect(o["key_id"] as? String == info.keyID)
        let text = try #require(o["encrypted_data"] as? String)
        let combined = try #require(Data(base64Encoded: text))
        let box = try SealedBox(combined: [UInt8](combined))
        let key = try #require(try s.store.load(appID: Self.appID, recipient: "alice")?.keys.first?.secret)
        let plain = try AES256GCM.open(box, with: key, authenticating: Array("pushseal:v1|A256GCM|\(info.keyID)|\(Self.appID)".utf8))
        #expect(String(decoding: plain, as: UTF8.self).hasPrefix("{\"title\":\"Ana\",\"body\":\"hi\",\"iat\":"))
        #expect((try s.store.keyset(appID: Self.appID, recipient: "alice").primary?.sealCount ?? 0) >= 1)
    }

    @Test func unknownDisabledAndDestroyedKeysAreClearErrors() throws {
        let s = try Scratch()
        defer { s.cleanup() }
        let bob = try s.store.generate(appID: Self.appID, recipient: "bob")
        try s.store.revoke(appID: Self.appID, recipient: "bob", keyID: bob.keyID)
        try s.store.generate(appID: Self.appID, recipient: "dave")
        try s.store.mutate(appID: Self.appID, recipient: "dave") { ks, _ in
            for i in ks.keys.indices { ks.keys[i].info.status = .destroyed; ks.keys[i].secret = nil }
            return [KeyStore.AuditEvent(event: "testDestroy", time: KeyTime.now())]
        }
        let sealer = try s.sealer()
        let n = PushNotification(title: "t")
        expectSender(.unknownRecipient, "no keyset for recipient carol") { try sealer.seal(n, for: "carol") }
        // A name that breaks the keychain's naming rules is a bad option, not an unknown recipient.
        expectSender(.invalidOption, "without control characters or /") { try sealer.seal(n, for: "not a name/..") }
        expectSender(.keyUnavailable, "was disabled (revoked)") { try sealer.seal(n, for: "bob") }
        expectSender(.keyUnavailable, "was destroyed") { try sealer.seal(n, for: "dave") }
        // Batch lines report the same codes and keep going.
        let batch = BatchSealer(sealer: sealer, concurrency: 1)
        let out = batch.seal(["carol", "bob"].enumerated().map { i, r in
            BatchSealer.Line(number: i + 1, bytes: Array("{\"recipient\":\"\(r)\",\"notification\":{\"title\":\"t\"}}".utf8))
        })
        #expect(out.failureCount == 2)
        let text = String(decoding: out.output, as: UTF8.self)
        #expect(text.contains("\"code\":\"unknownRecipient\""))
        #expect(text.contains("\"code\":\"keyUnavailable\""))
    }

    @Test func batchSeesARevokeAndRotationAtTheNextChunk() throws {
        let s = try Scratch()
        defer { s.cleanup() }
        let first = try s.store.generate(appID: Self.appID, recipient: "alice")
        let keys = try KeychainSealingKeys(keychainAt: s.dir)
        let sealer = try NotificationSealer(appID: Self.appID, keys: keys)
        let batch = BatchSealer(sealer: sealer, concurrency: 2)
        let line = Array("{\"recipient\":\"alice\",\"notification\":{\"title\":\"t\"}}".utf8)
        // More lines than one revalidation run, so seal(_:) splits the call into runs.
        let lines = (1...(BatchSealer.revalidationLineCount + 100)).map { BatchSealer.Line(number: $0, bytes: line) }
        func keyIDs(_ out: BatchSealer.Chunk) -> Set<String> {
            var ids = Set<String>()
            for l in String(decoding: out.output, as: UTF8.self).split(separator: "\n") {
                if let r = l.range(of: "\"key_id\":\"") { ids.insert(String(l[r.upperBound...].prefix { $0 != "\"" })) }
            }
            return ids
        }
        let a = batch.seal(lines)
        #expect(a.failureCount == 0)
        #expect(keyIDs(a) == [first.keyID])
        #expect(String(decoding: a.output, as: UTF8.self).split(separator: "\n").count == lines.count)
        let second = try s.store.rotate(appID: Self.appID, recipient: "alice")
        let b = batch.seal(Array(lines.prefix(50)))
        #expect(b.failureCount == 0)
        #expect(keyIDs(b) == [second.keyID])
        _ = try s.store.revoke(appID: Self.appID, recipient: "alice", keyID: second.keyID)
        let c = batch.seal(Array(lines.prefix(50)))
        #expect(c.failureCount == 50)
        #expect(String(decoding: c.output, as: UTF8.self).contains("\"code\":\"keyUnavailable\""))
        // Never under-counted: the stored counter covers every seal handed out.
        let counted = try s.store.keyset(appID: Self.appID, recipient: "alice").keys.reduce(UInt64(0)) { $0 + $1.sealCount }
        #expect(counted >= UInt64(lines.count + 50))
    }

    @Test func sealLimitIsAClearError() throws {
        let s = try Scratch()
        defer { s.cleanup() }
        let erin = try s.store.generate(appID: Self.appID, recipient: "erin")
        try s.store.setSealCount(appID: Self.appID, recipient: "erin", keyID: erin.keyID, to: KeyInfo.sealLimit - 1)
        let sealer = try s.sealer()
        _ = try sealer.seal(PushNotification(title: "last"), for: "erin")
        expectSender(.sealLimitReached, "2^32") { try sealer.seal(PushNotification(title: "one too many"), for: "erin") }
        expectSender(.sealLimitReached) { try s.sealer().seal(PushNotification(title: "fresh process"), for: "erin") }
    }

    @Test func malformedNamesAreBadOptionsBeforeAnyKeychainRead() throws {
        let s = try Scratch()
        defer { s.cleanup() }
        let keys = try KeychainSealingKeys(keychainAt: s.dir)
        // The provider names the broken rule; the sender reports it as a bad option.
        func expectInvalidName(_ appID: String, _ recipient: String, _ contains: String) {
            #expect(throws: SealingKeyError(.invalidName, "")) { try keys.primaryKey(appID: appID, recipient: recipient) }
            expectSender(.invalidOption, contains) { try keys.primaryKey(appID: appID, recipient: recipient) }
        }
        expectInvalidName("bad app", "alice", "is not a bundle identifier (1-255 characters of A-Z a-z 0-9 . -)")
        expectInvalidName(Self.appID, "../../etc/passwd", "must be 1-255 bytes without control characters or /")
        expectInvalidName(Self.appID, "a\u{1}b", "without control characters")
        // A well-formed name without a keyset is an unknown recipient, not a bad option.
        expectSender(.unknownRecipient) { try keys.primaryKey(appID: Self.appID, recipient: "alice-iphone (2)") }
        // The same rule at the seal, for a batch line's recipient.
        try s.store.generate(appID: Self.appID, recipient: "alice")
        let batch = BatchSealer(sealer: try s.sealer(), concurrency: 1)
        let out = batch.seal([BatchSealer.Line(number: 1, bytes: Array("{\"recipient\":\"../x\",\"notification\":{\"title\":\"t\"}}".utf8))])
        #expect(out.failureCount == 1)
        #expect(String(decoding: out.output, as: UTF8.self).contains("\"code\":\"invalidOption\""))
    }

    @Test func aKeychainBeforeFirstUnlockIsLockedNotUnreadable() throws {
        let s = try Scratch()
        defer { s.cleanup() }
        try s.store.generate(appID: Self.appID, recipient: "alice")
        let keychain = try Keychain(opening: s.dir, as: KeyStore.serverIdentity)
        try keychain.setDeviceState(.beforeFirstUnlock)
        expectSender(.keyStoreLocked, "errSecInteractionNotAllowed (-25308)") { try s.sealer().seal(PushNotification(title: "t"), for: "alice") }
        expectSender(.keyStoreLocked, "keyset com.example.app/alice") { try s.sealer().seal(PushNotification(title: "t"), for: "alice") }
        // Unlocked again, the same keychain seals.
        try keychain.setDeviceState(.unlocked)
        _ = try s.sealer().seal(PushNotification(title: "t"), for: "alice")
    }

    @Test func missingAndInsecureKeychainsAreRefused() throws {
        let s = try Scratch()
        defer { s.cleanup() }
        expectSender(.keyStoreMissing) { try KeychainSealingKeys(keychainAt: s.root.appendingPathComponent("nope")) }
        #expect(throws: SealingKeyError(.keyStoreMissing, "")) { try KeychainSealingKeys(keychainAt: s.root.appendingPathComponent("nope")) }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: s.dir.path)
        expectSender(.keyStoreInsecure) { try KeychainSealingKeys(keychainAt: s.dir) }
    }
}

/// Reliability review R11: a keychain on a full disk fails a seal as `keyStoreUnwritable`
/// (the keychain's `errSecDiskFull`, -34), not `keyStoreUnreadable`.
@Suite struct DiskFullSealingTests {
    @Test func aFullKeychainIsKeyStoreUnwritable() {
        let full = KeychainError(.diskFull, "cannot write /kc/tmp/.tmp-1: no space left on device", suggestion: "free space")
        let e = KeychainSealingKeys.sealingKeyError(full, appID: "com.example.app", recipient: "alice")
        #expect(e.code == .keyStoreUnwritable)
        #expect(e.reason.contains("full"))
        #expect(e.senderError.code == .keyStoreUnwritable)
        #expect(KeychainSealingKeys.sealingKeyError(KeychainError(.io, "cannot read"), appID: "a.b", recipient: "r").code == .keyStoreUnreadable)
    }
}
