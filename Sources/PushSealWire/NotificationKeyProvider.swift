public import PushSealCrypto

/// Gives the decrypting service (PushSealExtension) the key for a key id, as the extension's
/// own identity would read it from the keychain (its entitlements, the device lock state). It
/// lives in the wire module so that key stores can conform without depending on the extension;
/// the real one is PushSealDeviceKeyProviders' `KeychainKeyProvider`.
///
/// The service turns a thrown error into a stable reason token (docs/fallback.md): an error
/// conforming to ``FallbackReasonProviding`` gives its own token (a keychain error
/// `keychain:<statusName>(<OSStatus>)`, e.g. `keychain:errSecInteractionNotAllowed(-25308)`; a
/// key error its code, e.g. `unknownKey`); anything else is `keyUnavailable`. The error's
/// description goes to the detail and the log: it must never contain key bytes.
public protocol NotificationKeyProvider: Sendable {
    /// The 32-byte key stored under `keyID`.
    /// - Parameter keyID: 1–64 characters of `A-Z a-z 0-9 _ -`, from the payload's `key_id`.
    /// - Returns: the key; the service drops it when done (it wipes itself).
    /// - Throws: any error whose description explains why (no key bytes in it); see above.
    func key(for keyID: String) throws -> SecretBytes

    /// The key for `keyID` and, when it is retired (`decryptOnly`), its `retiredAt` in seconds
    /// since 1970 UTC: the service then refuses a message whose sealed `iat` is after it, or
    /// that has no `iat` (`keys:keyRetired`). The default calls ``key(for:)`` (never retired).
    /// - Throws: as ``key(for:)``.
    func keyAndRetirement(for keyID: String) throws -> (key: SecretBytes, retiredAt: Int64?)

    /// The key for a payload's envelope and its retirement, as ``keyAndRetirement(for:)-(String)``
    /// but knowing the version: a keychain holding both kinds reads a version 1 key for an
    /// `A256GCM` envelope and a version 2 device private key for an HPKE one (docs/keychain.md
    /// "Device key items"); in auth mode `retiredAt` is the earlier of the device key's and
    /// the pinned sender key's. What the decrypting service calls. The default calls
    /// ``keyAndRetirement(for:)-(String)`` with the envelope's key id.
    /// - Parameter envelope: the envelope just read (its `keyID`, `envelope`, `headerValues`).
    /// - Throws: as ``key(for:)``.
    func keyAndRetirement(for envelope: SealedPayload) throws -> (key: SecretBytes, retiredAt: Int64?)
}

extension NotificationKeyProvider {
    /// ``key(for:)``, never retired.
    public func keyAndRetirement(for keyID: String) throws -> (key: SecretBytes, retiredAt: Int64?) {
        (try key(for: keyID), nil)
    }

    /// ``keyAndRetirement(for:)-(String)`` for the envelope's key id.
    public func keyAndRetirement(for envelope: SealedPayload) throws -> (key: SecretBytes, retiredAt: Int64?) {
        try keyAndRetirement(for: envelope.keyID)
    }
}
