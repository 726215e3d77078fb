public import PushSealCrypto
public import PushSealKeyRecords

/// What a device key item holds (byte 1 of its key record, docs/keychain.md "Device key
/// items"); each kind has its own service prefix and label.
public enum DeviceKeyKind: UInt8, Sendable, Hashable, CaseIterable {
    /// A version 1 AES-256-GCM key, provisioned by the server (`push-keys import`).
    case v1Key = 1
    /// A version 2 X25519 private key, made on the device (`push-keys device generate`).
    case v2DeviceKey = 2
    /// A pinned X25519 sender public key (`push-keys device pin-sender`).
    case senderKey = 3

    /// `kSecAttrService` without the app id: `pushseal.key:` (kinds 1 and 2) or `pushseal.sender:`.
    public var servicePrefix: String { self == .senderKey ? "pushseal.sender:" : "pushseal.key:" }

    /// `kSecAttrLabel`: `PushSeal v1 key`, `PushSeal v2 key` or `PushSeal sender key`.
    public var label: String {
        switch self {
        case .v1Key: "PushSeal v1 key"
        case .v2DeviceKey: "PushSeal v2 key"
        case .senderKey: "PushSeal sender key"
        }
    }

    /// The name `device list` shows: `v1`, `v2` or `sender`.
    public var name: String {
        switch self {
        case .v1Key: "v1"
        case .v2DeviceKey: "v2"
        case .senderKey: "sender"
        }
    }

    /// `kSecAttrService` of this kind's items for `appID`, e.g. `pushseal.key:com.example.app`.
    public func service(appID: String) -> String { servicePrefix + appID }
}

/// The 59-byte key record of a device key item (`kSecValueData`, docs/keychain.md "Device key
/// items"), integers big-endian: layout version 1 (offset 0), kind (1), status (2: 1 pending,
/// 2 primary, 3 decryptOnly, 4 disabled), createdAt (3), retiredAt (11, -1 = not retired),
/// notAfter (19, -1 = none), 32 key bytes (27).
public struct DeviceKeyRecord: Sendable {
    /// 59: the record's byte count.
    public static let byteCount = 59
    /// 1: the layout version (byte 0).
    public static let layoutVersion: UInt8 = 1
    /// Field offsets, in record order: version 0, kind 1, status 2, createdAt 3, retiredAt 11,
    /// notAfter 19, key bytes 27.
    public static let versionOffset = 0, kindOffset = 1, statusOffset = 2, createdAtOffset = 3,
                      retiredAtOffset = 11, notAfterOffset = 19, keyOffset = 27
    /// 32: the key bytes' count.
    public static let keyByteCount = 32
    /// -1: `retiredAt` / `notAfter` when not set.
    public static let noTime: Int64 = -1

    /// What the item holds.
    public var kind: DeviceKeyKind
    /// The key's state: never `.destroyed` (a destroyed key's item is deleted).
    public var status: KeyStatus
    /// Unix seconds (UTC).
    public var createdAt: Int64
    /// Unix seconds (UTC) the key became decryptOnly or disabled, or nil.
    public var retiredAt: Int64?
    /// Unix seconds (UTC): the end of a decryptOnly key's grace window, or nil (no end).
    public var notAfter: Int64?
    /// The 32 key bytes (the AES key, the X25519 private key, the sender's public key).
    public var key: SecretBytes

    /// A record (not checked: ``encoded()`` checks).
    public init(kind: DeviceKeyKind, status: KeyStatus, createdAt: Int64, retiredAt: Int64? = nil, notAfter: Int64? = nil,
                key: SecretBytes) {
        (self.kind, self.status, self.createdAt, self.retiredAt, self.notAfter, self.key) = (kind, status, createdAt, retiredAt, notAfter, key)
    }

    /// Decodes a record; refuses (never guesses) another length, layout version, kind or status.
    /// - Parameter data: the item's data (a secret; this copy is wiped).
    /// - Throws: `KeysError` `.corruptKey`.
    public init(decoding data: SecretBytes) throws {
        var bytes = data.copyBytes()
        defer { SecretBytes.wipe(&bytes) }
        guard bytes.count == Self.byteCount, bytes[Self.versionOffset] == Self.layoutVersion,
              let kind = DeviceKeyKind(rawValue: bytes[Self.kindOffset]),
              let status = KeyStatus(storageTag: bytes[Self.statusOffset]), status != .destroyed else {
            throw KeysError(.corruptKey, "a device key record is \(Self.byteCount) bytes of layout version 1, kind 1-3, status 1-4 (docs/keychain.md); this one is not")
        }
        func int64(_ offset: Int) -> Int64 {
            Int64(bitPattern: bytes[offset..<offset + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        }
        func time(_ offset: Int) -> Int64? { int64(offset) == Self.noTime ? nil : int64(offset) }
        self.init(kind: kind, status: status, createdAt: int64(Self.createdAtOffset), retiredAt: time(Self.retiredAtOffset),
                  notAfter: time(Self.notAfterOffset), key: SecretBytes(copying: bytes[Self.keyOffset...]))
    }

    /// The 59 bytes (holds key bytes).
    /// - Throws: `KeysError` `.invalidState` (a destroyed status, or a key not 32 bytes).
    public func encoded() throws -> SecretBytes {
        guard status != .destroyed, key.byteCount == Self.keyByteCount else {
            throw KeysError(.invalidState, "a device key record holds a status other than destroyed and 32 key bytes")
        }
        var bytes: [UInt8] = [Self.layoutVersion, kind.rawValue, status.storageTag]
        for value in [createdAt, retiredAt ?? Self.noTime, notAfter ?? Self.noTime] {
            withUnsafeBytes(of: value.bigEndian) { bytes += $0 }
        }
        key.withUnsafeBytes { bytes += $0 }
        defer { SecretBytes.wipe(&bytes) }
        return SecretBytes(copying: bytes)
    }

    /// The reader rules before opening (docs/keychain.md): pending, primary, and decryptOnly
    /// before `notAfter` open; `retiredAt` is returned for a decryptOnly key (the receiver
    /// refuses a message sealed after it, `keys:keyRetired`).
    /// - Parameters:
    ///   - now: Unix seconds (UTC).
    ///   - what: how to name the key in a reason, e.g. `key K of com.example.app`.
    /// - Returns: `retiredAt` of a decryptOnly key, else nil.
    /// - Throws: `KeysError` `.keyDisabled`, `.keyExpired`.
    public func checkUsable(now: Int64, what: String) throws -> Int64? {
        switch status {
        case .disabled, .destroyed:
            throw KeysError(.keyDisabled, "\(what) was revoked")
        case .decryptOnly where (notAfter ?? Int64.max) <= now:
            throw KeysError(.keyExpired, "\(what) is past its grace window (notAfter \(notAfter ?? 0))")
        case .decryptOnly:
            return retiredAt
        case .pending, .primary:
            return nil
        }
    }
}
