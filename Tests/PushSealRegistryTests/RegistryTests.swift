import PushSealWire
import PushSealSystem
import Foundation
import PushSealCrypto
import PushSealKeychain
import PushSealServerKeys
import PushSealRegistry
import Testing
import PushSealKeyRecords

/// The registry's own behaviour: schema versions, migrations, the KEK, dumps, moving keysets
/// between a file keychain and the registry.
@Suite struct RegistryTests {
    static let app = "com.example.app"
    static let now: Int64 = 1_800_000_000

    func expectRegistryError<R>(_ code: RegistryError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> R) {
        do {
            _ = try body()
            Issue.record("expected RegistryError \(code)", sourceLocation: sourceLocation)
        } catch let e as RegistryError {
            #expect(e.code == code, "\(e)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected RegistryError \(code), got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func schemaVersionsAreChecked() throws {
        let server = try PostgresServer.sharedServer()
        let cs = try server.createDatabase()
        expectRegistryError(.schemaTooOld) { try PostgresKeyStore(connectionString: cs, kek: .generate()) }
        #expect(try PostgresKeyStore.migrate(connectionString: cs) == Array(1...RegistrySchema.currentVersion))
        #expect(try PostgresKeyStore.migrate(connectionString: cs).isEmpty)
        _ = try PostgresKeyStore(connectionString: cs, kek: .generate())
        // A schema from a newer version: refused by the store and by migrate, nothing changed.
        try server.psql(cs, "INSERT INTO pushseal_schema_version (version, description) VALUES (\(RegistrySchema.currentVersion + 1), 'from the future')")
        expectRegistryError(.schemaTooNew) { try PostgresKeyStore(connectionString: cs, kek: .generate()) }
        expectRegistryError(.schemaTooNew) { try PostgresKeyStore.migrate(connectionString: cs) }
        #expect(try server.psql(cs, "SELECT max(version) FROM pushseal_schema_version").trimmingCharacters(in: .whitespacesAndNewlines) == "\(RegistrySchema.currentVersion + 1)")
    }

    @Test func migrationsFromSeveralThreadsApplyOnce() throws {
        let server = try PostgresServer.sharedServer()
        let cs = try server.createDatabase()
        let results = Locked<[[Int]]>([])
        let errors = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do {
                let applied = try PostgresKeyStore.migrate(connectionString: cs)
                results.withLock { $0.append(applied) }
            } catch {
                errors.withLock { $0.append("\(error)") }
            }
        }
        #expect(errors.withLock { $0 }.isEmpty)
        #expect(results.withLock { $0 }.flatMap { $0 }.sorted() == Array(1...RegistrySchema.currentVersion))
        #expect(try server.psql(cs, "SELECT count(*) FROM pushseal_schema_version").trimmingCharacters(in: .whitespacesAndNewlines) == "\(RegistrySchema.currentVersion)")
    }

    @Test func wrongKEKIsRefusedNeverGarbage() throws {
        let kek = KeyEncryptionKey.generate()
        let (store, cs) = try Registry.store(kek: kek)
        let alice = try store.generate(appID: Self.app, recipient: "alice", now: Self.now)
        let bob = try store.generate(appID: Self.app, recipient: "bob", now: Self.now)
        expectRegistryError(.wrongKEK) { try PostgresKeyStore(connectionString: cs, kek: .generate()) }
        // Without a KEK, metadata reads work and key bytes are refused.
        let bare = try PostgresKeyStore(connectionString: cs, kek: nil)
        #expect(try bare.keysets().count == 2)
        expectRegistryError(.kekRequired) { try bare.sealingPrimary(appID: Self.app, recipient: "alice") }
        // A wrapped key moved to another keyset does not open there (the AAD binds app id, recipient, key id).
        let server = try PostgresServer.sharedServer()
        try server.psql(cs, "UPDATE pushseal_keys SET wrapped_key = (SELECT wrapped_key FROM pushseal_keys WHERE recipient = 'alice') WHERE recipient = 'bob'")
        expectRegistryError(.wrongKEK) { try store.sealingPrimary(appID: Self.app, recipient: "bob") }
        #expect(try store.sealingPrimary(appID: Self.app, recipient: "alice").keyID == alice.keyID)
        #expect(bob.keyID != alice.keyID)
    }

    @Test func kekFilesAreCheckedLikeKeychainFiles() throws {
        let path = try Registry.kekFile()
        _ = try KeyEncryptionKey(file: path)
        chmod(path, 0o644)
        expectRegistryError(.kekFile) { try KeyEncryptionKey(file: path) }
        chmod(path, 0o600)
        let link = path + ".link"
        symlink(path, link)
        expectRegistryError(.kekFile) { try KeyEncryptionKey(file: link) }
        let short = path + ".short"
        _ = FileManager.default.createFile(atPath: short, contents: Data("abcd\n".utf8), attributes: [.posixPermissions: 0o600])
        expectRegistryError(.kekFile) { try KeyEncryptionKey(file: short) }
        expectRegistryError(.kekFile) { try KeyEncryptionKey(file: path + ".missing") }
        let raw = path + ".raw"
        _ = FileManager.default.createFile(atPath: raw, contents: Data(SecureRandom.bytes(32)), attributes: [.posixPermissions: 0o600])
        _ = try KeyEncryptionKey(file: raw)
    }

