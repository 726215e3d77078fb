import PushSealFormat
import PushSealKeychain
import PushSealKeys

// The fallback reason tokens of key lookup failures (docs/fallback.md), on the keys side: the
// decrypting service reads them through `FallbackReasonProviding` and knows no keychain.

extension KeysError: FallbackReasonProviding {
    /// The code's name: `unknownKey`, `keyDestroyed`, `keyDisabled`, `keyExpired`, …
    public var fallbackReason: String { code.name }
}

extension KeychainError: FallbackReasonProviding {
    /// `keychain:<statusName>(<OSStatus>)`, e.g. `keychain:errSecInteractionNotAllowed(-25308)`,
    /// or `keychain:<code>` (e.g. `keychain:corrupt`) for codes without an OSStatus.
    public var fallbackReason: String {
        if let status = osStatus, let name = statusName { return "keychain:\(name)(\(status))" }
        return "keychain:\(code.name)"
    }
}
