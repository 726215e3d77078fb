import Testing
import PushSealCrypto

/// `X25519.PrivateKeyCache`: one import per key id and bytes, a replaced key imported afresh,
/// a bounded number of keys, and keys that still derive the right shared secrets.
@Suite struct X25519PrivateKeyCacheTests {
    static func raw(_ fill: UInt8) -> SecretBytes { SecretBytes(copying: [UInt8](repeating: fill, count: 32)) }

    @Test func theSameBytesUnderTheSameIDGiveTheCachedImport() throws {
        let cache = X25519.PrivateKeyCache()
        let first = try cache.privateKey(for: "dev-1", rawRepresentation: Self.raw(7))
        let again = try cache.privateKey(for: "dev-1", rawRepresentation: Self.raw(7))
        #expect(first === again)
        #expect(cache.count == 1)
        // The cached key is the key those bytes make: same public key, same shared secret.
        let direct = try X25519.PrivateKey(rawRepresentation: Self.raw(7))
        #expect(again.publicKey == direct.publicKey)
        let peer = try X25519.PrivateKey()
        #expect(try again.sharedSecret(with: peer.publicKey) == (try peer.sharedSecret(with: direct.publicKey)))
    }

    /// A key replaced under its key id (a restore, a new device key with a reused id) is
    /// imported again and replaces the entry; never the old key for the new bytes.
    @Test func newBytesUnderAKnownIDAreImportedAfresh() throws {
        let cache = X25519.PrivateKeyCache()
        let old = try cache.privateKey(for: "dev-1", rawRepresentation: Self.raw(1))
        let new = try cache.privateKey(for: "dev-1", rawRepresentation: Self.raw(2))
        #expect(old !== new)
        #expect(new.publicKey == (try X25519.PrivateKey(rawRepresentation: Self.raw(2))).publicKey)
        #expect(old.publicKey != new.publicKey)
        #expect(cache.count == 1)
        // The same bytes under another key id are a separate entry.
        let other = try cache.privateKey(for: "dev-2", rawRepresentation: Self.raw(2))
        #expect(other !== new)
        #expect(cache.count == 2)
    }

    @Test func atMostCapacityKeysAreHeldLeastRecentlyUsedFirstOut() throws {
        let cache = X25519.PrivateKeyCache(capacity: 2)
        let a = try cache.privateKey(for: "a", rawRepresentation: Self.raw(1))
        _ = try cache.privateKey(for: "b", rawRepresentation: Self.raw(2))
        #expect(try cache.privateKey(for: "a", rawRepresentation: Self.raw(1)) === a)  // a is now the most recent
        _ = try cache.privateKey(for: "c", rawRepresentation: Self.raw(3))                // drops b
        #expect(cache.count == 2)
        #expect(try cache.privateKey(for: "a", rawRepresentation: Self.raw(1)) === a)
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(try cache.privateKey(for: "a", rawRepresentation: Self.raw(1)) !== a)
        #expect(X25519.PrivateKeyCache(capacity: 0).capacity == 1)
    }

    @Test func aWrongSizeIsRefusedAndNotCached() throws {
        let cache = X25519.PrivateKeyCache()
        #expect(throws: CryptoError(.invalidKeySize, "")) {
            try cache.privateKey(for: "dev-1", rawRepresentation: SecretBytes(copying: [1, 2, 3]))
        }
        #expect(cache.count == 0)
    }
}
