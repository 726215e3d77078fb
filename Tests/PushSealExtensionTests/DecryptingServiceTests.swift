import PushSealTestSupport
import PushSealSystem
import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
import PushSealKeychain
import Testing
@testable import PushSealExtension

private let appID = "com.example.app"

private struct Fixture {
    let key = SecretBytes(randomByteCount: 32)
    let container: URL
    let logger = CollectingLogger()
    let watch = DeliveryWatch()

    init() throws { container = try makeTemporaryDirectory() }

    func host(budget: Double = 5, locale: String? = nil, keyFailure: KeychainError? = nil, now: Int64 = 1_800_000_000,
              loopback: Bool = true) -> ExtensionHost {
        let provider = MemoryKeyProvider(keys: ["k1": key], failure: keyFailure)
        let config = DecryptingServiceConfiguration(appID: appID, keyProvider: provider, locale: locale,
                                                    containerDirectory: container, allowInsecureLoopback: loopback, now: { now })
        return ExtensionHost(budgetSeconds: budget, logger: logger, makeExtension: watch.wrap(DecryptingServiceExtension.factory(config)))
    }

    func run(_ plaintext: JSONObject, host: ExtensionHost? = nil, keyID: String = "k1", sealedFor: String = appID) throws -> ExtensionHost.Result {
        let payload = try sealPayload(plaintext, key: key, keyID: keyID, appID: sealedFor)
        return (host ?? self.host()).run(UNNotificationRequest(identifier: UUID().uuidString, apnsPayload: payload))
    }

    /// Waits until no content-handler call can come any more, then checks the host saw exactly one.
    func expectExactlyOneDelivery(sourceLocation: SourceLocation = #_sourceLocation) {
        PushSealExtensionTests.expectExactlyOneDelivery(logger, watch: watch, sourceLocation: sourceLocation)
    }

    func cleanUp() { try? FileManager.default.removeItem(at: container) }
}

private func expectOriginal(_ r: ExtensionHost.Result, reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(r.outcome == .original, sourceLocation: sourceLocation)
    #expect(r.content?.title == "New message", sourceLocation: sourceLocation)
    #expect(r.content?.body == "Open the app to read it", sourceLocation: sourceLocation)
    #expect(r.content?.attachments.isEmpty == true, sourceLocation: sourceLocation)
    #expect(r.reason == reason, "detail: \(r.detail)", sourceLocation: sourceLocation)
}

