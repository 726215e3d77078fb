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

    /// Checks, before any sender check, that the device key a version 2 payload names can be
    /// found as the app's: the commonest setup mistakes (a wrong app id in the extension, an
    /// extension without the app's keychain group) must be reported as what they are, not as a
    /// sender key that is not pinned (newcomer review, friction 16).
    /// - Parameter keyID: the payload's `key_id`.
    /// - Throws: the source's errors (e.g. the keychain's -34018 or -25300, a wrong app id);
    ///   nothing when the key's absence is for the key lookup to report.
    func checkDeviceKey(_ keyID: String) throws

    /// Whether version 1 payloads under the app's v1 key `keyID` may open although a sender key
    /// is pinned (security review G2): `false` when that key is held but not kept with an end
    /// date (not `decryptOnly` with a `notAfter`: the migration window `push-keys device
    /// pin-sender` opens), `true` otherwise (no such key: the key lookup then refuses it).
    /// - Throws: the source's errors.
    func keepsVersionOne(keyID: String) throws -> Bool
}

extension PinnedSenderKeySource {
    /// No check (a source without device keys of its own).
    public func checkDeviceKey(_ keyID: String) throws {}

    /// Default for sources that know no v1 keys: a v1 payload is never let past a pin.
    public func keepsVersionOne(keyID: String) throws -> Bool { false }
}
