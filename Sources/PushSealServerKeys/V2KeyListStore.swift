public import PushSealCrypto
public import PushSealKeyRecords

/// A ``RegistrationStore`` that keeps each recipient's registrations and each app's sender keys
/// as a ``V2KeyList``: it gives two primitives (load a list; change one under its lock, audited)
/// and gets the registration and sender key methods, with ``V2KeyList``'s rules, from this
/// protocol. The file keychain (``KeyStore``) and the PostgreSQL registry conform.
public protocol V2KeyListStore: RegistrationStore {
    /// The owner of an app's sender key list (the file keychain `-`, the registry `/sender`).
    var senderKeyOwner: String { get }

    /// The list of `owner` (a recipient, or ``senderKeyOwner``); `nil` or empty when it has none.
    /// - Parameter withSecrets: sender private keys are read (unwrapped) too.
    /// - Throws: `KeysError` `.corruptKeyset`; the store's errors.
    func loadV2List(_ kind: V2KeyList.Kind, appID: String, owner: String, withSecrets: Bool) throws -> V2KeyList?

    /// Loads the list under the store's lock, lets `body` change it, and saves it with the
    /// changes' audit lines when `body` returns any (all in one atomic change).
    /// - Throws: ``V2KeyList/missing(_:appID:owner:in:)`` when the list is empty and not
    ///   `allowCreate`; `body`'s errors; the store's errors.
    @discardableResult
    func changeV2List(_ kind: V2KeyList.Kind, appID: String, owner: String, allowCreate: Bool,
                      _ body: (inout V2KeyList) throws -> [KeysetChange]) throws -> V2KeyList
}

extension V2KeyList {
    /// The error for a list that does not exist: `.unknownRegistration` (registrations) or
    /// `.unknownKeyset` (no sender key).
    public static func missing(_ kind: Kind, appID: String, owner: String, in store: String) -> KeysError {
        kind == .registrations
            ? KeysError(.unknownRegistration, "recipient \(owner) of \(appID) has no v2 registration in \(store)")
            : KeysError(.unknownKeyset, "\(appID) has no sender key in \(store): generate one (push-keys sender generate)")
    }
}

extension V2KeyListStore {
    /// Imports `registration` for `recipient`; audited as `register`.
    /// - Throws: `KeysError` `.duplicateKeyID`, `.staleRegistration`, `.invalidName`, `.timeOutOfRange`; the store's errors.
    @discardableResult
    public func register(_ registration: DeviceRegistration, recipient: String, now: Int64 = KeyTime.now()) throws
        -> (info: RegistrationInfo, added: Bool) {
        try register(registration, recipient: recipient, now: now, pinnedSenderKeyIDs: nil)
    }

    /// Imports `registration` for `recipient` with the sender key ids its device reported pinned
    /// (`nil`: not reported, the stored ones kept); audited as `register` and `reportPins`.
    /// - Throws: `KeysError` `.duplicateKeyID`, `.staleRegistration`, `.invalidName`, `.timeOutOfRange`; the store's errors.
    @discardableResult
    public func register(_ registration: DeviceRegistration, recipient: String, now: Int64, pinnedSenderKeyIDs: [String]?) throws
        -> (info: RegistrationInfo, added: Bool) {
        try KeyID.validateRecipient(recipient)
        try KeyTime.checkTime(now)
        if let pins = pinnedSenderKeyIDs { _ = try V2KeyList.canonicalPins(pins) }  // before any change
        var added = false
        let list = try changeV2List(.registrations, appID: registration.appID, owner: recipient, allowCreate: true) { list in
            let changes = try list.register(registration, now: now)
            added = !changes.isEmpty
            guard let pins = pinnedSenderKeyIDs else { return changes }
            return changes + (try list.reportPins(keyID: registration.keyID, pinnedSenderKeyIDs: pins, now: now))
        }
        return (try Self.registration(registration.keyID, in: list), added)
    }

    /// The registrations of (app id, recipient), oldest first.
    /// - Throws: `KeysError` `.unknownRegistration`, `.invalidName`, `.corruptKeyset`; the store's errors.
    public func registrations(appID: String, recipient: String) throws -> RegistrationSet {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        guard let list = try loadV2List(.registrations, appID: appID, owner: recipient, withSecrets: false), !list.entries.isEmpty else {
            throw V2KeyList.missing(.registrations, appID: appID, owner: recipient, in: storeDescription)
        }
        return try list.registrationSet()
    }

    /// Revokes one registration (status `disabled`); audited as `revokeRegistration`.
    /// - Throws: `KeysError` `.unknownRegistration`, `.unknownKey`, `.invalidName`, `.timeOutOfRange`; the store's errors.
    @discardableResult
    public func revokeRegistration(appID: String, recipient: String, keyID: String, now: Int64 = KeyTime.now()) throws -> RegistrationInfo {
        try KeyID.validate(keyID)
        try KeyID.validateRecipient(recipient)
        try KeyTime.checkTime(now)
        let list = try changeV2List(.registrations, appID: appID, owner: recipient, allowCreate: false) {
            try $0.revokeRegistration(keyID: keyID, now: now)
        }
        return try Self.registration(keyID, in: list)
    }

