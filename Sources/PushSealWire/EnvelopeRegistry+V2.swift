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
    /// - Parameters:
    ///   - senderKey: the app's sender private key, or `nil` (base mode only).
    ///   - senderKeyID: its id (required with `senderKey`).
    /// - Throws: `FormatError` `.invalidKeyID`.
    public func addingV2(sealingWithSenderKey senderKey: X25519.PrivateKey? = nil, senderKeyID: String? = nil) throws -> EnvelopeRegistry {
        let base = try adding(HPKEBaseEnvelope())
        guard let senderKey else { return try base.adding(HPKEAuthEnvelope(pinnedSenders: [])) }
        return try base.adding(HPKEAuthEnvelope(senderKey: senderKey, senderKeyID: senderKeyID ?? ""))
    }

    /// This table plus both version 2 entries configured for opening on an app that pinned
    /// `pinnedSenders` (FORMAT.md §V.7 step 2): none pinned — base mode opens, auth mode is
    /// `.unknownSenderKey`; some pinned — base mode is `.downgradeRefused`, auth mode opens for
    /// a pinned `sender_key_id` (several at once during a sender key rotation). Both entries
    /// share one `X25519.PrivateKeyCache`: a device key is imported once per key id for as
    /// long as the table lives.
    public func addingV2(openingWithPinnedSenders pinnedSenders: [PinnedSenderKey]) throws -> EnvelopeRegistry {
        let cache = X25519.PrivateKeyCache()
        return try adding(HPKEBaseEnvelope(pinnedSenders: pinnedSenders, keyCache: cache))
            .adding(HPKEAuthEnvelope(pinnedSenders: pinnedSenders, keyCache: cache))
    }

    /// ``standard`` (v1) plus version 2 for opening with `pinnedSenders`: what an extension
    /// that holds version 2 device keys passes to `WireFormatOpener(registry:)`. Both v2
    /// entries share one `X25519.PrivateKeyCache` (a device key is imported once per key id
    /// while the table lives; the keys are released, and zeroed, with it).
    public static func opening(pinnedSenders: [PinnedSenderKey]) -> EnvelopeRegistry {
        let cache = X25519.PrivateKeyCache()
        return EnvelopeRegistry(uncheckedEntries: standard.algorithms + [HPKEBaseEnvelope(pinnedSenders: pinnedSenders, keyCache: cache),
                                                                          HPKEAuthEnvelope(pinnedSenders: pinnedSenders, keyCache: cache)])
    }
}
