import PushSealSystem
public import PushSealWire
public import PushSealKeyRecords
// The fallback reason tokens of key failures (docs/fallback.md), on the keys side.

extension KeysErrorDomain: FallbackReasonDomain {
    /// The code's name: `unknownKey`, `keyDestroyed`, `keyDisabled`, `keyExpired`, …
    public static func fallbackReason(of error: KeysError) -> String { error.code.name }
}
