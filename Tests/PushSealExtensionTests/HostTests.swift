import PushSealSystem
import PushSealJSON
import Dispatch
import Foundation
import PushSealWire
import PushSealKeychain
import Testing
@testable import PushSealExtension

private func payload(alert: JSONValue?, mutableContent: JSONValue?, extra: JSONObject = [:]) -> JSONValue {
    var aps = JSONObject()
    if let alert { aps["alert"] = alert }
    if let mutableContent { aps["mutable-content"] = mutableContent }
    var root: JSONObject = ["aps": .object(aps)]
    for m in extra { root[m.key] = m.value }
    return .object(root)
}

private let fallbackAlert: JSONValue = .object(["title": .string("New message"), "body": .string("Open the app to read it")])

/// Delivers a changed title at once.
private final class ImmediateExtension: UNNotificationServiceExtension, @unchecked Sendable {
    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: ContentHandler) {
        var c = request.content.mutableCopy()
        c.title = "changed"
        contentHandler(c)
        contentHandler(request.content)   // a second call: dropped
    }
}

/// Calls the content handler, returns, and calls it again half a second later from another
/// thread (a slow, misbehaving extension).
private final class LateSecondCallExtension: UNNotificationServiceExtension, @unchecked Sendable {
    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: ContentHandler) {
        contentHandler(request.content)
        Thread {
            Thread.sleep(forTimeInterval: 0.5)
            contentHandler(request.content)   // late: dropped
        }.start()
    }
}

/// Never calls the content handler.
private final class SilentExtension: UNNotificationServiceExtension, @unchecked Sendable {
    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: ContentHandler) {}
}

@Suite struct ContentFromPayloadTests {
    @Test func alertObjectAndApsFields() {
        let p: JSONValue = .object([
            "aps": .object(["alert": .object(["title": "T", "subtitle": "S", "body": "B"]), "badge": .integer(3),
                            "sound": "ping.caf", "thread-id": "chat-1", "category": "REPLY", "mutable-content": .integer(1)]),
            "key_id": "k1", "extra": .integer(7),
        ])
        let c = UNNotificationContent(apnsPayload: p)
        #expect((c.title, c.subtitle, c.body) == ("T", "S", "B"))
        #expect(c.badge == 3)
        #expect(c.sound?.name == "ping.caf")
        #expect(c.threadIdentifier == "chat-1")
        #expect(c.categoryIdentifier == "REPLY")
        #expect(c.userInfo == ["key_id": "k1", "extra": .integer(7)])
    }

    @Test func alertStringIsTheBodyAndWrongTypesAreIgnored() {
        let p: JSONValue = .object(["aps": .object(["alert": "Hello", "badge": "3", "sound": .object(["critical": .integer(1), "name": "a.caf", "volume": .number(0.5)])])])
        let c = UNNotificationContent(apnsPayload: p)
        #expect(c.body == "Hello")
        #expect(c.title.isEmpty)
        #expect(c.badge == nil)
        #expect(c.sound == UNNotificationSound(name: "a.caf", isCritical: true, volume: 0.5))
    }
}

@Suite struct EligibilityTests {
    @Test(arguments: [
        (JSONValue.bool(true), "true", "true (boolean)"), (.string("1"), "\"1\"", "\"1\" (string)"), (.integer(0), "0", "0 (integer)"),
        (.number(1.0), "1.0", "1.0 (number)"), (.integer(2), "2", "2 (integer)"),
    ])
    func wrongMutableContentIsNotInvokedAndShowsAlertAsSent(_ value: JSONValue, _ token: String, _ named: String) {
        let host = ExtensionHost(budgetSeconds: 1) { _ in ImmediateExtension() }
        let result = host.run(UNNotificationRequest(identifier: "r", apnsPayload: payload(alert: fallbackAlert, mutableContent: value)))
        #expect(result.outcome == .notInvoked)
        #expect(result.reason == "mutableContent:" + token)
        #expect(result.detail.contains(named))
        #expect(result.content?.title == "New message")
        #expect(result.content?.body == "Open the app to read it")
        #expect(result.log.contains { $0.contains("event=notInvoked") && $0.contains("shows=alertAsSent") })
    }

