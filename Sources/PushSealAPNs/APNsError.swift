import PushSealCrypto

/// An error from PushSealAPNs: a notification that cannot be sent as given, a provider key
/// that cannot sign, or a client that cannot start. Compare by ``code``.
public struct APNsError: CodedError {
    /// A stable, machine-readable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name, e.g. `badDeviceToken`.
        public let name: String

        init(_ name: String) { self.name = name }

        /// The device token is not an even number of hex digits (any length is accepted).
        public static let badDeviceToken = Code("badDeviceToken")
        /// The payload is over the push type's limit (4096 bytes; VoIP 5120) or empty.
        public static let payloadTooLarge = Code("payloadTooLarge")
        /// The payload is empty.
        public static let payloadEmpty = Code("payloadEmpty")
        /// `apns-push-type` is not one APNs knows.
        public static let unknownPushType = Code("unknownPushType")
        /// `apns-priority` is not 10, 5 or 1, or not 5 for a background notification.
        public static let badPriority = Code("badPriority")
        /// `apns-collapse-id` is over 64 bytes.
        public static let badCollapseID = Code("badCollapseId")
        /// `apns-expiration` is negative.
        public static let badExpiration = Code("badExpiration")
        /// The topic is empty, or a header value holds a control character.
        public static let badTopic = Code("badTopic")
        /// The `.p8` provider key cannot be read or is not a PKCS#8 P-256 key; or the key id
        /// or team id is not 10 characters of A-Z and 0-9.
        public static let badProviderKey = Code("badProviderKey")
        /// The endpoint is not `host:port`, or the CA file is missing.
        public static let badEndpoint = Code("badEndpoint")
        /// libcurl could not be set up (no HTTP/2 support, or an allocation failed).
        public static let transportUnavailable = Code("transportUnavailable")

        public var description: String { name }
    }

    /// The stable code; equality and hashing use it alone.
    public let code: Code
    /// A human explanation, lower case, without secrets.
    public let reason: String

    /// Creates an error with a stable `code` and a human `reason` (no secrets).
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}
