public import PushSealSystem

/// An error that names its own fallback reason token (see docs/fallback.md), for key
/// providers and payload openers plugged into the decrypting service (PushSealExtension's
/// `DecryptingServiceExtension`).
public protocol FallbackReasonProviding {
    /// A short, stable token without spaces, e.g. `keychain:errSecItemNotFound(-25300)`.
    var fallbackReason: String { get }
}

/// An error domain (``DomainError``) whose errors give a ``FallbackReasonProviding`` token: the
/// keys side's domains (keys, keychain) conform in PushSealDeviceKeyProviders, so the extension reads
/// their reasons without knowing either module.
public protocol FallbackReasonDomain: ErrorDomain {
    /// The short, stable token for `error`, e.g. `keychain:errSecItemNotFound(-25300)`.
    static func fallbackReason(of error: DomainError<Self>) -> String
}

extension DomainError: FallbackReasonProviding where Domain: FallbackReasonDomain {
    /// ``FallbackReasonDomain/fallbackReason(of:)`` of this error.
    public var fallbackReason: String { Domain.fallbackReason(of: self) }
}
