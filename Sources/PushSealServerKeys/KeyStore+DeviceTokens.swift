import PushSealCrypto
import PushSealJSON
import PushSealKeychain
import PushSealSystem
public import PushSealKeyRecords

/// The file keychain as a ``DeviceTokenStore``: one generic-password item per (app id,
/// recipient) in the keysets' access group, service `pushseal.device-tokens:<appID>`, account
/// `<recipient>`, whose data is `{"tokens":[{"environment","registeredAt","token"}]}` (at most
/// one per environment), changed under the keysets' lock (`keys.lock`) and audited to
/// `keys-audit.log` (`addDeviceToken`, `removeDeviceToken`). Adding a token and
/// invalidating read every token item of the app (one file each): the embedded store is for one
/// machine and thousands of recipients; the registry is the one for millions.
extension KeyStore: DeviceTokenStore {
    /// `pushseal.device-tokens:<appID>`: the service of an app's device token items.
    public static func deviceTokenService(appID: String) -> String { "pushseal.device-tokens:" + appID }

    /// Adds (or replaces) the token of (app id, recipient, environment), under the lock.
    /// - Throws: `KeysError` `.invalidDeviceToken`, `.invalidName`, `.timeOutOfRange`, `.corruptKeyset`; `KeychainError`.
    @discardableResult
    public func addDeviceToken(_ token: String, appID: String, recipient: String, environment: DeviceTokenEnvironment,
                               registeredAtMs: Int64) throws -> [DeviceToken] {
        let token = try DeviceToken.checkAdd(token, appID: appID, recipient: recipient, registeredAtMs: registeredAtMs)
        return try withLock {
            let sink = try audit.open(keychain: keychain)
            var all = try loadTokenItems(appID: appID)
            var removed: [DeviceToken] = []
            for (owner, tokens) in all {
                let kept = tokens.filter { $0.token != token && !(owner == recipient && $0.environment == environment) }
                guard kept.count != tokens.count else { continue }
                removed += tokens.filter { !kept.contains($0) }
                all[owner] = kept
                if owner != recipient { try saveTokenItem(appID: appID, recipient: owner, kept, exists: true) }
            }
            let added = DeviceToken(appID: appID, recipient: recipient, token: token, environment: environment, registeredAtMs: registeredAtMs)
            try saveTokenItem(appID: appID, recipient: recipient, (all[recipient] ?? []) + [added], exists: all[recipient] != nil)
            let replaced = removed.filter { !$0.isSameRegistration(as: added) }
            for (owner, change) in KeysetChange.deviceTokenAdd(added, removed: replaced, time: KeyTime.now()) {
                try writeAudit(change.event, appID: appID, recipient: owner, to: sink)
            }
            return replaced
        }
    }

    /// The tokens of (app id, recipient), production first.
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; `KeychainError`.
    public func deviceTokens(appID: String, recipient: String) throws -> [DeviceToken] {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        return try loadTokenItem(appID: appID, recipient: recipient) ?? []
    }

    /// Every token of `appID` (or of every app), sorted by app id, recipient, environment.
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; `KeychainError`.
    public func allDeviceTokens(appID: String?) throws -> [DeviceToken] {
        if let appID { try KeyID.validateAppID(appID) }
        let prefix = Self.deviceTokenService(appID: "")
        var out: [DeviceToken] = []
        for item in try tokenItemAttributes(service: appID.map { Self.deviceTokenService(appID: $0) }) where item.service.hasPrefix(prefix) {
            let app = String(item.service.dropFirst(prefix.count))
            out += try loadTokenItem(appID: app, recipient: item.account) ?? []
        }
        return out.sorted { ($0.appID, $0.recipient, $0.environment.rawValue) < ($1.appID, $1.recipient, $1.environment.rawValue) }
    }

    /// Each named recipient's token for `environment` (one item read per recipient).
    /// - Throws: `KeysError` `.invalidName` (the app id), `.corruptKeyset`; `KeychainError`.
    public func deviceTokens(appID: String, recipients: [String], environment: DeviceTokenEnvironment) throws -> [String: DeviceToken] {
        try KeyID.validateAppID(appID)
        var out: [String: DeviceToken] = [:]
        for r in Set(recipients) where (try? KeyID.validateRecipient(r)) != nil {
            if let t = try loadTokenItem(appID: appID, recipient: r)?.first(where: { $0.environment == environment }) { out[r] = t }
        }
        return out
    }

