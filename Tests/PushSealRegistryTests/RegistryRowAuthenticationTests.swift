import Foundation
import PushSealCrypto
import PushSealKeyRecords
import PushSealServerKeys
import PushSealRegistry
import PushSealSystem
import Testing

/// Security review G1: whoever holds only the database role (no KEK) changes routing rows with
/// SQL; each change is refused as `corrupt`, naming the table and the row, instead of sealing to
/// the attacker's key, addressing the attacker's phone or publishing the attacker's sender key.
/// Each test does what the review's poc08 did, with `psql` (the role), and fails on 0031154,
/// where every read returned the attacker's rows.
@Suite struct RegistryRowAuthenticationTests {
    static let app = "com.example.app"
    static let now: Int64 = 1_800_000_000
    static let evilKey = String(repeating: "e7", count: 32)
    /// Undoes migration 5, keeping the rows: what a registry upgraded from schema 4 holds.
    static let backToSchema4 = """
            ALTER TABLE pushseal_registrations DROP COLUMN row_mac, DROP COLUMN pinned_sender_key_ids, DROP COLUMN pins_reported_at;
            ALTER TABLE pushseal_sender_keys DROP COLUMN row_mac;
            ALTER TABLE pushseal_device_tokens DROP COLUMN row_mac;
            ALTER TABLE pushseal_v2_lists DROP COLUMN row_mac, DROP COLUMN primary_key_id, DROP COLUMN entry_count;
            DROP TABLE pushseal_row_auth_pending;
            DROP TABLE pushseal_outbox, pushseal_idempotency, pushseal_provider_tokens, pushseal_gateway_api_keys;
            DELETE FROM pushseal_schema_version WHERE version >= 5
        """

    func expectCorrupt<R>(_ what: String, table: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R) {
        do {
            let r = try body()
            Issue.record("\(what): read without an error: \(r)", sourceLocation: sourceLocation)
        } catch let e as RegistryError {
            #expect(e.code == .corrupt && e.reason.contains(table), "\(what): \(e)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(what): \(error)", sourceLocation: sourceLocation)
        }
    }

    static func registered(_ store: PostgresKeyStore, _ recipient: String, keyID: String, at t: Int64 = now) throws -> X25519.PrivateKey {
        let key = try X25519.PrivateKey()
        try store.register(try DeviceRegistration(appID: app, keyID: keyID, publicKey: key.publicKey, createdAt: t), recipient: recipient, now: t)
        return key
    }

    @Test func aRegistrationSwappedByTheDatabaseRoleIsRefused() throws {
        let (store, cs) = try Registry.store()
        _ = try Self.registered(store, "alice", keyID: "k1")
        _ = try Self.registered(store, "bob", keyID: "k1")
        #expect(try store.batchRegistrations(appID: Self.app, recipients: ["alice", "bob"]).count == 2)
        try PostgresServer.sharedServer().psql(cs, "UPDATE pushseal_registrations SET public_key = decode('\(Self.evilKey)', 'hex'), key_id = 'EVIL' WHERE recipient = 'alice'")
        expectCorrupt("batch", table: "pushseal_registrations") { try store.batchRegistrations(appID: Self.app, recipients: ["alice", "bob"]) }
        expectCorrupt("registrations", table: "pushseal_registrations") { try store.registrations(appID: Self.app, recipient: "alice") }
        #expect(try store.registrations(appID: Self.app, recipient: "bob").current?.keyID == "k1", "another recipient is unaffected")
        // The key alone, or a row moved to another recipient, fails the same way.
        try PostgresServer.sharedServer().psql(cs, "UPDATE pushseal_registrations SET public_key = decode('\(Self.evilKey)', 'hex') WHERE recipient = 'bob'")
        expectCorrupt("key only", table: "pushseal_registrations") { try store.registrations(appID: Self.app, recipient: "bob") }
    }

