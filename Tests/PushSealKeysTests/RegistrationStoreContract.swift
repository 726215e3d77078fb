import Foundation
import PushSealCrypto
import PushSealJSON
import PushSealKeyRecords
import PushSealDeviceKeys
import PushSealServerKeys
import PushSealWire
import Testing

/// What every ``RegistrationStore`` must do (v2 registrations and sender keys), written against
/// the protocol alone, like ``ServerKeyStoreContract``: another implementation runs the same
/// checks with a factory of fresh, empty stores.
enum RegistrationStoreContract {
    static let appID = "com.example.app"
    static let now: Int64 = 1_800_000_000
    static let names = ["registerAndHistory", "revokeRegistration", "registrationWatches", "senderKeyLifecycle", "namesAreChecked", "batchRegistrations", "futureRegistrations"]

    static func run(_ name: String, _ make: () throws -> any RegistrationStore) throws {
        switch name {
        case "registerAndHistory": try registerAndHistory(make)
        case "revokeRegistration": try revokeRegistration(make)
        case "registrationWatches": try registrationWatches(make)
        case "senderKeyLifecycle": try senderKeyLifecycle(make)
        case "namesAreChecked": try namesAreChecked(make)
        case "batchRegistrations": try batchRegistrations(make)
        case "futureRegistrations": try futureRegistrations(make)
        default: Issue.record("no contract check named \(name)")
        }
    }

    /// A batch chunk's registrations read at once say what one recipient at a time says: the
    /// current registration (names that need quoting too), `nil` for a revoked current one,
    /// nothing for a recipient without registrations or an invalid name; each watch sees a
    /// later change of its own recipient only.
    static func batchRegistrations(_ make: () throws -> any RegistrationStore) throws {
        let store = try make()
        let registered = ["alice", "r\"quote", "r\\backslash", "r,comma", "r{brace}", "r space"]
        for r in registered + ["bob"] { try store.register(try registration(now - 100), recipient: r, now: now) }
        let bobKey = try store.sealingRegistration(appID: appID, recipient: "bob").keyID
        try store.revokeRegistration(appID: appID, recipient: "bob", keyID: bobKey, now: now)
        let batch = try store.batchRegistrations(appID: appID, recipients: registered + ["bob", "carol", "a/b"])
        #expect(Set(batch.keys) == Set(registered + ["bob"]))
        for r in registered {
            let current = try #require(batch[r]?.current, "\(r)")
            #expect(current == (try store.sealingRegistration(appID: appID, recipient: r)))
            #expect(try batch[r]?.watch.isCurrent() == true)
        }
        #expect(batch["bob"].map { $0.current == nil } == true, "a revoked current one reads as nil")
        try store.register(try registration(now), recipient: "alice", now: now + 1)
        #expect(try batch["alice"]?.watch.isCurrent() == false)
        #expect(try batch["r,comma"]?.watch.isCurrent() == true)
        #expect(throws: KeysError(.invalidName, "")) { try store.batchRegistrations(appID: "a|b", recipients: ["alice"]) }
    }