    /// Makes the app's first sender key (a fresh X25519 key pair, key id by FORMAT.md §V.6);
    /// audited as `senderGenerate`.
    /// - Throws: `KeysError` `.keysetExists`, `.invalidName`, `.timeOutOfRange`; the store's errors, `CryptoError`.
    @discardableResult
    public func generateSenderKey(appID: String, now: Int64 = KeyTime.now()) throws -> SenderKeyInfo {
        try KeyID.validateAppID(appID)
        try KeyTime.checkTime(now)
        let (key, keyID) = try V2KeyList.newSenderKey()
        try changeV2List(.senderKeys, appID: appID, owner: senderKeyOwner, allowCreate: true) { try $0.generateSenderKey(key, keyID: keyID, now: now) }
        return SenderKeyInfo(appID: appID, keyID: keyID, publicKey: key.publicKey, status: .primary, createdAt: now)
    }

    /// A new primary sender key; the former becomes `decryptOnly` until `now + graceSeconds`;
    /// keys past their `notAfter` are destroyed (private key dropped). Audited as `senderRotate`
    /// (`keyId`, `previousKeyId`, `notAfter`) and `senderPrune`.
    /// - Throws: `KeysError` `.unknownKeyset`, `.invalidName`, `.timeOutOfRange`; the store's errors, `CryptoError`.
    @discardableResult
    public func rotateSenderKey(appID: String, graceSeconds: Int64 = KeyTime.defaultGraceSeconds, now: Int64 = KeyTime.now()) throws -> SenderKeyInfo {
        try KeyID.validateAppID(appID)
        let notAfter = try KeyTime.time(now, plus: graceSeconds, named: "graceSeconds")
        let (key, keyID) = try V2KeyList.newSenderKey()
        try changeV2List(.senderKeys, appID: appID, owner: senderKeyOwner, allowCreate: false) {
            try $0.rotateSenderKey(to: key, keyID: keyID, notAfter: notAfter, now: now)
        }
        return SenderKeyInfo(appID: appID, keyID: keyID, publicKey: key.publicKey, status: .primary, createdAt: now)
    }

    /// Adds the app's next sender key, `pending`: published to apps, not sealing (staged
    /// rotation: `sender add`). Audited as `senderAdd`.
    /// - Throws: `KeysError` `.unknownKeyset`, `.invalidState` (one is pending already),
    ///   `.invalidName`, `.timeOutOfRange`; the store's errors, `CryptoError`.
    @discardableResult
    public func addSenderKey(appID: String, now: Int64 = KeyTime.now()) throws -> SenderKeyInfo {
        try KeyID.validateAppID(appID)
        try KeyTime.checkTime(now)
        let (key, keyID) = try V2KeyList.newSenderKey()
        try changeV2List(.senderKeys, appID: appID, owner: senderKeyOwner, allowCreate: false) { try $0.addSenderKey(key, keyID: keyID, now: now) }
        return SenderKeyInfo(appID: appID, keyID: keyID, publicKey: key.publicKey, status: .pending, createdAt: now)
    }

    /// Promotes the pending sender key to primary; the former primary stays `decryptOnly`
    /// until `now + graceSeconds` (`sender promote`). Audited as `senderPromote`.
    /// - Returns: the app's sender keys after the change.
    /// - Throws: `KeysError` `.unknownKeyset`, `.invalidState` (none pending), `.timeOutOfRange`; the store's errors.
    @discardableResult
    public func promoteSenderKey(appID: String, graceSeconds: Int64 = KeyTime.defaultGraceSeconds, now: Int64 = KeyTime.now()) throws -> [SenderKeyInfo] {
        try KeyID.validateAppID(appID)
        let notAfter = try KeyTime.time(now, plus: graceSeconds, named: "graceSeconds")
        let list = try changeV2List(.senderKeys, appID: appID, owner: senderKeyOwner, allowCreate: false) {
            try $0.promoteSenderKey(notAfter: notAfter, now: now).changes
        }
        return try list.senderKeyInfos()
    }

    /// Ends the former sender keys now (`sender retire`), or revokes them (`sender retire
    /// --now`, after a suspected leak: `disabled`, private keys dropped, listed by the
    /// revocation export). Audited as `senderRetire` / `senderRevoke`.
    /// - Returns: the key ids ended.
    /// - Throws: `KeysError` `.unknownKeyset`, `.timeOutOfRange`; the store's errors.
    @discardableResult
    public func retireSenderKeys(appID: String, revoke: Bool, now: Int64 = KeyTime.now()) throws -> [String] {
        try KeyID.validateAppID(appID)
        try KeyTime.checkTime(now)
        var ended: [String] = []
        try changeV2List(.senderKeys, appID: appID, owner: senderKeyOwner, allowCreate: false) {
            let r = try $0.retireSenderKeys(revoke: revoke, now: now)
            ended = r.keyIDs
            return r.changes
        }
        return ended
    }

    /// The app's sender keys, oldest first, public halves only (empty when none).
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; the store's errors, `CryptoError`.
    public func senderKeys(appID: String) throws -> [SenderKeyInfo] {
        try KeyID.validateAppID(appID)
        return try loadV2List(.senderKeys, appID: appID, owner: senderKeyOwner, withSecrets: false)?.senderKeyInfos() ?? []
    }

    /// The primary sender key and its private half; `nil` when the app has none.
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; the store's errors, `CryptoError`.
    public func sealingSenderKey(appID: String) throws -> (keyID: String, key: X25519.PrivateKey)? {
        try KeyID.validateAppID(appID)
        return try loadV2List(.senderKeys, appID: appID, owner: senderKeyOwner, withSecrets: true)?.primarySenderKey()
    }

    static func registration(_ keyID: String, in list: V2KeyList) throws -> RegistrationInfo {
        guard let info = try list.registrationSet().registrations.first(where: { $0.keyID == keyID }) else {
            throw KeysError(.unknownKey, "registration \(keyID) was not stored")
        }
        return info
    }
}
