import Foundation
import PushSealCrypto
import PushSealKeyRecords
import PushSealRegistry
import Testing
import PushSealServerKeys

/// v2 registrations and sender keys in the PostgreSQL registry: the ``RegistrationStoreContract``
/// (shared with PushSealKeysTests, the same file), the sender private keys wrapped under the KEK
/// (a dump holds none in clear; rewrap moves them; a wrong KEK cannot read them).
@Suite struct RegistryRegistrationTests {
    static let app = "com.example.app"
    static let now: Int64 = 1_800_000_000

    @Test(arguments: RegistrationStoreContract.names)
    func postgres(_ check: String) throws {
        var made = 0
        try RegistrationStoreContract.run(check) {
            made += 1
            return try Registry.store().0
        }
        #expect(made >= 1)
    }

    /// The hint that spares a batch of v1 recipients a round trip each: no until the first registration.
    @Test func mayHaveRegistrationsIsOneQueryPerApp() throws {
        let (store, _) = try Registry.store()
        #expect(try !store.mayHaveRegistrations(appID: Self.app))
        let key = try X25519.PrivateKey()
        try store.register(try DeviceRegistration(appID: Self.app, keyID: "k1", publicKey: key.publicKey, createdAt: Self.now), recipient: "alice", now: Self.now)
        #expect(try store.mayHaveRegistrations(appID: Self.app))
        #expect(try !store.mayHaveRegistrations(appID: "com.example.other"))
    }

    @Test func senderPrivateKeysAreWrappedAndRewrapped() throws {
        let old = KeyEncryptionKey.generate(), new = KeyEncryptionKey.generate()
        let (store, cs) = try Registry.store(kek: old)
        try store.generateSenderKey(appID: Self.app, now: Self.now)
        try store.rotateSenderKey(appID: Self.app, graceSeconds: 100, now: Self.now + 1)
        let secret = try #require(try store.sealingSenderKey(appID: Self.app))
        let raw = secret.key.rawRepresentation.copyBytes()
        let dump = try PostgresServer.sharedServer().run("pg_dump", ["-d", cs, "--inserts"], asServerUser: false)
        #expect(dump.contains("pushseal_sender_keys"))
        let hex = raw.map { String(format: "%02x", $0) }.joined()
        #expect(!dump.lowercased().contains(String(hex.prefix(16))) && !dump.contains(Data(raw).base64EncodedString()))
        // Without the KEK nothing of the list is read: its rows are authenticated under the KEK,
        // and a published public key is derived from its unwrapped private key (G1).
        let metadataOnly = try PostgresKeyStore(connectionString: cs, kek: nil)
        #expect(throws: RegistryError.self) { try metadataOnly.senderKeys(appID: Self.app) }
        #expect(throws: RegistryError.self) { try metadataOnly.sealingSenderKey(appID: Self.app) }
        #expect(try store.senderKeys(appID: Self.app).count == 2)
        // v1 keys plus both sender keys move to the new KEK.
        try store.generate(appID: Self.app, recipient: "alice", now: Self.now)
        #expect(try store.rewrap(to: new) == 3)
        let reopened = try PostgresKeyStore(connectionString: cs, kek: new)
        #expect(try reopened.sealingSenderKey(appID: Self.app)?.key.publicKey == secret.key.publicKey)
    }
}
