import PushSealJSON
public import PushSealCrypto
public import PushSealWire
public import PushSealKeyRecords

/// One keyset's whole state, key bytes included, for a server store that keeps keysets outside
/// keychain items (a database: `PostgresKeyStore` in PushSealRegistry). The same model as a
/// keychain keyset item (see `Keyset`), through public accessors. Holds secrets: never print it.
public struct KeysetState: Sendable {
    var keyset: Keyset

    /// An unfinished rotation (the journal of ``KeyStore/rotate(appID:recipient:graceSeconds:device:promote:now:afterStep:)``).
    public struct Rotation: Sendable, Hashable {
        /// The key the rotation adds.
        public var keyID: String
        /// Grace of the old primary, seconds, as given when the rotation started.
        public var graceSeconds: Int64
        /// `true` once the new key is promoted (only the finish step is left).
        public var promoted: Bool

        /// Creates a rotation journal entry.
        public init(keyID: String, graceSeconds: Int64, promoted: Bool) {
            self.keyID = keyID
            self.graceSeconds = graceSeconds
            self.promoted = promoted
        }
    }

    init(_ keyset: Keyset) { self.keyset = keyset }

    /// Creates a state from stored parts.
    /// - Parameters:
    ///   - keys: oldest first, each key's metadata and its 32 bytes (`nil` without bytes).
    ///   - rotation: the unfinished rotation, or `nil`.
    public init(appID: String, recipient: String, keys: [(info: KeyInfo, key: SecretBytes?)], rotation: Rotation?) {
        keyset = Keyset(appID: appID, recipient: recipient, keys: keys.map { ManagedKey(info: $0.info, secret: $0.key) },
                        rotation: rotation.map { Keyset.Rotation(keyID: $0.keyID, graceSeconds: $0.graceSeconds, phase: $0.promoted ? .promoted : .added) })
    }

    /// The app id.
    public var appID: String { keyset.appID }
    /// The recipient.
    public var recipient: String { keyset.recipient }
    /// The keys, oldest first, with their bytes (`nil` for tombstones and keys without bytes).
    public var keys: [(info: KeyInfo, key: SecretBytes?)] { keyset.keys.map { ($0.info, $0.secret) } }
    /// The unfinished rotation, or `nil`.
    public var rotation: Rotation? {
        keyset.rotation.map { Rotation(keyID: $0.keyID, graceSeconds: $0.graceSeconds, phase: $0.phase) }
    }

    /// The metadata (no bytes), with `accessGroup` as the store's label.
    public func info(accessGroup: String) -> KeysetInfo { keyset.info(accessGroup: accessGroup) }

    /// The primary key's id and bytes, or `nil` when there is none (or it has no bytes).
    public var primarySealingKey: SealingKey? {
        guard let p = keyset.primaryIndex, let key = keyset.keys[p].secret else { return nil }
        return SealingKey(keyID: keyset.keys[p].info.keyID, key: key)
    }
}

extension KeysetState.Rotation {
    init(keyID: String, graceSeconds: Int64, phase: Keyset.RotationPhase) {
        self.init(keyID: keyID, graceSeconds: graceSeconds, promoted: phase == .promoted)
    }
}

/// One audited change of a keyset: an audit line (``KeyAudit``) without its location member.
public struct KeysetChange: Sendable {
    let event: KeyStore.AuditEvent

    /// The event name, e.g. `promote`.
    public var name: String { event.event }
    /// Unix seconds.
    public var time: Int64 { event.time }
    /// The `keyId` member, if any.
    public var keyID: String? {
        for m in event.members where m.key == "keyId" { if case .string(let s) = m.value { return s } }
        return nil
    }

    /// The audit line, one JSON object and a newline, in ``KeyAudit``'s member order: `time`,
    /// `event`, the location member (`locationName`: `locationValue`, e.g. `"registry"`:
    /// `"postgresql db pushseal"`), `appId`, `recipient`, then the event's members. No key bytes.
    public func auditLine(locationName: String, locationValue: String, appID: String, recipient: String) -> [UInt8] {
        KeyAudit.line(JSONObject([("time", .integer(event.time)), ("event", .string(event.event)), (locationName, .string(locationValue)),
                                  ("appId", .string(appID)), ("recipient", .string(recipient))] + event.members))
    }

    /// `s` as a JSON string (quotes and escapes as in audit lines).
    public static func jsonString(_ s: String) -> String {
        var w = JSONWriter(reservingCapacity: s.utf8.count + 2)
        w.string(s)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// The audit line up to and including `"sealCount":` (no closing brace) of a `reserveSeals`
    /// event, for a store that fills in the counter inside its own atomic statement (the number
    /// and `}` plus a newline follow).
    public static func reserveSealsLinePrefix(time: Int64, locationName: String, locationValue: String, appID: String, recipient: String,
                                              keyID: String) -> [UInt8] {
        var line = KeyAudit.line(JSONObject([("time", .integer(time)), ("event", .string("reserveSeals")), (locationName, .string(locationValue)),
                                             ("appId", .string(appID)), ("recipient", .string(recipient)), ("keyId", .string(keyID))]))
        line.removeLast(2)  // "}\n"
        line += Array(",\"sealCount\":".utf8)
        return line
    }
}

extension KeysetState {
    /// The audit changes of copying this keyset into a store that does not hold it yet (one
    /// `import` per key, as ``KeysetStateStore/copyIn(_:now:)`` writes them): for a store that
    /// inserts many new keysets at once (`PostgresKeyStore.bulkCopyIn`).
    /// - Parameter now: Unix seconds of the copy.
    /// - Throws: `KeysError` `.duplicateKeyID` (the state holds one key id twice with other bytes).
    public func changesOfCopyingIntoEmptyStore(now: Int64) throws -> [KeysetChange] {
        var empty = Keyset(appID: appID, recipient: recipient, keys: [], rotation: nil)
        return try KeyStore.copyKeys(&empty, from: keyset, now: now).map { KeysetChange(event: $0) }
    }
}
