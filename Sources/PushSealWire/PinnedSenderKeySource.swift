/// Where a receiver reads the sender keys its app pinned (FORMAT.md §V.6, §V.7 step 2), for
/// each version 2 payload at the time it arrives: the device keychain's kind 3 items
/// (PushSealDeviceKeyProviders' `KeychainKeyProvider`, docs/keychain.md "Device key items"). Given to
/// PushSealExtension's `WireFormatOpener(pinnedSenderKeys:)`. Errors follow
/// ``NotificationKeyProvider``'s rule (a ``FallbackReasonProviding`` error names its token).
public protocol PinnedSenderKeySource: Sendable {
    /// The key ids of every sender key the app pinned, whatever their status or state (a
    /// non-empty list turns on the downgrade refusal); empty when none. Reads attributes only.
    /// - Throws: the source's errors (a keychain error with its OSStatus).
    func pinnedSenderKeyIDs() throws -> [String]

    /// The pinned sender key `keyID`, after the reader rules of its status (a revoked or
    /// past-grace sender key no longer authenticates anything).
    /// - Parameter keyID: a key id from ``pinnedSenderKeyIDs()``.
    /// - Returns: the key.
    /// - Throws: the source's errors: a damaged item, a disabled or expired key, a keychain error.
    func pinnedSenderKey(_ keyID: String) throws -> PinnedSenderKey

    /// Whether version 1 payloads under the app's v1 key `keyID` may open although a sender key
    /// is pinned (security review G2): `false` when that key is held but not kept with an end
    /// date (not `decryptOnly` with a `notAfter`: the migration window `push-keys device
    /// pin-sender` opens), `true` otherwise (no such key: the key lookup then refuses it).
    /// - Throws: the source's errors.
    func keepsVersionOne(keyID: String) throws -> Bool
}

extension PinnedSenderKeySource {
    /// Default for sources that know no v1 keys: a v1 payload is never let past a pin.
    public func keepsVersionOne(keyID: String) throws -> Bool { false }
}
