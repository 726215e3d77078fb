public import PushSealCrypto
import PushSealJSON
import PushSealWire
public import PushSealKeyRecords

/// A server key store that also holds version 2 (public-key mode, FORMAT.md §V) material: each
/// recipient's device registrations (public keys the app registered) and each app's sender key
/// (an X25519 key pair whose private half is a secret of the store). The refinement of
/// ``ServerKeyStore`` its comments foresee: a v1-only store stays a valid `ServerKeyStore`, and
/// the sender asks `store as? any RegistrationStore` before it seals version 2.
///
/// **Registrations.** Per (app id, recipient), a history of registrations, each with a key id,
/// the public key, the device's `createdAt` and the store's `registeredAt`. The newest
/// (``KeyStatus/primary``) is the one sealed to; registering a newer one supersedes it
/// (``KeyStatus/decryptOnly``, `supersededAt` set: the device may still open what is in flight
/// with the old private key, the server no longer seals to it); a revoked one is
/// ``KeyStatus/disabled``. Imports refuse a malformed record, another app id, a low-order point
/// and a key id the recipient already has with another key; importing the same record again
/// changes nothing.
///
/// **Sender keys.** Per app id, a list of sender keys: the ``KeyStatus/primary`` one seals (auth
/// mode), a rotated-out one stays ``KeyStatus/decryptOnly`` and published until its `notAfter`
/// (payloads in flight, apps that have not pinned the new key yet), then is destroyed (its
/// private key zeroed and removed, a tombstone stays) by the next rotation or prune.
///
/// **Changes** are atomic, serialized and audited like keyset changes (``KeyAudit``): events
/// `register`, `revokeRegistration`, `senderGenerate`, `senderRotate`, `senderPrune`, with
/// `appId`, `recipient` (`-` for an app's sender keys) and key ids, never key bytes.
public protocol RegistrationStore: ServerKeyStore {
    // MARK: Registrations

    /// Imports a registration for `recipient` (an already checked ``DeviceRegistration``).
    /// - Parameters:
    ///   - registration: the registration (its app id names the app).
    ///   - recipient: the app installation the server maps it to (``KeyID/validateRecipient(_:)``).
    ///   - now: Unix seconds (UTC), the registration's `registeredAt` (and the former one's `supersededAt`).
    /// - Returns: the registration as stored, and whether it was stored just now (`false`: the
    ///   same key id and key were already registered).
    /// - Throws: `KeysError` `.duplicateKeyID` (the key id with another key), `.staleRegistration`
    ///   (created before the current one), `.invalidName`, `.timeOutOfRange`; the store's errors.
    @discardableResult
    func register(_ registration: DeviceRegistration, recipient: String, now: Int64) throws -> (info: RegistrationInfo, added: Bool)

    /// ``register(_:recipient:now:)``, recording with the registration the sender key ids the
    /// device reported pinned (`nil`: it did not say; the stored list is kept), in the same
    /// atomic change (audited `register` and, when the list changed, `reportPins`).
    /// Default: the registration without the pins (a store that cannot keep them).
    /// - Throws: as ``register(_:recipient:now:)``; `KeysError` `.invalidName` (a bad pinned key
    ///   id, or more than ``V2KeyList/maxPinnedSenderKeyIDs``).
    @discardableResult
    func register(_ registration: DeviceRegistration, recipient: String, now: Int64, pinnedSenderKeyIDs: [String]?) throws
        -> (info: RegistrationInfo, added: Bool)

    /// The registrations of (app id, recipient), oldest first.
    /// - Throws: `KeysError` `.unknownRegistration`, `.invalidName`, `.corruptKeyset`; the store's errors.
    func registrations(appID: String, recipient: String) throws -> RegistrationSet

    /// Every recipient's registrations, sorted by app id then recipient.
    /// - Throws: `KeysError` `.corruptKeyset`; the store's errors.
    func allRegistrations() throws -> [RegistrationSet]

    /// Revokes one registration: it is never sealed to again. Idempotent. Revoking the current
    /// one leaves the recipient without a v2 key until the app registers again.
    /// - Throws: `KeysError` `.unknownRegistration`, `.unknownKey`, `.invalidName`, `.timeOutOfRange`.
    @discardableResult
    func revokeRegistration(appID: String, recipient: String, keyID: String, now: Int64) throws -> RegistrationInfo

    /// A change watch over the registrations of (app id, recipient), taken before reading them;
    /// `nil` when the recipient has none. Cheap (the file keychain: two `lstat` calls).
    /// - Throws: `KeysError` `.invalidName`; the store's errors.
    func watchRegistrations(appID: String, recipient: String) throws -> (any KeysetWatch)?

    /// A cheap hint for a sender: `false` only when no recipient of `appID` has a registration
    /// (a sender then skips the per-recipient lookups; it asks again at each batch chunk).
    /// Default: `true` (the file keychain's per-recipient watch is two `lstat` calls anyway).
    /// - Throws: the store's errors.
    func mayHaveRegistrations(appID: String) throws -> Bool

    /// The registration state of many recipients of `appID` at once, for a batch chunk: each
    /// recipient that has registrations maps to its watch (taken before they were read) and
    /// its current one (`nil` when the current one was revoked). Recipients without
    /// registrations, with an invalid name, or whose registrations could not be read are left
    /// out (a sender then looks them up alone, and the seal reports its own error).
    /// Default: ``watchRegistrations(appID:recipient:)`` and ``registrations(appID:recipient:)``
    /// per recipient (the file keychain: a few `lstat`/`read` calls each); the registry answers
    /// from one query per 4,096 recipients.
    /// - Throws: `KeysError` `.invalidName` (the app id); the store's errors.
    func batchRegistrations(appID: String, recipients: [String]) throws -> [String: BatchRegistration]

