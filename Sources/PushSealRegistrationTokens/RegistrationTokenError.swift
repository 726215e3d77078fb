public import PushSealSystem

/// An error from minting or verifying a registration token (docs/registration.md).
///
/// Compare by ``code``: codes are stable, the human ``reason`` may change. Reasons never contain
/// the secret or a signature; they may name the token's `aud`, `sub` and times.
public typealias RegistrationTokenError = DomainError<RegistrationTokenErrorDomain>

/// The domain of ``RegistrationTokenError``: `name` is `registrationToken`.
public enum RegistrationTokenErrorDomain: ErrorDomain { public static let name = "registrationToken" }

extension ErrorCode<RegistrationTokenError> {
    /// Not three base64url parts, a part that is not a JSON object, or a claim missing or of the
    /// wrong type (`sub`, `aud`, `jti` strings; `iat`, `exp` integers).
    public static var malformedToken: Self { Self("malformedToken") }
    /// The header's `alg` is not `HS256` (`none`, `RS256`, … are refused before any signature check).
    public static var unsupportedAlgorithm: Self { Self("unsupportedAlgorithm") }
    /// The HMAC-SHA256 signature does not verify under the shared secret.
    public static var badSignature: Self { Self("badSignature") }
    /// `exp` is in the past (beyond the leeway).
    public static var expired: Self { Self("expired") }
    /// `iat` is in the future (beyond the leeway).
    public static var notYetValid: Self { Self("notYetValid") }
    /// `exp - iat` is more than 24 hours, or `exp` is not after `iat`.
    public static var lifetimeTooLong: Self { Self("lifetimeTooLong") }
    /// `aud` is not the app id the verifier serves.
    public static var wrongAudience: Self { Self("wrongAudience") }
    /// A recipient, app id or token id that is empty, too long or holds control characters.
    public static var invalidClaim: Self { Self("invalidClaim") }
    /// The secret file is missing, not private (0600, owner), too short (under 32 characters) or
    /// holds characters outside printable ASCII.
    public static var invalidSecret: Self { Self("invalidSecret") }
}