    @Test func deletedOrOldRegistrationRowsAreRefused() throws {
        let (store, cs) = try Registry.store()
        let server = try PostgresServer.sharedServer()
        _ = try Self.registered(store, "alice", keyID: "k1")
        try server.psql(cs, "CREATE TABLE saved AS SELECT * FROM pushseal_registrations")
        _ = try Self.registered(store, "alice", keyID: "k2", at: Self.now + 10)
        #expect(try store.registrations(appID: Self.app, recipient: "alice").current?.keyID == "k2")
        // The old primary row put back (its tag was valid for the list's old version).
        try server.psql(cs, "DELETE FROM pushseal_registrations WHERE recipient = 'alice'; INSERT INTO pushseal_registrations SELECT * FROM saved")
        expectCorrupt("old rows", table: "pushseal_registrations") { try store.registrations(appID: Self.app, recipient: "alice") }
        expectCorrupt("old rows, batch", table: "pushseal_registrations") { try store.batchRegistrations(appID: Self.app, recipients: ["alice"]) }
        // The primary deleted (v2 would stop for alice without a trace).
        _ = try Self.registered(store, "carol", keyID: "k1")
        try server.psql(cs, "DELETE FROM pushseal_registrations WHERE recipient = 'carol'")
        expectCorrupt("deleted primary", table: "pushseal_registrations") { try store.batchRegistrations(appID: Self.app, recipients: ["carol"]) }
    }

