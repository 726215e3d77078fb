import Foundation
import PushSealCrypto
import PushSealKeyRecords
import PushSealServerKeys
import PushSealWire
import Testing

/// What every ``ServerKeyStore`` implementation must do, written against the protocol alone
/// (no file, keychain or SQL in it). The file keychain runs it in ``ServerKeyStoreContractTests``;
/// another implementation (a PostgreSQL store) runs the same checks from its own test target by
/// calling each check with a factory of fresh, empty stores.
///
/// Times are fixed (``now``), so nothing depends on the clock.
enum ServerKeyStoreContract {
    static let appID = "com.example.app"
    static let now: Int64 = 1_800_000_000
    /// The name of every check, for a parameterized test.
    static let names = ["lookupAndGenerate", "sealingPrimaryAndReservations", "watchesSeeEveryChange", "rotationPromoteRevoke",
                        "pruneAndDue", "exportAndImport", "namesAndTimesAreCheckedBeforeAnyChange", "keyringSealsThroughTheProtocol"]

    /// Runs the check called `name` (one of ``names``) with fresh stores from `make`.
    static func run(_ name: String, _ make: () throws -> any ServerKeyStore) throws {
        switch name {
        case "lookupAndGenerate": try lookupAndGenerate(make)
        case "sealingPrimaryAndReservations": try sealingPrimaryAndReservations(make)
        case "watchesSeeEveryChange": try watchesSeeEveryChange(make)
        case "rotationPromoteRevoke": try rotationPromoteRevoke(make)
        case "pruneAndDue": try pruneAndDue(make)
        case "exportAndImport": try exportAndImport(make)
        case "namesAndTimesAreCheckedBeforeAnyChange": try namesAndTimesAreCheckedBeforeAnyChange(make)
        case "keyringSealsThroughTheProtocol": try keyringSealsThroughTheProtocol(make)
        default: Issue.record("no contract check named \(name)")
        }
    }

    /// Lookup by recipient and by key id; generate; listing order.
    static func lookupAndGenerate(_ make: () throws -> any ServerKeyStore) throws {
        let store = try make()
        #expect(try store.keysets().isEmpty)
        #expect(throws: KeysError(.unknownKeyset, "")) { try store.keyset(appID: appID, recipient: "alice") }
        let bob = try store.generate(appID: appID, recipient: "bob", now: now)
        let alice = try store.generate(appID: appID, recipient: "alice", now: now)
        try store.generate(appID: "com.example.other", recipient: "alice", now: now)
        #expect(alice.status == .primary && alice.createdAt == now && alice.promotedAt == now && alice.sealCount == 0)
        #expect(alice.keyID != bob.keyID)
        #expect(try store.keysets().map { "\($0.appID)/\($0.recipient)" } == ["com.example.app/alice", "com.example.app/bob", "com.example.other/alice"])
        let ks = try store.keyset(appID: appID, recipient: "alice")
        #expect(ks.primary?.keyID == alice.keyID && ks.keys.count == 1 && ks.rotationKeyID == nil)
        #expect(try store.key(appID: appID, recipient: "alice", keyID: alice.keyID) == alice)
        #expect(throws: KeysError(.unknownKey, "")) { try store.key(appID: appID, recipient: "alice", keyID: bob.keyID) }
        #expect(throws: KeysError(.keysetExists, "")) { try store.generate(appID: appID, recipient: "alice", now: now) }
        #expect(try store.keyset(appID: appID, recipient: "alice").keys == [alice])
        #expect(!store.storeDescription.isEmpty)
    }

