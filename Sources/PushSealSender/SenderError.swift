public import PushSealSystem
/// An error from the sender: building, budgeting and sealing an APNs payload.
///
/// Compare errors by ``code``: the human ``reason`` may change between releases, the codes
/// will not. Reasons never contain key bytes or notification text beyond a short excerpt of
/// what was wrong.
public struct SenderError: CodedError {
    /// The stable codes of this domain (constants below).
    public typealias Code = ErrorCode<SenderError>
    /// `sender`.
    public static let domain = "sender"

    /// The stable code; equality and hashing use it alone.
    public let code: Code
    /// A human explanation: lower case, no full stop, no secrets.
    public let reason: String
    /// What the user can do about it, when known exactly (e.g. the key store's
    /// `chmod 600 PATH` for a group-readable file: ``KeychainError/suggestion``); `nil` otherwise.
    public let suggestion: String?

    /// Creates an error with a stable `code`, a human `reason` (no secrets) and, when the fix
    /// is known exactly, a `suggestion`.
    public init(_ code: Code, _ reason: String, suggestion: String? = nil) {
        self.code = code
        self.reason = reason
        self.suggestion = suggestion
    }
}

extension ErrorCode<SenderError> {
    /// The notification input is not JSON, or not UTF-8.
    public static var invalidJSON: Self { Self("invalidJSON") }
    /// A batch input line is longer than the reader's limit (``BatchSealer/Line/overlongByteCount``);
    /// its bytes were dropped unread.
    public static var lineTooLong: Self { Self("lineTooLong") }
    /// The notification has a member of the wrong JSON type, an unknown member, a value a
    /// receiver would reject (a `media.url` that is not an absolute http(s) URL, a bad
    /// locale tag), or a time out of range (a negative `ttl`, `iat` or `exp` after
    /// 9999-12-31T23:59:59Z, `exp` before `iat`, a `ttl` that takes `exp` past that).
    public static var invalidNotification: Self { Self("invalidNotification") }
    /// The notification has no non-empty title, subtitle or body: nothing to show.
    public static var emptyNotification: Self { Self("emptyNotification") }
    /// The fallback alert's title or body is empty: iOS would not run the extension.
    public static var emptyFallbackAlert: Self { Self("emptyFallbackAlert") }
    /// An APNs option is invalid: priority other than 5 or 10, a collapse id over 64
    /// bytes, an unknown interruption level, a relevance score outside 0...1, a negative
    /// badge, a default TTL that takes `exp` past 9999-12-31T23:59:59Z; or an app id or
    /// recipient that is empty or breaks the naming rules (the reason names the rule).
    public static var invalidOption: Self { Self("invalidOption") }
    /// The serialized payload is over the 4096-byte APNs budget and fitting was not asked for.
    public static var payloadTooLarge: Self { Self("payloadTooLarge") }
    /// Fitting was asked for, but even without padding, media and with the body cut to an
    /// ellipsis the payload is over the budget (e.g. a huge title or `data`).
    public static var cannotFit: Self { Self("cannotFit") }
    /// The clear part of the payload alone (`aps` with the fallback alert, `sound`,
    /// `thread-id`, `category`, and the sealed fields' names) is over the 4096-byte budget:
    /// nothing sealed fits, and fitting cannot help. The reason names the largest member.
    public static var clearPartTooLarge: Self { Self("clearPartTooLarge") }
    /// The key provider knows no such recipient (for this app).
    public static var unknownRecipient: Self { Self("unknownRecipient") }
    /// The recipient exists but has no usable primary key (destroyed or disabled).
    public static var keyUnavailable: Self { Self("keyUnavailable") }
    /// The recipient's primary key reached 2^32 seals, the limit for random 96-bit nonces
    /// (NIST SP 800-38D §8.3): rotate the keyset before sealing again.
    public static var sealLimitReached: Self { Self("sealLimitReached") }
    /// There is no key store (keychain directory) at the given place.
    public static var keyStoreMissing: Self { Self("keyStoreMissing") }
    /// The key store is group- or world-accessible, or owned by another user: refused.
    public static var keyStoreInsecure: Self { Self("keyStoreInsecure") }
    /// The recipient's keyset item is not readable in the keychain's device state
    /// (`errSecInteractionNotAllowed`, -25308: before first unlock, or locked for a
    /// `WhenUnlocked` item); unlocking the keychain makes it readable again.
    public static var keyStoreLocked: Self { Self("keyStoreLocked") }
    /// The key store could not be read (damaged, an I/O error, or another key store failure).
    public static var keyStoreUnreadable: Self { Self("keyStoreUnreadable") }
    /// The crypto core failed to seal (should not happen with a valid 32-byte key).
    public static var sealFailed: Self { Self("sealFailed") }
    /// A media file could not be encrypted (empty, or too large).
    public static var invalidMedia: Self { Self("invalidMedia") }
}