    /// Review of 2026-12-04 (S1): an API key the role adds, widens or un-revokes would let it
    /// register its own key for any recipient (`register`) or send through the gateway (`send`).
    @Test func anAPIKeyAddedWidenedOrUnrevokedByTheDatabaseRoleIsRefused() throws {
        let (store, cs) = try Registry.store()
        let server = try PostgresServer.sharedServer()
        let sha = [UInt8](repeating: 0x11, count: 32), widenedSHA = [UInt8](repeating: 0x22, count: 32)
        try store.insertGatewayAPIKey(GatewayAPIKeyRecord(id: "00000000000000a1", name: "backend", scopes: ["send"], createdAt: Self.now, revokedAt: nil), keySHA256: sha)
        try store.insertGatewayAPIKey(GatewayAPIKeyRecord(id: "00000000000000a2", name: "other", scopes: ["send"], createdAt: Self.now, revokedAt: nil), keySHA256: widenedSHA)
        #expect(try store.gatewayAPIKey(sha256: sha)?.scopes == ["send"])
        // A key of the role's own, with every scope.
        try server.psql(cs, "INSERT INTO pushseal_gateway_api_keys (id, name, key_sha256, scopes, created_at) VALUES ('00000000000000e7', 'evil', decode('\(Self.evilKey)', 'hex'), 'send,register,admin', \(Self.now))")
        expectCorrupt("inserted", table: "pushseal_gateway_api_keys") { try store.gatewayAPIKey(sha256: [UInt8](repeating: 0xe7, count: 32)) }
        #expect(try store.gatewayAPIKeys().filter { !$0.authentic }.map(\.id) == ["00000000000000e7"], "listed as unauthenticated")
        try server.psql(cs, "DELETE FROM pushseal_gateway_api_keys WHERE id = '00000000000000e7'")
        // A key's scopes widened.
        try server.psql(cs, "UPDATE pushseal_gateway_api_keys SET scopes = 'send,register' WHERE id = '00000000000000a2'")
        expectCorrupt("widened", table: "pushseal_gateway_api_keys") { try store.gatewayAPIKey(sha256: widenedSHA) }
        try server.psql(cs, "DELETE FROM pushseal_gateway_api_keys WHERE id = '00000000000000a2'")
        // A revocation undone.
        #expect(try store.revokeGatewayAPIKey(id: "00000000000000a1", at: Self.now + 1))
        #expect(try store.gatewayAPIKey(sha256: sha) == nil)
        #expect(try store.gatewayAPIKeys().map(\.revokedAt) == [Self.now + 1])
        try server.psql(cs, "UPDATE pushseal_gateway_api_keys SET revoked_at = NULL WHERE id = '00000000000000a1'")
        expectCorrupt("un-revoked", table: "pushseal_gateway_api_keys") { try store.gatewayAPIKey(sha256: sha) }
        // Without the KEK no key is made or looked up.
        let bare = try PostgresKeyStore(connectionString: cs, kek: nil)
        #expect(throws: RegistryError.self) { try bare.gatewayAPIKey(sha256: sha) }
        #expect(throws: RegistryError.self) {
            try bare.insertGatewayAPIKey(GatewayAPIKeyRecord(id: "00000000000000b1", name: "x", scopes: ["send"], createdAt: Self.now, revokedAt: nil), keySHA256: widenedSHA)
        }
    }

    /// API keys of before schema 12 are tagged by the migrate that applies it, with the KEK, and
    /// only then: a key row inserted later, or a migration marker put back, tags nothing
    /// (review of 2026-12-04, H2).
    @Test func apiKeysFromBeforeSchema12AreTaggedByTheMigrateThatAppliesIt() throws {
        let kek = KeyEncryptionKey.generate()
        let (store, cs) = try Registry.store(kek: kek)
        let server = try PostgresServer.sharedServer()
        let sha = [UInt8](repeating: 0x33, count: 32), forgedSHA = [UInt8](repeating: 0x44, count: 32)
        _ = try Self.registered(store, "alice", keyID: "k1")
        try store.insertGatewayAPIKey(GatewayAPIKeyRecord(id: "00000000000000c1", name: "old", scopes: ["send"], createdAt: Self.now, revokedAt: nil), keySHA256: sha)
        let backToSchema11 = "ALTER TABLE pushseal_gateway_api_keys DROP COLUMN row_mac; DELETE FROM pushseal_schema_version WHERE version >= 12"
        // Without the KEK: applied, the old key left untagged (refused, listed as such).
        try server.psql(cs, backToSchema11)
        #expect(try PostgresKeyStore.migrate(connectionString: cs, kek: nil).applied == [12])
        let reopened = try PostgresKeyStore(connectionString: cs, kek: kek)
        expectCorrupt("untagged", table: "pushseal_gateway_api_keys") { try reopened.gatewayAPIKey(sha256: sha) }
        #expect(try reopened.gatewayAPIKeys().map(\.authentic) == [false])
        // With the KEK, in the run that applies it: tagged; a registration swapped meanwhile is not blessed.
        try server.psql(cs, backToSchema11 + "; UPDATE pushseal_registrations SET public_key = decode('\(Self.evilKey)', 'hex') WHERE recipient = 'alice'")
        let done = try PostgresKeyStore.migrate(connectionString: cs, kek: kek)
        #expect(done.applied == [12] && done.authenticated?.apiKeys == 1 && done.authenticated?.registrations == 0)
        #expect(try reopened.gatewayAPIKey(sha256: sha)?.id == "00000000000000c1")
        expectCorrupt("the swapped registration is not blessed", table: "pushseal_registrations") { try reopened.registrations(appID: Self.app, recipient: "alice") }
        // Later: a key row of the role's own, a migrate run again, the old marker put back.
        try server.psql(cs, "INSERT INTO pushseal_gateway_api_keys (id, name, key_sha256, scopes, created_at) VALUES ('00000000000000e7', 'evil', decode('\(Hex.encode(forgedSHA))', 'hex'), 'send,register', 1)")
        #expect(try PostgresKeyStore.migrate(connectionString: cs, kek: kek).authenticated == nil)
        try server.psql(cs, "INSERT INTO pushseal_row_auth_pending (id, row_count) VALUES (1, 1)")
        #expect(throws: RegistryError.self, "a marker beside tagged rows was put back") { try PostgresKeyStore.migrate(connectionString: cs, kek: kek) }
        try server.psql(cs, "DELETE FROM pushseal_row_auth_pending")
        expectCorrupt("the role's key stays refused", table: "pushseal_gateway_api_keys") { try reopened.gatewayAPIKey(sha256: forgedSHA) }
        // keys revoke disables it (its new tag covers the revocation).
        #expect(try reopened.revokeGatewayAPIKey(id: "00000000000000e7", at: Self.now))
        #expect(try reopened.gatewayAPIKeys().map(\.authentic) == [true, true])
        #expect(try reopened.gatewayAPIKey(sha256: forgedSHA) == nil)
    }

    @Test func aDeviceTokenSwappedOrMovedIsRefused() throws {
        let (store, cs) = try Registry.store()
        let server = try PostgresServer.sharedServer()
        try store.addDeviceToken("a1a1a1a1", appID: Self.app, recipient: "alice", environment: .production, registeredAtMs: 1_000)
        try store.addDeviceToken("b2b2b2b2", appID: Self.app, recipient: "bob", environment: .production, registeredAtMs: 1_000)
        #expect(try store.deviceTokens(appID: Self.app, recipients: ["alice", "bob"], environment: .production).count == 2)
        try server.psql(cs, "UPDATE pushseal_device_tokens SET token = 'e7e7e7e7' WHERE recipient = 'alice'")
        expectCorrupt("batch lookup", table: "pushseal_device_tokens") {
            try store.deviceTokens(appID: Self.app, recipients: ["alice"], environment: .production)
        }
        expectCorrupt("lookup", table: "pushseal_device_tokens") { try store.deviceTokens(appID: Self.app, recipient: "alice") }
        // bob's token moved to mallory.
        try server.psql(cs, "UPDATE pushseal_device_tokens SET recipient = 'mallory' WHERE recipient = 'bob'")
        expectCorrupt("moved", table: "pushseal_device_tokens") { try store.deviceTokens(appID: Self.app, recipient: "mallory") }
        // A token row inserted without the KEK.
        try server.psql(cs, "INSERT INTO pushseal_device_tokens (app_id, recipient, token, environment, registered_at) VALUES ('\(Self.app)', 'dave', 'd4d4', 'production', 5)")
        expectCorrupt("inserted", table: "pushseal_device_tokens") { try store.deviceTokens(appID: Self.app, recipients: ["dave"], environment: .production) }
        // Without the KEK no token is looked up at all.
        let bare = try PostgresKeyStore(connectionString: cs, kek: nil)
        #expect(throws: RegistryError.self) { try bare.deviceTokens(appID: Self.app, recipients: ["carol"], environment: .production) }
    }

    @Test func aSenderKeyRowAddedOrSwappedIsNeverPublished() throws {
        let (store, cs) = try Registry.store()
        let server = try PostgresServer.sharedServer()
        let real = try store.generateSenderKey(appID: Self.app, now: Self.now)
        #expect(try store.senderKeys(appID: Self.app).map(\.keyID) == [real.keyID])
        // (b) of poc08: a decryptOnly row holding the attacker's public key, no private key.
        try server.psql(cs, """
            INSERT INTO pushseal_sender_keys (app_id, key_id, status, created_at, position, public_key)
            VALUES ('\(Self.app)', 'EVIL', 'decryptOnly', \(Self.now), 1, decode('\(Self.evilKey)', 'hex'))
            """)
        expectCorrupt("added row", table: "pushseal_sender_keys") { try store.senderKeys(appID: Self.app) }
        try server.psql(cs, "DELETE FROM pushseal_sender_keys WHERE key_id = 'EVIL'")
        #expect(try store.senderKeys(appID: Self.app).count == 1)
        // The primary's public key swapped: neither published nor sealed with.
        try server.psql(cs, "UPDATE pushseal_sender_keys SET public_key = decode('\(Self.evilKey)', 'hex')")
        expectCorrupt("swapped key", table: "pushseal_sender_keys") { try store.senderKeys(appID: Self.app) }
        expectCorrupt("swapped key, sealing", table: "pushseal_sender_keys") { try store.sealingSenderKey(appID: Self.app) }
    }

    /// `push-keys registry migrate` with the KEK authenticates the rows of a schema-4 registry
    /// once and says how many; until then the registry does not open; a row without a tag that
    /// appears afterwards is refused and never authenticated by a later migrate.
    @Test func migrateAuthenticatesExistingRowsOnce() throws {
        let kek = KeyEncryptionKey.generate()
        let (store, cs) = try Registry.store(kek: kek)
        let server = try PostgresServer.sharedServer()
        _ = try Self.registered(store, "alice", keyID: "k1")
        _ = try Self.registered(store, "alice", keyID: "k2", at: Self.now + 1)
        _ = try store.generateSenderKey(appID: Self.app, now: Self.now)
        try store.addDeviceToken("a1a1", appID: Self.app, recipient: "alice", environment: .production, registeredAtMs: 1_000)
        // Back to schema 4 with the same rows: what an upgraded registry holds.
        try server.psql(cs, Self.backToSchema4)
        let schemaOnly = try PostgresKeyStore.migrate(connectionString: cs, kek: nil)
        #expect(schemaOnly.applied == Array(5...RegistrySchema.currentVersion) && schemaOnly.pendingRows == 6 && schemaOnly.authenticated == nil)
        #expect(throws: RegistryError.self) { try PostgresKeyStore(connectionString: cs, kek: kek) }
        let done = try PostgresKeyStore.migrate(connectionString: cs, kek: kek)
        #expect(done.applied.isEmpty && done.authenticated?.registrations == 2 && done.authenticated?.senderKeys == 1
                && done.authenticated?.lists == 2 && done.authenticated?.deviceTokens == 1 && done.authenticated?.total == 6)
        let reopened = try PostgresKeyStore(connectionString: cs, kek: kek)
        #expect(try reopened.registrations(appID: Self.app, recipient: "alice").current?.keyID == "k2")
        #expect(try reopened.batchRegistrations(appID: Self.app, recipients: ["alice"])["alice"]?.current?.keyID == "k2")
        #expect(try reopened.senderKeys(appID: Self.app).count == 1)
        #expect(try reopened.deviceTokens(appID: Self.app, recipient: "alice").map(\.token) == ["a1a1"])
        // Once only: an untagged row added later stays refused.
        #expect(try PostgresKeyStore.migrate(connectionString: cs, kek: kek).authenticated == nil)
        try server.psql(cs, "INSERT INTO pushseal_device_tokens (app_id, recipient, token, environment, registered_at) VALUES ('\(Self.app)', 'eve', 'e5e5', 'production', 5)")
        #expect(try PostgresKeyStore.migrate(connectionString: cs, kek: kek).authenticated == nil)
        expectCorrupt("untagged later", table: "pushseal_device_tokens") { try reopened.deviceTokens(appID: Self.app, recipient: "eve") }
    }

    /// The authentication step refuses a sender key whose public key is not its private key's,
    /// changing nothing; `push-keys registry migrate --kek-file` says how many rows it authenticated.
    @Test func migrateRefusesAForgedSenderKeyAndTheCLISaysHowMany() throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-rowauth-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: dir) }
        let kek = KeyEncryptionKey.generate()
        let kekPath = try Registry.kekFile(kek)
        let (store, cs) = try Registry.store(kek: kek)
        let server = try PostgresServer.sharedServer()
        _ = try store.generateSenderKey(appID: Self.app, now: Self.now)
        _ = try Self.registered(store, "alice", keyID: "k1")
        try server.psql(cs, Self.backToSchema4 + "; UPDATE pushseal_sender_keys SET public_key = decode('\(Self.evilKey)', 'hex')")
        let keys = RegistryCLITests.tool("push-keys")
        let refused = try RegistryCLITests.run([keys, "registry", "migrate", "--registry", cs, "--kek-file", kekPath])
        #expect(refused.status == 65 && refused.stderr.contains("pushseal_sender_keys"), "\(refused)")
        #expect(throws: RegistryError.self) { try PostgresKeyStore(connectionString: cs, kek: kek) }
        try server.psql(cs, "DELETE FROM pushseal_sender_keys; DELETE FROM pushseal_v2_lists WHERE owner = '/sender'")
        let done = try RegistryCLITests.run([keys, "registry", "migrate", "--registry", cs, "--kek-file", kekPath])
        #expect(done.status == 0 && done.stdout.contains("authenticated 2 rows (1 registrations, 0 sender keys, 1 lists, 0 device tokens, 0 API keys)"), "\(done)")
    }
}
