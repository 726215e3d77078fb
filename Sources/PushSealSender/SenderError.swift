public import PushSealSystem
public import PushSealWire
/// An error from the sender: building, budgeting and sealing an APNs payload.
///
/// Compare errors by ``code``: the human ``reason`` may change between releases, the codes
/// will not. Reasons never contain key bytes or notification text beyond a short excerpt of
/// what was wrong.
public typealias SenderError = DomainError<SenderErrorDomain>

/// The domain of ``SenderError``: `name` is `sender`; `Detail`: The size in bytes that broke the 4096-byte APNs budget (``SenderError/payloadByteCount``).
public enum SenderErrorDomain: ErrorDomain { public static let name = "sender"; public typealias Detail = Int? }

extension SealingKeyError: SenderErrorConvertible {
    /// The sender error of the same code name (`invalidName` becomes `invalidOption`: an app
    /// id or recipient that breaks the key store's naming rules is a bad option), with the same
    /// reason and suggestion.
    public var senderError: SenderError {
        SenderError(code == .invalidName ? .invalidOption : SenderError.Code(code.name), reason, suggestion: suggestion)
    }
}

extension ErrorCode<SenderError> {
    /// The notification input is not JSON, or not UTF-8.
    public static var invalidJSON: Self { Self("invalidJSON") }
    /// A batch input line is longer than the reader's limit (``BatchSealer/Line/overlongByteCount``);
    /// its bytes were dropped unread.
    public static var lineTooLong: Self { Self("lineTooLong") }
    /// `push-seal batch --device-tokens`: the line gives no `deviceToken` and the store has none
    /// for its recipient in the environment asked for. The line is not sealed.
    public static var noDeviceToken: Self { Self("noDeviceToken") }
    /// `push-seal batch --device-tokens`: the store could not be asked for the chunk's tokens
    /// (e.g. the registry unreachable); the chunk's lines that need one fail, none is sealed.
    public static var deviceTokenLookupFailed: Self { Self("deviceTokenLookupFailed") }
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
    /// No such recipient (for this app): ``SealingKeyError/Code/unknownRecipient``.
    public static var unknownRecipient: Self { Self("unknownRecipient") }
    /// No usable primary key (destroyed or disabled): ``SealingKeyError/Code/keyUnavailable``.
    public static var keyUnavailable: Self { Self("keyUnavailable") }
    /// 2^32 seals of the primary (NIST SP 800-38D §8.3), rotate: ``SealingKeyError/Code/sealLimitReached``.
    public static var sealLimitReached: Self { Self("sealLimitReached") }
    /// No key store at the given place: ``SealingKeyError/Code/keyStoreMissing``.
    public static var keyStoreMissing: Self { Self("keyStoreMissing") }
    /// A group- or world-accessible key store, or another user's: ``SealingKeyError/Code/keyStoreInsecure``.
    public static var keyStoreInsecure: Self { Self("keyStoreInsecure") }
    /// Not readable in the keychain's device state (-25308; unlock it): ``SealingKeyError/Code/keyStoreLocked``.
    public static var keyStoreLocked: Self { Self("keyStoreLocked") }
    /// Damaged, an I/O error, another store failure: ``SealingKeyError/Code/keyStoreUnreadable``.
    public static var keyStoreUnreadable: Self { Self("keyStoreUnreadable") }
    /// The key store's disk is full (seal counts cannot be recorded): ``SealingKeyError/Code/keyStoreUnwritable``.
    public static var keyStoreUnwritable: Self { Self("keyStoreUnwritable") }
    /// The crypto core failed to seal (should not happen with a valid 32-byte key).
    public static var sealFailed: Self { Self("sealFailed") }
    /// A media file could not be encrypted (empty, or too large).
    public static var invalidMedia: Self { Self("invalidMedia") }
}

extension SenderError {
    /// The size in bytes that broke the 4096-byte APNs budget: the whole payload for
    /// `.payloadTooLarge`, the clear part alone for `.clearPartTooLarge`; `nil` for other codes.
    /// Read the number here, never out of ``reason``.
    public var payloadByteCount: Int? { detail }

    /// Creates an error with a stable `code`, a human `reason` (no secrets), when the fix is
    /// known exactly a `suggestion`, and for the budget errors the `payloadByteCount` in bytes.
    public init(_ code: Code, _ reason: String, suggestion: String? = nil, payloadByteCount: Int? = nil) {
        self.init(code, reason, suggestion: suggestion, detail: payloadByteCount)
    }
}

// Re-exported so that code importing only this module reads the error's `code`, `reason` and
// `suggestion` (their declarations live in PushSealSystem; MemberImportVisibility).
@_exported public import struct PushSealSystem.DomainError
