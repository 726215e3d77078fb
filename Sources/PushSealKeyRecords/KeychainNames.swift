package import PushSealKeychain
import PushSealCrypto

/// The names of the keychain items both sides read: a keyset's item and its generation counter
/// (a device still reads a legacy keyset of before 0.2.0; a server keeps its keysets there), and
/// the account of an app's sender keys.
public enum KeychainNames {
    /// The keychain service of an app's keyset items: `pushseal.keyset:<appID>`.
    public static func service(appID: String) -> String { "pushseal.keyset:" + appID }

    /// The keychain service of the generation counters of an app's keysets:
    /// `pushseal.keyset-generation:<appID>` (account: the recipient; 8 bytes, big-endian), written
    /// after each save of the keyset item.
    public static func generationService(appID: String) -> String { "pushseal.keyset-generation:" + appID }

    /// The account (and audit `recipient`) of an app's sender key item: `-`.
    public static let senderKeyAccount = "-"
}

/// The generation counters of keychain items (8 bytes, big-endian): an item older than its
/// counter was put back (restored from a backup) and is refused.
package enum GenerationCounters {
    /// The stored generation counter of a keyset (0 when none: a keyset of before 0.2.0).
    package static func storedGeneration(_ keychain: Keychain, accessGroup: String, appID: String, recipient: String) throws -> UInt64 {
        try storedCounter(keychain, service: KeychainNames.generationService(appID: appID), account: recipient, accessGroup: accessGroup,
                          of: "keyset \(appID)/\(recipient)")
    }

    /// A generation counter item's value (8 bytes, big-endian; 0 when there is none), for
    /// keysets and the v2 key lists alike.
    /// - Throws: `KeysError` `.corruptKeyset` (not 8 bytes, naming `what`); `KeychainError`.
    package static func storedCounter(_ keychain: Keychain, service: String, account: String, accessGroup: String, of what: String) throws -> UInt64 {
        try presentCounter(keychain, service: service, account: account, accessGroup: accessGroup, of: what) ?? 0
    }

    /// A generation counter item's value, or nil when the item is missing (security review
    /// G10: a missing counter beside an item whose generation is above 0 is a rollback, not 0).
    /// - Throws: as ``storedCounter(_:service:account:accessGroup:of:)``.
    package static func presentCounter(_ keychain: Keychain, service: String, account: String, accessGroup: String, of what: String) throws -> UInt64? {
        let data: SecretBytes
        do {
            data = try keychain.copyData(ItemQuery(itemClass: .genericPassword, service: service, account: account, accessGroup: accessGroup))
        } catch let e as KeychainError where e.code == .itemNotFound {
            return nil
        }
        let bytes = data.copyBytes()
        guard bytes.count == 8 else { throw KeysError(.corruptKeyset, "the generation counter of \(what) is malformed") }
        return bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// The keyset's generation counter, or nil when its item is missing.
    package static func presentGeneration(_ keychain: Keychain, accessGroup: String, appID: String, recipient: String) throws -> UInt64? {
        try presentCounter(keychain, service: KeychainNames.generationService(appID: appID), account: recipient, accessGroup: accessGroup,
                           of: "keyset \(appID)/\(recipient)")
    }

    /// Refuses a keyset older than its stored generation counter (an old item put back), and one
    /// above generation 0 whose counter is missing (G10: the counter deleted with the old item put
    /// back; every writer adds the counter before the first item above 0). Keysets of before
    /// 0.2.0 have generation 0 and no counter, and keep working.
    package static func checkGeneration(_ ks: Keyset, keychain: Keychain, accessGroup: String) throws {
        guard let stored = try presentGeneration(keychain, accessGroup: accessGroup, appID: ks.appID, recipient: ks.recipient) else {
            guard ks.generation == 0 else {
                throw KeysError(.keysetRolledBack,
                    "keyset \(ks.appID)/\(ks.recipient) is generation \(ks.generation) but its generation counter item is missing: the counter was removed (an old copy of the keyset put back?); refused, as it could bring back a revoked key or a lower seal count")
            }
            return
        }
        guard ks.generation >= stored else {
            throw KeysError(.keysetRolledBack,
                "keyset \(ks.appID)/\(ks.recipient) is generation \(ks.generation), older than the \(stored) the store has seen: an old copy of its item was put back (restored from a backup?); refused, as it could bring back a revoked key or a lower seal count")
        }
    }
}