    /// Security review G8: a registration created more than 5 minutes after the server's clock
    /// is refused (it would become primary and lock the real device out as stale), on upload
    /// and on import (a list merged from another store); 5 minutes ahead is clock skew, taken.
    static func futureRegistrations(_ make: () throws -> any RegistrationStore) throws {
        let store = try make()
        #expect(throws: KeysError(.futureRegistration, "")) {
            try store.register(try registration(253_402_300_799, keyID: "FORGED"), recipient: "alice", now: now)
        }
        #expect(throws: KeysError(.futureRegistration, "")) { try store.register(try registration(now + 301), recipient: "alice", now: now) }
        let real = try registration(now - 10)
        try store.register(real, recipient: "alice", now: now)
        #expect(try store.sealingRegistration(appID: appID, recipient: "alice").keyID == real.keyID, "the real device is primary")
        try store.register(try registration(now + 300), recipient: "alice", now: now)
        var list = V2KeyList(kind: .registrations, appID: appID, owner: "bob")
        let forged = V2KeyList(kind: .registrations, appID: appID, owner: "bob", entries: [
            V2KeyList.Entry(keyID: "FORGED", status: .primary, createdAt: now + 3_600, registeredAt: now - 10, publicKey: real.publicKey.rawRepresentation)])
        #expect(throws: KeysError(.futureRegistration, "")) { try list.merge(from: forged, now: now) }
        #expect(list.entries.isEmpty)
    }

    /// A fresh device registration (a new key pair), created at `createdAt`.
    static func registration(_ createdAt: Int64, appID: String = appID, keyID: String? = nil) throws -> DeviceRegistration {
        let key = try X25519.PrivateKey()
        return try DeviceRegistration(appID: appID, keyID: keyID ?? DeviceKeyItem.keyID(for: key.publicKey), publicKey: key.publicKey, createdAt: createdAt)
    }

    /// Newest registration is primary; the former one is superseded; re-importing is a no-op;
    /// a key id with another key and an older record are refused and change nothing.
    static func registerAndHistory(_ make: () throws -> any RegistrationStore) throws {
        let store = try make()
        #expect(try store.allRegistrations().isEmpty)
        #expect(throws: KeysError(.unknownRegistration, "")) { try store.registrations(appID: appID, recipient: "alice") }
        let r1 = try registration(now - 100)
        let first = try store.register(r1, recipient: "alice", now: now)
        #expect(try store.mayHaveRegistrations(appID: appID), "a store never says no registrations for an app that has one")
        #expect(first.added && first.info.status == .primary && first.info.keyID == r1.keyID && first.info.publicKey == r1.publicKey)
        #expect(first.info.createdAt == now - 100 && first.info.registeredAt == now && first.info.supersededAt == nil)
        let again = try store.register(r1, recipient: "alice", now: now + 5)
        #expect(!again.added && again.info == first.info)
        let r2 = try registration(now)
        #expect(try store.register(r2, recipient: "alice", now: now + 10).added)
        let set = try store.registrations(appID: appID, recipient: "alice")
        #expect(set.registrations.map(\.keyID) == [r1.keyID, r2.keyID])
        #expect(set.registrations.map(\.status) == [.decryptOnly, .primary])
        #expect(set.registrations[0].supersededAt == now + 10)
        #expect(set.current?.keyID == r2.keyID)
        #expect(try store.sealingRegistration(appID: appID, recipient: "alice").publicKey == r2.publicKey)
        // The same key id with another public key.
        let clash = try registration(now + 20, keyID: r2.keyID)
        #expect(throws: KeysError(.duplicateKeyID, "")) { try store.register(clash, recipient: "alice", now: now + 20) }
        // An older record than the current one (replayed, or uploaded out of order).
        #expect(throws: KeysError(.staleRegistration, "")) { try store.register(try registration(now - 50), recipient: "alice", now: now + 30) }
        #expect(try store.registrations(appID: appID, recipient: "alice") == set)
        // Per recipient and per app; listing order.
        try store.register(try registration(now), recipient: "bob", now: now)
        try store.register(try registration(now, appID: "com.example.other"), recipient: "alice", now: now)
        #expect(try store.allRegistrations().map { "\($0.appID)/\($0.recipient)" } == ["com.example.app/alice", "com.example.app/bob", "com.example.other/alice"])
        #expect(try store.sealingRegistration(appID: "com.example.other", recipient: "alice").keyID != r2.keyID)
    }

    /// A revoked registration is never sealed to; revoking is idempotent.
    static func revokeRegistration(_ make: () throws -> any RegistrationStore) throws {
        let store = try make()
        let r1 = try registration(now)
        try store.register(r1, recipient: "alice", now: now)
        #expect(throws: KeysError(.unknownKey, "")) { try store.revokeRegistration(appID: appID, recipient: "alice", keyID: "nope", now: now) }
        #expect(throws: KeysError(.unknownRegistration, "")) { try store.revokeRegistration(appID: appID, recipient: "bob", keyID: r1.keyID, now: now) }
        let revoked = try store.revokeRegistration(appID: appID, recipient: "alice", keyID: r1.keyID, now: now + 1)
        #expect(revoked.status == .disabled && revoked.supersededAt == now + 1)
        #expect(try store.revokeRegistration(appID: appID, recipient: "alice", keyID: r1.keyID, now: now + 2) == revoked)
        #expect(throws: KeysError(.noPrimaryKey, "")) { try store.sealingRegistration(appID: appID, recipient: "alice") }
        // The revoked record uploaded again is refused, not "unchanged" (it stays revoked).
        #expect(throws: KeysError(.registrationRevoked, "")) { try store.register(r1, recipient: "alice", now: now + 2) }
        #expect(throws: KeysError(.noPrimaryKey, "")) { try store.sealingRegistration(appID: appID, recipient: "alice") }
        // The app registers again with a new key: sealed to from then on.
        let r2 = try registration(now + 3)
        try store.register(r2, recipient: "alice", now: now + 3)
        #expect(try store.sealingRegistration(appID: appID, recipient: "alice").keyID == r2.keyID)
        #expect(try store.registrations(appID: appID, recipient: "alice").registrations.map(\.status) == [.disabled, .primary])
    }

    /// A watch turns stale on a change of its recipient's registrations only.
    static func registrationWatches(_ make: () throws -> any RegistrationStore) throws {
        let store = try make()
        #expect(try store.watchRegistrations(appID: appID, recipient: "alice") == nil)
        try store.register(try registration(now), recipient: "alice", now: now)
        try store.register(try registration(now), recipient: "bob", now: now)
        let watch = try #require(try store.watchRegistrations(appID: appID, recipient: "alice"))
        #expect(try watch.isCurrent())
        try store.register(try registration(now + 1), recipient: "bob", now: now + 1)
        #expect(try watch.isCurrent())
        try store.register(try registration(now + 1), recipient: "alice", now: now + 1)
        #expect(try !watch.isCurrent())
    }

    /// Generate, seal with, rotate (the former key published for the grace window), prune.
    static func senderKeyLifecycle(_ make: () throws -> any RegistrationStore) throws {
        let store = try make()
        #expect(try store.senderKeys(appID: appID).isEmpty)
        #expect(try store.sealingSenderKey(appID: appID) == nil)
        #expect(throws: KeysError(.unknownKeyset, "")) { try store.rotateSenderKey(appID: appID, graceSeconds: 100, now: now) }
        let k1 = try store.generateSenderKey(appID: appID, now: now)
        let derivedID = try DeviceKeyItem.keyID(for: k1.publicKey)
        #expect(k1.status == .primary && k1.createdAt == now && k1.keyID == derivedID)
        #expect(throws: KeysError(.keysetExists, "")) { try store.generateSenderKey(appID: appID, now: now) }
        let sealing = try #require(try store.sealingSenderKey(appID: appID))
        #expect(sealing.keyID == k1.keyID && sealing.key.publicKey == k1.publicKey)
        #expect(try store.senderKeys(appID: appID) == [k1])
        // The record apps pin reads back as a pinned sender key.
        let pinned = try PinnedSenderKey(record: JSONWriter.serialize(.object(k1.record)), appID: appID)
        #expect(pinned.keyID == k1.keyID && pinned.publicKey == k1.publicKey)

        let k2 = try store.rotateSenderKey(appID: appID, graceSeconds: 100, now: now + 10)
        #expect(k2.keyID != k1.keyID && k2.status == .primary)
        #expect(try store.sealingSenderKey(appID: appID)?.keyID == k2.keyID)
        let keys = try store.senderKeys(appID: appID)
        #expect(keys.map(\.keyID) == [k1.keyID, k2.keyID])
        #expect(keys[0].status == .decryptOnly && keys[0].retiredAt == now + 10 && keys[0].notAfter == now + 110)
        #expect(try store.publishedSenderKeys(appID: appID, now: now + 109).map(\.keyID) == [k1.keyID, k2.keyID])
        #expect(try store.publishedSenderKeys(appID: appID, now: now + 110).map(\.keyID) == [k2.keyID])
        // A rotation after the grace window destroys the former key (its public half stays listed).
        let k3 = try store.rotateSenderKey(appID: appID, graceSeconds: 100, now: now + 200)
        let after = try store.senderKeys(appID: appID)
        #expect(after.map(\.status) == [.destroyed, .decryptOnly, .primary])
        #expect(after[0].publicKey == k1.publicKey && after[2].keyID == k3.keyID)
        // Per app.
        #expect(try store.senderKeys(appID: "com.example.other").isEmpty)
    }

    /// Names and times are checked before anything is read or written.
    static func namesAreChecked(_ make: () throws -> any RegistrationStore) throws {
        let store = try make()
        let r = try registration(now)
        #expect(throws: KeysError(.invalidName, "")) { try store.register(r, recipient: "bad/recipient", now: now) }
        #expect(throws: KeysError(.timeOutOfRange, "")) { try store.register(r, recipient: "alice", now: -1) }
        #expect(throws: KeysError(.invalidName, "")) { try store.registrations(appID: "bad app", recipient: "alice") }
        #expect(throws: KeysError(.invalidName, "")) { try store.generateSenderKey(appID: "bad|app", now: now) }
        #expect(throws: KeysError(.timeOutOfRange, "")) { try store.generateSenderKey(appID: appID, now: KeyTime.maxTimeSeconds + 1) }
        #expect(try store.allRegistrations().isEmpty && store.senderKeys(appID: appID).isEmpty)
    }
}
