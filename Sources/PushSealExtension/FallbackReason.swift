import PushSealSystem
public import PushSealWire

/// The stable reason tokens the decrypting service reports (docs/fallback.md lists each with
/// its cause and fix). Tokens never change between releases; the human detail may.
public enum FallbackReason {
    /// Decrypted, no media named.
    public static let decrypted = "decrypted"
    /// Decrypted, media downloaded and attached.
    public static let mediaAttached = "mediaAttached"
    /// The plaintext's `exp` is not after the device clock (checked after authentication).
    public static let expired = "expired"
    /// The plaintext's `id` was shown recently (replay guard).
    public static let replayed = "replayed"
    /// The key is `decryptOnly` (retired) and the message's sealed `iat` is after its
    /// `retiredAt`, or absent (docs/keychain.md; security review F4).
    public static let keyRetired = "keys:keyRetired"
    /// The message is older than the replay guard can vouch for: its `exp` (or `iat` + 30 days)
    /// has passed, or it runs out before ids the guard had to drop early.
    public static let replayTooOld = "replayTooOld"
    /// The replay guard's store cannot be locked, read, parsed or written: fail closed.
    public static let replayGuardUnavailable = "replayGuardUnavailable"
    /// Decrypted title, subtitle and body are all empty for the device locale.
    public static let blankContent = "blankContent"
    /// The expiry call came while media was still downloading.
    public static let mediaTimeWillExpire = "media:timeWillExpire"
    /// Media named but no App Group container configured.
    public static let mediaNoContainer = "media:noAppGroupContainer"
    /// Decrypted with its media attached, but the system could not move the attachment into
    /// its store when the content was handed back (``SystemAttachmentStore``): the text is
    /// shown without it, once.
    public static let mediaStoreFailed = "media:storeFailed"
    /// Decryption had not finished when the expiry call came.
    public static let timeWillExpire = "timeWillExpire"

    /// The token for an authentic message of another kind than the receiver acts on
    /// (FORMAT.md §5.1): `wrongKind:retract` in the extension (a retract is never displayed),
    /// `wrongKind:display` in the app's background handler (which only removes).
    public static func wrongKind(_ kind: MessageKind) -> String { "wrongKind:\(kind.rawValue)" }

    /// The token for a failure reading the envelope (`encrypted_data`, `key_id`, `enc_alg`,
    /// an algorithm's header field): `missingField:<field>`, `wrongFieldType:<field>`,
    /// `emptyField:<field>` (the field from `FormatError.field`), `unknownAlgorithm`,
    /// `invalidKeyID`, `invalidBase64`, `truncatedBox`; else `malformedEnvelope`.
    /// - Parameter error: what the opener threw.
    public static func envelope(_ error: any Error) -> String {
        if let e = error as? any FallbackReasonProviding { return e.fallbackReason }
        guard let e = error as? FormatError else { return "malformedEnvelope" }
        switch e.code {
        case .missingField, .wrongFieldType, .emptyField:
            if let field = e.field { return "\(e.code.name):\(field)" }
            return e.code.name
        default:
            return e.code.name
        }
    }

    /// The token for a key lookup failure: the provider's own token (``FallbackReasonProviding``:
    /// PushSealDeviceKeyProviders maps a keychain error to `keychain:<statusName>(<OSStatus>)`, e.g.
    /// `keychain:errSecInteractionNotAllowed(-25308)`, or `keychain:<code>` without an OSStatus,
    /// and a key error to its code, e.g. `unknownKey`, `keyDestroyed`, `keyDisabled`); else
    /// `keyUnavailable`.
    public static func key(_ error: any Error) -> String {
        if let e = error as? any FallbackReasonProviding { return e.fallbackReason }
        return "keyUnavailable"
    }

    /// The token for an open failure: `authenticationFailed`, `invalidPlaintext`,
    /// `invalidKey`, `invalidAppID` (or any other `FormatError` code name); else `openFailed`.
    public static func open(_ error: any Error) -> String {
        if let e = error as? any FallbackReasonProviding { return e.fallbackReason }
        if let e = error as? FormatError { return e.code.name }
        return "openFailed"
    }
}
