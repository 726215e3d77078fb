public import PushSealCrypto
public import PushSealWire
import PushSealKeyRecords
public import PushSealServerKeys
import PushSealSystem

/// Which wire format a sender seals for a recipient.
public enum SealFormatPolicy: String, Sendable, CaseIterable {
    /// Version 2 for a recipient with a v2 registration, else version 1 (its keyset). A
    /// recipient with both gets version 2.
    case automatic
    /// Version 1 only (a symmetric keyset); a recipient with only a registration is refused.
    case v1
    /// Version 2 only (a registration); a recipient with only a keyset is refused.
    case v2
}

/// The sealing key provider of a sender that seals both versions (FORMAT.md §V.7 step 3): for
/// each recipient, the current v2 registration (its public key, `enc_alg`
/// `HPKE-AUTH-X25519-A256GCM` when the app has a sender key, else `HPKE-BASE-X25519-A256GCM`)
/// or the v1 primary key through ``KeychainSealingKeys`` (counted against its seal limit), as
/// ``SealFormatPolicy`` says. Pass ``registry`` to the sealer: it holds the v2 entries (and the
/// sender private key) the returned `SealingKey.algorithm` names.
///
/// **Caching.** A recipient's registration is cached with the store's watch of it
/// (``RegistrationStore/watchRegistrations(appID:recipient:)``, two `lstat` calls for the file
/// keychain): every seal checks the watch, or in a batch (after ``beginBatch()``) the first seal
/// of the recipient in each chunk does; a registration cached for 1 s is read again anyway. So a
/// new registration or a revocation by another process is seen as a v1 rotation is (see
/// ``ServerKeyring``). The sender key is read once, when the provider is made: `push-seal batch`
/// looks for a new primary sender key once a second and makes a new provider when it changed
/// (a promotion or rotation is followed without a restart; issue 24).
/// A store that says the app has no registrations at all
/// (``RegistrationStore/mayHaveRegistrations(appID:)``, one query on the registry) is not asked
/// per recipient until it says otherwise (asked when made and at each batch chunk).
///
/// **Key caches.** ``registry``'s v2 entries keep each registration's imported public key and,
/// in auth mode, its `HPKE.AuthPair` (the static-static DH with the sender key) by key id,
/// checked against the key bytes at every seal (SECURITY.md "Version 2 key caches"). When a
/// recipient's registration is read again and is no longer the one cached (replaced, revoked,
/// gone), the entries of the former key id are dropped (and the pair's secret zeroed) here;
/// the sender key, read once, lives as long as the provider, and so does ``pairCache``.
///
/// Sendable (checked by hand): the cache and chunk counter are guarded by `lock`; everything
/// else is immutable.
public final class RegistrationSealingKeys: SealingKeyProvider, @unchecked Sendable {
    /// The v1 keysets of the same store.
    public let v1: KeychainSealingKeys
    /// The v2 side of the store, or `nil` when it holds none (a v1-only store: version 1 only).
    public let registrations: (any RegistrationStore)?
    /// The policy.
    public let policy: SealFormatPolicy
    /// The app whose sender key seals in auth mode.
    public let appID: String
    /// The sender key id of auth mode, or `nil` (base mode).
    public let senderKeyID: String?
    /// ``EnvelopeRegistry/standard`` plus both v2 entries, configured with the sender key.
    public let registry: EnvelopeRegistry
    /// The auth entry's static-static DH per registration (`HPKE.AuthPairCache`).
    public let pairCache = HPKE.AuthPairCache()
    /// The base entry's imported registration keys.
    let publicKeyCache = X25519.PublicKeyCache()

    private struct Slot: Hashable {
        var appID: String
        var recipient: String
    }

    private struct Entry {
        var watch: (any KeysetWatch)?
        var readAt: UInt64
        var chunk: UInt64
        /// The registration's key id and 32-byte public key; `nil`: none (version 1).
        var key: (keyID: String, publicKey: SecretBytes)?
    }

    private let lock = PosixLock()
    private var cache: [Slot: Entry] = [:]
    private var chunk: UInt64 = 0
    /// The store's ``RegistrationStore/mayHaveRegistrations(appID:)`` for this provider's app,
    /// asked when made and at each batch chunk (guarded by `lock`).
    private var appMayHaveRegistrations = true
    /// A cached registration is read again after this long: 1 s, in nanoseconds.
    static let revalidationNanoseconds: UInt64 = 1_000_000_000

    /// Seals from `store` for `appID` as `policy` says, with the app's sender key when it has one.
    /// - Throws: ``SealingKeyError`` `.keyStoreUnreadable` (`--format v2` on a store without
    ///   registrations, a damaged sender key item) and the codes of the store's failures.
    public convenience init(store: any ServerKeyStore, appID: String, policy: SealFormatPolicy = .automatic) throws {
        try self.init(keys: KeychainSealingKeys(store: store), appID: appID, policy: policy)
    }

