public import PushSealSystem
import PushSealJSON

// The device token values shared by the server stores (the file keychain, the registry) and their
// callers; the store protocol itself is PushSealServerKeys' `DeviceTokenStore`.

/// The APNs environment a device token belongs to (the app's `aps-environment` entitlement):
/// a development token is only valid against `api.sandbox.push.apple.com`.
public enum DeviceTokenEnvironment: String, Sendable, Hashable, CaseIterable, Comparable {
    /// `api.push.apple.com` (App Store, TestFlight, ad hoc builds).
    case production
    /// `api.sandbox.push.apple.com` (builds signed for development).
    case development

    /// Production first.
    public static func < (a: Self, b: Self) -> Bool { a == .production && b == .development }
}

/// One stored device token (public data: a token is an address, not a secret).
public struct DeviceToken: Sendable, Hashable {
    /// Longest token accepted: 256 hex digits (128 bytes; APNs tokens are 32 bytes today, and
    /// Apple says never to assume a length).
    public static let maxHexCount = 256
    /// Latest `registeredAt`: ``KeyTime/maxTimeSeconds`` in milliseconds.
    public static let maxRegisteredAtMs = KeyTime.maxTimeSeconds * 1000

    /// The app id (the APNs topic without a push type suffix).
    public var appID: String
    /// The recipient (one app installation).
    public var recipient: String
    /// The token: lower-case hex digits, even count.
    public var token: String
    /// Its APNs environment.
    public var environment: DeviceTokenEnvironment
    /// When the app (last) registered it: milliseconds since 1970 (UTC).
    public var registeredAtMs: Int64

    /// Creates a stored token from checked parts (for a store that keeps them elsewhere).
    public init(appID: String, recipient: String, token: String, environment: DeviceTokenEnvironment, registeredAtMs: Int64) {
        self.appID = appID
        self.recipient = recipient
        self.token = token
        self.environment = environment
        self.registeredAtMs = registeredAtMs
    }

    /// The same token of the same recipient and environment (whatever its `registeredAt`): a
    /// re-registration, not a replacement.
    public func isSameRegistration(as other: DeviceToken) -> Bool {
        appID == other.appID && recipient == other.recipient && token == other.token && environment == other.environment
    }

    /// Checks a token and returns it in lower case.
    /// - Throws: `KeysError` `.invalidDeviceToken` (empty, odd length, a non-hex character, over ``maxHexCount``).
    public static func normalized(_ token: String) throws -> String {
        let u = token.utf8
        guard !u.isEmpty, u.count % 2 == 0, u.count <= maxHexCount,
              u.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }) else {
            throw KeysError(.invalidDeviceToken,
                "a device token must be 2 to \(maxHexCount) hex digits of even length, got \(u.count) characters\(u.count <= maxHexCount ? "" : " (too long)")")
        }
        return token.lowercased()
    }

    /// Checks a `registeredAt` or 410 timestamp (milliseconds).
    /// - Throws: `KeysError` `.timeOutOfRange`.
    public static func checkTimeMs(_ ms: Int64, named name: String) throws {
        guard (0...maxRegisteredAtMs).contains(ms) else {
            throw KeysError(.timeOutOfRange, "\(name) \(ms) ms is outside 0 ... \(maxRegisteredAtMs) (1970 to 9999, in milliseconds)")
        }
    }

    /// Checks every argument of ``DeviceTokenStore/addDeviceToken(_:appID:recipient:environment:registeredAtMs:)``.
    /// - Returns: the token in lower case.
    /// - Throws: `KeysError` `.invalidDeviceToken`, `.invalidName`, `.timeOutOfRange`.
    public static func checkAdd(_ token: String, appID: String, recipient: String, registeredAtMs: Int64) throws -> String {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        try checkTimeMs(registeredAtMs, named: "registeredAt")
        return try normalized(token)
    }

    /// Checks the arguments of ``DeviceTokenStore/removeDeviceTokens(appID:recipient:token:time:)``.
    /// - Returns: the token in lower case, or `nil`.
    /// - Throws: `KeysError` `.invalidName`, `.invalidDeviceToken`, `.timeOutOfRange`.
    public static func checkRemove(appID: String, recipient: String, token: String?, time: Int64) throws -> String? {
        try KeyID.validateAppID(appID)
        try KeyID.validateRecipient(recipient)
        try KeyTime.checkTime(time)
        return try token.map(normalized)
    }

    /// Checks every 410 and returns the tokens in lower case.
    /// - Throws: `KeysError` `.invalidDeviceToken`, `.timeOutOfRange`.
    public static func checkUnregistrations(_ u: [(token: String, unregisteredAtMs: Int64)]) throws -> [(token: String, unregisteredAtMs: Int64)] {
        try u.map { item in
            try checkTimeMs(item.unregisteredAtMs, named: "the 410 timestamp")
            return (try normalized(item.token), item.unregisteredAtMs)
        }
    }
}

/// What an APNs 410 did to a stored token.
public enum DeviceTokenInvalidation: String, Sendable, Hashable {
    /// Registered before the 410's timestamp: removed.
    case invalidated
    /// Registered at or after the 410's timestamp (the app registered it again): kept.
    case keptReregistered
    /// Not in the store for this app (never added, or removed already).
    case unknown
}

extension ErrorCode<KeysError> {
    /// A device token that is not 2 to 256 hex digits of even length.
    public static var invalidDeviceToken: Self { Self("invalidDeviceToken") }
}

/// Why a stored device token was removed (the `reason` of its `removeDeviceToken` audit line).
public enum DeviceTokenRemoval: Sendable, Hashable {
    /// The recipient registered another token for the environment.
    case replaced
    /// Another recipient of the app (named) registered the same token: the installation changed hands.
    case movedToRecipient(String)
    /// An APNs 410 whose timestamp (ms since 1970, UTC) is after the token's `registeredAt`.
    case unregistered(Int64)
    /// Removed on request (``DeviceTokenStore/removeDeviceTokens(appID:recipient:token:time:)``).
    case removed

    /// `replaced`, `movedToRecipient`, `unregistered`.
    public var name: String {
        switch self {
        case .replaced: "replaced"
        case .movedToRecipient: "movedToRecipient"
        case .unregistered: "unregistered"
        case .removed: "removed"
        }
    }
}
