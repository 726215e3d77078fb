/// An error that names its own fallback reason token (see docs/fallback.md), for key
/// providers and payload openers plugged into the decrypting service (PushSealExtension's
/// `DecryptingServiceExtension`).
public protocol FallbackReasonProviding {
    /// A short, stable token without spaces, e.g. `keychain:errSecItemNotFound(-25300)`.
    var fallbackReason: String { get }
}
