import Foundation
import Testing
@testable import PushSealAPNs

/// Collects a client's outcomes and invalidations (from its transfer thread).
final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var outcomesStore: [APNsOutcome] = []
    private var invalidationsStore: [APNsInvalidation] = []
    var outcomes: [APNsOutcome] { lock.withLock { outcomesStore } }
    var invalidations: [APNsInvalidation] { lock.withLock { invalidationsStore } }
    func add(_ o: APNsOutcome) { lock.withLock { outcomesStore.append(o) } }
    func add(_ i: APNsInvalidation) { lock.withLock { invalidationsStore.append(i) } }
}

/// Sends `notifications` through a new client to `mock` and returns what came back.
func sendAll(_ notifications: [APNsNotification], to mock: MockAPNs, tokens: ProviderTokenCache? = nil,
             configure: (inout APNsClient.Configuration) -> Void = { _ in }) throws -> (Collected, APNsClient.Statistics) {
    var configuration = APNsClient.Configuration(endpoint: try mock.endpoint())
    configuration.retry = APNsRetryPolicy(maxAttempts: 5, baseDelaySeconds: 0.01, maxDelaySeconds: 0.05)
    configuration.reconnectBaseDelaySeconds = 0.01
    configure(&configuration)
    let cache = try tokens ?? ProviderTokenCache(key: ProviderKey(p8Path: mock.p8Path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID))
    let collected = Collected()
    let client = try APNsClient(configuration: configuration, tokens: cache, onOutcome: { collected.add($0) },
                                onInvalidation: { collected.add($0) })
    for (i, n) in notifications.enumerated() { try client.send(n, tag: i + 1) }
    client.finish()
    return (collected, client.statistics)
}

/// A distinct hex device token for `i` (lengths vary: tokens are never assumed to be 64 digits).
func token(_ i: Int, length: Int = 64) -> String {
    let hex = String(format: "%08x", i)
    return String(repeating: "a", count: length - hex.count) + hex
}

func notification(_ i: Int, length: Int = 64, payload: String = "{\"aps\":{\"alert\":\"hi\"}}", collapseID: String? = nil) -> APNsNotification {
    APNsNotification(deviceToken: token(i, length: length), payload: Array(payload.utf8), topic: MockAPNs.topic, priority: 10,
                     expiration: 0, collapseID: collapseID)
}

@Suite("APNs client against the mock APNs", .serialized)
struct APNsClientTests {
    @Test("a burst of 300 is accepted over one connection, each sent once, even while the mock allows one stream")
    func burstOneConnection() throws {
        let mock = try MockAPNs()
        let (c, stats) = try sendAll((1...300).map { notification($0, length: $0 % 2 == 0 ? 64 : 200) }, to: mock)
        mock.stop()
        #expect(c.outcomes.count == 300)
        #expect(c.outcomes.allSatisfy { $0.kind == .accepted && $0.attempts == 1 && $0.apnsUniqueID != nil })
        let records = try mock.answered()
        #expect(records.count == 300)
        #expect(Set(records.compactMap { $0["token"] as? String }).count == 300)
        #expect(Set(records.compactMap { $0["session"] as? Int }).count <= 2, "connections: \(stats.connectionsOpened)")
        #expect(stats.connectionsOpened <= 2)
        // apns-id sent is the one reported.
        let sentIDs = Set(records.compactMap { $0["apnsId"] as? String })
        #expect(Set(c.outcomes.map(\.apnsID)) == sentIDs)
    }
}