@Suite struct DecryptingServiceTests {
    @Test func decryptsSubstitutesAndMergesData() throws {
        let f = try Fixture()
        defer { f.cleanUp() }
        let r = try f.run(["title": "Ana", "subtitle": "Chat", "body": "Dinner at 8? 🍝", "data": .object(["thread": "t-9", "aps": "no"]),
                           "iat": .integer(1_796_000_000)])
        #expect(r.outcome == .decrypted)
        #expect((r.content?.title, r.content?.subtitle, r.content?.body) == ("Ana", "Chat", "Dinner at 8? 🍝"))
        // Security review F3: the sealed data under pushseal, the delivered aps, nothing else.
        guard case .object(let sealed)? = r.content?.userInfo["pushseal"] else { Issue.record("no pushseal"); return }
        #expect(sealed.count == 2 && sealed["thread"] == "t-9" && sealed["aps"] == "no")
        #expect(r.content?.userInfo["thread"] == nil)
        if case .object(let aps)? = r.content?.userInfo["aps"] { #expect(aps["mutable-content"] == .integer(1)) } else { Issue.record("no aps") }
        #expect(r.content?.userInfo["key_id"] == nil)
        f.expectExactlyOneDelivery()
        for stage in ["keyLookup", "open", "check", "localize"] {
            #expect(f.logger.lines.contains { $0.hasPrefix("stage=\(stage) event=ok durationMs=") })
        }
        // Never plaintext in the log.
        #expect(!f.logger.lines.joined().contains("Dinner"))
    }

    @Test func missingFieldsBecomeEmptyNotFallbackText() throws {
        let f = try Fixture()
        defer { f.cleanUp() }
        let r = try f.run(["body": "only a body"])
        #expect(r.outcome == .decrypted)
        #expect((r.content?.title, r.content?.subtitle, r.content?.body) == ("", "", "only a body"))
    }

    @Test func keyProviderFailureGivesOriginalWithItsReason() throws {
        let f = try Fixture()
        defer { f.cleanUp() }
        let r = try f.run(["title": "secret"], host: f.host(keyFailure: KeychainError(.interactionNotAllowed, "the device is locked")))
        expectOriginal(r, reason: "keychain:errSecInteractionNotAllowed(-25308)")
        #expect(r.detail.contains("-25308"))
        f.expectExactlyOneDelivery()
    }

    @Test func unknownKeyIDWrongAppAndWrongKeyGiveOriginal() throws {
        let f = try Fixture()
        defer { f.cleanUp() }
        expectOriginal(try f.run(["title": "x"], keyID: "k2"), reason: "keychain:errSecItemNotFound(-25300)")
        expectOriginal(try f.run(["title": "x"], sealedFor: "com.example.other"), reason: "authenticationFailed")
        let other = try Fixture()
        defer { other.cleanUp() }
        let payload = try sealPayload(["title": "x"], key: other.key)
        expectOriginal(f.host().run(UNNotificationRequest(identifier: "r", apnsPayload: payload)), reason: "authenticationFailed")
    }

    @Test func malformedEnvelopeGivesOriginal() throws {
        let f = try Fixture()
        defer { f.cleanUp() }
        guard case .object(var p) = try sealPayload(["title": "x"], key: f.key) else { return }
        p["enc_alg"] = "A128GCM"
        expectOriginal(f.host().run(UNNotificationRequest(identifier: "r", apnsPayload: .object(p))), reason: "unknownAlgorithm")
        p["enc_alg"] = "A256GCM"
        p["encrypted_data"] = "!!!not base64!!!"
        expectOriginal(f.host().run(UNNotificationRequest(identifier: "r", apnsPayload: .object(p))), reason: "invalidBase64")
        p["encrypted_data"] = "AAAA"
        expectOriginal(f.host().run(UNNotificationRequest(identifier: "r", apnsPayload: .object(p))), reason: "truncatedBox")
        p["key_id"] = "k 1"
        expectOriginal(f.host().run(UNNotificationRequest(identifier: "r", apnsPayload: .object(p))), reason: "invalidKeyID")
        p["key_id"] = .integer(1)
        expectOriginal(f.host().run(UNNotificationRequest(identifier: "r", apnsPayload: .object(p))), reason: "wrongFieldType:key_id")
        p["key_id"] = nil
        p["enc_alg"] = ""
        expectOriginal(f.host().run(UNNotificationRequest(identifier: "r", apnsPayload: .object(p))), reason: "missingField:key_id")
        p["key_id"] = "k1"
        expectOriginal(f.host().run(UNNotificationRequest(identifier: "r", apnsPayload: .object(p))), reason: "emptyField:enc_alg")
        p["enc_alg"] = "A256GCM"
        p["encrypted_data"] = " \r\n "
        expectOriginal(f.host().run(UNNotificationRequest(identifier: "r", apnsPayload: .object(p))), reason: "emptyField:encrypted_data")
    }

    @Test func expiryIsCheckedAgainstTheInjectedClock() throws {
        let f = try Fixture()
        defer { f.cleanUp() }
        let plaintext: JSONObject = ["title": "Bank", "body": "Code 482913", "exp": .integer(1_800_000_000)]
        expectOriginal(try f.run(plaintext, host: f.host(now: 1_800_000_000)), reason: "expired")
        #expect(try f.run(plaintext, host: f.host(now: 1_799_999_999)).outcome == .decrypted)
    }

    @Test("F2: a message past its exp-or-30-days window is replayTooOld; an unusable guard store is replayGuardUnavailable (fail closed)")
    func replayGuardRefusals() throws {
        let f = try Fixture()
        defer { f.cleanUp() }
        let now: Int64 = 1_800_000_000
        let stale: JSONObject = ["title": "Bank", "id": "old-1", "iat": .integer(now - ReplayGuard.maxAgeSeconds)]
        expectOriginal(try f.run(stale), reason: "replayTooOld")
        let store = f.container.appendingPathComponent(ReplayGuard.fileName)
        try Data("{".utf8).write(to: store)
        chmod(store.path, 0o600)
        expectOriginal(try f.run(["title": "Bank", "id": "new-1", "iat": .integer(now)]), reason: "replayGuardUnavailable")
    }

    @Test func replayedIDGivesOriginal() throws {
        let f = try Fixture()
        defer { f.cleanUp() }
        let plaintext: JSONObject = ["title": "Bank", "id": "otp-1"]
        #expect(try f.run(plaintext).outcome == .decrypted)
        expectOriginal(try f.run(plaintext), reason: "replayed")
        #expect(try f.run(["title": "Bank", "id": "otp-2"]).outcome == .decrypted)
    }

    @Test func blankPlaintextGivesOriginal() throws {
        let f = try Fixture()
        defer { f.cleanUp() }
        // The codec refuses a plaintext without text; an injected opener that lets one
        // through still never produces a blank notification.
        expectOriginal(try f.run(["title": "", "body": ""]), reason: "invalidPlaintext")
        let config = DecryptingServiceConfiguration(appID: appID, keyProvider: MemoryKeyProvider(keys: ["k1": f.key]),
                                                    opener: BlankOpener(), containerDirectory: f.container)
        let host = ExtensionHost(budgetSeconds: 2, makeExtension: DecryptingServiceExtension.factory(config))
        expectOriginal(try f.run(["title": "x"], host: host), reason: "blankContent")
        // Texts of white space only (which the codec lets through): nothing readable, so the original alert.
        expectOriginal(try f.run(["title": " ", "subtitle": "\t", "body": "\u{00A0}\n"]), reason: "blankContent")
        #expect(try f.run(["title": " ", "body": "x"]).outcome == .decrypted)
    }

    @Test func injectedErrorsWithoutAKnownTypeStillFallBack() throws {
        let f = try Fixture()
        defer { f.cleanUp() }
        struct Opaque: Error {}
        struct Failing: NotificationPayloadOpener, NotificationKeyProvider {
            var failKeyID = false
            func envelope(in payload: JSONValue) throws -> SealedPayload {
                if failKeyID { throw Opaque() }
                return try WireFormatOpener().envelope(in: payload)
            }
            func open(_ envelope: SealedPayload, with key: SecretBytes, appID: String) throws -> PushNotification { throw Opaque() }
            func key(for keyID: String) throws -> SecretBytes { throw Opaque() }
        }
        func host(_ opener: Failing, _ provider: any NotificationKeyProvider) -> ExtensionHost {
            ExtensionHost(budgetSeconds: 2, makeExtension: DecryptingServiceExtension.factory(
                DecryptingServiceConfiguration(appID: appID, keyProvider: provider, opener: opener)))
        }
        let keys = MemoryKeyProvider(keys: ["k1": f.key])
        expectOriginal(try f.run(["title": "x"], host: host(Failing(failKeyID: true), keys)), reason: "malformedEnvelope")
        expectOriginal(try f.run(["title": "x"], host: host(Failing(), Failing())), reason: "keyUnavailable")
        expectOriginal(try f.run(["title": "x"], host: host(Failing(), keys)), reason: "openFailed")
    }

    @Test(arguments: [("pt-BR", "Resultados"), ("pt_br", "Resultados"), ("pt-PT", "Resultados pt"), ("pt", "Resultados pt"),
                      ("fr-CA", "Résultats"), ("de", "Lab results"), (nil, "Lab results")])
    func localizationPicksLocaleThenLanguageThenDefault(_ locale: String?, _ title: String) throws {
        let f = try Fixture()
        defer { f.cleanUp() }
        let plaintext: JSONObject = [
            "title": "Lab results", "body": "Your results are ready.",
            "localizations": .object(["fr": .object(["title": "Résultats"]), "pt-BR": .object(["title": "Resultados", "body": "Prontos."]),
                                      "pt": .object(["title": "Resultados pt"])]),
        ]
        let r = try f.run(plaintext, host: f.host(locale: locale))
        #expect(r.content?.title == title)
        #expect(r.content?.body == (title == "Resultados" ? "Prontos." : "Your results are ready."))
    }
}

@Suite(.serialized) struct DecryptingServiceMediaTests {
    private func server() throws -> MediaServer {
        try #require(MediaServer.shared, "python3 is needed to run the local media server")
    }

