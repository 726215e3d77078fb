import Foundation
import PushSealCrypto
@testable import PushSealKeychain
import Testing

/// `itemVersion`: a cheap change token that changes on every write of the item or the lock state.
@Suite struct ItemVersionTests {
    @Test func tokenChangesOnEveryWriteAndNotOnReads() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let kc = try Keychain(opening: dir, as: Fixture.app)
        let q = ItemQuery(service: "s", account: "a", accessGroup: Fixture.shared)
        #expect(try kc.itemVersion(q) == nil)
        try kc.add(service: "s", account: "a", accessibility: .afterFirstUnlock, data: Fixture.secret("one"))
        let v1 = try #require(try kc.itemVersion(q))
        _ = try kc.copyData(q)
        #expect(try kc.itemVersion(q) == v1)
        // Another instance (another process, as far as files go) updates the item: same size, new token.
        let other = try Keychain(opening: dir, as: Fixture.ext)
        try other.update(q, with: ItemChanges(data: Fixture.secret("two")))
        let v2 = try #require(try kc.itemVersion(q))
        #expect(v2 != v1)
        try other.update(q, with: ItemChanges(data: Fixture.secret("two")))
        #expect(try kc.itemVersion(q) != v2)
        let v3 = try kc.itemVersion(q)
        try kc.lock()
        #expect(try kc.itemVersion(q) != v3)
        try other.delete(q)
        #expect(try kc.itemVersion(q) == nil)
    }

    @Test func locationNeedsAFullQueryAndTheEntitlement() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let kc = try Keychain(opening: dir, as: Fixture.app)
        for q in [ItemQuery(service: "s", account: "a"), ItemQuery(service: "s", accessGroup: Fixture.shared)] {
            #expect(throws: KeychainError(.param, "")) { try kc.location(of: q) }
        }
        let e = #expect(throws: KeychainError.self) { try kc.location(of: ItemQuery(service: "s", account: "a", accessGroup: "TEAM.other")) }
        #expect(e?.osStatus == -34018)
    }
}
