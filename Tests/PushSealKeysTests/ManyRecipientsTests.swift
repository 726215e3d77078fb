import Foundation
import PushSealCrypto
import PushSealKeychain
@testable import PushSealServerKeys
import Testing
import PushSealKeyRecords

/// 10,000 recipients in one server keychain: the primary lookup opens one keychain item (no scan).
/// Time is measured and printed, never asserted (speed belongs to `make bench`).
@Suite struct ManyRecipientsTests {
    @Test func tenThousandRecipientsLookupIsByItemNotScan() throws {
        let count = Int(ProcessInfo.processInfo.environment["PUSHSEAL_KEYS_RECIPIENTS"] ?? "") ?? 10_000
        let f = try KeysFixture()
        defer { f.cleanup() }
        let store = try KeyStore(keychain: f.server.keychain, audit: .none)
        let started = Date()
        var ids: [String] = []
        ids.reserveCapacity(count)
        for i in 0..<count { ids.append(try store.generate(appID: KeysFixture.appID, recipient: "r\(i)").keyID) }
        let createSeconds = Date().timeIntervalSince(started)
        let sender = ServerKeyring(store: store)
        // First seal per recipient reserves a block (one durable update each).
        let t1 = Date()
        for i in stride(from: 0, to: count, by: 10) {
            #expect(try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: "r\(i)").keyID == ids[i])
        }
        let reserveMicros = Date().timeIntervalSince(t1) * 1e6 / Double((count + 9) / 10)
        // Steady state: lookups within a reserved block.
        let lookups = 20_000
        let t2 = Date()
        var wrong = 0
        for n in 0..<lookups {
            let i = (n * 7919 % ((count + 9) / 10)) * 10
            if try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: "r\(i)").keyID != ids[i] { wrong += 1 }
        }
        let lookupMicros = Date().timeIntervalSince(t2) * 1e6 / Double(lookups)
        #expect(wrong == 0)
        expectKeys(.unknownKeyset) { try sender.primaryKeyForSealing(appID: KeysFixture.appID, recipient: "r\(count)") }
        print("keys: \(count) recipients created in \(String(format: "%.1f", createSeconds)) s; first seal (block reservation) \(String(format: "%.1f", reserveMicros)) µs; steady lookup \(String(format: "%.1f", lookupMicros)) µs per primaryKeyForSealing")
    }
}