    /// Seals version 1 with `keys` and version 2 from the same store (`keys.keyring.store`).
    /// - Throws: as ``init(store:appID:policy:)``.
    public init(keys: KeychainSealingKeys, appID: String, policy: SealFormatPolicy = .automatic) throws {
        v1 = keys
        let store = keys.keyring.store
        registrations = store as? any RegistrationStore
        self.policy = policy
        self.appID = appID
        if policy == .v2, registrations == nil {
            throw SealingKeyError(.keyStoreUnreadable, "\(store.storeDescription) holds no v2 registrations: version 2 seals from a file keychain")
        }
        var sender: (keyID: String, key: X25519.PrivateKey)?
        if policy != .v1, let registrations {
            do {
                sender = try registrations.sealingSenderKey(appID: appID)
            } catch {
                throw KeychainSealingKeys.sealingKeyError(error, appID: appID, recipient: nil)
            }
        }
        senderKeyID = sender?.keyID
        appMayHaveRegistrations = (try? registrations?.mayHaveRegistrations(appID: appID)) ?? true
        do {
            registry = try EnvelopeRegistry.standard.addingV2(sealingWithSenderKey: sender?.key, senderKeyID: sender?.keyID,
                                                              pairCache: pairCache, publicKeyCache: publicKeyCache)
        } catch {
            throw SealingKeyError(.keyStoreUnreadable, "the sender key of \(appID) cannot seal: \(error)")
        }
    }

    /// The `enc_alg` version 2 seals with for `appID`: auth mode for this provider's app when it
    /// has a sender key, else base mode.
    public func v2Algorithm(appID: String) -> String {
        senderKeyID != nil && appID == self.appID ? HPKEAuthEnvelope.algorithmName : HPKEBaseEnvelope.algorithmName
    }

    /// Starts a batch chunk (for both versions).
    public func beginBatch() {
        v1.beginBatch()
        noteChunk(mayHaveRegistrations: (try? registrations?.mayHaveRegistrations(appID: appID)) ?? true)
    }

    /// Whether a chunk's v1 keys load in bulk (``KeychainSealingKeys/loadsBatchRecipientsInBulk``:
    /// the registry, the file keychain), unless the policy is version 2 only.
    public var loadsBatchRecipientsInBulk: Bool { policy != .v2 && v1.loadsBatchRecipientsInBulk }

    /// Starts a batch chunk naming `recipients` and loads the v1 keys of those that seal v1 in
    /// bulk (their seal blocks reserved together: ``ServerKeyring/beginBatchChunk(appID:recipients:)``):
    /// every recipient when the policy is version 1 or the app has no registration at all;
    /// otherwise the recipients' registrations are read in bulk first
    /// (``RegistrationStore/batchRegistrations(appID:recipients:)``: one query per chunk on the
    /// registry) and cached for the chunk, and only those without one load their v1 key, so a
    /// recipient sealed with v2 reserves no v1 seals and no seal of the chunk makes a round trip.
    public func beginBatch(appID: String, recipients: [String]) {
        let may = (try? registrations?.mayHaveRegistrations(appID: self.appID)) ?? true
        noteChunk(mayHaveRegistrations: may)
        if policy != .v1, may || appID != self.appID { prefill(appID: appID, recipients: recipients) }
        guard policy != .v2 else { return v1.beginBatch() }
        func sealsV1(_ r: String) -> Bool {
            do { return try registration(appID: appID, recipient: r) == nil } catch { return false }
        }
        v1.beginBatch(appID: appID, recipients: policy == .v1 || !may ? recipients : recipients.filter(sealsV1))
    }

    /// Caches the chunk's registrations read in bulk: a recipient with a current registration
    /// gets it, one without registrations (a valid name the store left out) gets "none", both
    /// for this chunk; a recipient whose current one was revoked, or that the store could not
    /// read, is left to its seal's own lookup (which reports the error). A failed bulk read
    /// caches nothing (every seal then looks its recipient up alone, as before).
    private func prefill(appID: String, recipients: [String]) {
        guard let registrations, let found = try? registrations.batchRegistrations(appID: appID, recipients: recipients) else { return }
        let now = monotonicNanoseconds()
        var formers: [String] = []
        lock.lock()
        let current = chunk
        for r in recipients {
            let key: (keyID: String, publicKey: SecretBytes)?
            let watch: (any KeysetWatch)?
            if let b = found[r] {
                guard let reg = b.current else { continue }
                key = (reg.keyID, SecretBytes(copying: reg.publicKey.rawRepresentation))
                watch = b.watch
            } else {
                guard (try? KeyID.validateRecipient(r)) != nil else { continue }
                key = nil
                watch = nil
            }
            let former = cache.updateValue(Entry(watch: watch, readAt: now, chunk: current, key: key), forKey: Slot(appID: appID, recipient: r))?.key
            if let former, !(key.map { $0.keyID == former.keyID && $0.publicKey == former.publicKey } ?? false) { formers.append(former.keyID) }
        }
        lock.unlock()
        // A former registration no longer sealed to: its cached key and pair go.
        for keyID in formers { forget(keyID) }
    }