    @Test func missingMutableContentIsNotInvoked() {
        let host = ExtensionHost(budgetSeconds: 1) { _ in ImmediateExtension() }
        let result = host.run(UNNotificationRequest(identifier: "r", apnsPayload: payload(alert: fallbackAlert, mutableContent: nil)))
        #expect(result.outcome == .notInvoked)
        #expect(result.reason == "mutableContent:missing")
        #expect(result.content?.title == "New message")
    }

    @Test(arguments: [nil, JSONValue.string(""), .object([:]), .object(["title": ""])])
    func noAlertShowsNothing(_ alert: JSONValue?) {
        let host = ExtensionHost(budgetSeconds: 1) { _ in ImmediateExtension() }
        let result = host.run(UNNotificationRequest(identifier: "r", apnsPayload: payload(alert: alert, mutableContent: .integer(1))))
        #expect(result.outcome == .notInvoked)
        #expect(result.content == nil)
        #expect(result.reason == (alert == nil ? "noAlert" : "emptyAlert"))
        #expect(result.detail.contains("alert"))
    }

    @Test func integerOneWithAlertIsEligible() {
        #expect(Eligibility(payload: payload(alert: "hi", mutableContent: .integer(1))) == .eligible)
        #expect(Eligibility(payload: .array([])) != .eligible)
    }
}

@Suite struct HostTests {
    @Test func firstContentHandlerCallWinsSecondIsDroppedAndLogged() throws {
        let logger = CollectingLogger()
        let watch = DeliveryWatch()
        let host = ExtensionHost(budgetSeconds: 2, logger: logger, makeExtension: watch.wrap { _ in ImmediateExtension() })
        let result = host.run(UNNotificationRequest(identifier: "r", apnsPayload: payload(alert: fallbackAlert, mutableContent: .integer(1))))
        #expect(result.outcome == .delivered)
        #expect(result.content?.title == "changed")
        #expect(!result.expiryCalled)
        // The second call happens right after the first: wait until none can come any more.
        #expect(watch.waitUntilAllReleased())
        #expect(logger.count("event=dropped") == 1)
        #expect(logger.count("event=delivered") == 1)
    }

    /// ``DeliveryWatch`` waits for the handler's release, not for a time: a second call made
    /// well after ``ExtensionHost/run(_:)`` returned is still seen (and dropped).
    @Test func lateSecondCallIsSeenByTheDeliveryWatch() {
        let logger = CollectingLogger()
        let watch = DeliveryWatch()
        let host = ExtensionHost(budgetSeconds: 2, logger: logger, makeExtension: watch.wrap { _ in LateSecondCallExtension() })
        let result = host.run(UNNotificationRequest(identifier: "r", apnsPayload: payload(alert: fallbackAlert, mutableContent: .integer(1))))
        #expect(result.outcome == .delivered)
        #expect(watch.waitUntilAllReleased())
        #expect(logger.count("event=delivered") == 1)
        #expect(logger.count("event=dropped") == 1)
    }

    @Test func noCallShowsOriginalAtBudgetEndAfterExpiryCall() {
        let host = ExtensionHost(budgetSeconds: 0.3) { _ in SilentExtension() }
        let result = host.run(UNNotificationRequest(identifier: "r", apnsPayload: payload(alert: fallbackAlert, mutableContent: .integer(1))))
        #expect(result.outcome == .original)
        #expect(result.expiryCalled)
        #expect(result.content?.title == "New message")
        #expect(result.elapsedMilliseconds >= 300)
        #expect(result.log.contains { $0.contains("event=timeWillExpire") })
    }

    /// Any budget a caller passes is usable: huge ones are capped (no overflow trap in the
    /// deadline arithmetic), negative ones are 0, NaN and infinity the default; a huge budget
    /// still delivers as soon as the extension calls its content handler.
    @Test func extremeBudgetsAreClampedAndStillRun() {
        for (given, expected) in [(1e300, ExtensionHost.maxBudgetSeconds), (Double(Int64.max), ExtensionHost.maxBudgetSeconds),
                                  (-5, 0), (.nan, ExtensionHost.defaultBudgetSeconds), (.infinity, ExtensionHost.defaultBudgetSeconds)] {
            #expect(ExtensionHost(budgetSeconds: given) { _ in ImmediateExtension() }.budgetSeconds == expected, "\(given)")
        }
        let host = ExtensionHost(budgetSeconds: 1e300) { _ in ImmediateExtension() }
        let result = host.run(UNNotificationRequest(identifier: "r", apnsPayload: payload(alert: fallbackAlert, mutableContent: .integer(1))))
        #expect(result.outcome == .delivered)
        #expect(result.content?.title == "changed")
    }

