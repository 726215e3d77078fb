import Foundation
import PushSealCrypto
import PushSealKeychain
import PushSealKeyRecords
import PushSealServerKeys
import PushSealRegistry
import PushSealSystem
import Testing

/// `push-keys registry import` and `export` move everything a server store holds: a file
/// keychain → the registry → a new file keychain compares equal (keysets with counters and
/// rotations, registrations with their history, sender keys with their private halves, device
/// tokens), both directions are idempotent, a counter is never lowered, and a dump of the
/// registry holds no sender private key in clear.
@Suite struct RegistryTransferTests {
    static let app = "com.example.app"
    static let now: Int64 = 1_800_000_000

    /// Everything `store` holds, as comparable lines (key bytes as hex: test keys only).
    static func snapshot(_ store: KeyStore) throws -> [String] {
        var out: [String] = []
        for ks in try store.keysets() {
            let s = try #require(try store.state(appID: ks.appID, recipient: ks.recipient))
            out.append("keyset \(s.appID)/\(s.recipient) rotation \(String(describing: s.rotation))")
            for k in s.keys { out.append("  key \(k.info) \(k.key.map { Hex.encode($0.copyBytes()) } ?? "-")") }
        }
        for r in try store.allRegistrations() { out.append("registrations \(r)") }
        for l in try store.allSenderKeyLists() {
            for e in l.entries {
                out.append("sender \(l.appID) \(e.keyID) \(e.status) \(e.createdAt) \(String(describing: e.retiredAt)) \(String(describing: e.notAfter)) "
                           + "\(Hex.encode(e.publicKey)) \(e.secret.map { Hex.encode($0.copyBytes()) } ?? "-")")
            }
        }
        for t in try store.allDeviceTokens(appID: nil) { out.append("token \(t)") }
        return out
    }

    static func keychain(_ url: URL, create: Bool) throws -> KeyStore {
        if create { try Keychain.create(at: url) }
        return try KeyStore(keychain: try Keychain(opening: url, as: KeyStore.serverIdentity))
    }

