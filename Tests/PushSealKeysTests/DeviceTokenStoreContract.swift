import PushSealKeyRecords
import PushSealServerKeys
import Testing

/// What every ``DeviceTokenStore`` must do, written against the protocol alone like
/// ``RegistrationStoreContract``: the file keychain (PushSealKeysTests) and the PostgreSQL
/// registry (PushSealRegistryTests, the same file by symlink) run it with fresh, empty stores.
enum DeviceTokenStoreContract {
    static let appID = "com.example.app"
    /// 2027-01-15T08:00:00Z in milliseconds.
    static let t: Int64 = 1_800_000_000_000
    static let names = ["addReplaceAndList", "tokenMovesToNewRecipient", "bulkLookup", "invalidateComparesRegisteredAt", "badInputChangesNothing"]

    static func run(_ name: String, _ make: () throws -> any DeviceTokenStore) throws {
        switch name {
        case "addReplaceAndList": try addReplaceAndList(make)
        case "tokenMovesToNewRecipient": try tokenMovesToNewRecipient(make)
        case "bulkLookup": try bulkLookup(make)
        case "invalidateComparesRegisteredAt": try invalidateComparesRegisteredAt(make)
        case "badInputChangesNothing": try badInputChangesNothing(make)
        default: Issue.record("no contract check named \(name)")
        }
    }

