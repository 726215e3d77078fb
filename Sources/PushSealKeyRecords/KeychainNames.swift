package import PushSealKeychain
package import PushSealCrypto

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
        let data: SecretBytes
        do {
            data = try keychain.copyData(ItemQuery(itemClass: .genericPassword, service: service, account: account, accessGroup: accessGroup))
        } catch let e as KeychainError where e.code == .itemNotFound {
            return 0
        }
        let bytes = data.copyBytes()
        guard bytes.count == 8 else { throw KeysError(.corruptKeyset, "the generation counter of \(what) is malformed") }
        return bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// Refuses a keyset older than its stored generation counter (an old item put back).
    package static func checkGeneration(_ ks: Keyset, keychain: Keychain, accessGroup: String) throws {
        let stored = try storedGeneration(keychain, accessGroup: accessGroup, appID: ks.appID, recipient: ks.recipient)
        guard ks.generation >= stored else {
            throw KeysError(.keysetRolledBack,
                "keyset \(ks.appID)/\(ks.recipient) is generation \(ks.generation), older than the \(stored) the store has seen: an old copy of its item was put back (restored from a backup?); refused, as it could bring back a revoked key or a lower seal count")
        }
    }
}
