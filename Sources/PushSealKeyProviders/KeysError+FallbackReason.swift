import PushSealSystem
public import PushSealWire
public import PushSealKeys

// The fallback reason tokens of key failures (docs/fallback.md), on the keys side.

extension KeysError: FallbackReasonProviding {
    /// The code's name: `unknownKey`, `keyDestroyed`, `keyDisabled`, `keyExpired`, …
    public var fallbackReason: String { code.name }
}
