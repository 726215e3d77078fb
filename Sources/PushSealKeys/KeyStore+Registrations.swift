public import PushSealCrypto
public import PushSealKeychain

/// The file keychain as a ``RegistrationStore``. Two more kinds of generic-password item in the
/// keysets' access group, each a ``V2KeyList`` written under the keysets' lock (`keys.lock`)
/// and audited to the same trail:
/// - registrations: service `pushseal.registrations:<appID>`, account `<recipient>`;
/// - sender keys: service `pushseal.sender-keys:<appID>`, account `-` (the private keys are
///   secrets of this item, encrypted at rest with the keychain's device secret like v1 keys).
extension KeyStore: RegistrationStore {
    /// `pushseal.registrations:<appID>`: the service of an app's registration items.
    public static func registrationService(appID: String) -> String { "pushseal.registrations:" + appID }
    /// `pushseal.sender-keys:<appID>`: the service of an app's sender key item (account `-`).
    public static func senderKeyService(appID: String) -> String { "pushseal.sender-keys:" + appID }
    /// The account (and audit `recipient`) of an app's sender key item: `-`.
    public static let senderKeyAccount = "-"

    // MARK: Registrations

    /// Imports `registration` for `recipient` under the keysets' lock; audited as `register`
    /// (`keyId`, `status` primary, `createdAt`, `previousKeyId` when one is superseded).
    /// - Throws: `KeysError` `.duplicateKeyID`, `.staleRegistration`, `.invalidName`,
    ///   `.timeOutOfRange`; `KeychainError`.
    @discardableResult
    public func register(_ registration: DeviceRegistration, recipient: String, now: Int64 = KeyStore.now()) throws
        -> (info: RegistrationInfo, added: Bool) {
        try KeyID.validateRecipient(recipient)
        try Self.checkTime(now)
        var added = false
        let list = try mutateList(.registrations, appID: registration.appID, owner: recipient, allowCreate: true) { list in
            let changes = try list.register(registration, now: now)
            added = !changes.isEmpty
            return changes
        }
        guard let info = try list.registrationSet().registrations.first(where: { $0.keyID == registration.keyID }) else {
            throw KeysError(.invalidState, "registration \(registration.keyID) was not stored")
        }
        return (info, added)
    }

    /// The registrations of (app id, recipient), oldest first.
    /// - Throws: `KeysError` `.unknownRegistration`, `.invalidName`, `.corruptKeyset`; `KeychainError`.
    public func registrations(appID: String, recipient: String) throws -> RegistrationSet {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        guard let list = try loadList(.registrations, appID: appID, owner: recipient) else {
            throw KeysError(.unknownRegistration, "recipient \(recipient) of \(appID) has no v2 registration in \(storeDescription)")
        }
        return try list.registrationSet()
    }

    /// Every recipient's registrations in ``accessGroup``, sorted by app id then recipient.
    /// - Throws: `KeysError` `.corruptKeyset`; `KeychainError`.
    public func allRegistrations() throws -> [RegistrationSet] {
        let items: [KeychainItem]
        do {
            items = try keychain.copyMatching(ItemQuery(accessGroup: accessGroup), limit: .all, returning: [.attributes])
        } catch let e as KeychainError where e.code == .itemNotFound {
            return []
        }
        let prefix = Self.registrationService(appID: "")
        var out: [RegistrationSet] = []
        for item in items where item.attributes.service.hasPrefix(prefix) {
            let appID = String(item.attributes.service.dropFirst(prefix.count))
            if let list = try loadList(.registrations, appID: appID, owner: item.attributes.account) { out.append(try list.registrationSet()) }
        }
        return out.sorted { ($0.appID, $0.recipient) < ($1.appID, $1.recipient) }
    }

    /// Revokes one registration (status `disabled`); audited as `revokeRegistration`.
    /// - Throws: `KeysError` `.unknownRegistration`, `.unknownKey`, `.invalidName`, `.timeOutOfRange`; `KeychainError`.
    @discardableResult
    public func revokeRegistration(appID: String, recipient: String, keyID: String, now: Int64 = KeyStore.now()) throws -> RegistrationInfo {
        try KeyID.validate(keyID)
        try KeyID.validateRecipient(recipient)
        try Self.checkTime(now)
        let list = try mutateList(.registrations, appID: appID, owner: recipient) { try $0.revokeRegistration(keyID: keyID, now: now) }
        guard let info = try list.registrationSet().registrations.first(where: { $0.keyID == keyID }) else {
            throw KeysError(.unknownKey, "no registration \(keyID)")
        }
        return info
    }

    /// A watch over the registration item's change token; `nil` without one.
    /// - Throws: `KeysError` `.invalidName`; `KeychainError`.
    public func watchRegistrations(appID: String, recipient: String) throws -> (any KeysetWatch)? {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        let location = try keychain.location(of: listQuery(.registrations, appID: appID, owner: recipient))
        guard let version = try keychain.itemVersion(at: location) else { return nil }
        return ItemWatch(keychain: keychain, location: location, version: version)
    }

    // MARK: Sender keys

