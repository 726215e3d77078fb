import PushSealTestSupport
import Foundation
import PushSealCrypto
@testable import PushSealKeychain
import Testing

/// A server keychain holds one item per recipient. A lookup by (group, service, account) must
/// open exactly one file: this checks it against 300 items, one of them damaged — a lookup that
/// scanned or decrypted every item would hit the damaged one. (Timing is measured by
/// `make bench` / the report, not asserted here.)
@Suite struct LookupScaleTests {
    @Test func lookupOpensOnlyItsOwnFile() throws {
        let (root, dir) = try Fixture.keychain()
        defer { try? FileManager.default.removeItem(at: root) }
        let kc = try Keychain(opening: dir, as: Fixture.app)
        for i in 0..<300 {
            try kc.add(service: "keyset", account: "recipient-\(i)", accessibility: .afterFirstUnlockThisDeviceOnly, data: Fixture.secret("k\(i)"))
        }
        let damaged = dir.appendingPathComponent("items/" + ItemRecord.fileName(itemClass: .genericPassword, accessGroup: Fixture.shared, service: "keyset", account: "recipient-7"))
        try Data("garbage".utf8).write(to: damaged)
        for i in stride(from: 0, to: 300, by: 13) where i != 7 {
            #expect(Fixture.text(try kc.copyData(ItemQuery(service: "keyset", account: "recipient-\(i)", accessGroup: Fixture.shared))) == "k\(i)")
            #expect(Fixture.text(try kc.copyData(ItemQuery(service: "keyset", account: "recipient-\(i)"))) == "k\(i)")
        }
        expectCode(.corrupt) { try kc.copyData(ItemQuery(service: "keyset", account: "recipient-7")) }
    }
}
