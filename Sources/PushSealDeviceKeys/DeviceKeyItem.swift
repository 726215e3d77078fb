public import PushSealCrypto
public import PushSealKeychain
public import PushSealJSON
public import PushSealWire
import PushSealSystem
public import PushSealKeyRecords

/// A version 2 device key in a device keychain, in the one layout of docs/keychain.md "Device
/// key items": a generic-password item, service `pushseal.key:<appID>`, account = key id, label
/// `PushSeal v2 key`, accessibility `afterFirstUnlockThisDeviceOnly`, data = a 59-byte key
/// record of kind 2 (the X25519 private key), in the access group the app shares with its
/// Notification Service Extension. Its public half goes to the app's server as the
/// registration record `pushseal-device-key` (FORMAT.md §V.6).
public enum DeviceKeyItem {
    /// `kSecAttrLabel` of a v2 device key item: `PushSeal v2 key`.
    public static let v2Label = DeviceKeyKind.v2DeviceKey.label
    /// `kSecAttrAccessible` of every device key item: `afterFirstUnlockThisDeviceOnly`.
    public static let accessibility = Accessibility.afterFirstUnlockThisDeviceOnly
    /// Characters of a generated key id (FORMAT.md §V.6): 16 (96 bits).
    public static let generatedKeyIDLength = 16

    /// `kSecAttrService` of the app's push key items: `pushseal.key:<appID>`.
    public static func service(appID: String) -> String { DeviceKeyKind.v2DeviceKey.service(appID: appID) }

    /// The key id PushSeal's generators give a public key (FORMAT.md §V.6): the first 16
    /// characters of the unpadded base64url of SHA-256(public key). An opaque label to readers.
    /// - Throws: `CryptoError` `.internalFailure`.
    public static func keyID(for publicKey: X25519.PublicKey) throws -> String {
        let digest = try SHA256Hasher.hash(publicKey.rawRepresentation)
        let url = WireBase64.encode(digest).map { c -> Character in c == "+" ? "-" : c == "/" ? "_" : c }
        return String(url.prefix(generatedKeyIDLength))
    }

    /// The 59-byte key record of a device key item (docs/keychain.md; ``DeviceKeyRecord``).
    /// - Parameters:
    ///   - kind: 1 v1 AES-256-GCM key, 2 v2 X25519 private key, 3 pinned sender public key.
    ///   - status: any but `.destroyed` (a destroyed key's item is deleted).
    ///   - createdAt, retiredAt, notAfter: Unix seconds (UTC); nil for -1.
    ///   - key: exactly 32 bytes.
    /// - Throws: `KeysError` `.invalidState` (a destroyed status, a key not 32 bytes, another kind).
    public static func record(kind: UInt8, status: KeyStatus, createdAt: Int64, retiredAt: Int64? = nil, notAfter: Int64? = nil,
                              key: SecretBytes) throws -> SecretBytes {
        guard let kind = DeviceKeyKind(rawValue: kind) else {
            throw KeysError(.invalidState, "a device key record holds kind 1-3")
        }
        return try DeviceKeyRecord(kind: kind, status: status, createdAt: createdAt, retiredAt: retiredAt, notAfter: notAfter, key: key).encoded()
    }

    /// The registration record of a device public key (FORMAT.md §V.6), members in this order:
    /// `{"format":"pushseal-device-key","version":2,"appId","keyId","publicKey","createdAt"}`,
    /// `publicKey` the standard padded base64 of the 32 bytes, `createdAt` Unix seconds. Public data.
    public static func registrationRecord(appID: String, keyID: String, publicKey: X25519.PublicKey, createdAt: Int64) -> JSONObject {
        JSONObject([("format", .string("pushseal-device-key")), ("version", .integer(2)), ("appId", .string(appID)),
                    ("keyId", .string(keyID)), ("publicKey", .string(WireBase64.encode(publicKey.rawRepresentation))),
                    ("createdAt", .integer(createdAt))])
    }

