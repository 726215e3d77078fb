import PushSealJSON
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCrypto
import PushSealKeychain
public import PushSealKeyRecords
import PushSealDeviceKeys

/// A point a rotation has reached; ``KeyStore/rotate(appID:recipient:graceSeconds:device:promote:now:afterStep:)``
/// reports each one after it is durably stored (tests kill the process there).
public enum RotationStep: String, Sendable, CaseIterable {
    /// The new key is in the server keyset as `pending` (the journal records the rotation).
    case added
    /// The device keyset holds the new key (only with a device keychain).
    case installed
    /// The server promoted the new key; the old primary is `decryptOnly` until `notAfter`.
    case promoted
    /// The device keyset mirrors the promotion (only with a device keychain).
    case devicePromoted
    /// The journal entry is cleared: the rotation is complete.
    case finished
}

/// What a rotation did.
public struct RotationResult: Sendable, Hashable {
    /// The new key's id.
    public var keyID: String
    /// The former primary's id (now `decryptOnly`), or `nil`.
    public var previousKeyID: String?
    /// End of the former primary's grace window, Unix seconds, or `nil`.
    public var notAfter: Int64?
    /// `true` when the new key is primary on the server (`false` with `promote: false`).
    public var promoted: Bool
    /// `true` when a device keyset was updated.
    public var deviceUpdated: Bool
    /// `true` when this call resumed an interrupted rotation instead of starting one.
    public var resumed: Bool

    /// Creates a rotation result (see the properties).
    public init(keyID: String, previousKeyID: String?, notAfter: Int64?, promoted: Bool, deviceUpdated: Bool, resumed: Bool) {
        self.keyID = keyID
        self.previousKeyID = previousKeyID
        self.notAfter = notAfter
        self.promoted = promoted
        self.deviceUpdated = deviceUpdated
        self.resumed = resumed
    }
}

extension KeyStore {
    /// Rotates a keyset in Tink's order: add a new key (non-primary) to the server keyset, install
    /// it on the device, then promote it on the server; the old primary becomes `decryptOnly`
    /// until `now + graceSeconds`.
    ///
    /// Every step is one atomic keychain update and idempotent. The server keyset records the
    /// rotation (a journal entry) until it is finished, so a rotation killed at any point leaves
    /// both keysets usable — the old primary keeps sealing until promotion, and the device
    /// already holds the new key when the server starts using it — and calling `rotate` again
    /// resumes and completes it rather than starting another.
    /// - Parameters:
    ///   - appID: the app id; `recipient`: the recipient (the keyset must exist).
    ///   - graceSeconds: grace window of the old primary (default 30 days), 0 or more seconds;
    ///     `now + graceSeconds` must not pass ``maxTimeSeconds``. A resumed rotation keeps the
    ///     grace it was started with.
    ///   - device: the device's key store, or `nil` (then deliver the new key record yourself
    ///     before it is promoted — see `promote: false`).
    ///   - promote: `false` stops after adding (and installing): promote later with ``promote(appID:recipient:keyID:graceSeconds:now:)``
    ///     once every device holds the key.
    ///   - now: Unix seconds, 0 to ``maxTimeSeconds``.
    ///   - afterStep: called after each durable step (tests use it to crash on purpose).
    /// - Throws: `KeysError` `.unknownKeyset`, `.invalidState` (same keychain as server and
    ///   device; a resumed rotation whose recorded grace takes `notAfter` past
    ///   ``maxTimeSeconds``), `.duplicateKeyID`, `.timeOutOfRange` (`now` or `graceSeconds`; checked
    ///   before anything is written); `KeychainError`.
    @discardableResult
    public func rotate(appID: String, recipient: String, graceSeconds: Int64 = KeyTime.defaultGraceSeconds, device: KeyStore? = nil,
                       promote: Bool = true, now: Int64 = KeyTime.now(), afterStep: (RotationStep) -> Void = { _ in }) throws -> RotationResult {
        if let device, device.keychain.url.standardizedFileURL.path == keychain.url.standardizedFileURL.path {
            try KeyID.validateAppID(appID)
            try KeyID.validateRecipient(recipient)
            _ = try KeyTime.time(now, plus: graceSeconds, named: "graceSeconds")
            throw KeysError(.invalidState, "the device keychain and the server keychain are the same directory")
        }
        return try transitions.rotate(appID: appID, recipient: recipient, graceSeconds: graceSeconds, device: device, promote: promote,
                                      now: now, afterStep: afterStep)
    }