    // MARK: Sender keys

    /// Makes the app's first sender key (primary).
    /// - Throws: `KeysError` `.keysetExists` (the app has one: rotate it), `.invalidName`,
    ///   `.timeOutOfRange`; the store's errors.
    @discardableResult
    func generateSenderKey(appID: String, now: Int64) throws -> SenderKeyInfo

    /// Makes a new primary sender key; the former primary becomes `decryptOnly` until
    /// `now + graceSeconds` (still published), and keys past their `notAfter` are destroyed.
    /// - Throws: `KeysError` `.unknownKeyset` (no sender key yet: generate one), `.invalidName`,
    ///   `.timeOutOfRange`; the store's errors.
    @discardableResult
    func rotateSenderKey(appID: String, graceSeconds: Int64, now: Int64) throws -> SenderKeyInfo

    /// The app's sender keys, oldest first, without private keys (empty when it has none).
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; the store's errors.
    func senderKeys(appID: String) throws -> [SenderKeyInfo]

    /// The app ids that have sender keys, sorted. Default: the app ids of ``allRegistrations()``
    /// (a store that cannot list its sender key lists).
    /// - Throws: the store's errors.
    func senderKeyAppIDs() throws -> [String]

    /// The app's primary sender key with its private half, for sealing in auth mode; `nil`
    /// when the app has none (base mode). Holds a secret: never print it.
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; `CryptoError`; the store's errors.
    func sealingSenderKey(appID: String) throws -> (keyID: String, key: X25519.PrivateKey)?
}

extension RegistrationStore {
    /// The app ids of every registration (see the requirement).
    public func senderKeyAppIDs() throws -> [String] { Array(Set(try allRegistrations().map(\.appID))).sorted() }

    /// The registration without the pins (see the requirement).
    @discardableResult
    public func register(_ registration: DeviceRegistration, recipient: String, now: Int64, pinnedSenderKeyIDs: [String]?) throws
        -> (info: RegistrationInfo, added: Bool) {
        try register(registration, recipient: recipient, now: now)
    }

    /// Active in the last `days` days at `now`: the current registration was registered, or its
    /// device reported a changed pin list, since `now - days × 86,400`.
    public static func isActive(_ r: RegistrationInfo, now: Int64, days: Int64 = 30) -> Bool {
        max(r.registeredAt, r.pinsReportedAt ?? Int64.min) >= now - days * 86_400
    }

    /// `true`: look each recipient up.
    public func mayHaveRegistrations(appID: String) throws -> Bool { true }

    /// One recipient at a time (see the requirement).
    public func batchRegistrations(appID: String, recipients: [String]) throws -> [String: BatchRegistration] {
        try KeyID.validateAppID(appID)
        var out: [String: BatchRegistration] = [:]
        for r in recipients where out[r] == nil {
            do {
                guard let watch = try watchRegistrations(appID: appID, recipient: r) else { continue }
                out[r] = BatchRegistration(watch: watch, current: try registrations(appID: appID, recipient: r).current)
            } catch {
                continue  // looked up alone at its seal, which reports the error
            }
        }
        return out
    }

    /// The registration to seal to: the current (primary) one of (app id, recipient).
    /// - Throws: `KeysError` `.unknownRegistration` (none), `.noPrimaryKey` (the current one was
    ///   revoked), `.invalidName`; the store's errors.
    public func sealingRegistration(appID: String, recipient: String) throws -> RegistrationInfo {
        let set = try registrations(appID: appID, recipient: recipient)
        guard let current = set.current else {
            throw KeysError(.noPrimaryKey, "recipient \(recipient) of \(appID) has no current v2 registration (revoked): the app must register again")
        }
        return current
    }

    /// The sender keys an app should pin now (FORMAT.md §V.6 records): the primary and every
    /// `decryptOnly` key whose `notAfter` is after `now`.
    /// - Throws: as ``senderKeys(appID:)``.
    public func publishedSenderKeys(appID: String, now: Int64) throws -> [SenderKeyInfo] {
        try senderKeys(appID: appID).filter { $0.isPublished(at: now) }
    }
}


/// One recipient's registrations as a batch chunk sees them
/// (``RegistrationStore/batchRegistrations(appID:recipients:)``).
public struct BatchRegistration: Sendable {
    /// A change watch over the recipient's registrations, taken before they were read.
    public var watch: any KeysetWatch
    /// The current (primary) registration; `nil` when the current one was revoked.
    public var current: RegistrationInfo?

    /// Creates one.
    public init(watch: any KeysetWatch, current: RegistrationInfo?) {
        self.watch = watch
        self.current = current
    }
}




extension RegistrationStore {
    /// Counts who pinned `appID`'s pending sender key (see ``SenderPinReadiness``).
    /// - Parameter now: Unix seconds (UTC).
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; the store's errors.
    public func pinReadiness(appID: String, now: Int64) throws -> SenderPinReadiness {
        let next = try senderKeys(appID: appID).last { $0.status == .pending }?.keyID
        var out = SenderPinReadiness(nextKeyID: next, activeRegistrations: 0, pinnedNext: 0, pinsNotReported: 0)
        for set in try allRegistrations() where set.appID == appID {
            guard let r = set.current, Self.isActive(r, now: now) else { continue }
            out.activeRegistrations += 1
            guard let pins = r.pinnedSenderKeyIDs else { out.pinsNotReported += 1; continue }
            if let next, pins.contains(next) { out.pinnedNext += 1 }
        }
        return out
    }
}
