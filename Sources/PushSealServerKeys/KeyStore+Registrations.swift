import PushSealCrypto
import PushSealKeychain
import PushSealKeyRecords

/// The file keychain as a ``RegistrationStore``. Two more kinds of generic-password item in the
/// keysets' access group, each a ``V2KeyList`` written under the keysets' lock (`keys.lock`)
/// and audited to the same trail:
/// - registrations: service `pushseal.registrations:<appID>`, account `<recipient>`;
/// - sender keys: service `pushseal.sender-keys:<appID>`, account `-` (the private keys are
///   secrets of this item, encrypted at rest with the keychain's device secret like v1 keys).
extension KeyStore: V2KeyListStore {
    /// `pushseal.registrations:<appID>`: the service of an app's registration items.
    public static func registrationService(appID: String) -> String { "pushseal.registrations:" + appID }
    /// `pushseal.sender-keys:<appID>`: the service of an app's sender key item (account `-`).
    public static func senderKeyService(appID: String) -> String { "pushseal.sender-keys:" + appID }
    /// `KeychainNames.senderKeyAccount`.
    public var senderKeyOwner: String { KeychainNames.senderKeyAccount }

    // MARK: Registrations

    /// Every recipient's registrations in ``accessGroup``, sorted by app id then recipient.
    /// - Throws: `KeysError` `.corruptKeyset`; `KeychainError`.
    public func allRegistrations() throws -> [RegistrationSet] {
        let items = try groupItems()
        let prefix = Self.registrationService(appID: "")
        var out: [RegistrationSet] = []
        for item in items where item.attributes.service.hasPrefix(prefix) {
            let appID = String(item.attributes.service.dropFirst(prefix.count))
            if let list = try loadV2List(.registrations, appID: appID, owner: item.attributes.account, withSecrets: false) { out.append(try list.registrationSet()) }
        }
        return out.sorted { ($0.appID, $0.recipient) < ($1.appID, $1.recipient) }
    }

    /// The app ids with a sender key item, sorted.
    /// - Throws: `KeychainError`.
    public func senderKeyAppIDs() throws -> [String] {
        let prefix = Self.senderKeyService(appID: "")
        return Set(try groupItems().map(\.attributes.service).filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }).sorted()
    }

    /// Every item of ``accessGroup``, attributes only (empty when none).
    private func groupItems() throws -> [KeychainItem] {
        do {
            return try keychain.copyMatching(ItemQuery(accessGroup: accessGroup), limit: .all, returning: [.attributes])
        } catch let e as KeychainError where e.code == .itemNotFound {
            return []
        }
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

    // MARK: Items

    static func listService(_ kind: V2KeyList.Kind, appID: String) -> String {
        kind == .registrations ? registrationService(appID: appID) : senderKeyService(appID: appID)
    }

    /// The service of a list item's generation counter (account: the list's owner), as
    /// ``generationService(appID:)`` is for keysets: `pushseal.registrations-generation:<appID>`
    /// or `pushseal.sender-keys-generation:<appID>`.
    static func listGenerationService(_ kind: V2KeyList.Kind, appID: String) -> String {
        (kind == .registrations ? "pushseal.registrations-generation:" : "pushseal.sender-keys-generation:") + appID
    }

    /// The stored generation counter of a list item (0 when none: a list of before the counter).
    /// - Throws: `KeysError` `.corruptKeyset` (not 8 bytes); `KeychainError`.
    func storedListGeneration(_ kind: V2KeyList.Kind, appID: String, owner: String) throws -> UInt64 {
        try GenerationCounters.storedCounter(keychain, service: Self.listGenerationService(kind, appID: appID), account: owner, accessGroup: accessGroup,
                               of: "the v2 key item for \(appID)/\(owner)")
    }

    func listQuery(_ kind: V2KeyList.Kind, appID: String, owner: String) -> ItemQuery {
        ItemQuery(itemClass: .genericPassword, service: Self.listService(kind, appID: appID), account: owner, accessGroup: accessGroup)
    }

    /// Reads one list item; `nil` when there is none (sender private keys are always read: the
    /// item holds them).
    /// - Throws: `KeysError` `.corruptKeyset`; `KeychainError`.
    public func loadV2List(_ kind: V2KeyList.Kind, appID: String, owner: String, withSecrets: Bool) throws -> V2KeyList? {
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
        guard let stored = try GenerationCounters.presentCounter(keychain, service: Self.listGenerationService(kind, appID: appID), account: owner,
                                                   accessGroup: accessGroup, of: "the v2 key item for \(appID)/\(owner)") else {
            // G10: a list above generation 0 has its counter (added before its first save).
            guard list.generation == 0 else {
                throw KeysError(.keysetRolledBack,
                    "the v2 key item for \(appID)/\(owner) is generation \(list.generation) but its generation counter item is missing: an old copy put back with the counter removed? refused")
            }
            return list
        }
        guard list.generation >= stored else {
            throw KeysError(.keysetRolledBack,
                "the v2 key item for \(appID)/\(owner) is generation \(list.generation), older than the \(stored) the store has seen: an old copy of it was put back (restored from a backup?); refused, as it could bring back a revoked registration or a rotated-out sender key")
        }
        return list
    }

    /// Loads, lets `body` change, and saves one list item under the keysets' lock, audited like
    /// a keyset change: saved only when `body` returns changes, after the audit destination opened.
    /// - Throws: `KeysError` `.unknownRegistration` / `.unknownKeyset` (no list, not `allowCreate`); `KeychainError`.
    @discardableResult
    public func changeV2List(_ kind: V2KeyList.Kind, appID: String, owner: String, allowCreate: Bool,
                             _ body: (inout V2KeyList) throws -> [KeysetChange]) throws -> V2KeyList {
        try KeyID.validateAppID(appID)
        return try withLock {
            let existing = try loadV2List(kind, appID: appID, owner: owner, withSecrets: true)
            guard existing != nil || allowCreate else { throw V2KeyList.missing(kind, appID: appID, owner: owner, in: storeDescription) }
            var list = existing ?? V2KeyList(kind: kind, appID: appID, owner: owner, entries: [])
            let events = try body(&list)
            guard !events.isEmpty else { return list }
            let sink = try audit.open(keychain: keychain)
            // The next generation: the item first, then its counter (a crash in between leaves
            // the counter behind, which the check accepts).
            let present = try GenerationCounters.presentCounter(keychain, service: Self.listGenerationService(kind, appID: appID), account: owner,
                                                  accessGroup: accessGroup, of: "the v2 key item for \(appID)/\(owner)")
            let stored = present ?? 0
            list.generation = max(existing?.generation ?? 0, stored) &+ 1
            if present == nil {  // the counter before the first item above 0 (G10)
                try writeCounter(service: Self.listGenerationService(kind, appID: appID), account: owner, label: "PushSeal v2 key list generation", stored)
            }
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
            try writeCounter(service: Self.listGenerationService(kind, appID: appID), account: owner, label: "PushSeal v2 key list generation", list.generation)
            for e in events { try writeAudit(e.event, appID: appID, recipient: owner, to: sink) }
            return list
        }
    }
}
