public import PushSealSystem

/// An error from PushSealAPNs: a notification that cannot be sent as given, a provider key
/// that cannot sign, or a client that cannot start. Compare by ``code``.
public typealias APNsError = DomainError<APNsErrorDomain>

/// The domain of ``APNsError``: `name` is `apns`.
public enum APNsErrorDomain: ErrorDomain { public static let name = "apns" }

extension ErrorCode<APNsError> {
    /// The device token is not an even number of hex digits (any length is accepted).
    public static var badDeviceToken: Self { Self("badDeviceToken") }
    /// The payload is over the push type's limit (4096 bytes; VoIP 5120) or empty.
    public static var payloadTooLarge: Self { Self("payloadTooLarge") }
    /// The payload is empty.
    public static var payloadEmpty: Self { Self("payloadEmpty") }
    /// `apns-push-type` is not one APNs knows.
    public static var unknownPushType: Self { Self("unknownPushType") }
    /// `apns-priority` is not 10, 5 or 1, or not 5 for a background notification.
    public static var badPriority: Self { Self("badPriority") }
    /// `apns-collapse-id` is over 64 bytes.
    public static var badCollapseID: Self { Self("badCollapseId") }
    /// `apns-expiration` is negative.
    public static var badExpiration: Self { Self("badExpiration") }
    /// The topic is empty, or a header value holds a control character.
    public static var badTopic: Self { Self("badTopic") }
    /// The `.p8` provider key cannot be read or is not a PKCS#8 P-256 key; or the key id
    /// or team id is not 10 characters of A-Z and 0-9.
    public static var badProviderKey: Self { Self("badProviderKey") }
    /// The endpoint is not `host:port`, or the CA file is missing.
    public static var badEndpoint: Self { Self("badEndpoint") }
    /// TLS (OpenSSL) or the transfer thread could not be set up.
    public static var transportUnavailable: Self { Self("transportUnavailable") }
}

// Re-exported so that code importing only this module reads the error's `code`, `reason` and
// `suggestion` (their declarations live in PushSealSystem; MemberImportVisibility).
@_exported public import struct PushSealSystem.DomainError