    @Test func mediaIsAttached() throws {
        let s = try server()
        let f = try Fixture()
        defer { f.cleanUp() }
        let r = try f.run(["title": "Photo from Ana", "media": .object(["url": .string(s.url("/photo"))])])
        #expect(r.outcome == .decrypted)
        #expect(r.content?.title == "Photo from Ana")
        let attachment = try #require(r.content?.attachments.first)
        #expect(attachment.type == "public.png")
        #expect(attachment.url.pathExtension == "png")
        #expect(attachment.url.deletingLastPathComponent().standardizedFileURL.path.hasPrefix(f.container.standardizedFileURL.path))
        #expect(f.logger.lines.contains { $0.hasPrefix("stage=attach event=ok") })
        f.expectExactlyOneDelivery()
    }

    @Test(arguments: ["/error-page", "/missing", "/huge.jpg", "/hop/1", "/drip", "/stall"])
    func failingRouteStillDeliversTextExactlyOnce(_ path: String) throws {
        let s = try server()
        let f = try Fixture()
        defer { f.cleanUp() }
        let r = try f.run(["title": "Photo from Ana", "body": "Look!", "media": .object(["url": .string(s.url(path))])],
                          host: f.host(budget: 2))
        #expect(r.outcome == .decryptedWithoutMedia)
        #expect((r.content?.title, r.content?.body) == ("Photo from Ana", "Look!"))
        #expect(r.content?.attachments.isEmpty == true)
        #expect(r.reason.hasPrefix("media:"))
        f.expectExactlyOneDelivery()
    }