    /// Applies the 410s under the lock, reading the app's token items once.
    /// - Throws: `KeysError` `.invalidName`, `.invalidDeviceToken`, `.timeOutOfRange`, `.corruptKeyset`; `KeychainError`.
    public func invalidateDeviceTokens(_ unregistrations: [(token: String, unregisteredAtMs: Int64)], appID: String) throws -> [DeviceTokenInvalidation] {
        try KeyID.validateAppID(appID)
        let checked = try DeviceToken.checkUnregistrations(unregistrations)
        return try withLock {
            let sink = try audit.open(keychain: keychain)
            var all = try loadTokenItems(appID: appID)
            var owners: [String: String] = [:]
            var removed: [(DeviceToken, Int64)] = []
            for (owner, tokens) in all { for t in tokens { owners[t.token] = owner } }
            var changed = Set<String>()
            let results = checked.map { u -> DeviceTokenInvalidation in
                guard let owner = owners[u.token], let stored = all[owner]?.first(where: { $0.token == u.token }) else { return .unknown }
                guard stored.registeredAtMs < u.unregisteredAtMs else { return .keptReregistered }
                all[owner]?.removeAll { $0.token == u.token }
                owners[u.token] = nil
                changed.insert(owner)
                removed.append((stored, u.unregisteredAtMs))
                return .invalidated
            }
            for owner in changed.sorted() { try saveTokenItem(appID: appID, recipient: owner, all[owner] ?? [], exists: true) }
            let time = KeyTime.now()
            for (t, ms) in removed {
                try writeAudit(KeysetChange.deviceTokenRemoved(t, reason: .unregistered(ms), time: time).event, appID: appID, recipient: t.recipient, to: sink)
            }
            return results
        }
    }

    /// Removes the recipient's tokens (all, or `token`) under the lock, audited `removeDeviceToken` `removed`.
    /// - Throws: `KeysError` `.invalidName`, `.invalidDeviceToken`, `.timeOutOfRange`, `.corruptKeyset`; `KeychainError`.
    @discardableResult
    public func removeDeviceTokens(appID: String, recipient: String, token: String?, time: Int64) throws -> [DeviceToken] {
        let token = try DeviceToken.checkRemove(appID: appID, recipient: recipient, token: token, time: time)
        return try withLock {
            guard let held = try loadTokenItem(appID: appID, recipient: recipient) else { return [] }
            let removed = held.filter { token == nil || $0.token == token }
            guard !removed.isEmpty else { return [] }
            let sink = try audit.open(keychain: keychain)
            try saveTokenItem(appID: appID, recipient: recipient, held.filter { !removed.contains($0) }, exists: true)
            for t in removed { try writeAudit(KeysetChange.deviceTokenRemoved(t, reason: .removed, time: time).event, appID: appID, recipient: recipient, to: sink) }
            return removed
        }
    }

    // MARK: Items

    private func tokenQuery(appID: String, recipient: String?) -> ItemQuery {
        ItemQuery(itemClass: .genericPassword, service: Self.deviceTokenService(appID: appID), account: recipient, accessGroup: accessGroup)
    }

    private func tokenItemAttributes(service: String?) throws -> [ItemAttributes] {
        do {
            return try keychain.copyMatching(ItemQuery(itemClass: .genericPassword, service: service, accessGroup: accessGroup),
                                             limit: .all, returning: [.attributes]).map(\.attributes)
        } catch let e as KeychainError where e.code == .itemNotFound {
            return []
        }
    }

    /// Every recipient's tokens of `appID` (recipients with an item, even an empty one).
    private func loadTokenItems(appID: String) throws -> [String: [DeviceToken]] {
        var all: [String: [DeviceToken]] = [:]
        for item in try tokenItemAttributes(service: Self.deviceTokenService(appID: appID)) {
            all[item.account] = try loadTokenItem(appID: appID, recipient: item.account) ?? []
        }
        return all
    }

    private func loadTokenItem(appID: String, recipient: String) throws -> [DeviceToken]? {
        let data: SecretBytes
        do {
            data = try keychain.copyData(tokenQuery(appID: appID, recipient: recipient))
        } catch let e as KeychainError where e.code == .itemNotFound {
            return nil
        }
        let corrupt = KeysError(.corruptKeyset, "the device token item of \(appID)/\(recipient) does not decode")
        guard case .object(let o)? = try? JSONReader.parse(data.copyBytes()), case .array(let list)? = o["tokens"] else { throw corrupt }
        return try list.map { v in
            guard let t = v.objectValue, let token = t["token"]?.stringValue, let env = t["environment"]?.stringValue.flatMap(DeviceTokenEnvironment.init(rawValue:)),
                  let at = t["registeredAt"]?.integerValue else { throw corrupt }
            return DeviceToken(appID: appID, recipient: recipient, token: token, environment: env, registeredAtMs: at)
        }.sorted { $0.environment < $1.environment }
    }

    /// Writes (or, when empty, deletes) the item of (app id, recipient).
    private func saveTokenItem(appID: String, recipient: String, _ tokens: [DeviceToken], exists: Bool) throws {
        if tokens.isEmpty {
            if exists { _ = try keychain.delete(tokenQuery(appID: appID, recipient: recipient)) }
            return
        }
        let list: [JSONValue] = tokens.sorted { $0.environment < $1.environment }.map { t in
            .object(JSONObject([("environment", .string(t.environment.rawValue)), ("registeredAt", .integer(t.registeredAtMs)), ("token", .string(t.token))]))
        }
        let data = SecretBytes(copying: try JSONWriter.serialize(.object(JSONObject([("tokens", .array(list))]))))
        if exists {
            try keychain.update(tokenQuery(appID: appID, recipient: recipient), with: ItemChanges(data: data))
        } else {
            try keychain.add(.genericPassword, service: Self.deviceTokenService(appID: appID), account: recipient, label: "PushSeal device tokens",
                             accessGroup: accessGroup, accessibility: accessibility, data: data)
        }
    }
}
