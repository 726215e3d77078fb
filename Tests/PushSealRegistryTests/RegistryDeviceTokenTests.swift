import Foundation
import PushSealRegistry
import Testing
import PushSealServerKeys

/// The ``DeviceTokenStoreContract`` (shared with PushSealKeysTests, the same file) on the
/// PostgreSQL registry, each check with a fresh, migrated database; and two adders racing.
@Suite struct RegistryDeviceTokenTests {
    @Test(arguments: DeviceTokenStoreContract.names)
    func postgres(_ check: String) throws {
        var made = 0
        try DeviceTokenStoreContract.run(check) {
            made += 1
            return try Registry.store().0
        }
        #expect(made >= 1)
    }

    /// Two stores (two pools) adding the same token for different recipients at once: it ends
    /// with exactly one owner (the unique index and the retry), never two, never none.
    @Test func concurrentAddsLeaveOneOwner() throws {
        let kek = KeyEncryptionKey.generate()
        let (a, cs) = try Registry.store(kek: kek)
        let b = try PostgresKeyStore(connectionString: cs, kek: kek)
        let token = DeviceTokenStoreContract.token(0x5e)
        let app = DeviceTokenStoreContract.appID
        for round in 0..<20 {
            let t = DeviceTokenStoreContract.t + Int64(round)
            DispatchQueue.concurrentPerform(iterations: 2) { i in
                _ = try? (i == 0 ? a : b).addDeviceToken(token, appID: app, recipient: i == 0 ? "alice" : "bob", environment: .production, registeredAtMs: t)
            }
            let owners = try a.allDeviceTokens(appID: app).filter { $0.token == token }.map(\.recipient)
            #expect(owners.count == 1, "round \(round): \(owners)")
        }
    }
}
