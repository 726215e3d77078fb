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
    ///
    /// The text is read in place (a span of `text`, no copy) and decoded by libsodium's
    /// constant-time decoders straight into the returned `SecretBytes`
    /// (``SecretBytes/init(decodingHex:byteCount:)``, ``WireBase64/decodeSecret(_:byteCount:)``):
    /// no unwiped array ever holds the key.
    /// - Parameter text: the file's bytes (a secret: the caller wipes its copy).
    /// - Returns: the 32 bytes, or nil when the text is neither form.
    public static func privateKey(fromText text: [UInt8]) -> SecretBytes? {
        var end = text.count
        while end > 0, [0x0A, 0x0D, 0x20, 0x09].contains(text[end - 1]) { end -= 1 }
        let key = text.span.extracting(0..<end)
        if let secret = SecretBytes(decodingHex: key, byteCount: X25519.privateKeyByteCount) { return secret }
        return WireBase64.decodeSecret(key, byteCount: X25519.privateKeyByteCount)
    }

}

extension DeviceKeyItem {
    /// `kSecAttrLabel` of a pinned sender key item: `PushSeal sender key`.
    public static let senderLabel = DeviceKeyKind.senderKey.label

    /// Pins a sender public key for `appID` (FORMAT.md §V.6, §V.7 step 2): a kind 3 item,
    /// service `pushseal.sender:<appID>`, account = the sender key id, with the record's status
    /// (G15; see ``pinOne(_:appID:in:accessGroup:now:graceSeconds:)``). Several may be pinned at
    /// once (a staged rotation: pin the next key before the server switches). Pinning the same
    /// record again changes nothing; a newer status (retired) updates the pin. Then ends
    /// version 1 for the app (``endVersionOne(appID:in:accessGroup:now:graceSeconds:)``, G2).
    /// - Parameters:
    ///   - sender: the sender key id and public key (from a `pushseal-sender-key` record).
    ///   - appID: the app's bundle identifier (the record's `appId` is checked by its reader).
    ///   - keychain: the device keychain, opened as the app.
    ///   - accessGroup: the group; nil: the identity's first.
    ///   - now: Unix seconds (UTC), the record's `createdAt`.
    ///   - graceSeconds: the longest a retired pin verifies after this device learned of it (30 days).
    ///   - versionOneGraceSeconds: the v1 keys' migration window (30 days).
    /// - Returns: the item's attributes, and whether it was added (false: already pinned, or updated).
    /// - Throws: `KeysError` `.lowOrderPoint`, `.duplicateKeyID` (the id pinned with other
    ///   bytes), `.corruptKey` (the item there is damaged), `.invalidName`; `KeychainError`.
    @discardableResult
    public static func pinSender(_ sender: PinnedSenderKey, appID: String, in keychain: Keychain, accessGroup: String?,
                                 now: Int64, graceSeconds: Int64 = KeyTime.defaultGraceSeconds,
                                 versionOneGraceSeconds: Int64 = KeyTime.defaultGraceSeconds) throws -> (item: ItemAttributes, added: Bool) {
        let pinned = try pinOne(sender, appID: appID, in: keychain, accessGroup: accessGroup, now: now, graceSeconds: graceSeconds)
        try endVersionOne(appID: appID, in: keychain, accessGroup: pinned.item.accessGroup, now: now, graceSeconds: versionOneGraceSeconds)
        return (pinned.item, pinned.added)
    }

