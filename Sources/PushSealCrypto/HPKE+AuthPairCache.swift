import PushSealSystem

extension HPKE {
    /// ``AuthPair``s by (sender key id, recipient key id), so that the static-static DH of the
    /// auth modes is computed once per pair of keys instead of at every message: on a server, per
    /// (sender key, registration); on a device, per (pinned sender key, device key).
    ///
    /// An entry is used only when both public keys it was made for equal the ones of the
    /// lookup (the sender's and the recipient's 32 raw bytes); otherwise — the sender key
    /// rotated, a new registration or device key under the same key id — the pair is made
    /// afresh and replaces the entry (the old one is released, and its secret zeroed). So a
    /// lookup is never served a secret of other keys, whatever the key ids say.
    ///
    /// Bounded: at most ``capacity`` pairs, the least recently used dropped first (an
    /// ``LRUTable``). A dropped or removed pair's secret is zeroed when the last user lets go of
    /// it (``SecretBytes``); ``removeAll(recipientKeyID:)``, ``removeAll(senderKeyID:)`` and
    /// ``removeAll()`` drop entries when their keys are retired, and releasing the cache releases
    /// them all. Hold a cache only as long as its sender key (server) or device keys (app) may
    /// be used.
    ///
    /// Sendable: the table is only reached through a `Locked` (PushSealSystem); a pair is made
    /// outside the lock (one X25519 operation), so two threads missing the same entry at once
    /// both compute it and the second replaces the first (the same bytes).
    public final class AuthPairCache: Sendable {
        /// The default ``capacity``: 1,024 pairs (about 0.5 MiB: two OpenSSL key objects and 32
        /// secret bytes each).
        public static let defaultCapacity = 1024

        /// The most pairs held at once, at least 1.
        public let capacity: Int

        struct Slot: Hashable, Sendable {
            let senderKeyID: String
            let recipientKeyID: String
        }

        private let table: Locked<LRUTable<Slot, AuthPair>>

        /// An empty cache of at most `capacity` pairs (values below 1 count as 1).
        public init(capacity: Int = AuthPairCache.defaultCapacity) {
            self.capacity = max(1, capacity)
            table = Locked(LRUTable(capacity: capacity))
        }

        /// The sender side: the pair of `sender` and the recipient public key `recipientPublicKey`,
        /// from the cache when it holds one for these ids made for these very keys, else made
        /// (DH(skS, pkR)) and kept.
        /// - Parameters:
        ///   - sender: the sender's static private key.
        ///   - senderKeyID: its key id (any string; only compared).
        ///   - recipientPublicKey: the recipient's 32 raw public-key bytes (a registration).
        ///   - recipientKeyID: the registration's key id (any string; only compared).
        /// - Throws: `CryptoError` `.invalidPublicKey` (not 32 bytes), `.zeroSharedSecret` (a
        ///   low-order recipient key), `.internalFailure`.
        public func pair(sender: X25519.PrivateKey, senderKeyID: String, recipientPublicKey: UnsafeRawBufferPointer,
                         recipientKeyID: String) throws -> AuthPair {
            let slot = Slot(senderKeyID: senderKeyID, recipientKeyID: recipientKeyID)
            let senderRaw = sender.publicKey.rawRepresentation
            let cached = table.withLock { $0.value(for: slot) }
            if let cached, Self.equal(cached.senderPublicKey, senderRaw), Self.equal(cached.recipientPublicKey, recipientPublicKey) {
                return cached
            }
            let made = try AuthPair(sender: sender, recipient: X25519.PublicKey(rawBytes: recipientPublicKey))
            table.withLock { $0.set(made, for: slot) }
            return made
        }

        /// The recipient side: the pair of `recipient` and the sender public key `sender`, from
        /// the cache when it holds one for these ids made for these very keys, else made
        /// (DH(skR, pkS)) and kept.
        /// - Parameters:
        ///   - recipient: the recipient's private key (a device key).
        ///   - recipientKeyID: its key id (any string; only compared).
        ///   - sender: the sender's public key (a pinned sender key).
        ///   - senderKeyID: its key id (any string; only compared).
        /// - Throws: `CryptoError` `.zeroSharedSecret` (a low-order sender key), `.internalFailure`.
        public func pair(recipient: X25519.PrivateKey, recipientKeyID: String, sender: X25519.PublicKey,
                         senderKeyID: String) throws -> AuthPair {
            let slot = Slot(senderKeyID: senderKeyID, recipientKeyID: recipientKeyID)
            let cached = table.withLock { $0.value(for: slot) }
            if let cached, cached.senderPublicKey == sender, cached.recipientPublicKey == recipient.publicKey {
                return cached
            }
            let made = try AuthPair(recipient: recipient, sender: sender)
            table.withLock { $0.set(made, for: slot) }
            return made
        }

        /// How many pairs are held now.
        public var count: Int { table.withLock { $0.count } }

        /// Drops every pair of the recipient key `recipientKeyID` (a registration replaced or
        /// revoked, a device key pruned).
        public func removeAll(recipientKeyID: String) {
            table.withLock { $0.removeAll { slot, _ in slot.recipientKeyID == recipientKeyID } }
        }

        /// Drops every pair of the sender key `senderKeyID` (a sender key retired or unpinned).
        public func removeAll(senderKeyID: String) {
            table.withLock { $0.removeAll { slot, _ in slot.senderKeyID == senderKeyID } }
        }

        /// Drops every pair whose sender key id is not in `senderKeyIDs` (the keys still pinned).
        public func retainOnly(senderKeyIDs: [String]) {
            table.withLock { $0.removeAll { slot, _ in !senderKeyIDs.contains(slot.senderKeyID) } }
        }

        /// Drops every pair.
        public func removeAll() { table.withLock { $0.removeAll() } }

        private static func equal(_ key: X25519.PublicKey, _ raw: [UInt8]) -> Bool { key.rawRepresentation == raw }

        private static func equal(_ key: X25519.PublicKey, _ raw: UnsafeRawBufferPointer) -> Bool {
            key.rawRepresentation.withUnsafeBytes { ConstantTime.equals($0, raw) }
        }
    }
}
