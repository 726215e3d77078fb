import PushSealSystem
import PushSealJSON
public import PushSealKeyRecords

/// A server key store that also holds each recipient's APNs device tokens (issue 15, "Device
/// tokens per recipient"), so `push-seal batch` can look a recipient's token up and `push-send`'s
/// 410 outcomes can remove dead ones. A refinement of ``ServerKeyStore`` like
/// ``RegistrationStore``: a store without tokens stays a valid `ServerKeyStore`; callers ask
/// `store as? any DeviceTokenStore`.
///
/// **Model.** A recipient is one app installation, which APNs gives one device token per
/// environment at a time. So the store holds at most one token per (app id, recipient,
/// ``DeviceTokenEnvironment``), and a token belongs to at most one recipient of an app: adding a
/// token replaces the recipient's former token of that environment and takes the token away from
/// any other recipient of the app that had it (the installation was handed to another account).
/// Each token keeps the time the app last registered it (`registeredAt`, milliseconds since
/// 1970, UTC: the unit of APNs' 410 `timestamp`).
///
/// **Invalidation.** APNs answers 410 `Unregistered` (or `ExpiredToken`) with the time it last
/// knew the token was not valid for the topic. A token is removed only when it was registered
/// before that time (`registeredAt < timestamp`); registered at or after it, it is kept: the app
/// registered it again after APNs saw it dead (APNs' "Handling notification responses", and
/// docs/apns.md "Token hygiene").
///
/// **Changes** are atomic per token and serialized with every other token change (the file
/// keychain: the keysets' lock; PostgreSQL: one transaction each, unique indexes on (app id,
/// token) and (app id, recipient, environment)). Every change is audited like a key change, in
/// the same trail (`keys-audit.log`, the registry's `pushseal_audit`), in the same atomic step:
/// `addDeviceToken` per token added (or re-registered), `removeDeviceToken` per token removed
/// (`reason` `replaced`, `movedToRecipient`, `unregistered` or `removed`), see ``KeysetChange/deviceTokenAdded(_:time:)``.
public protocol DeviceTokenStore: ServerKeyStore {
    /// Adds (or replaces) the token of (app id, recipient, environment).
    /// - Parameters:
    ///   - token: hex digits of even length, 2 ... ``DeviceToken/maxHexCount``; stored in lower case.
    ///   - registeredAtMs: when the app registered it: milliseconds since 1970 (UTC), 0 ... ``DeviceToken/maxRegisteredAtMs``.
    /// - Returns: the tokens this one replaced or took away from another recipient (empty when none).
    /// - Throws: `KeysError` `.invalidDeviceToken`, `.invalidName`, `.timeOutOfRange`; the store's errors.
    @discardableResult
    func addDeviceToken(_ token: String, appID: String, recipient: String, environment: DeviceTokenEnvironment,
                        registeredAtMs: Int64) throws -> [DeviceToken]

    /// The tokens of (app id, recipient), production first (empty when none).
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; the store's errors.
    func deviceTokens(appID: String, recipient: String) throws -> [DeviceToken]

    /// Every token, of one app or (`nil`) of all, sorted by app id, recipient, environment.
    /// - Throws: `KeysError` `.invalidName`, `.corruptKeyset`; the store's errors.
    func allDeviceTokens(appID: String?) throws -> [DeviceToken]

    /// The token of each recipient in `recipients` for `environment`, for a batch chunk (the
    /// registry: one query per 4,096 recipients). Recipients without one, or with a malformed
    /// name, are left out.
    /// - Throws: `KeysError` `.invalidName` (the app id), `.corruptKeyset`; the store's errors.
    func deviceTokens(appID: String, recipients: [String], environment: DeviceTokenEnvironment) throws -> [String: DeviceToken]