    /// Makes this (device) keyset mirror `source`: adds keys it lacks, moves statuses forward.
    /// A store that ``writesDeviceKeyItems`` mirrors it as kind 1 device key items instead
    /// (``DeviceKeyItem/importV1(_:expectedAppID:in:accessGroup:)``, after converting a legacy
    /// keyset of the recipient).
    func sync(from source: Keyset, now: Int64, event: String) throws {
        if writesDeviceKeyItems {
            var keys = source.keys
            for i in keys.indices where !keys[i].info.status.canOpen { keys[i].secret = nil }
            try DeviceKeyItem.convertKeysets(appID: source.appID, recipient: source.recipient, in: self)
            try DeviceKeyItem.importV1(KeyRecord(appID: source.appID, recipient: source.recipient, keys: keys), in: keychain, accessGroup: accessGroup)
            return
        }
        try mutate(appID: source.appID, recipient: source.recipient, allowCreate: true) { ks, _ in
            try Self.merge(&ks, incoming: source.keys, now: now, graceSeconds: source.rotation?.graceSeconds ?? KeyTime.defaultGraceSeconds, event: event)
        }
    }

    /// Merges `incoming` keys into `local`. A key only moves forward in its lifecycle (the later
    /// status wins; a destroyed key is never resurrected). The same key id with other bytes
    /// throws `.duplicateKeyID` (the caller saves nothing). If two primaries result, the most
    /// recently promoted stays primary and the other becomes `decryptOnly` for `graceSeconds`
    /// (`.timeOutOfRange` when `now + graceSeconds` is out of range; the caller saves nothing).
    static func merge(_ local: inout Keyset, incoming: [ManagedKey], now: Int64, graceSeconds: Int64, event: String) throws -> [AuditEvent] {
        var events: [AuditEvent] = []
        for k in incoming {
            try KeyID.validate(k.info.keyID)
            guard let i = local.index(of: k.info.keyID) else {
                var copy = k
                if copy.info.status == .destroyed { copy.secret = nil }
                local.keys.append(copy)
                events.append(AuditEvent(event: event, time: now, members: [("keyId", .string(k.info.keyID)), ("status", .string(copy.info.status.rawValue))]))
                continue
            }
            let l = local.keys[i]
            if let a = l.secret, let b = k.secret, a != b {
                throw KeysError(.duplicateKeyID, "key id \(k.info.keyID) is already in keyset \(local.appID)/\(local.recipient) with different key bytes")
            }
            if k.info.status.rank > l.info.status.rank {
                local.keys[i].info.status = k.info.status
                local.keys[i].info.promotedAt = k.info.promotedAt ?? l.info.promotedAt
                local.keys[i].info.retiredAt = k.info.retiredAt ?? now
                local.keys[i].info.notAfter = k.info.notAfter
                if k.info.status == .destroyed { local.keys[i].secret = nil }
                events.append(AuditEvent(event: event, time: now, members: [("keyId", .string(k.info.keyID)), ("status", .string(k.info.status.rawValue)),
                                                                        ("previousStatus", .string(l.info.status.rawValue))]))
            } else if l.secret == nil, let s = k.secret, l.info.status.canOpen {
                local.keys[i].secret = s
                events.append(AuditEvent(event: event, time: now, members: [("keyId", .string(k.info.keyID)), ("status", .string(l.info.status.rawValue))]))
            }
        }
        let primaries = local.keys.indices.filter { local.keys[$0].info.status == .primary }
        if primaries.count > 1 {
            let keep = primaries.max { (local.keys[$0].info.promotedAt ?? 0, $0) < (local.keys[$1].info.promotedAt ?? 0, $1) } ?? primaries[0]
            let notAfter = try KeyTime.time(now, plus: graceSeconds, named: "graceSeconds")
            for i in primaries where i != keep {
                local.keys[i].info.status = .decryptOnly
                local.keys[i].info.retiredAt = now
                local.keys[i].info.notAfter = notAfter
                events.append(AuditEvent(event: "demote", time: now, members: [("keyId", .string(local.keys[i].info.keyID)),
                                                                            ("notAfter", .integer(notAfter))]))
            }
        }
        return events
    }
}