    @Test func expiryMarginIsTenPercentCappedAtOneSecond() {
        #expect(ExtensionHost.expiryMarginSeconds(forBudget: 30) == 1)
        #expect(abs(ExtensionHost.expiryMarginSeconds(forBudget: 3) - 0.3) < 1e-9)
    }

    @Test func eachNotificationGetsAFreshInstance() {
        let made = Locked<[UNNotificationServiceExtension]>([])  // kept alive so identities differ
        let host = ExtensionHost(budgetSeconds: 1) { _ in
            let e = ImmediateExtension()
            made.withLock { $0.append(e) }
            return e
        }
        let request = UNNotificationRequest(identifier: "r", apnsPayload: payload(alert: fallbackAlert, mutableContent: .integer(1)))
        _ = host.run(request)
        _ = host.run(request)
        #expect(made.withLock { $0.count == 2 && $0[0] !== $0[1] })
    }

    /// The extension finishes "decryption" at the expiry call ± 5 ms, and its expiry path
    /// delivers the best attempt too: of the two racing calls exactly one is shown.
    @Test func exactlyOnceUnderRacesWithTheExpiryCall() async {
        final class RacingExtension: UNNotificationServiceExtension, @unchecked Sendable {
            let context: ExtensionContext
            let offsetNanoseconds: Int
            let calls = Locked<Int>(0)
            var handler: Locked<ContentHandler?> = Locked(nil)
            init(context: ExtensionContext, offsetNanoseconds: Int) {
                self.context = context
                self.offsetNanoseconds = offsetNanoseconds
            }
            override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: ContentHandler) {
                handler.withLock { $0 = contentHandler }
                var decrypted = request.content.mutableCopy()
                decrypted.title = "decrypted"
                let content = UNNotificationContent(decrypted)
                DispatchQueue.global().asyncAfter(deadline: context.expiry + .nanoseconds(offsetNanoseconds)) {
                    contentHandler.deliver(content, outcome: .decrypted, reason: "")
                    self.calls.withLock { $0 += 1 }
                }
            }
            override func serviceExtensionTimeWillExpire() {
                // Count only a real content-handler call (none when didReceive has not stored it yet).
                guard let h = handler.withLock({ $0 }) else { return }
                h.deliver(UNNotificationContent(), outcome: .original, reason: "best attempt")
                calls.withLock { $0 += 1 }
            }
        }

        let runs = 1000
        let parallel = 16
        let request = UNNotificationRequest(identifier: "r", apnsPayload: payload(alert: fallbackAlert, mutableContent: .integer(1)))
        let failures = await withTaskGroup(of: String?.self) { group -> [String] in
            var failures: [String] = []
            var next = 0
            func add() {
                let i = next
                next += 1
                group.addTask {
                    let logger = CollectingLogger()
                    let made = Locked<RacingExtension?>(nil)
                    let offset = Int.random(in: -5_000_000...5_000_000)
                    // 50 ms budget: the expiry call comes at 45 ms, the budget ends at 50 ms.
                    let host = ExtensionHost(budgetSeconds: 0.05, logger: logger) { context in
                        let e = RacingExtension(context: context, offsetNanoseconds: offset)
                        made.withLock { $0 = e }
                        return e
                    }
                    let result = await host.run(request)
                    guard let e = made.withLock({ $0 }) else { return "run \(i): no instance" }
                    let expected = result.expiryCalled ? 2 : 1
                    for _ in 0..<200 where e.calls.withLock({ $0 }) < expected { try? await Task.sleep(nanoseconds: 5_000_000) }
                    let calls = e.calls.withLock { $0 }
                    let delivered = logger.count("event=delivered")
                    let byHandler = logger.count("event=delivered by=contentHandler")
                    let dropped = logger.count("event=dropped by=contentHandler")
                    guard delivered == 1, dropped == calls - byHandler else {
                        return "run \(i): offset \(offset) calls \(calls) delivered \(delivered) dropped \(dropped)"
                    }
                    let shown = result.content?.title
                    guard shown == "decrypted" || result.outcome == .original else { return "run \(i): shown \(shown ?? "nil")" }
                    return nil
                }
            }
            for _ in 0..<parallel { add() }
            while let r = await group.next() {
                if let r { failures.append(r) }
                if next < runs { add() }
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }
}