    @Test func insecureMediaWithoutTheFlagIsRefused() throws {
        let s = try server()
        let f = try Fixture()
        defer { f.cleanUp() }
        let r = try f.run(["title": "t", "media": .object(["url": .string(s.url("/photo"))])], host: f.host(loopback: false))
        #expect(r.outcome == .decryptedWithoutMedia)
        #expect(r.reason == "media:mediaURLRefused")
    }

    /// Deadline requirement: with a 3 s budget and a server that never answers, the extension
    /// itself delivers the decrypted text before the budget ends. Asserted by who delivered,
    /// not by a clock: had the budget run out first, the host would have shown the original
    /// content (`extensionTimedOut`, delivered by `budgetEnd`).
    @Test func stallingServerDeliversTextWithinTheBudget() throws {
        let s = try server()
        let f = try Fixture()
        defer { f.cleanUp() }
        let r = try f.run(["title": "Photo from Ana", "media": .object(["url": .string(s.url("/stall"))])], host: f.host(budget: 3))
        #expect(r.outcome == .decryptedWithoutMedia)
        #expect(r.content?.title == "Photo from Ana")
        #expect(["media:mediaTimedOut", "media:timeWillExpire"].contains(r.reason), "\(r.reason)")
        #expect(f.logger.lines.contains { $0.hasPrefix("stage=host event=delivered by=contentHandler outcome=decryptedWithoutMedia") },
                "\(f.logger.lines)")
        f.expectExactlyOneDelivery()
    }

