import PushSealSystem
public import PushSealWire
public import PushSealKeychain

// The fallback reason tokens of keychain failures (docs/fallback.md), on the keys side: the
// decrypting service reads them through `FallbackReasonProviding` and knows no keychain.

extension KeychainErrorDomain: FallbackReasonDomain {
    /// `keychain:<statusName>(<OSStatus>)`, e.g. `keychain:errSecInteractionNotAllowed(-25308)`,
    /// or `keychain:<code>` (e.g. `keychain:corrupt`) for codes without an OSStatus.
    public static func fallbackReason(of error: KeychainError) -> String {
        if let status = error.osStatus, let name = error.statusName { return "keychain:\(name)(\(status))" }
        return "keychain:\(error.code.name)"
    }
}