    /// Makes the app's first sender key (a fresh X25519 key pair, key id by FORMAT.md §V.6);
    /// audited as `senderGenerate`.
    /// - Throws: `KeysError` `.keysetExists`, `.invalidName`, `.timeOutOfRange`; `KeychainError`, `CryptoError`.
    @discardableResult
    public func generateSenderKey(appID: String, now: Int64 = KeyStore.now()) throws -> SenderKeyInfo {
        try KeyID.validateAppID(appID)
        try Self.checkTime(now)
        let (key, keyID) = try V2KeyList.newSenderKey()
        try mutateList(.senderKeys, appID: appID, owner: Self.senderKeyAccount, allowCreate: true) {
            try $0.generateSenderKey(key, keyID: keyID, now: now)
        }
        return SenderKeyInfo(appID: appID, keyID: keyID, publicKey: key.publicKey, status: .primary, createdAt: now)
    }

    /// A new primary sender key; the former becomes `decryptOnly` until `now + graceSeconds`;
    /// keys past their `notAfter` are destroyed (private key zeroed and dropped). Audited as
    /// `senderRotate` (`keyId`, `previousKeyId`, `notAfter`) and `senderPrune`.
    /// - Throws: `KeysError` `.unknownKeyset`, `.invalidName`, `.timeOutOfRange`; `KeychainError`, `CryptoError`.
    @discardableResult
    public func rotateSenderKey(appID: String, graceSeconds: Int64 = KeyStore.defaultGraceSeconds, now: Int64 = KeyStore.now()) throws -> SenderKeyInfo {
        try KeyID.validateAppID(appID)
        let notAfter = try Self.time(now, plus: graceSeconds, named: "graceSeconds")
        let (key, keyID) = try V2KeyList.newSenderKey()
        try mutateList(.senderKeys, appID: appID, owner: Self.senderKeyAccount) {
            try $0.rotateSenderKey(to: key, keyID: keyID, notAfter: notAfter, now: now)
        }
        return SenderKeyInfo(appID: appID, keyID: keyID, publicKey: key.publicKey, status: .primary, createdAt: now)
    }

    /// The app's sender keys, oldest first, public halves only (empty when none).
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; `KeychainError`, `CryptoError`.
    public func senderKeys(appID: String) throws -> [SenderKeyInfo] {
        try KeyID.validateAppID(appID)
        return try loadList(.senderKeys, appID: appID, owner: Self.senderKeyAccount)?.senderKeyInfos() ?? []
    }

    /// The primary sender key and its private half; `nil` when the app has none.
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; `KeychainError`, `CryptoError`.
    public func sealingSenderKey(appID: String) throws -> (keyID: String, key: X25519.PrivateKey)? {
        try KeyID.validateAppID(appID)
        return try loadList(.senderKeys, appID: appID, owner: Self.senderKeyAccount)?.primarySenderKey()
    }

    // MARK: Items

    static func listService(_ kind: V2KeyList.Kind, appID: String) -> String {
        kind == .registrations ? registrationService(appID: appID) : senderKeyService(appID: appID)
    }

    func listQuery(_ kind: V2KeyList.Kind, appID: String, owner: String) -> ItemQuery {
        ItemQuery(itemClass: .genericPassword, service: Self.listService(kind, appID: appID), account: owner, accessGroup: accessGroup)
    }

    /// Reads one list item; `nil` when there is none.
    func loadList(_ kind: V2KeyList.Kind, appID: String, owner: String) throws -> V2KeyList? {
        let data: SecretBytes
        do {
            data = try keychain.copyData(listQuery(kind, appID: appID, owner: owner))
        } catch let e as KeychainError where e.code == .itemNotFound {
            return nil
        }
        var bytes = data.copyBytes()
        defer { SecretBytes.wipe(&bytes) }
        let list = try V2KeyList.decode(bytes, kind: kind)
        guard list.appID == appID, list.owner == owner else {
            throw KeysError(.corruptKeyset, "the v2 key item for \(appID)/\(owner) holds another one's keys (\(list.appID)/\(list.owner))")
        }
        return list
    }

    /// Loads, lets `body` change, and saves one list item under the keysets' lock, audited like
    /// ``mutate(appID:recipient:allowCreate:_:)``: saved only when `body` returns events, after
    /// the audit destination opened.
    @discardableResult
    func mutateList(_ kind: V2KeyList.Kind, appID: String, owner: String, allowCreate: Bool = false,
                    _ body: (inout V2KeyList) throws -> [KeysetChange]) throws -> V2KeyList {
        try KeyID.validateAppID(appID)
        return try withLock {
            let existing = try loadList(kind, appID: appID, owner: owner)
            guard existing != nil || allowCreate else {
                throw kind == .registrations
                    ? KeysError(.unknownRegistration, "recipient \(owner) of \(appID) has no v2 registration in \(storeDescription)")
                    : KeysError(.unknownKeyset, "\(appID) has no sender key in \(storeDescription): generate one (push-keys sender generate)")
            }
            var list = existing ?? V2KeyList(kind: kind, appID: appID, owner: owner, entries: [])
            let events = try body(&list)
            guard !events.isEmpty else { return list }
            let sink = try audit.open(keychain: keychain)
            var bytes = list.encode()
            let data = SecretBytes(copying: bytes)
            SecretBytes.wipe(&bytes)
            if existing == nil {
                let label = kind == .registrations ? "PushSeal v2 registrations" : "PushSeal v2 sender keys"
                try keychain.add(.genericPassword, service: Self.listService(kind, appID: appID), account: owner,
                                 label: label, accessGroup: accessGroup, accessibility: accessibility, data: data)
            } else {
                try keychain.update(listQuery(kind, appID: appID, owner: owner), with: ItemChanges(data: data))
            }
            for e in events { try writeAudit(e.event, appID: appID, recipient: owner, to: sink) }
            return list
        }
    }
}