    /// A token of `n` bytes, all `byte`.
    static func token(_ byte: UInt8, bytes n: Int = 32) -> String {
        String(repeating: String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16), count: n)
    }

    /// One token per environment; a new one replaces the former; the same again is no replacement.
    static func addReplaceAndList(_ make: () throws -> any DeviceTokenStore) throws {
        let store = try make()
        #expect(try store.deviceTokens(appID: appID, recipient: "alice").isEmpty)
        #expect(try store.allDeviceTokens(appID: nil).isEmpty)
        #expect(try store.addDeviceToken(token(0xa1).uppercased(), appID: appID, recipient: "alice", environment: .development, registeredAtMs: t).isEmpty)
        #expect(try store.addDeviceToken(token(0xa2, bytes: 100), appID: appID, recipient: "alice", environment: .production, registeredAtMs: t + 1).isEmpty)
        let listed = try store.deviceTokens(appID: appID, recipient: "alice")
        #expect(listed == [DeviceToken(appID: appID, recipient: "alice", token: token(0xa2, bytes: 100), environment: .production, registeredAtMs: t + 1),
                           DeviceToken(appID: appID, recipient: "alice", token: token(0xa1), environment: .development, registeredAtMs: t)],
                "stored in lower case, production first, any even length")
        // The same token again: a re-registration (newer registeredAt), nothing replaced.
        #expect(try store.addDeviceToken(token(0xa1), appID: appID, recipient: "alice", environment: .development, registeredAtMs: t + 5).isEmpty)
        #expect(try store.deviceTokens(appID: appID, recipient: "alice").map(\.registeredAtMs) == [t + 1, t + 5])
        // A new production token replaces the former one.
        let replaced = try store.addDeviceToken(token(0xa3), appID: appID, recipient: "alice", environment: .production, registeredAtMs: t + 6)
        #expect(replaced.map(\.token) == [token(0xa2, bytes: 100)])
        #expect(try store.deviceTokens(appID: appID, recipient: "alice").map(\.token) == [token(0xa3), token(0xa1)])
        try store.addDeviceToken(token(0xb1), appID: appID, recipient: "bob", environment: .production, registeredAtMs: t)
        try store.addDeviceToken(token(0xc1), appID: "com.example.other", recipient: "alice", environment: .production, registeredAtMs: t)
        #expect(try store.allDeviceTokens(appID: nil).map { "\($0.appID)/\($0.recipient)/\($0.environment)" }
                == ["com.example.app/alice/development", "com.example.app/alice/production", "com.example.app/bob/production", "com.example.other/alice/production"])
        #expect(try store.allDeviceTokens(appID: "com.example.other").map(\.token) == [token(0xc1)])
    }

    /// A token belongs to one recipient of an app: adding it to another takes it away; other apps are apart.
    static func tokenMovesToNewRecipient(_ make: () throws -> any DeviceTokenStore) throws {
        let store = try make()
        try store.addDeviceToken(token(0xd1), appID: appID, recipient: "alice", environment: .production, registeredAtMs: t)
        try store.addDeviceToken(token(0xd1), appID: "com.example.other", recipient: "alice", environment: .production, registeredAtMs: t)
        let moved = try store.addDeviceToken(token(0xd1), appID: appID, recipient: "bob", environment: .production, registeredAtMs: t + 1)
        #expect(moved.map { "\($0.recipient) \($0.token)" } == ["alice \(token(0xd1))"])
        #expect(try store.deviceTokens(appID: appID, recipient: "alice").isEmpty)
        #expect(try store.deviceTokens(appID: appID, recipient: "bob").map(\.registeredAtMs) == [t + 1])
        #expect(try store.deviceTokens(appID: "com.example.other", recipient: "alice").count == 1)
    }

    /// A chunk's lookup: the named recipients' tokens of one environment; unknown and malformed names left out.
    static func bulkLookup(_ make: () throws -> any DeviceTokenStore) throws {
        let store = try make()
        for i in 0..<50 {
            try store.addDeviceToken(token(UInt8(i)), appID: appID, recipient: "r\(i)", environment: i % 2 == 0 ? .production : .development, registeredAtMs: t + Int64(i))
        }
        let found = try store.deviceTokens(appID: appID, recipients: ["r0", "r1", "r2", "r2", "nobody", "bad/name", "r48"], environment: .production)
        #expect(found.mapValues(\.token) == ["r0": token(0), "r2": token(2), "r48": token(48)])
        #expect(found["r48"]?.registeredAtMs == t + 48)
        #expect(try store.deviceTokens(appID: appID, recipients: ["r1", "r3"], environment: .development).count == 2)
        #expect(try store.deviceTokens(appID: appID, recipients: [], environment: .production).isEmpty)
    }

    /// Removed only when registered before the 410's timestamp; kept when registered at or after it.
    static func invalidateComparesRegisteredAt(_ make: () throws -> any DeviceTokenStore) throws {
        let store = try make()
        try store.addDeviceToken(token(0x01), appID: appID, recipient: "old", environment: .production, registeredAtMs: t - 1)
        try store.addDeviceToken(token(0x02), appID: appID, recipient: "again", environment: .production, registeredAtMs: t + 10)
        try store.addDeviceToken(token(0x03), appID: appID, recipient: "same", environment: .development, registeredAtMs: t)
        let results = try store.invalidateDeviceTokens([(token(0x01).uppercased(), t), (token(0x02), t), (token(0x03), t), (token(0x09), t), (token(0x01), t)], appID: appID)
        #expect(results == [.invalidated, .keptReregistered, .keptReregistered, .unknown, .unknown])
        #expect(try store.deviceTokens(appID: appID, recipient: "old").isEmpty)
        #expect(try store.allDeviceTokens(appID: appID).map(\.recipient) == ["again", "same"])
        // Another app's 410 touches nothing here.
        #expect(try store.invalidateDeviceToken(token(0x02), appID: "com.example.other", unregisteredAtMs: t + 100) == .unknown)
        #expect(try store.invalidateDeviceToken(token(0x02), appID: appID, unregisteredAtMs: t + 11) == .invalidated)
    }

    /// Bad tokens, names and times are refused before anything changes.
    static func badInputChangesNothing(_ make: () throws -> any DeviceTokenStore) throws {
        let store = try make()
        for bad in ["", "abc", "zz", "0x12", String(repeating: "ab", count: DeviceToken.maxHexCount / 2 + 1)] {
            #expect(throws: KeysError(.invalidDeviceToken, "")) { try store.addDeviceToken(bad, appID: appID, recipient: "alice", environment: .production, registeredAtMs: t) }
        }
        #expect(throws: KeysError(.invalidName, "")) { try store.addDeviceToken(token(1), appID: appID, recipient: "bad/name", environment: .production, registeredAtMs: t) }
        #expect(throws: KeysError(.invalidName, "")) { try store.addDeviceToken(token(1), appID: "bad app", recipient: "alice", environment: .production, registeredAtMs: t) }
        #expect(throws: KeysError(.timeOutOfRange, "")) { try store.addDeviceToken(token(1), appID: appID, recipient: "alice", environment: .production, registeredAtMs: -1) }
        #expect(throws: KeysError(.timeOutOfRange, "")) {
            try store.addDeviceToken(token(1), appID: appID, recipient: "alice", environment: .production, registeredAtMs: DeviceToken.maxRegisteredAtMs + 1)
        }
        try store.addDeviceToken(token(1), appID: appID, recipient: "alice", environment: .production, registeredAtMs: t)
        // One bad element refuses the whole list: the good one before it stays.
        #expect(throws: KeysError(.invalidDeviceToken, "")) { try store.invalidateDeviceTokens([(token(1), t + 1), ("xyz", t + 1)], appID: appID) }
        #expect(throws: KeysError(.timeOutOfRange, "")) { try store.invalidateDeviceTokens([(token(1), t + 1), (token(1), -5)], appID: appID) }
        #expect(try store.allDeviceTokens(appID: nil).map(\.token) == [token(1)])
    }
}
