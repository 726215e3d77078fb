import PushSealSystem

extension X25519 {
    /// Imported X25519 public keys by key id, so that sealing many messages to one registration
    /// imports its key (`EVP_PKEY_new_raw_public_key`, a few microseconds) once.
    ///
    /// A lookup hands over the raw bytes the key provider returned for the key id; an entry is
    /// used only when its bytes are equal, so a replaced registration under the same key id is
    /// imported afresh and replaces the entry. At most ``capacity`` keys are held (least
    /// recently used dropped first, an ``LRUTable``). Public data only.
    ///
    /// Sendable: the table is only reached through a `Locked` (PushSealSystem).
    public final class PublicKeyCache: Sendable {
        /// The default ``capacity``: 1,024 keys.
        public static let defaultCapacity = 1024

        /// The most keys held at once, at least 1.
        public let capacity: Int
        private let table: Locked<LRUTable<String, PublicKey>>

        /// An empty cache of at most `capacity` keys (values below 1 count as 1).
        public init(capacity: Int = PublicKeyCache.defaultCapacity) {
            self.capacity = max(1, capacity)
            table = Locked(LRUTable(capacity: capacity))
        }

        /// The public key for `keyID` whose raw bytes are `rawBytes`: the cached import when its
        /// bytes are equal, else a fresh import (which replaces any entry of that key id).
        /// - Parameters:
        ///   - keyID: the key id the bytes were looked up by (any string; only compared).
        ///   - rawBytes: the 32 raw public-key bytes.
        /// - Throws: as ``PublicKey/init(rawBytes:)``: `CryptoError` `.invalidPublicKey`, `.internalFailure`.
        public func publicKey(for keyID: String, rawBytes: UnsafeRawBufferPointer) throws -> PublicKey {
            let cached = table.withLock { $0.value(for: keyID) }
            if let cached, cached.rawRepresentation.withUnsafeBytes({ ConstantTime.equals($0, rawBytes) }) { return cached }
            let key = try PublicKey(rawBytes: rawBytes)
            table.withLock { $0.set(key, for: keyID) }
            return key
        }

        /// How many keys are held now.
        public var count: Int { table.withLock { $0.count } }

        /// Drops the key of `keyID`, if held.
        public func remove(keyID: String) { table.withLock { $0.removeAll { id, _ in id == keyID } } }

        /// Drops every key.
        public func removeAll() { table.withLock { $0.removeAll() } }
    }
}