    private func noteChunk(mayHaveRegistrations may: Bool) {
        lock.lock()
        chunk &+= 1
        appMayHaveRegistrations = may
        lock.unlock()
    }

    /// The key to seal one notification for (`appID`, `recipient`) with, as the policy says.
    /// - Throws: ``SealingKeyError`` `.unknownRecipient` (neither a registration nor a keyset;
    ///   or only the one the policy does not seal with, said so), `.keyUnavailable` (the current
    ///   registration or v1 primary was revoked), and ``KeychainSealingKeys/primaryKey(appID:recipient:)``'s.
    public func primaryKey(appID: String, recipient: String) throws -> SealingKey {
        if policy == .v1 {
            do {
                return try v1.primaryKey(appID: appID, recipient: recipient)
            } catch let e as SealingKeyError where e.code == .unknownRecipient {
                if (try? registration(appID: appID, recipient: recipient)) != nil {
                    throw SealingKeyError(.unknownRecipient, "recipient \(recipient) of \(appID) has a v2 registration and no v1 keyset: --format v1 cannot seal for it (seal v2: drop --format v1)")
                }
                throw e
            }
        }
        let found: (keyID: String, publicKey: SecretBytes)?
        do {
            found = try registration(appID: appID, recipient: recipient)
        } catch let e as KeysError where e.code == .noPrimaryKey {
            throw SealingKeyError(.keyUnavailable, e.reason)
        } catch {
            throw KeychainSealingKeys.sealingKeyError(error, appID: appID, recipient: recipient)
        }
        if let found {
            return SealingKey(keyID: found.keyID, key: found.publicKey, algorithm: v2Algorithm(appID: appID))
        }
        guard policy == .automatic else {
            let hasKeyset = (try? v1.keyring.store.keyset(appID: appID, recipient: recipient)) != nil
            throw SealingKeyError(.unknownRecipient, "recipient \(recipient) of \(appID) has no v2 registration"
                + (hasKeyset ? " (it has a v1 keyset: seal v1, drop --format v2)" : ": the app registers its key (push-keys register)"))
        }
        do {
            return try v1.primaryKey(appID: appID, recipient: recipient)
        } catch let e as SealingKeyError where e.code == .unknownRecipient && registrations != nil {
            throw SealingKeyError(.unknownRecipient, e.reason + " (and no v2 registration)")
        }
    }

    /// The current registration of (`appID`, `recipient`) from the cache or the store; `nil`
    /// when there is none.
    /// - Throws: `KeysError` `.noPrimaryKey` (the current one was revoked); the store's errors.
    private func registration(appID: String, recipient: String) throws -> (keyID: String, publicKey: SecretBytes)? {
        guard let registrations else { return nil }
        let slot = Slot(appID: appID, recipient: recipient)
        let now = monotonicNanoseconds()
        lock.lock()
        let current = chunk
        let cached = cache[slot]
        let may = appMayHaveRegistrations || appID != self.appID
        lock.unlock()
        guard may else { return nil }
        if let e = cached, now &- e.readAt < Self.revalidationNanoseconds {
            if current != 0, e.chunk == current { return e.key }
            if try e.watch?.isCurrent() ?? (try registrations.watchRegistrations(appID: appID, recipient: recipient) == nil) {
                lock.lock()
                cache[slot]?.chunk = current
                lock.unlock()
                return e.key
            }
        }
        let watch = try registrations.watchRegistrations(appID: appID, recipient: recipient)
        var key: (keyID: String, publicKey: SecretBytes)?
        if watch != nil {
            do {
                let r = try registrations.sealingRegistration(appID: appID, recipient: recipient)
                key = (r.keyID, SecretBytes(copying: r.publicKey.rawRepresentation))
            } catch let e as KeysError where e.code == .unknownRegistration {
                key = nil
            } catch {
                // Revoked (`.noPrimaryKey`) or unreadable now: nothing is sealed to the cached one.
                if let former = cached?.key { forget(former.keyID) }
                throw error
            }
        }
        lock.lock()
        let former = cache.updateValue(Entry(watch: watch, readAt: now, chunk: current, key: key), forKey: slot)?.key
        lock.unlock()
        // The former registration is no longer the one sealed to: its cached key and pair go.
        if let former, !(key.map { $0.keyID == former.keyID && $0.publicKey == former.publicKey } ?? false) { forget(former.keyID) }
        return key
    }

    /// Drops the v2 entries' cached key and auth pair of the registration `keyID`.
    private func forget(_ keyID: String) {
        pairCache.removeAll(recipientKeyID: keyID)
        publicKeyCache.remove(keyID: keyID)
    }
}
