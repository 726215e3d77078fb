import PushSealWire
import PushSealSystem
import Foundation
import PushSealServerKeys
import PushSealRegistry
import Testing

/// The ``ServerKeyStoreContract`` (shared with PushSealKeysTests, the same file) on the
/// PostgreSQL registry: each check with fresh, migrated databases in the tests' own server.
@Suite struct RegistryContractTests {
    @Test(arguments: ServerKeyStoreContract.names)
    func postgres(_ check: String) throws {
        var made = 0
        let make = { () throws -> any ServerKeyStore in
            made += 1
            return try Registry.store().0
        }
        try ServerKeyStoreContract.run(check, make)
        #expect(made >= 1)
    }
}