    /// When the download outlives the expiry call, the expiry path cancels it and delivers the
    /// decrypted text (driven by hand: the host's own timing makes the download time out first).
    @Test func expiryPathDeliversDecryptedText() throws {
        let s = try server()
        let f = try Fixture()
        defer { f.cleanUp() }
        let config = DecryptingServiceConfiguration(appID: appID, keyProvider: MemoryKeyProvider(keys: ["k1": f.key]),
                                                    containerDirectory: f.container, allowInsecureLoopback: true)
        let context = ExtensionContext(logger: f.logger, budgetSeconds: 30, expiry: .now() + 29, deadline: .now() + 30)
        let service = DecryptingServiceExtension(configuration: config, context: context)
        let stall = s.markedStallURL()
        let payload = try sealPayload(["title": "Photo from Ana", "media": .object(["url": .string(stall.url)])], key: f.key)
        let deliveries = Locked<[(UNNotificationContent, NotificationOutcome, String)]>([])
        let handler = ContentHandler { c, o, r in deliveries.withLock { $0.append((c, o, r)) }; return true }
        let finished = DispatchSemaphore(value: 0)
        Thread {
            service.didReceive(UNNotificationRequest(identifier: "r", apnsPayload: payload), withContentHandler: handler)
            finished.signal()
        }.start()
        // Wait for the event "the download is under way" (the server read the request): by then
        // decryption is done and the best attempt is the decrypted text, pending its media.
        try #require(s.waitForRequest(stall.name), "the media request did not reach the server within 20 s")
        #expect(f.logger.lines.contains { $0.hasPrefix("stage=localize event=ok") })
        #expect(deliveries.withLock { $0.isEmpty })
        service.serviceExtensionTimeWillExpire()
        // The cancelled download lets didReceive return promptly.
        #expect(finished.wait(timeout: .now() + 2) == .success)
        let all = deliveries.withLock { $0 }
        #expect(all.count == 1)
        #expect(all.first?.0.title == "Photo from Ana")
        #expect(all.first?.1 == .decryptedWithoutMedia)
        #expect(all.first?.2 == "media:timeWillExpire")
    }
}

@Suite struct ReplayGuardTests {
    static let now: Int64 = 1_800_000_000