    /// The primary for sealing, and durable seal-counter reservations up to the 2^32 limit.
    static func sealingPrimaryAndReservations(_ make: () throws -> any ServerKeyStore) throws {
        let store = try make()
        #expect(throws: KeysError(.unknownKeyset, "")) { try store.sealingPrimary(appID: appID, recipient: "alice") }
        let alice = try store.generate(appID: appID, recipient: "alice", now: now)
        let p = try store.sealingPrimary(appID: appID, recipient: "alice")
        #expect(p.keyID == alice.keyID && p.key.byteCount == AES256GCM.keyByteCount)
        #expect(try store.reserveSeals(appID: appID, recipient: "alice", keyID: alice.keyID, count: 1024) == SealReservation(previousCount: 0, reservedCount: 1024))
        #expect(try store.reserveSeals(appID: appID, recipient: "alice", keyID: alice.keyID, count: 10) == SealReservation(previousCount: 1024, reservedCount: 1034))
        #expect(try store.keyset(appID: appID, recipient: "alice").primary?.sealCount == 1034)
        #expect(throws: KeysError(.noPrimaryKey, "")) { try store.reserveSeals(appID: appID, recipient: "alice", keyID: "notTheKey", count: 1) }
        #expect(throws: KeysError(.unknownKeyset, "")) { try store.reserveSeals(appID: appID, recipient: "carol", keyID: alice.keyID, count: 1) }
        // A reservation stops at 2^32; the next one is refused and changes nothing.
        #expect(try store.reserveSeals(appID: appID, recipient: "alice", keyID: alice.keyID, count: UInt64.max / 2)
                == SealReservation(previousCount: 1034, reservedCount: KeyInfo.sealLimit))
        #expect(throws: KeysError(.sealLimitReached, "")) { try store.reserveSeals(appID: appID, recipient: "alice", keyID: alice.keyID, count: 1) }
        #expect(try store.keyset(appID: appID, recipient: "alice").primary?.sealCount == KeyInfo.sealLimit)
        // Without a primary nothing seals.
        _ = try store.revoke(appID: appID, recipient: "alice", keyID: alice.keyID, now: now)
        #expect(throws: KeysError(.noPrimaryKey, "")) { try store.sealingPrimary(appID: appID, recipient: "alice") }
    }

    /// A watch turns stale on every kind of change of its keyset, and only of its keyset.
    static func watchesSeeEveryChange(_ make: () throws -> any ServerKeyStore) throws {
        let store = try make()
        #expect(try store.watchKeyset(appID: appID, recipient: "alice") == nil)
        let alice = try store.generate(appID: appID, recipient: "alice", now: now)
        try store.generate(appID: appID, recipient: "bob", now: now)
        let changes: [(String, () throws -> Void)] = [
            ("reserve", { _ = try store.reserveSeals(appID: appID, recipient: "alice", keyID: alice.keyID, count: 1) }),
            ("rotate without promotion", { _ = try store.rotate(appID: appID, recipient: "alice", graceSeconds: 60, device: nil, promote: false, now: now, afterStep: { _ in }) }),
            ("promote", { _ = try store.promote(appID: appID, recipient: "alice", keyID: try store.keyset(appID: appID, recipient: "alice").rotationKeyID ?? "", graceSeconds: 60, now: now) }),
            ("revoke", { _ = try store.revoke(appID: appID, recipient: "alice", keyID: alice.keyID, now: now) }),
        ]
        for (name, change) in changes {
            let watch = try #require(try store.watchKeyset(appID: appID, recipient: "alice"), "\(name)")
            let other = try #require(try store.watchKeyset(appID: appID, recipient: "bob"))
            #expect(try watch.isCurrent(), "\(name): fresh")
            try change()
            #expect(try !watch.isCurrent(), "\(name): stale after the change")
            #expect(try other.isCurrent(), "\(name): another keyset's watch stays current")
        }
        // An idempotent no-op (revoking again) is allowed to leave the watch current; re-reading is what matters.
        let after = try #require(try store.watchKeyset(appID: appID, recipient: "alice"))
        #expect(try after.isCurrent())
        store.batchChunkWillBegin()
        #expect(try after.isCurrent(), "a chunk start changes no keyset")
    }

    /// Rotation in Tink's order with its steps, promote, revoke, and their results.
    static func rotationPromoteRevoke(_ make: () throws -> any ServerKeyStore) throws {
        let store = try make()
        let first = try store.generate(appID: appID, recipient: "alice", now: now)
        #expect(throws: KeysError(.unknownKeyset, "")) {
            try store.rotate(appID: appID, recipient: "carol", graceSeconds: 60, device: nil, promote: true, now: now, afterStep: { _ in })
        }
        // Staged: the new key is pending, the old one still seals.
        let staged = try store.rotate(appID: appID, recipient: "alice", graceSeconds: 100, device: nil, promote: false, now: now + 1, afterStep: { _ in })
        #expect(!staged.promoted && !staged.resumed && staged.previousKeyID == first.keyID)
        var ks = try store.keyset(appID: appID, recipient: "alice")
        #expect(ks.rotationKeyID == staged.keyID && ks.primary?.keyID == first.keyID)
        #expect(try store.key(appID: appID, recipient: "alice", keyID: staged.keyID).status == .pending)
        #expect(try store.sealingPrimary(appID: appID, recipient: "alice").keyID == first.keyID)
        // Promote finishes the rotation; idempotent.
        ks = try store.promote(appID: appID, recipient: "alice", keyID: staged.keyID, graceSeconds: 100, now: now + 2)
        #expect(ks.primary?.keyID == staged.keyID && ks.rotationKeyID == nil)
        let old = try store.key(appID: appID, recipient: "alice", keyID: first.keyID)
        #expect(old.status == .decryptOnly && old.notAfter == now + 102 && old.retiredAt == now + 2)
        #expect(try store.promote(appID: appID, recipient: "alice", keyID: staged.keyID, graceSeconds: 100, now: now + 3) == ks)
        // A full rotation reports its durable steps in order.
        var steps: [RotationStep] = []
        let full = try store.rotate(appID: appID, recipient: "alice", graceSeconds: 50, device: nil, promote: true, now: now + 4) { steps.append($0) }
        #expect(steps == [.added, .promoted, .finished])
        #expect(full.promoted && full.previousKeyID == staged.keyID && full.notAfter == now + 54 && !full.deviceUpdated)
        #expect(try store.sealingPrimary(appID: appID, recipient: "alice").keyID == full.keyID)
        // Revoke: disabled at once, idempotent; a destroyed or disabled key cannot be promoted.
        let revoked = try store.revoke(appID: appID, recipient: "alice", keyID: staged.keyID, now: now + 5)
        #expect(revoked.status == .disabled && revoked.notAfter == nil)
        #expect(try store.revoke(appID: appID, recipient: "alice", keyID: staged.keyID, now: now + 6).status == .disabled)
        #expect(throws: KeysError(.invalidState, "")) { try store.promote(appID: appID, recipient: "alice", keyID: staged.keyID, graceSeconds: 0, now: now + 7) }
        #expect(throws: KeysError(.unknownKey, "")) { try store.revoke(appID: appID, recipient: "alice", keyID: "noSuchKey", now: now) }
    }

    /// Prune destroys only keys past their grace and drops revoked keys' bytes; due names age, seals, no primary, unfinished rotations.
    static func pruneAndDue(_ make: () throws -> any ServerKeyStore) throws {
        let store = try make()
        let first = try store.generate(appID: appID, recipient: "alice", now: now)
        try store.generate(appID: appID, recipient: "bob", now: now)
        let second = try store.rotate(appID: appID, recipient: "alice", graceSeconds: 10, device: nil, promote: true, now: now, afterStep: { _ in })
        #expect(try store.prune(now: now + 9).isEmpty)
        #expect(try store.prune(now: now + 10) == [KeyStore.PrunedKey(appID: appID, recipient: "alice", keyID: first.keyID)])
        #expect(try store.prune(now: now + 11).isEmpty)
        #expect(try store.key(appID: appID, recipient: "alice", keyID: first.keyID).status == .destroyed)
        #expect(try store.sealingPrimary(appID: appID, recipient: "alice").keyID == second.keyID)

        #expect(try store.due(now: now + 99, rotationPeriodSeconds: 100, sealThreshold: 1 << 24).isEmpty)
        let aged = try store.due(now: now + 100, rotationPeriodSeconds: 100, sealThreshold: 1 << 24)
        #expect(aged.map(\.recipient) == ["alice", "bob"] && aged.allSatisfy { $0.reasons == ["age"] && $0.ageSeconds == 100 })
        _ = try store.reserveSeals(appID: appID, recipient: "bob", keyID: try store.sealingPrimary(appID: appID, recipient: "bob").keyID, count: 5)
        let sealed = try store.due(now: now, rotationPeriodSeconds: 100, sealThreshold: 5)
        #expect(sealed.map(\.recipient) == ["bob"] && sealed.first?.reasons == ["seals"] && sealed.first?.sealCount == 5)
        _ = try store.revoke(appID: appID, recipient: "alice", keyID: second.keyID, now: now)
        _ = try store.rotate(appID: appID, recipient: "bob", graceSeconds: 10, device: nil, promote: false, now: now, afterStep: { _ in })
        let due = try store.due(now: now, rotationPeriodSeconds: 100, sealThreshold: 1 << 24)
        #expect(due.first { $0.recipient == "alice" }?.reasons == ["noPrimary"])
        #expect(due.first { $0.recipient == "alice" }?.keyID == nil)
        #expect(due.first { $0.recipient == "bob" }?.reasons == ["unfinishedRotation"])
        // A revoked key's bytes go at the next prune (F20); the key stays disabled; once.
        #expect(try store.prune(now: now) == [KeyStore.PrunedKey(appID: appID, recipient: "alice", keyID: second.keyID)])
        #expect(try store.prune(now: now).isEmpty)
        #expect(try store.key(appID: appID, recipient: "alice", keyID: second.keyID).status == .disabled)
    }

    /// A keyset exported from one store imports into another with the same keys; importing again changes nothing.
    static func exportAndImport(_ make: () throws -> any ServerKeyStore) throws {
        let a = try make(), b = try make()
        let first = try a.generate(appID: appID, recipient: "alice", now: now)
        let second = try a.rotate(appID: appID, recipient: "alice", graceSeconds: 10, device: nil, promote: true, now: now, afterStep: { _ in })
        let record = try a.exportRecord(appID: appID, recipient: "alice", keyID: nil)
        #expect(record.keyInfos.map(\.keyID) == [first.keyID, second.keyID])
        #expect(throws: KeysError(.unknownKey, "")) { try a.exportRecord(appID: appID, recipient: "alice", keyID: "noSuchKey") }
        #expect(throws: KeysError(.wrongAppID, "")) { try b.importRecord(record, expectedAppID: "com.example.other", graceSeconds: 10, now: now) }
        #expect(try b.keysets().isEmpty)
        let imported = try b.importRecord(record, expectedAppID: appID, graceSeconds: 10, now: now)
        #expect(imported.created && Set(imported.changedKeyIDs) == [first.keyID, second.keyID])
        #expect(try b.keyset(appID: appID, recipient: "alice").keys.map(\.status) == [.decryptOnly, .primary])
        let pa = try a.sealingPrimary(appID: appID, recipient: "alice"), pb = try b.sealingPrimary(appID: appID, recipient: "alice")
        #expect(pa.keyID == pb.keyID && pa.key == pb.key)
        let again = try b.importRecord(record, expectedAppID: nil, graceSeconds: 10, now: now)
        #expect(!again.created && again.changedKeyIDs.isEmpty)
    }

    /// Malformed names and out-of-range times are refused before anything is written.
    static func namesAndTimesAreCheckedBeforeAnyChange(_ make: () throws -> any ServerKeyStore) throws {
        let store = try make()
        #expect(throws: KeysError(.invalidName, "")) { try store.generate(appID: "bad app", recipient: "alice", now: now) }
        #expect(throws: KeysError(.invalidName, "")) { try store.generate(appID: "com.example.app|x", recipient: "alice", now: now) }
        #expect(throws: KeysError(.invalidName, "")) { try store.generate(appID: appID, recipient: "a/b", now: now) }
        #expect(throws: KeysError(.invalidName, "")) { try store.watchKeyset(appID: "bad app", recipient: "alice") }
        #expect(throws: KeysError(.invalidName, "")) { try store.keyset(appID: appID, recipient: "a\u{1}b") }
        #expect(throws: KeysError(.timeOutOfRange, "")) { try store.generate(appID: appID, recipient: "alice", now: -1) }
        #expect(throws: KeysError(.timeOutOfRange, "")) { try store.generate(appID: appID, recipient: "alice", now: KeyTime.maxTimeSeconds + 1) }
        #expect(try store.keysets().isEmpty)
        let alice = try store.generate(appID: appID, recipient: "alice", now: now)
        let before = try store.keyset(appID: appID, recipient: "alice")
        #expect(throws: KeysError(.timeOutOfRange, "")) {
            try store.rotate(appID: appID, recipient: "alice", graceSeconds: KeyTime.maxTimeSeconds, device: nil, promote: true, now: now, afterStep: { _ in })
        }
        #expect(throws: KeysError(.timeOutOfRange, "")) { try store.promote(appID: appID, recipient: "alice", keyID: alice.keyID, graceSeconds: -1, now: now) }
        #expect(throws: KeysError(.timeOutOfRange, "")) { try store.prune(now: -1) }
        #expect(throws: KeysError(.timeOutOfRange, "")) { try store.due(now: now, rotationPeriodSeconds: -1, sealThreshold: 0) }
        #expect(try store.keyset(appID: appID, recipient: "alice") == before)
    }

    /// The sender's cache over the protocol: counts in blocks, never under-counts, follows a rotation and a revoke.
    static func keyringSealsThroughTheProtocol(_ make: () throws -> any ServerKeyStore) throws {
        let store = try make()
        let first = try store.generate(appID: appID, recipient: "alice", now: now)
        let keyring = ServerKeyring(store: store)
        for _ in 0..<3 { #expect(try keyring.primaryKeyForSealing(appID: appID, recipient: "alice").keyID == first.keyID) }
        #expect(try store.keyset(appID: appID, recipient: "alice").primary?.sealCount == ServerKeyring.reservationBlockSize)
        #expect(throws: KeysError(.unknownKeyset, "")) { try keyring.primaryKeyForSealing(appID: appID, recipient: "carol") }
        #expect(throws: KeysError(.invalidName, "")) { try keyring.primaryKeyForSealing(appID: appID, recipient: "a/b") }
        let second = try store.rotate(appID: appID, recipient: "alice", graceSeconds: 10, device: nil, promote: true, now: now, afterStep: { _ in })
        #expect(try keyring.primaryKeyForSealing(appID: appID, recipient: "alice").keyID == second.keyID)
        #expect(try store.key(appID: appID, recipient: "alice", keyID: second.keyID).sealCount == ServerKeyring.reservationBlockSize)
        keyring.beginBatchChunk()
        #expect(try keyring.primaryKeyForSealing(appID: appID, recipient: "alice").keyID == second.keyID)
        _ = try store.revoke(appID: appID, recipient: "alice", keyID: second.keyID, now: now)
        keyring.beginBatchChunk()
        #expect(throws: KeysError(.noPrimaryKey, "")) { try keyring.primaryKeyForSealing(appID: appID, recipient: "alice") }
    }
}