    @Test func aDumpHoldsNoKeyBytesInClear() throws {
        let (store, cs) = try Registry.store()
        var keys: [[UInt8]] = []
        for r in ["alice", "bob", "carol"] {
            try store.generate(appID: Self.app, recipient: r, now: Self.now)
            _ = try store.rotate(appID: Self.app, recipient: r, graceSeconds: 100, device: nil, promote: true, now: Self.now, afterStep: { _ in })
            for k in try store.exportRecord(appID: Self.app, recipient: r, keyID: nil).keysWithBytes { if let b = k.key { keys.append(b.copyBytes()) } }
        }
        #expect(keys.count == 6)
        let server = try PostgresServer.sharedServer()
        let dump = try server.run("pg_dump", ["-d", cs, "--inserts"], asServerUser: false)
        #expect(dump.contains("pushseal_keys") && dump.contains("'\\x"))
        let text = dump.lowercased()
        for k in keys {
            let hex = k.map { String(format: "%02x", $0) }.joined()
            #expect(!text.contains(hex))
            #expect(!dump.contains(Data(k).base64EncodedString()))
            #expect(!text.contains(String(hex.prefix(16))), "no 8-byte run of a key either")
        }
    }

    @Test func rewrapMovesEveryKeyToTheNewKEK() throws {
        let old = KeyEncryptionKey.generate(), new = KeyEncryptionKey.generate()
        let (store, cs) = try Registry.store(kek: old)
        try store.generate(appID: Self.app, recipient: "alice", now: Self.now)
        _ = try store.rotate(appID: Self.app, recipient: "alice", graceSeconds: 100, device: nil, promote: true, now: Self.now, afterStep: { _ in })
        let before = try store.exportRecord(appID: Self.app, recipient: "alice", keyID: nil).keysWithBytes.map { $0.key?.copyBytes() }
        #expect(try store.rewrap(to: new) == 2)
        expectRegistryError(.wrongKEK) { try PostgresKeyStore(connectionString: cs, kek: old) }
        let reopened = try PostgresKeyStore(connectionString: cs, kek: new)
        #expect(try reopened.exportRecord(appID: Self.app, recipient: "alice", keyID: nil).keysWithBytes.map { $0.key?.copyBytes() } == before)
        #expect(try reopened.auditLines().last?.contains("\"event\":\"rewrap\"") == true)
    }

    @Test func keysetsMoveBetweenAKeychainAndTheRegistryWithTheirCounters() throws {
        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-reg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: root) }
        try Keychain.create(at: root.appendingPathComponent("a"))
        let file = try KeyStore(keychain: try Keychain(opening: root.appendingPathComponent("a"), as: KeyStore.serverIdentity))
        let k = try file.generate(appID: Self.app, recipient: "alice", now: Self.now)
        _ = try file.reserveSeals(appID: Self.app, recipient: "alice", keyID: k.keyID, count: 5000)
        _ = try file.rotate(appID: Self.app, recipient: "alice", graceSeconds: 100, device: nil, promote: false, now: Self.now, afterStep: { _ in })
        let (store, _) = try Registry.store()
        for ks in try file.keysets() { #expect(try store.copyIn(try #require(try file.state(appID: ks.appID, recipient: ks.recipient)), now: Self.now)) }
        #expect(try store.keysets().map { $0.keys } == file.keysets().map { $0.keys })
        #expect(try store.keyset(appID: Self.app, recipient: "alice").rotationKeyID == file.keyset(appID: Self.app, recipient: "alice").rotationKeyID)
        #expect(try store.sealingPrimary(appID: Self.app, recipient: "alice").key == file.sealingPrimary(appID: Self.app, recipient: "alice").key)
        #expect(try !store.copyIn(try #require(try file.state(appID: Self.app, recipient: "alice")), now: Self.now), "idempotent")
        // And back into a new keychain.
        try Keychain.create(at: root.appendingPathComponent("b"))
        let back = try KeyStore(keychain: try Keychain(opening: root.appendingPathComponent("b"), as: KeyStore.serverIdentity))
        for s in try store.loadAllStatesWithKeyBytes() { try back.copyIn(s, now: Self.now) }
        #expect(try back.keysets() == file.keysets())
        #expect(try back.key(appID: Self.app, recipient: "alice", keyID: k.keyID).sealCount == 5000)
    }

    @Test func auditLinesMatchTheKeychainsButForTheLocation() throws {
        let (store, _) = try Registry.store()
        let k = try store.generate(appID: Self.app, recipient: "alice", now: Self.now)
        _ = try store.reserveSeals(appID: Self.app, recipient: "alice", keyID: k.keyID, count: 7)
        let lines = try store.auditLines()
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("{\"time\":\(Self.now),\"event\":\"generate\",\"registry\":\"postgresql database "))
        #expect(lines[0].hasSuffix(",\"appId\":\"com.example.app\",\"recipient\":\"alice\",\"keyId\":\"\(k.keyID)\",\"status\":\"primary\"}"))
        #expect(lines[1].contains("\"event\":\"reserveSeals\"") && lines[1].hasSuffix("\"keyId\":\"\(k.keyID)\",\"sealCount\":7}"))
        for l in lines { #expect((try? JSONSerialization.jsonObject(with: Data(l.utf8))) != nil, "\(l)") }
    }
}