    @Test func fileToRegistryToFileKeepsEverything() throws {
        let dir = try TokenCLITests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (app, now) = (Self.app, Self.now)
        let a = try Self.keychain(dir.appendingPathComponent("a"), create: true)
        // v1: alice rotated (two keys, counters), bob with an unfinished rotation, erin revoked.
        try a.generate(appID: app, recipient: "alice", now: now)
        _ = try a.reserveSeals(appID: app, recipient: "alice", keyID: try #require(try a.keyset(appID: app, recipient: "alice").primary).keyID, count: 5_000)
        _ = try a.rotate(appID: app, recipient: "alice", graceSeconds: 600, device: nil, promote: true, now: now + 10) { _ in }
        _ = try a.reserveSeals(appID: app, recipient: "alice", keyID: try #require(try a.keyset(appID: app, recipient: "alice").primary).keyID, count: 77)
        try a.generate(appID: app, recipient: "bob", now: now)
        _ = try a.rotate(appID: app, recipient: "bob", graceSeconds: 600, device: nil, promote: false, now: now + 20) { _ in }
        let erin = try a.generate(appID: app, recipient: "erin", now: now)
        try a.revoke(appID: app, recipient: "erin", keyID: erin.keyID, now: now + 30)
        // v2: alice's registration history, carol with a registration only; the app's sender keys rotated.
        try a.register(try RegistrationStoreContract.registration(now - 100), recipient: "alice", now: now)
        try a.register(try RegistrationStoreContract.registration(now), recipient: "alice", now: now + 40)
        try a.register(try RegistrationStoreContract.registration(now), recipient: "carol", now: now + 50)
        try a.generateSenderKey(appID: app, now: now)
        try a.rotateSenderKey(appID: app, graceSeconds: 3_600, now: now + 60)
        // Tokens: alice in both environments, dave with a token only.
        let t: Int64 = 1_800_000_000_000
        try a.addDeviceToken("a1a1", appID: app, recipient: "alice", environment: .production, registeredAtMs: t)
        try a.addDeviceToken("d1d1", appID: app, recipient: "alice", environment: .development, registeredAtMs: t + 1)
        try a.addDeviceToken("c3c3", appID: app, recipient: "dave", environment: .production, registeredAtMs: t + 2)
        let original = try Self.snapshot(a)
        #expect(original.filter { $0.hasPrefix("sender ") }.count == 2 && original.contains { $0.hasPrefix("token ") })

        let keys = RegistryCLITests.tool("push-keys")
        let cs = try PostgresServer.sharedServer().createDatabase()
        let kek = dir.appendingPathComponent("kek").path
        let env = ["PUSHSEAL_REGISTRY": cs, "PUSHSEAL_KEK_FILE": kek]
        #expect(try RegistryCLITests.run([keys, "registry", "migrate"], env: env).status == 0)
        #expect(try RegistryCLITests.run([keys, "registry", "new-kek", "--out", kek]).status == 0)
        let imported = try RegistryCLITests.run([keys, "registry", "import", "--keychain", dir.appendingPathComponent("a").path, "--batch-size", "2", "--json"], env: env)
        #expect(imported.status == 0, "\(imported.stderr)")
        let j = TokenCLITests.json(imported.stdout)
        #expect(j["recipients"] as? Int == 5 && j["keysets"] as? Int == 3 && (j["senderKeys"] as? [String]) == [app])
        #expect((j["changed"] as? [[String: Any]])?.compactMap { $0["recipient"] as? String } == ["alice", "bob", "carol", "dave", "erin"])
        let again = try RegistryCLITests.run([keys, "registry", "import", "--keychain", dir.appendingPathComponent("a").path], env: env)
        #expect(again.status == 0 && again.stdout.isEmpty, "a second import changes nothing: \(again.stdout)")

        // The registry holds the sender private keys wrapped only: a dump shows none in clear.
        let dump = try PostgresServer.sharedServer().run("pg_dump", ["-d", cs], asServerUser: false)
        for line in original where line.hasPrefix("sender ") {
            let secretHex = try #require(line.split(separator: " ").last.map(String.init))
            #expect(secretHex == "-" || !dump.contains(secretHex))
        }

        let bDir = dir.appendingPathComponent("b")
        let exported = try RegistryCLITests.run([keys, "registry", "export", "--keychain", bDir.path], env: env)
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(exported.stdout == "\(app)\t(sender keys)\n" + ["alice", "bob", "carol", "dave", "erin"].map { "\(app)\t\($0)\n" }.joined())
        let b = try Self.keychain(bDir, create: false)
        #expect(try Self.snapshot(b) == original)
        #expect(try RegistryCLITests.run([keys, "registry", "export", "--keychain", bDir.path], env: env).stdout.isEmpty, "idempotent")

        // Counters are never lowered: seals made on the registry after the import survive
        // importing the old keychain again, and reach the keychain on the next export.
        let registry = try PostgresKeyStore(connectionString: cs, kek: try KeyEncryptionKey(file: kek))
        let primary = try #require(try registry.keyset(appID: app, recipient: "alice").primary)
        let raised = try registry.reserveSeals(appID: app, recipient: "alice", keyID: primary.keyID, count: 1_000).reservedCount
        #expect(try RegistryCLITests.run([keys, "registry", "import", "--keychain", dir.appendingPathComponent("a").path], env: env).stdout.isEmpty)
        #expect(try registry.keyset(appID: app, recipient: "alice").primary?.sealCount == raised)
        #expect(try RegistryCLITests.run([keys, "registry", "export", "--keychain", bDir.path], env: env).stdout == "\(app)\talice\n")
        #expect(try b.keyset(appID: app, recipient: "alice").primary?.sealCount == raised)
        // A newer token in the registry is kept when an older copy comes in again.
        try registry.addDeviceToken("e5e5", appID: app, recipient: "dave", environment: .production, registeredAtMs: t + 100)
        #expect(try RegistryCLITests.run([keys, "registry", "import", "--keychain", dir.appendingPathComponent("a").path], env: env).stdout.isEmpty)
        #expect(try registry.deviceTokens(appID: app, recipient: "dave").map(\.token) == ["e5e5"])
    }

    /// A recipient that cannot be copied (a key id already in the registry with other bytes)
    /// fails its whole batch: nothing of that batch is stored, other batches are.
    @Test func aRecipientIsAllInOrAllOut() throws {
        let dir = try TokenCLITests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (app, now) = (Self.app, Self.now)
        let a = try Self.keychain(dir.appendingPathComponent("a"), create: true)
        let info = try a.generate(appID: app, recipient: "alice", now: now)
        try a.register(try RegistrationStoreContract.registration(now), recipient: "alice", now: now)
        try a.addDeviceToken("a1a1", appID: app, recipient: "alice", environment: .production, registeredAtMs: 1_000)
        let (registry, _) = try Registry.store()
        // The registry already has alice's key id with other bytes.
        let other = try Self.keychain(dir.appendingPathComponent("other"), create: true)
        try other.generate(appID: app, recipient: "alice", now: now)
        var clash = try #require(try other.state(appID: app, recipient: "alice"))
        let clashKey = try #require(clash.keys.first)
        var changedInfo = clashKey.info
        changedInfo.keyID = info.keyID
        clash = KeysetState(appID: app, recipient: "alice", keys: [(changedInfo, clashKey.key)], rotation: nil)
        #expect(try registry.copyIn(clash, now: now))
        let records = try a.recipientRecords()
        #expect(throws: KeysError(.duplicateKeyID, "")) { try registry.bulkCopyIn(records: records, now: now) }
        #expect(try registry.deviceTokens(appID: app, recipient: "alice").isEmpty, "nothing of the recipient went in")
        #expect(try registry.allRegistrations().isEmpty)
    }
}