    /// Stores `key` as the app's primary v2 device key (kind 2, status primary, created `now`).
    /// Refuses when the app already has a v2 device key in that group: a second primary key
    /// would leave the server two registrations to choose from (replacing one is a rotation).
    /// - Parameters:
    ///   - key: the device private key.
    ///   - keyID: the key id (1–64 of `A-Z a-z 0-9 _ -`).
    ///   - appID: the app's bundle identifier.
    ///   - keychain: the device keychain, opened as the app (or its extension).
    ///   - accessGroup: the group to store in; nil: the identity's first access group.
    ///   - now: Unix seconds (UTC), the record's `createdAt`.
    /// - Returns: the stored item's attributes.
    /// - Throws: `KeysError` `.invalidName` (key id), `.keysetExists` (the app has a v2 device
    ///   key); `KeychainError` (-34018, -25299, -25308, …).
    @discardableResult
    public static func store(_ key: X25519.PrivateKey, keyID: String, appID: String, in keychain: Keychain, accessGroup: String?,
                             now: Int64) throws -> ItemAttributes {
        try KeyID.validate(keyID)
        try KeyID.validateAppID(appID)
        let service = service(appID: appID)
        do {
            let existing = try keychain.copyMatching(ItemQuery(service: service, accessGroup: accessGroup, label: v2Label), limit: .all)
            let ids = existing.map(\.attributes.account).joined(separator: ", ")
            throw KeysError(.keysetExists, "\(appID) already has a v2 device key (\(ids))")
        } catch let e as KeychainError where e.code == .itemNotFound {
            // none yet
        }
        let record = try record(kind: 2, status: .primary, createdAt: now, key: key.rawRepresentation)
        return try written(try writeItem(.v2DeviceKey, keyID: keyID, appID: appID, data: record, in: keychain, accessGroup: accessGroup, mustBeNew: true))
    }
}

extension DeviceKeyItem {
    /// Reads a 32-byte X25519 private key written as text: 64 hex digits (either case) or
    /// base64 of 32 bytes (FORMAT.md §4 reading rules), trailing spaces and line ends ignored.
    /// For key files (`push-keys device import`).
    /// - Parameter text: the file's bytes (a secret: the caller wipes its copy).
    /// - Returns: the 32 bytes, or nil when the text is neither form.
    public static func privateKey(fromText text: [UInt8]) -> SecretBytes? {
        var end = text.count
        while end > 0, [0x0A, 0x0D, 0x20, 0x09].contains(text[end - 1]) { end -= 1 }
        var raw: [UInt8] = []
        defer { SecretBytes.wipe(&raw) }
        text.withUnsafeBytes { all in
            let t = UnsafeRawBufferPointer(rebasing: all[..<end])
            if t.count == 2 * X25519.privateKeyByteCount {
                var i = 0
                while i + 1 < t.count, let h = Hex.value(ofDigit: t[i]), let l = Hex.value(ofDigit: t[i + 1]) {
                    raw.append(h << 4 | l)
                    i += 2
                }
                if raw.count == X25519.privateKeyByteCount { return }
                SecretBytes.wipe(&raw)
                raw = []
            }
            if let bytes = try? WireBase64.decodeSecret(t) { raw = bytes }
        }
        return raw.count == X25519.privateKeyByteCount ? SecretBytes(copying: raw) : nil
    }

}

extension DeviceKeyItem {
    /// `kSecAttrLabel` of a pinned sender key item: `PushSeal sender key`.
    public static let senderLabel = DeviceKeyKind.senderKey.label

