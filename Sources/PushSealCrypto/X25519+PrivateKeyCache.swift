import PushSealSystem

extension X25519 {
    /// Imported X25519 private keys by key id, so that opening many messages with one device key
    /// imports it once.
    ///
    /// Importing a raw private key (`EVP_PKEY_new_raw_private_key`) derives its public key: one
    /// fixed-base scalar multiplication, about as costly as the DH of an open, and HPKE needs
    /// that public key (`pkR` of the KEM context, RFC 9180 §4.1). A v2 open that imported the
    /// device key every time cost about two DHs instead of one (issue 13 "Performance").
    ///
    /// A lookup hands over the raw bytes the key provider returned for the key id; an entry is
    /// used only when its bytes are equal (constant time, `sodium_memcmp`), so a replaced or
    /// rotated key under the same id is imported afresh and replaces the entry. At most
    /// ``capacity`` keys are held (least recently used dropped first). Entries hold the key's
    /// ``PrivateKey``: its raw bytes in ``SecretBytes`` (zeroed when released) and its
    /// `EVP_PKEY` (cleansed by OpenSSL when freed); ``removeAll()`` or releasing the cache
    /// releases them. Hold a cache only as long as the keys may be used (the extension's
    /// opener: the extension process).
    ///
    /// Sendable: the entries are only reached through a ``Locked`` (PushSealSystem).
    public final class PrivateKeyCache: Sendable {
        /// The default ``capacity``: 8 keys (an app's device key during a rotation is 2).
        public static let defaultCapacity = 8

        /// The most keys held at once, at least 1.
        public let capacity: Int
        private let entries = Locked<[(keyID: String, key: PrivateKey)]>([])

        /// An empty cache holding at most `capacity` keys (values below 1 count as 1).
        public init(capacity: Int = PrivateKeyCache.defaultCapacity) { self.capacity = max(1, capacity) }

        /// The private key for `keyID` whose raw bytes are `rawRepresentation`: the cached
        /// import when its bytes are equal, else a fresh import (which replaces any entry of
        /// that key id).
        /// - Parameters:
        ///   - keyID: the key id the bytes were looked up by (any string; only compared).
        ///   - rawRepresentation: the 32 raw private-key bytes.
        /// - Throws: as ``PrivateKey/init(rawRepresentation:)``: `CryptoError` `.invalidKeySize`,
        ///   `.internalFailure`.
        public func privateKey(for keyID: String, rawRepresentation: SecretBytes) throws -> PrivateKey {
            let cached = entries.withLock { e -> PrivateKey? in
                guard let i = e.firstIndex(where: { $0.keyID == keyID }), e[i].key.rawRepresentation == rawRepresentation else { return nil }
                let entry = e.remove(at: i)
                e.append(entry)
                return entry.key
            }
            if let cached { return cached }
            let key = try PrivateKey(rawRepresentation: rawRepresentation)
            entries.withLock { e in
                e.removeAll { $0.keyID == keyID }
                e.append((keyID, key))
                if e.count > capacity { e.removeFirst(e.count - capacity) }
            }
            return key
        }

        /// How many keys are held now.
        public var count: Int { entries.withLock { $0.count } }

        /// Releases every held key (their bytes are zeroed as they are released).
        public func removeAll() { entries.withLock { $0.removeAll() } }
    }
}
