import Foundation
import PushSealKeychain
import Testing

/// The ``DeviceTokenStoreContract`` on the file keychain.
@Suite struct DeviceTokenStoreTests {
    @Test(arguments: DeviceTokenStoreContract.names)
    func fileKeychain(_ check: String) throws {
        let root = try RegistrationStoreTests.scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        var made = 0
        try DeviceTokenStoreContract.run(check) {
            made += 1
            return try RegistrationStoreTests.store(in: root, "server\(made)")
        }
        #expect(made >= 1)
    }
}
