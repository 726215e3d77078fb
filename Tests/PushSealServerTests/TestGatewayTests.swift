import Foundation
import Testing
import PushSealCrypto
import PushSealDeviceKeys
import PushSealKeychain
import PushSealServer
import PushSealSystem
import PushSealTestSupport

/// Issue 23's "done when" for the composition layer: a gateway in a few lines of PushSealServer
/// registers devices from the iOS reference's upload body, seals, sends to the native mock APNs
/// and sees a 410 remove the token (registered before the 410's timestamp).
@Suite(.serialized, .enabled(if: MockAPNs.nativeAvailable, "the native mock APNs is not built (scripts/build-mock-apns.sh)"))
struct TestGatewayTests {
    static let appID = MockAPNs.topic

    /// The body `Examples/iOS/PushSealRegistration.swift` POSTs for a fresh device key.
    static func upload(token: String, pinned: [String]? = nil) throws -> (body: [UInt8], key: X25519.PrivateKey) {
        let key = try X25519.PrivateKey()
        let record = DeviceKeyItem.registrationRecord(appID: appID, keyID: try DeviceKeyItem.keyID(for: key.publicKey),
                                                      publicKey: key.publicKey, createdAt: unixTimeSeconds())
        var members: [(String, JSONValue)] = [("registration", .object(record)), ("apnsDeviceToken", .string(token)),
                                              ("apnsEnvironment", .string("development"))]
        if let pinned { members.append(("pinnedSenderKeyIds", .array(pinned.map { .string($0) }))) }
        return (try JSONWriter.serialize(.object(JSONObject(members))), key)
    }

    @Test("register (upload body), seal, send to the mock: accepted, and a 410 removes the token")
    func registerSealSendInvalidate() async throws {
        let dir = try TemporaryDirectory("test-gateway")
        defer { dir.remove() }
        try Keychain.create(at: dir.appending("server"))
        let store = try ServerStore.open(.keychain(path: dir.appending("server").path))

        let alive = String(repeating: "ab", count: 32), dead = String(repeating: "cd", count: 32)
        let now = unixTimeMilliseconds()
        // 410 for `dead` with a timestamp after its registration: it must go.
        let mock = try MockAPNs(["unregistered": [dead: now + 60_000]], kind: .native)
        defer { mock.stop() }

        // Registration: the upload body, twice for bob (the app retrying: nothing new).
        let bob = try Self.upload(token: alive.uppercased(), pinned: [])
        let first = try store.importRegistration(try RegistrationUpload(body: bob.body, expectedAppID: Self.appID), recipient: "bob", nowMilliseconds: now)
        #expect(first.added && first.deviceToken?.token == alive)
        let again = try store.importRegistration(try RegistrationUpload(body: bob.body, expectedAppID: Self.appID), recipient: "bob", nowMilliseconds: now)
        #expect(!again.added && again.registration.keyID == first.registration.keyID)
        _ = try store.importRegistration(try RegistrationUpload(body: try Self.upload(token: dead).body, expectedAppID: Self.appID),
                                         recipient: "alice", nowMilliseconds: now)
        // A bare record (push-keys device generate's output) registers the key without a token.
        let bare = try Self.upload(token: alive).key
        let bareRecord = DeviceKeyItem.registrationRecord(appID: Self.appID, keyID: try DeviceKeyItem.keyID(for: bare.publicKey),
                                                          publicKey: bare.publicKey, createdAt: unixTimeSeconds())
        let imported = try store.importRegistration(try RegistrationUpload(body: try JSONWriter.serialize(.object(bareRecord)), expectedAppID: Self.appID),
                                                    recipient: "carol", nowMilliseconds: now)
        #expect(imported.added && imported.deviceToken == nil)
        #expect(throws: ServerError(.malformedUpload, "")) {
            try RegistrationUpload(body: Array(#"{"registration":5,"apnsDeviceToken":1}"#.utf8), expectedAppID: nil)
        }

        // Seal and send.
        var client = APNsClient.Configuration(endpoint: try mock.endpoint())
        client.reconnectBaseDelaySeconds = 0.01
        let sealer = try store.sealer(SealerConfiguration(appID: Self.appID))
        let apns = APNsProviderConfiguration(p8Path: mock.p8Path, keyID: MockAPNs.keyID, teamID: MockAPNs.teamID, client: client)
        let gateway = try NotificationDispatcher(store: store, sealer: sealer, apns: apns, environment: .development)
        let message = SealRequest(PushNotification(title: "Ana", body: "Dinner on Friday?", id: "m-1"), ttlSeconds: 3600)
        let delivered = try await gateway.send(message, to: "bob")
        let gone = try await gateway.send(message, to: "alice")
        await #expect(throws: ServerError(.noDeviceToken, "")) { try await gateway.send(message, to: "carol") }
        gateway.finish()

        #expect(delivered.outcome.kind == .accepted && delivered.outcome.status == 200 && delivered.invalidation == nil)
        #expect(gone.outcome.kind == .unregistered && gone.outcome.timestampMilliseconds == now + 60_000)
        #expect(gone.invalidation == .invalidated)
        let tokens = try store.deviceTokenStore()
        #expect(try tokens.deviceTokens(appID: Self.appID, recipient: "alice").isEmpty, "the 410 removed alice's token")
        #expect(try tokens.deviceTokens(appID: Self.appID, recipient: "bob").map(\.token) == [alive])

        // The mock saw one request each, with the sealed payload's headers (nothing in clear but the fallback).
        let seen = try mock.answered()
        #expect(seen.map { $0["token"] as? String } == [alive, dead])
        #expect(seen.allSatisfy { $0["topic"] as? String == Self.appID && $0["pushType"] as? String == "alert" })
    }

    @Test("push-send's invalidation lines and outcome lines are both read; anything else is refused")
    func pushSendFilesAreRead() throws {
        let outcome = #"{"line":1,"deviceToken":"ab","outcome":"unregistered","status":410,"reason":"Unregistered","timestamp":5}"#
        let invalidation = #"{"line":2,"deviceToken":"cd","reason":"Unregistered","timestamp":7}"#
        let bad = #"{"line":3,"deviceToken":"ef","reason":"BadDeviceToken"}"#
        let parsed = try PushSendInvalidations(parsing: Array("\(outcome)\n\(invalidation)\n\(bad)\n".utf8), nowMilliseconds: 99)
        #expect(parsed.items.map(\.unregisteredAtMs) == [5, 7, 99] && parsed.outcomeLines == 1 && parsed.invalidationLines == 2)
        #expect(throws: ServerError(.unknownInput, "")) {
            try PushSendInvalidations(parsing: Array(#"{"tokens":[]}"#.utf8 + [0x0A]), nowMilliseconds: 0)
        }
    }
}
