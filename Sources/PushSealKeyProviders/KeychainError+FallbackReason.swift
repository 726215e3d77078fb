import PushSealSystem
public import PushSealWire
public import PushSealKeychain

// The fallback reason tokens of keychain failures (docs/fallback.md), on the keys side: the
// decrypting service reads them through `FallbackReasonProviding` and knows no keychain.

extension KeychainError: FallbackReasonProviding {
    /// `keychain:<statusName>(<OSStatus>)`, e.g. `keychain:errSecInteractionNotAllowed(-25308)`,
    /// or `keychain:<code>` (e.g. `keychain:corrupt`) for codes without an OSStatus.
    public var fallbackReason: String {
        if let status = osStatus, let name = statusName { return "keychain:\(name)(\(status))" }
        return "keychain:\(code.name)"
    }
}