    /// ``pinSender(_:appID:in:accessGroup:now:graceSeconds:versionOneGraceSeconds:)`` without
    /// ending version 1. Security review G15 and G14: the pin takes the record's status; a
    /// `decryptOnly` record is pinned `decryptOnly` with the record's `retiredAt` (at most
    /// `now`) and an end this device measures: the earlier of the record's `notAfter` and
    /// `now + graceSeconds`. A pin's status only moves forward (`primary` → `decryptOnly` →
    /// `disabled`), and moving forward keeps the earlier end; a revoked pin stays revoked.
    static func pinOne(_ sender: PinnedSenderKey, appID: String, in keychain: Keychain, accessGroup: String?,
                       now: Int64, graceSeconds: Int64) throws -> (item: ItemAttributes, added: Bool) {
        try KeyID.validate(sender.keyID)
        try KeyID.validateAppID(appID)
        do {
            try sender.publicKey.validate()
        } catch let e as CryptoError where e.code == .zeroSharedSecret {
            throw KeysError(.lowOrderPoint, "sender key \(sender.keyID) is a low-order X25519 point: it would authenticate nothing")
        }
        var pin = DeviceKeyRecord(kind: .senderKey, status: .primary, createdAt: now,
                                      key: SecretBytes(copying: sender.publicKey.rawRepresentation))
        if sender.status == .decryptOnly {
            pin.status = .decryptOnly
            pin.retiredAt = min(sender.retiredAt ?? now, now)
            pin.notAfter = min(sender.notAfter ?? KeyTime.maxTimeSeconds, try KeyTime.time(now, plus: graceSeconds, named: "the grace window"))
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
                guard record.status.rank < pin.status.rank else { return (item.attributes, false) }
                pin.createdAt = record.createdAt
                try writeItem(.senderKey, keyID: sender.keyID, appID: appID, data: try pin.encoded(), in: keychain, accessGroup: item.attributes.accessGroup)
                return (item.attributes, false)
            }
        } catch let e as KeychainError where e.code == .itemNotFound {
            // not pinned yet
        }
        return (try written(try writeItem(.senderKey, keyID: sender.keyID, appID: appID, data: try pin.encoded(), in: keychain, accessGroup: accessGroup,
                                          mustBeNew: true)), true)
    }

    /// Ends version 1 for `appID` (security review G2): every pending or primary v1 key item
    /// becomes `decryptOnly`, retired `now`, until `now + graceSeconds` — the migration window
    /// with an end date. Once a sender key is pinned, the extension opens a v1 payload only
    /// under such a key, and only if sealed before `now` (`keys:keyRetired` otherwise). Done by
    /// ``pinSender(_:appID:in:accessGroup:now:graceSeconds:versionOneGraceSeconds:)``.
    /// - Returns: the v1 key ids retired.
    /// - Throws: `KeysError` `.timeOutOfRange`, `.corruptKey`; `KeychainError`.
    @discardableResult
    public static func endVersionOne(appID: String, in keychain: Keychain, accessGroup: String?, now: Int64, graceSeconds: Int64) throws -> [String] {
        let notAfter = try KeyTime.time(now, plus: graceSeconds, named: "the version 1 grace window")
        let keyring = DeviceKeyring(keychain: keychain, accessGroup: accessGroup)
        var retired: [String] = []
        for entry in try list(appID: appID, in: keychain, accessGroup: accessGroup)
        where entry.kind == .v1Key && !entry.damaged && entry.keysetRecipient == nil {
            guard var record = try keyring.record(.v1Key, keyID: entry.keyID, appID: appID),
                  record.status == .pending || record.status == .primary else { continue }
            record.status = .decryptOnly
            record.retiredAt = now
            record.notAfter = notAfter
            try writeItem(.v1Key, keyID: entry.keyID, appID: appID, data: try record.encoded(), in: keychain, accessGroup: accessGroup)
            retired.append(entry.keyID)
        }
        return retired
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
                                  now: Int64, graceSeconds: Int64 = KeyTime.defaultGraceSeconds,
                                  versionOneGraceSeconds: Int64 = KeyTime.defaultGraceSeconds) throws -> [(keyID: String, item: ItemAttributes, added: Bool)] {
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
                let (item, added) = try pinOne(sender, appID: appID, in: keychain, accessGroup: accessGroup, now: now, graceSeconds: graceSeconds)
                done.append((sender.keyID, item, added))
            }
        } catch {
            for pin in done where pin.added {
                _ = try? writeItem(.senderKey, keyID: pin.keyID, appID: appID, data: nil, in: keychain, accessGroup: pin.item.accessGroup)
            }
            throw error
        }
        if let first = done.first {
            try endVersionOne(appID: appID, in: keychain, accessGroup: first.item.accessGroup, now: now, graceSeconds: versionOneGraceSeconds)
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