    /// Pins a sender public key for `appID` (FORMAT.md §V.6, §V.7 step 2): a kind 3 item,
    /// status primary, service `pushseal.sender:<appID>`, account = the sender key id. Several
    /// may be pinned at once (a sender key rotation: pin the new one before the server
    /// switches). Pinning the same key again changes nothing.
    /// - Parameters:
    ///   - sender: the sender key id and public key (from a `pushseal-sender-key` record).
    ///   - appID: the app's bundle identifier (the record's `appId` is checked by its reader).
    ///   - keychain: the device keychain, opened as the app.
    ///   - accessGroup: the group; nil: the identity's first.
    ///   - now: Unix seconds (UTC), the record's `createdAt`.
    /// - Returns: the item's attributes, and whether it was added (false: already pinned).
    /// - Throws: `KeysError` `.lowOrderPoint`, `.duplicateKeyID` (the id pinned with other
    ///   bytes), `.corruptKey` (the item there is damaged), `.invalidName`; `KeychainError`.
    @discardableResult
    public static func pinSender(_ sender: PinnedSenderKey, appID: String, in keychain: Keychain, accessGroup: String?,
                                 now: Int64) throws -> (item: ItemAttributes, added: Bool) {
        try KeyID.validate(sender.keyID)
        try KeyID.validateAppID(appID)
        do {
            try sender.publicKey.validate()
        } catch let e as CryptoError where e.code == .zeroSharedSecret {
            throw KeysError(.lowOrderPoint, "sender key \(sender.keyID) is a low-order X25519 point: it would authenticate nothing")
        }
        let service = DeviceKeyKind.senderKey.service(appID: appID)
        let query = ItemQuery(service: service, account: sender.keyID, accessGroup: accessGroup)
        do {
            let held = try keychain.copyMatching(query, returning: [.attributes, .data])
            if let item = held.first, let data = item.data {
                let record = try DeviceKeyRecord(decoding: data)
                guard record.kind == .senderKey, record.key.copyBytes() == sender.publicKey.rawRepresentation else {
                    throw KeysError(.duplicateKeyID, "sender key \(sender.keyID) of \(appID) is already pinned with other key bytes")
                }
                return (item.attributes, false)
            }
        } catch let e as KeychainError where e.code == .itemNotFound {
            // not pinned yet
        }
        let record = try DeviceKeyRecord(kind: .senderKey, status: .primary, createdAt: now,
                                         key: SecretBytes(copying: sender.publicKey.rawRepresentation)).encoded()
        return (try written(try writeItem(.senderKey, keyID: sender.keyID, appID: appID, data: record, in: keychain, accessGroup: accessGroup,
                                          mustBeNew: true)), true)
    }
}

extension DeviceKeyItem {
    /// Pins several sender public keys for `appID` all-or-nothing (`push-keys device pin-sender`
    /// with several records): every key is checked first (key id, low-order point, the same id
    /// twice with other bytes, an id pinned with other bytes); then each new one is pinned as
    /// by ``pinSender(_:appID:in:accessGroup:now:)``, and if a write fails the pins this call
    /// added are removed again.
    /// - Returns: per distinct sender key id, in input order: the item's attributes and whether
    ///   it was added (false: already pinned).
    /// - Throws: as ``pinSender(_:appID:in:accessGroup:now:)``; nothing is left pinned by a failed call.
    public static func pinSenders(_ senders: [PinnedSenderKey], appID: String, in keychain: Keychain, accessGroup: String?,
                                  now: Int64) throws -> [(keyID: String, item: ItemAttributes, added: Bool)] {
        try KeyID.validateAppID(appID)
        var distinct: [PinnedSenderKey] = []
        let keyring = DeviceKeyring(keychain: keychain, accessGroup: accessGroup)
        for sender in senders {
            try KeyID.validate(sender.keyID)
            if let seen = distinct.first(where: { $0.keyID == sender.keyID }) {
                guard seen.publicKey.rawRepresentation == sender.publicKey.rawRepresentation else {
                    throw KeysError(.duplicateKeyID, "sender key \(sender.keyID) is given twice with other key bytes; nothing pinned")
                }
                continue
            }
            do {
                try sender.publicKey.validate()
            } catch let e as CryptoError where e.code == .zeroSharedSecret {
                throw KeysError(.lowOrderPoint, "sender key \(sender.keyID) is a low-order X25519 point: it would authenticate nothing; nothing pinned")
            }
            if let held = try keyring.record(.senderKey, keyID: sender.keyID, appID: appID),
               held.key.copyBytes() != sender.publicKey.rawRepresentation {
                throw KeysError(.duplicateKeyID, "sender key \(sender.keyID) of \(appID) is already pinned with other key bytes; nothing pinned")
            }
            distinct.append(sender)
        }
        var done: [(keyID: String, item: ItemAttributes, added: Bool)] = []
        do {
            for sender in distinct {
                let (item, added) = try pinSender(sender, appID: appID, in: keychain, accessGroup: accessGroup, now: now)
                done.append((sender.keyID, item, added))
            }
        } catch {
            for pin in done where pin.added {
                _ = try? writeItem(.senderKey, keyID: pin.keyID, appID: appID, data: nil, in: keychain, accessGroup: pin.item.accessGroup)
            }
            throw error
        }
        return done
    }

    /// The attributes ``writeItem(_:keyID:appID:data:in:accessGroup:mustBeNew:)`` returns for a write.
    /// - Throws: `KeysError` `.invalidState` when there are none (never for a write with data).
    static func written(_ attributes: ItemAttributes?) throws -> ItemAttributes {
        guard let attributes else { throw KeysError(.invalidState, "a key item write returned no item") }
        return attributes
    }
}
