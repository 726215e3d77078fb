public import PushSealCrypto

/// Version 2 (FORMAT.md §V) in a registry. ``EnvelopeRegistry/standard`` stays version 1 only:
/// opening version 2 needs the app's sender policy (which sender keys it pinned), and a
/// registry that opened base mode without knowing it would let a forged base-mode payload
/// through on an app that pinned a sender key. A version-1-only receiver shows the original
/// content for a version 2 payload (`unknownAlgorithm`, §V.10).
extension EnvelopeRegistry {
    /// This table plus both version 2 entries configured for sealing: ``HPKEBaseEnvelope``,
    /// and ``HPKEAuthEnvelope`` with the sender key when one is given (without one, an auth
    /// `SealingKey` fails with `.invalidKey`). Which mode a recipient gets is the sealing key's
    /// `algorithm` (§V.7 step 3: auth whenever the app has a sender key).
    ///
    /// Both entries keep what they can between seals (SECURITY.md "Version 2 key caches"): the
    /// base entry each registration's imported public key, the auth entry each registration's
    /// `HPKE.AuthPair` (the static-static DH with the sender key), by key id and checked
    /// against the key bytes at every seal.
    /// - Parameters:
    ///   - senderKey: the app's sender private key, or `nil` (base mode only).
    ///   - senderKeyID: its id (required with `senderKey`).
    ///   - pairCache: the auth entry's cache (default: a new one); a caller that retires
    ///     registrations passes its own, to drop their pairs (`removeAll(recipientKeyID:)`).
    ///   - publicKeyCache: the base entry's cache (default: a new one).
    /// - Throws: `FormatError` `.invalidKeyID`.
    public func addingV2(sealingWithSenderKey senderKey: X25519.PrivateKey? = nil, senderKeyID: String? = nil,
                         pairCache: HPKE.AuthPairCache = HPKE.AuthPairCache(),
                         publicKeyCache: X25519.PublicKeyCache = X25519.PublicKeyCache()) throws -> EnvelopeRegistry {
        let base = try adding(HPKEBaseEnvelope(publicKeyCache: publicKeyCache))
        guard let senderKey else { return try base.adding(HPKEAuthEnvelope(pinnedSenders: [])) }
        return try base.adding(HPKEAuthEnvelope(senderKey: senderKey, senderKeyID: senderKeyID ?? "", pairCache: pairCache))
    }

    /// This table plus both version 2 entries configured for opening on an app that pinned
    /// `pinnedSenders` (FORMAT.md §V.7 step 2): none pinned — base mode opens, auth mode is
    /// `.unknownSenderKey`; some pinned — base mode is `.downgradeRefused`, auth mode opens for
    /// a pinned `sender_key_id` (several at once during a sender key rotation). Both entries
    /// share one `X25519.PrivateKeyCache`: a device key is imported once per key id for as
    /// long as the table lives; the auth entry keeps the static-static DH per (pinned sender
    /// key, device key) in an `HPKE.AuthPairCache` as long.
    public func addingV2(openingWithPinnedSenders pinnedSenders: [PinnedSenderKey]) throws -> EnvelopeRegistry {
        let cache = X25519.PrivateKeyCache()
        return try adding(HPKEBaseEnvelope(pinnedSenders: pinnedSenders, keyCache: cache))
            .adding(HPKEAuthEnvelope(pinnedSenders: pinnedSenders, keyCache: cache, pairCache: HPKE.AuthPairCache(capacity: Self.openingPairCapacity)))
    }

    /// Pairs an opening table keeps by default: 16 (an app pins one or two sender keys and
    /// holds one or two device keys during a rotation).
    public static let openingPairCapacity = 16

    /// ``standard`` (v1) plus version 2 for opening with `pinnedSenders`: what an extension
    /// that holds version 2 device keys passes to `WireFormatOpener(registry:)`. Both v2
    /// entries share one `X25519.PrivateKeyCache` (a device key is imported once per key id
    /// while the caches live; the keys are released, and zeroed, with them) and the auth entry
    /// keeps the static-static DH per (pinned sender key, device key) in an
    /// `HPKE.AuthPairCache`.
    /// - Parameters:
    ///   - pinnedSenders: the sender keys the app pinned (may be empty).
    ///   - keyCache: the device key cache (default: a new one); an opener that makes a table
    ///     per payload passes its own so the imports outlive the table.
    ///   - pairCache: the auth pair cache (default: a new one of ``openingPairCapacity``), the
    ///     same way.
    public static func opening(pinnedSenders: [PinnedSenderKey], keyCache: X25519.PrivateKeyCache = X25519.PrivateKeyCache(),
                               pairCache: HPKE.AuthPairCache = HPKE.AuthPairCache(capacity: openingPairCapacity)) -> EnvelopeRegistry {
        EnvelopeRegistry(uncheckedEntries: standard.algorithms + [HPKEBaseEnvelope(pinnedSenders: pinnedSenders, keyCache: keyCache),
                                                                   HPKEAuthEnvelope(pinnedSenders: pinnedSenders, keyCache: keyCache,
                                                                                    pairCache: pairCache)])
    }
}