    /// Applies one APNs 410 per element: removes the token if it was registered before the 410's
    /// `timestamp`, keeps it otherwise.
    /// - Parameters:
    ///   - unregistrations: (token, the 410's timestamp in milliseconds since 1970, UTC) pairs;
    ///     tokens in any case (compared in lower case).
    /// - Returns: one outcome per element, in order.
    /// - Throws: `KeysError` `.invalidName` (the app id), `.invalidDeviceToken`, `.timeOutOfRange`
    ///   (checked before anything changes); the store's errors.
    func invalidateDeviceTokens(_ unregistrations: [(token: String, unregisteredAtMs: Int64)], appID: String) throws -> [DeviceTokenInvalidation]

    /// Removes the tokens of (app id, recipient) — every one, or only `token` — whatever their
    /// `registeredAt` (`push-keys token remove`: logout, account deletion, a stolen phone), in one
    /// atomic change audited as `removeDeviceToken` with `reason` `removed` per token.
    /// - Parameters:
    ///   - token: the one token to remove (any case), or `nil` for all of the recipient's.
    ///   - time: Unix seconds of the change (the audit lines').
    /// - Returns: the tokens removed; empty when the recipient has none (or not `token`).
    /// - Throws: `KeysError` `.invalidName`, `.invalidDeviceToken`, `.timeOutOfRange`; the store's errors.
    @discardableResult
    func removeDeviceTokens(appID: String, recipient: String, token: String?, time: Int64) throws -> [DeviceToken]
}

extension DeviceTokenStore {
    /// ``invalidateDeviceTokens(_:appID:)`` for one token.
    /// - Throws: as ``invalidateDeviceTokens(_:appID:)``.
    public func invalidateDeviceToken(_ token: String, appID: String, unregisteredAtMs: Int64) throws -> DeviceTokenInvalidation {
        try invalidateDeviceTokens([(token, unregisteredAtMs)], appID: appID).first ?? .unknown
    }
}

extension KeysetChange {
    /// The audit change of adding (or re-registering) a token: event `addDeviceToken`, members
    /// `environment`, `token`, `registeredAt` (ms); its `recipient` is the token's.
    /// - Parameter time: Unix seconds of the change.
    public static func deviceTokenAdded(_ t: DeviceToken, time: Int64) -> KeysetChange {
        KeysetChange(event: KeyStore.AuditEvent(event: "addDeviceToken", time: time, members: tokenMembers(t)))
    }

    /// The audit change of removing a token: event `removeDeviceToken`, members `environment`,
    /// `token`, `registeredAt` (ms), `reason` and, for a 410, `unregisteredAt` (its timestamp, ms),
    /// or for a token taken over, `byRecipient`; its `recipient` is the one that held the token.
    /// - Parameters:
    ///   - reason: why (``DeviceTokenRemoval``).
    ///   - time: Unix seconds of the change.
    public static func deviceTokenRemoved(_ t: DeviceToken, reason: DeviceTokenRemoval, time: Int64) -> KeysetChange {
        var members = tokenMembers(t) + [("reason", .string(reason.name))]
        switch reason {
        case .unregistered(let ms): members.append(("unregisteredAt", .integer(ms)))
        case .movedToRecipient(let r): members.append(("byRecipient", .string(r)))
        case .replaced, .removed: break
        }
        return KeysetChange(event: KeyStore.AuditEvent(event: "removeDeviceToken", time: time, members: members))
    }

    /// The audit changes of an add that removed `removed` (the result of
    /// ``DeviceTokenStore/addDeviceToken(_:appID:recipient:environment:registeredAtMs:)``) and
    /// stored `added`: the removals first, each with the recipient that held the token.
    /// - Parameter time: Unix seconds of the change.
    public static func deviceTokenAdd(_ added: DeviceToken, removed: [DeviceToken], time: Int64) -> [(recipient: String, change: KeysetChange)] {
        removed.map { ($0.recipient, deviceTokenRemoved($0, reason: $0.recipient == added.recipient ? .replaced : .movedToRecipient(added.recipient), time: time)) }
            + [(added.recipient, deviceTokenAdded(added, time: time))]
    }

    private static func tokenMembers(_ t: DeviceToken) -> [(key: String, value: JSONValue)] {
        [("environment", .string(t.environment.rawValue)), ("token", .string(t.token)), ("registeredAt", .integer(t.registeredAtMs))]
    }
}
