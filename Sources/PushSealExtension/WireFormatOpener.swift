public import PushSealJSON
public import PushSealCrypto
public import PushSealWire

/// The real payload opener: the wire format (docs/FORMAT.md) through PushSealWire's
/// `SealedPayload`, with the algorithms of an `EnvelopeRegistry`.
///
/// ``envelope(in:)`` checks the whole envelope (fields, `enc_alg`, header fields, `key_id`,
/// base64, box length) before any key lookup, so a malformed payload is reported as such, never
/// as an unknown key. ``open(_:with:appID:)`` lets the algorithm verify the box over its AAD
/// (v1: `pushseal:v1|A256GCM|<key_id>|<app_id>`) with the app id it is given — the extension's
/// configured one, never a payload field — then decodes the plaintext.
public struct WireFormatOpener: NotificationPayloadOpener {
    /// The algorithms accepted by `enc_alg`.
    public let registry: EnvelopeRegistry
    /// Where the app's pinned sender keys are read for each version 2 payload, or nil (the
    /// registry's own sender policy applies).
    public let pinnedSenderKeys: (any PinnedSenderKeySource)?
    /// With a ``pinnedSenderKeys`` source: the device keys imported so far, by key id, shared
    /// by the table each version 2 payload is opened with (so a device key is imported once,
    /// not at every payload).
    let keyCache: X25519.PrivateKeyCache?
    /// With a ``pinnedSenderKeys`` source: the auth-mode static-static DH per (pinned sender
    /// key, device key) (`HPKE.AuthPairCache`), shared the same way; pairs of a sender key no
    /// longer pinned are dropped when the next version 2 payload reads the pinned list.
    let pairCache: HPKE.AuthPairCache?

    /// Creates the opener (stateless).
    /// - Parameter registry: the algorithms accepted (default `EnvelopeRegistry.standard`: `A256GCM`).
    public init(registry: EnvelopeRegistry = .standard) {
        self.registry = registry
        pinnedSenderKeys = nil
        keyCache = nil
        pairCache = nil
    }

    /// An opener for versions 1 and 2 whose sender policy (FORMAT.md §V.7 step 2) is read from
    /// `source` for each version 2 payload, as it stands when the payload arrives: the device
    /// keychain's pinned sender keys (docs/keychain.md "Device key items", kind 3). A version 1
    /// payload reads it too (security review G2): once a sender key is pinned, it opens only
    /// under a v1 key the source says is kept with an end date (`keepsVersionOne(keyID:)`).
    /// - Parameter source: e.g. PushSealDeviceKeyProviders' `KeychainKeyProvider`.
    public init(pinnedSenderKeys source: any PinnedSenderKeySource) {
        let keys = X25519.PrivateKeyCache(), pairs = HPKE.AuthPairCache(capacity: EnvelopeRegistry.openingPairCapacity)
        registry = .opening(pinnedSenders: [], keyCache: keys, pairCache: pairs)
        pinnedSenderKeys = source
        keyCache = keys
        pairCache = pairs
    }

    /// The payload's sealed part, after checking every envelope field; with a
    /// ``pinnedSenderKeys`` source, a version 2 envelope is then held to the app's pinned
    /// sender keys: base mode is refused once any is pinned, auth mode needs its
    /// `sender_key_id` pinned and usable (read only after every field checked out), and a
    /// version 1 envelope is refused once any is pinned unless its key is kept with an end date.
    /// - Throws: `FormatError` `.missingField`, `.wrongFieldType`, `.emptyField` (with
    ///   `field`), `.unknownAlgorithm`, `.invalidKeyID`, `.invalidBase64`, `.truncatedBox`,
    ///   `.invalidEnc`, `.downgradeRefused`, `.unknownSenderKey`; the source's errors.
    public func envelope(in payload: JSONValue) throws -> SealedPayload {
        guard let source = pinnedSenderKeys else { return try SealedPayload(payload: payload, registry: registry) }
        // Every field check first, with no sender pinned: base mode passes, auth mode stops at
        // its last step (the sender policy) with `.unknownSenderKey`.
        let unpinned: SealedPayload?
        do {
            unpinned = try SealedPayload(payload: payload, registry: registry)
        } catch let e as FormatError where e.code == .unknownSenderKey {
            unpinned = nil
        }
        if let unpinned, !(unpinned.envelope is HPKEBaseEnvelope), !(unpinned.envelope is A256GCMEnvelope) { return unpinned }
        if !(unpinned?.envelope is A256GCMEnvelope) {
            // The device key first: a wrong app id or a missing keychain group is reported as such,
            // never as a sender key that is not pinned (the pins are read as the same app, in the same groups).
            try source.checkDeviceKey(unpinned?.keyID ?? payload[WireFormat.keyIDField]?.stringValue ?? "")
        }
        let pinnedIDs = try source.pinnedSenderKeyIDs()
        if let unpinned, unpinned.envelope is A256GCMEnvelope {
            // Version 1 (security review G2): once a sender key is pinned, only a v1 key kept
            // with an end date (the migration window) opens; a v1 key kept for ever is a downgrade.
            let kept = try pinnedIDs.isEmpty || source.keepsVersionOne(keyID: unpinned.keyID)
            guard kept else {
                throw FormatError(.downgradeRefused, "a version 1 (\(unpinned.algorithm)) payload for an app that pinned a sender key (\(pinnedIDs.joined(separator: ", "))), under v1 key \(unpinned.keyID) kept without an end date")
            }
            return unpinned
        }
        pairCache?.retainOnly(senderKeyIDs: pinnedIDs)
        if let unpinned {
            guard pinnedIDs.isEmpty else {
                throw FormatError(.downgradeRefused, "a base-mode (\(HPKEBaseEnvelope.algorithmName)) payload for an app that pinned a sender key (\(pinnedIDs.joined(separator: ", ")))")
            }
            return unpinned
        }
        let senderKeyID = payload[HPKEAuthEnvelope.senderKeyIDField]?.stringValue ?? ""
        guard pinnedIDs.contains(senderKeyID) else {
            throw FormatError(.unknownSenderKey, "\(HPKEAuthEnvelope.senderKeyIDField) \"\(senderKeyID.prefix(64))\" is not pinned for this app",
                              field: HPKEAuthEnvelope.senderKeyIDField)
        }
        let pinned: PinnedSenderKey
        do {
            pinned = try source.pinnedSenderKey(senderKeyID)
        } catch {
            pairCache?.removeAll(senderKeyID: senderKeyID)  // revoked, past its grace, damaged: its pairs go
            throw error
        }
        guard let keyCache, let pairCache else { return try SealedPayload(payload: payload, registry: .opening(pinnedSenders: [pinned])) }
        return try SealedPayload(payload: payload, registry: .opening(pinnedSenders: [pinned], keyCache: keyCache, pairCache: pairCache))
    }

    /// Authenticates, decrypts and decodes the envelope.
    /// - Parameters:
    ///   - envelope: from ``envelope(in:)``.
    ///   - key: the key for its key id (32 bytes for `A256GCM`).
    ///   - appID: the app's bundle identifier from the extension's configuration.
    /// - Returns: the plaintext, after the box authenticated.
    /// - Throws: `FormatError` `.authenticationFailed`, `.invalidKey`, `.invalidAppID`, `.invalidPlaintext`.
    public func open(_ envelope: SealedPayload, with key: SecretBytes, appID: String) throws -> PushSealWire.PushNotification {
        try envelope.open(with: key, appID: appID)
    }
}