    @Test("F2: ids are kept until their exp (else iat + 30 days); later the message is replayTooOld, never fresh again")
    func boundedByTime() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let g = ReplayGuard(containerDirectory: dir, capacity: 3)
        let now = Self.now
        #expect(try g.check(id: "a", iat: now, exp: now + 100, now: now) == .fresh)
        #expect(try g.check(id: "a", iat: now, exp: now + 100, now: now + 99) == .replayed)
        // After exp the guard no longer vouches: refused, not accepted as new.
        #expect(try g.check(id: "a", iat: now, exp: now + 100, now: now + 100) == .tooOld)
        // Without exp: iat + 30 days.
        #expect(try g.check(id: "b", iat: now, exp: nil, now: now) == .fresh)
        #expect(try g.check(id: "b", iat: now, exp: nil, now: now + ReplayGuard.maxAgeSeconds - 1) == .replayed)
        #expect(try g.check(id: "b", iat: now, exp: nil, now: now + ReplayGuard.maxAgeSeconds) == .tooOld)
        #expect(try g.check(id: "old", iat: now - ReplayGuard.maxAgeSeconds, exp: nil, now: now) == .tooOld)
        #expect(try g.check(id: nil, iat: nil, exp: nil, now: now) == .unchecked)
        // Persisted: a new guard over the same container remembers.
        #expect(try ReplayGuard(containerDirectory: dir).check(id: "b", iat: now, exp: nil, now: now + 1) == .replayed)
    }

    @Test("F2: a flood of newer ids never makes an old one acceptable again (the old guard forgot after 1,000)")
    func floodDoesNotReopen() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let g = ReplayGuard(containerDirectory: dir, capacity: 3)
        let now = Self.now
        #expect(try g.check(id: "victim", iat: now, exp: now + 1_000, now: now) == .fresh)
        for i in 0..<5 { #expect(try g.check(id: "new-\(i)", iat: now, exp: now + 10_000 + Int64(i), now: now) == .fresh) }
        #expect(try g.rememberedCount() == 3)
        #expect(try g.check(id: "victim", iat: now, exp: now + 1_000, now: now + 1) == .tooOld)
        // A message that outlives what was dropped is still judged by its id.
        #expect(try g.check(id: "new-4", iat: now, exp: now + 10_004, now: now + 1) == .replayed)
        // Dropped early: new-0 ran out first, so it and everything running out by then is refused.
        #expect(try g.check(id: "new-0", iat: now, exp: now + 10_000, now: now + 1) == .tooOld)
    }

    @Test("F2/F16: the store is 0600, a damaged store or a link fails closed, reset vouches only from then on")
    func failsClosed() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let g = ReplayGuard(containerDirectory: dir)
        let now = Self.now
        #expect(try g.check(id: "a", iat: now, exp: nil, now: now) == .fresh)
        let attributes = try FileManager.default.attributesOfItem(atPath: g.fileURL.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        try Data("not json".utf8).write(to: g.fileURL)
        chmod(g.fileURL.path, 0o600)
        #expect(throws: ExtensionError(.replayCacheFailed, "")) { try g.check(id: "b", iat: now, exp: nil, now: now) }
        try FileManager.default.removeItem(at: g.fileURL)
        let elsewhere = dir.appendingPathComponent("elsewhere.json")
        try Data(ReplayGuard.serialize(ReplayGuard.Store())).write(to: elsewhere)
        chmod(elsewhere.path, 0o600)
        try FileManager.default.createSymbolicLink(at: g.fileURL, withDestinationURL: elsewhere)
        #expect(throws: ExtensionError(.replayCacheFailed, "")) { try g.check(id: "b", iat: now, exp: nil, now: now) }
        try FileManager.default.removeItem(at: g.fileURL)
        try g.reset(now: now)
        #expect(try g.check(id: "c", iat: now - 1, exp: nil, now: now) == .tooOld)
        #expect(try g.check(id: "c", iat: nil, exp: nil, now: now) == .tooOld)
        #expect(try g.check(id: "c", iat: now, exp: nil, now: now) == .fresh)
    }

    // F16: the cache follows the keychain's private-file rules: 0600, no links followed.
    @Test func theCacheIsPrivateAndNeverReadThroughALink() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let guard1 = ReplayGuard(containerDirectory: dir)
        let now: Int64 = 1_700_000_000
        #expect(try guard1.check(id: "a", iat: now, exp: now + 60, now: now) == .fresh)
        let attributes = try FileManager.default.attributesOfItem(atPath: guard1.fileURL.path)
        #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o600)
        // A planted link is refused (fails closed to the caller), not read through.
        let stored = try Data(contentsOf: guard1.fileURL)
        let elsewhere = dir.appendingPathComponent("elsewhere.json")
        try stored.write(to: elsewhere)
        chmod(elsewhere.path, 0o600)
        try FileManager.default.removeItem(at: guard1.fileURL)
        try FileManager.default.createSymbolicLink(at: guard1.fileURL, withDestinationURL: elsewhere)
        #expect(throws: ExtensionError.self) { try guard1.check(id: "b", iat: now, exp: now + 60, now: now) }
        // A store others can read is refused too.
        try FileManager.default.removeItem(at: guard1.fileURL)
        try stored.write(to: guard1.fileURL)
        chmod(guard1.fileURL.path, 0o644)
        #expect(throws: ExtensionError.self) { try guard1.check(id: "b", iat: now, exp: now + 60, now: now) }
    }
}

/// An injected opener whose plaintext has no text at all (the codec never gives one).
private struct BlankOpener: NotificationPayloadOpener {
    func envelope(in payload: JSONValue) throws -> SealedPayload { try WireFormatOpener().envelope(in: payload) }
    func open(_ envelope: SealedPayload, with key: SecretBytes, appID: String) throws -> PushNotification {
        PushNotification(title: "", body: "")
    }
}
