#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCrypto
import PushSealJSON
public import PushSealSystem

extension ErrorCode<KeychainError> {
    /// A keychain backup file does not open: a wrong passphrase, a damaged or truncated file, or
    /// not a backup at all (AES-GCM cannot tell a wrong key from a changed byte). Nothing was
    /// changed. No OSStatus.
    public static var backupUnreadable: Self { Self("backupUnreadable") }
    /// `restore --same-device` of a backup made on another device: its `…ThisDeviceOnly` items
    /// are sealed under the other device's key (as on iOS, where they are bound to the device
    /// that made the backup). Nothing was changed. No OSStatus.
    public static var backupFromAnotherDevice: Self { Self("backupFromAnotherDevice") }
}

/// An encrypted backup of a whole emulated keychain, as an encrypted iOS backup holds the
/// keychain (docs/keychain.md "Backup and restore"): every item of every access group with its
/// attributes and secret data, sealed with AES-256-GCM under a key derived from a passphrase
/// with Argon2id (libsodium `crypto_pwhash`, the parameters stored in the file). Items of a
/// `…ThisDeviceOnly` accessibility class are sealed once more under a key only the device that
/// made the backup derives (HKDF of its device secret): a restore onto another device leaves
/// them behind, a restore onto the same device puts them back — iOS's rule. The App Group
/// containers (`DIR/app-groups/`) are not keychain items and are not in the file.
///
/// File layout (integers big-endian):
/// ```
/// offset  size  field
/// 0       24    "PUSHSEAL-KEYCHAIN-BACKUP"
/// 24      1     version: 1
/// 25      8     Argon2id opsLimit (1-10)
/// 33      8     Argon2id memLimit in bytes (8 KiB - 1 GiB)
/// 41      16    Argon2id salt
/// 57      ...   AES-256-GCM box (nonce 12 ‖ ciphertext ‖ tag 16) of the payload, AAD = bytes 0..<57
/// ```
/// Payload: version 1 (1 byte); the device check (u16 length, an AES-256-GCM box of a fixed text
/// under the device key); the item count (u32); per item: class (1 byte: 1 generic password,
/// 2 key), accessibility (1 byte, 1-5 as in item files), access group, service, account (each
/// u16 length + UTF-8), a label flag (1 byte, then the label as above when 1), the data (u32
/// length + bytes; for `…ThisDeviceOnly` items an AES-256-GCM box under the device key, AAD =
/// "pushseal-keychain-backup:v1:item" ‖ the item's encoded attributes).
public enum KeychainBackup {
    /// The file's first 24 bytes.
    public static let magic = Array("PUSHSEAL-KEYCHAIN-BACKUP".utf8)
    /// The layout version written and read.
    public static let version: UInt8 = 1
    /// Bytes before the sealed payload: magic, version, opsLimit, memLimit, salt.
    public static let headerByteCount = 24 + 1 + 8 + 8 + Argon2id.saltByteCount
    /// Largest backup file read (256 MiB).
    public static let maxFileByteCount = 256 << 20
    static let deviceKeyLabel = "backup-this-device-only"
    static let deviceCheckText = Array("pushseal-keychain-backup:v1:device-check".utf8)
    static let itemAADPrefix = Array("pushseal-keychain-backup:v1:item".utf8)

    /// Where a restore goes.
    public enum Target: Sendable, Hashable {
        /// Another device (another device secret): `…ThisDeviceOnly` items are not restored.
        case newDevice
        /// The device that made the backup: every item is restored; another device is refused
        /// (``ErrorCode/backupFromAnotherDevice``).
        case sameDevice
    }

    /// One item of a backup: its attributes (dates are those of the backup) and its data —
    /// the secret itself, or for a `…ThisDeviceOnly` item the box only the source device opens.
    public struct Item: Sendable {
        /// The item's attributes.
        public var attributes: ItemAttributes
        /// The secret data, or the device-sealed box of a `…ThisDeviceOnly` item.
        var data: SecretBytes
    }

    /// A backup opened with its passphrase (``read(_:passphrase:)``): its items, not yet written anywhere.
    public struct Contents: Sendable {
        /// Every item of the backup, in file order.
        public var items: [Item]
        /// The device check: opens only under the source device's key.
        var deviceCheck: [UInt8]
        /// The access groups of the backup's items, sorted.
        public var accessGroups: [String] { Array(Set(items.map(\.attributes.accessGroup))).sorted() }
    }

    /// What a restore did.
    public struct RestoreResult: Sendable {
        /// The items written, in backup order.
        public var restored: [ItemAttributes]
        /// The `…ThisDeviceOnly` items left behind (``Target/newDevice``).
        public var skipped: [ItemAttributes]
        /// How many items the keychain held before (every one replaced: a restore starts from an erased keychain).
        public var removed: Int
    }

    /// Makes a backup of every item `keychain` can see (open it device-wide: as an identity
    /// holding every stored access group, ``Keychain/storedAccessGroups()``).
    /// - Parameters:
    ///   - keychain: the keychain; its device state must allow reading every item (an unlocked device).
    ///   - passphrase: the passphrase bytes (a secret: the caller wipes its copy).
    ///   - parameters: the Argon2id cost (default libsodium "interactive": 2 passes, 64 MiB).
    /// - Returns: the file's bytes (secret data only inside the sealed payload) and the items it holds.
    /// - Throws: `KeychainError` `.param` (an empty passphrase), `.interactionNotAllowed`
    ///   (-25308: an item not readable in this device state), `.corrupt`, `.io`.
    public static func make(of keychain: Keychain, passphrase: [UInt8],
                            parameters: PasscodeParameters = .interactive) throws -> (file: [UInt8], items: [ItemAttributes]) {
        guard !passphrase.isEmpty else { throw KeychainError(.param, "the backup passphrase is empty") }
        let deviceKey = try keychain.deviceBoundKey(deviceKeyLabel)
        var items: [KeychainItem] = []
        for itemClass in ItemClass.allCases {
            do {
                items += try keychain.copyMatching(ItemQuery(itemClass: itemClass), limit: .all, returning: [.attributes, .data])
            } catch let e as KeychainError where e.code == .itemNotFound {
                continue
            }
        }
        var payload: [UInt8] = [version]
        defer { SecretBytes.wipe(&payload) }
        let check = try crypto { try AES256GCM.seal(deviceCheckText, with: deviceKey).combined }
        appendLength16(check.count, to: &payload)
        payload += check
        appendUInt(UInt64(items.count), byteCount: 4, to: &payload)
        for item in items {
            guard let data = item.data else { throw KeychainError(.io, "an item was read without its data") }
            let attributes = encode(item.attributes)
            payload += attributes
            if item.attributes.accessibility.isThisDeviceOnly {
                let box = try crypto { try data.withUnsafeBytes { d in
                    try (itemAADPrefix + attributes).withUnsafeBytes { a in try AES256GCM.seal(d, with: deviceKey, authenticating: a).combined }
                } }
                appendUInt(UInt64(box.count), byteCount: 4, to: &payload)
                payload += box
            } else {
                appendUInt(UInt64(data.byteCount), byteCount: 4, to: &payload)
                data.withUnsafeBytes { payload.append(contentsOf: $0) }
            }
        }
        let salt = SecureRandom.bytes(Argon2id.saltByteCount)
        var header = magic + [version]
        appendUInt(parameters.opsLimit, byteCount: 8, to: &header)
        appendUInt(UInt64(parameters.memLimitBytes), byteCount: 8, to: &header)
        header += salt
        let key = try crypto { try Argon2id.deriveKey(password: passphrase, salt: salt, opsLimit: parameters.opsLimit, memLimitBytes: parameters.memLimitBytes) }
        let box = try crypto { try AES256GCM.seal(payload, with: key, authenticating: header) }
        return (header + box.combined, items.map(\.attributes))
    }

    /// Opens a backup file with its passphrase and checks its whole payload (nothing is written).
    /// - Throws: `KeychainError` `.backupUnreadable` (a wrong passphrase, a damaged, truncated
    ///   or foreign file, parameters over the caps of ``PasscodeParameters``).
    public static func read(_ file: [UInt8], passphrase: [UInt8]) throws -> Contents {
        let unreadable = { (why: String) in
            KeychainError(.backupUnreadable, "the file is not a readable PushSeal keychain backup: \(why)",
                          suggestion: "check the passphrase file; a wrong passphrase and a changed byte anywhere in the file fail alike")
        }
        guard file.count > headerByteCount + AES256GCM.minimumCombinedByteCount, Array(file.prefix(magic.count)) == magic else {
            throw unreadable("no backup header")
        }
        guard file[magic.count] == version else { throw unreadable("layout version \(file[magic.count]), this build reads \(version)") }
        var reader = Reader(bytes: Array(file[(magic.count + 1)..<headerByteCount]))
        let ops = try reader.uint(8), mem = try reader.uint(8)
        guard (1...PasscodeParameters.maxOpsLimit).contains(ops), (8192...UInt64(PasscodeParameters.maxMemLimitBytes)).contains(mem) else {
            throw unreadable("Argon2id parameters out of range")
        }
        let salt = try reader.take(Argon2id.saltByteCount)
        let key = try crypto { try Argon2id.deriveKey(password: passphrase, salt: salt, opsLimit: ops, memLimitBytes: Int(mem)) }
        var payload: [UInt8]
        do {
            payload = try AES256GCM.open(try SealedBox(combined: Array(file[headerByteCount...])), with: key,
                                         authenticating: Array(file[..<headerByteCount]))
        } catch is CryptoError {
            throw unreadable("it does not open with this passphrase")
        }
        defer { SecretBytes.wipe(&payload) }
        do {
            return try decodePayload(payload)
        } catch let e as KeychainError where e.code == .corrupt {
            throw unreadable(e.reason)
        }
    }

    /// Restores `contents` into `keychain` (open it device-wide, entitled to every stored group
    /// and every group of ``Contents/accessGroups``), as iOS restores onto an erased device:
    /// every item the keychain holds is deleted, then the backup's items are added (with the
    /// restore's dates) — for ``Target/newDevice`` all but the `…ThisDeviceOnly` ones. Every
    /// check comes first (the device check, each `…ThisDeviceOnly` item opening under this
    /// device's key, the device state allowing every class written): a failed one changes
    /// nothing. The App Group containers are left as they are.
    /// - Throws: `KeychainError` `.backupFromAnotherDevice` (``Target/sameDevice`` on another
    ///   device), `.backupUnreadable` (a `…ThisDeviceOnly` item that does not open),
    ///   `.interactionNotAllowed` (-25308: the device state forbids writing a class),
    ///   `.missingEntitlement`, `.io`, `.diskFull`.
    public static func restore(_ contents: Contents, into keychain: Keychain, target: Target) throws -> RestoreResult {
        let deviceKey = try keychain.deviceBoundKey(deviceKeyLabel)
        var plan: [(attributes: ItemAttributes, data: SecretBytes)] = []
        var skipped: [ItemAttributes] = []
        if target == .sameDevice {
            guard let check = try? SealedBox(combined: contents.deviceCheck),
                  (try? AES256GCM.open(check, with: deviceKey)) == deviceCheckText else {
                throw KeychainError(.backupFromAnotherDevice, "the backup was made on another device: its …ThisDeviceOnly items are bound to that device",
                                    suggestion: "restore it with --to-new-device (its …ThisDeviceOnly items stay behind, as on iOS)")
            }
        }
        for item in contents.items {
            guard item.attributes.accessibility.isThisDeviceOnly else {
                plan.append((item.attributes, item.data))
                continue
            }
            guard target == .sameDevice else {
                skipped.append(item.attributes)
                continue
            }
            let aad = itemAADPrefix + encode(item.attributes)
            do {
                var data = try item.data.withUnsafeBytes { try AES256GCM.open(try SealedBox(combined: Array($0)), with: deviceKey, authenticating: aad) }
                defer { SecretBytes.wipe(&data) }
                plan.append((item.attributes, SecretBytes(copying: data)))
            } catch is CryptoError {
                throw KeychainError(.backupUnreadable, "the …ThisDeviceOnly item \(item.attributes.service) / \(item.attributes.account) does not open on this device")
            }
        }
        let state = try keychain.readState()
        for accessibility in Set(plan.map(\.attributes.accessibility)) {
            _ = try keychain.classKey(for: accessibility, state: state)
        }
        let held = try keychain.storedItems()
        var removed = 0
        for a in held {
            removed += try keychain.delete(ItemQuery(itemClass: a.itemClass, service: a.service, account: a.account, accessGroup: a.accessGroup))
        }
        var restored: [ItemAttributes] = []
        for (a, data) in plan {
            restored.append(try keychain.add(a.itemClass, service: a.service, account: a.account, label: a.label, accessGroup: a.accessGroup,
                                             accessibility: a.accessibility, data: data))
        }
        try keychain.writeRestoreRecord(leftBehind: skipped)
        return RestoreResult(restored: restored, skipped: skipped, removed: removed)
    }

    // MARK: Encoding

    /// An item's attributes as the payload stores them (class, accessibility, group, service,
    /// account, label); also the AAD of a device-sealed item.
    static func encode(_ a: ItemAttributes) -> [UInt8] {
        var out: [UInt8] = [a.itemClass.storageTag, a.accessibility.storageTag]
        for s in [a.accessGroup, a.service, a.account] { appendString(s, to: &out) }
        if let label = a.label {
            out.append(1)
            appendString(label, to: &out)
        } else {
            out.append(0)
        }
        return out
    }

    static func decodePayload(_ payload: [UInt8]) throws -> Contents {
        var r = Reader(bytes: payload)
        guard try r.uint(1) == UInt64(version) else { throw KeychainError(.corrupt, "payload version") }
        let check = try r.take(Int(try r.uint(2)))
        let count = try r.uint(4)
        var items: [Item] = []
        for _ in 0..<count {
            let start = r.offset
            guard let itemClass = ItemClass(storageTag: UInt8(try r.uint(1))),
                  let accessibility = Accessibility(storageTag: UInt8(try r.uint(1))) else {
                throw KeychainError(.corrupt, "an item's class or accessibility")
            }
            let group = try r.string(), service = try r.string(), account = try r.string()
            let label: String? = try r.uint(1) == 1 ? try r.string() : nil
            let attributes = ItemAttributes(itemClass: itemClass, service: service, account: account, label: label, accessGroup: group,
                                            accessibility: accessibility, creationDate: Date(), modificationDate: Date())
            guard Array(payload[start..<r.offset]) == encode(attributes) else { throw KeychainError(.corrupt, "an item's attributes") }
            let length = Int(try r.uint(4))
            guard length <= Keychain.maxDataByteCount + AES256GCM.minimumCombinedByteCount else { throw KeychainError(.corrupt, "an item's data length") }
            var data = try r.take(length)
            defer { SecretBytes.wipe(&data) }
            items.append(Item(attributes: attributes, data: SecretBytes(copying: data)))
        }
        guard r.offset == payload.count else { throw KeychainError(.corrupt, "trailing bytes") }
        return Contents(items: items, deviceCheck: check)
    }

    static func appendUInt(_ v: UInt64, byteCount: Int, to out: inout [UInt8]) {
        for i in stride(from: byteCount - 1, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }

    static func appendLength16(_ n: Int, to out: inout [UInt8]) { appendUInt(UInt64(n), byteCount: 2, to: &out) }

    static func appendString(_ s: String, to out: inout [UInt8]) {
        let u = Array(s.utf8)
        appendLength16(u.count, to: &out)
        out += u
    }

    /// Runs a crypto call, turning its `CryptoError` into `KeychainError` `.io`.
    static func crypto<R>(_ body: () throws -> R) throws -> R {
        do { return try body() } catch let e as CryptoError { throw KeychainError(.io, "backup cryptography failed: \(e.code.name)") }
    }

    /// Reads the payload's fields in order; running past the end is `.corrupt`.
    struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func take(_ n: Int) throws -> [UInt8] {
            guard n >= 0, n <= bytes.count - offset else { throw KeychainError(.corrupt, "truncated") }
            defer { offset += n }
            return Array(bytes[offset..<(offset + n)])
        }

        mutating func uint(_ n: Int) throws -> UInt64 { try take(n).reduce(0) { $0 << 8 | UInt64($1) } }

        mutating func string() throws -> String {
            let raw = try take(Int(try uint(2)))
            guard raw.count <= Keychain.maxAttributeByteCount, let s = String(validating: raw, as: UTF8.self) else {
                throw KeychainError(.corrupt, "an item's name")
            }
            return s
        }
    }
}

extension Keychain {
    /// The restore record's file name in the keychain directory: what the last restore onto a
    /// new device left behind (attributes only, never data).
    public static let restoreRecordName = "restore-record.json"

    /// The `…ThisDeviceOnly` items the last ``KeychainBackup/restore(_:into:target:)`` onto a
    /// new device left behind, as (access group, service, account) — attributes only; empty
    /// when the keychain was never restored or last restored onto the same device. The
    /// extension's reason for a key that is missing because of it is `unknownKey` (the key is
    /// gone from this device), never a setup error (docs/fallback.md).
    /// - Throws: `KeychainError` `.corrupt` (a damaged record), `.symbolicLink`, `.insecurePermissions`, `.io`.
    public func restoreLeftBehind() throws -> [(accessGroup: String, service: String, account: String)] {
        guard let bytes = try Posix.readFile(Self.restoreRecordName, in: directories.root, maxByteCount: 16 << 20) else { return [] }
        guard let object = (try? JSONReader.parse(bytes))?.objectValue, object["format"]?.stringValue == "pushseal-keychain-restore",
              object["version"]?.integerValue == 1, case .array(let list)? = object["leftBehind"] else {
            throw KeychainError(.corrupt, "\(url.path)/\(Self.restoreRecordName) is damaged")
        }
        return try list.map { v in
            guard let o = v.objectValue, let g = o["accessGroup"]?.stringValue, let s = o["service"]?.stringValue, let a = o["account"]?.stringValue else {
                throw KeychainError(.corrupt, "\(url.path)/\(Self.restoreRecordName) is damaged")
            }
            return (g, s, a)
        }
    }

    /// Writes the restore record (``restoreRecordName``, 0600, replaced atomically): pretty
    /// JSON `{"format":"pushseal-keychain-restore","version":1,"leftBehind":[{"accessGroup","service","account"}…]}`.
    func writeRestoreRecord(leftBehind: [ItemAttributes]) throws {
        let list: [JSONValue] = leftBehind.map {
            .object(["accessGroup": .string($0.accessGroup), "service": .string($0.service), "account": .string($0.account)])
        }
        let object: JSONObject = ["format": .string("pushseal-keychain-restore"), "version": .integer(1), "leftBehind": .array(list)]
        let bytes = try JSONWriter.serialize(.object(object), style: .prettySortedKeys) + [0x0A]
        try withWriterLock { try Posix.writeAtomically(bytes, named: Self.restoreRecordName, in: directories.root, temp: directories.temp) }
    }

    /// Every item's attributes in the keychain, whatever the caller's groups (item headers only,
    /// any device state): what a restore replaces.
    /// - Throws: `KeychainError` `.corrupt` (a damaged item file), `.io`.
    func storedItems() throws -> [ItemAttributes] {
        var out: [ItemAttributes] = []
        for name in try Posix.names(in: directories.items) where name.hasSuffix(".item") {
            if let m = try readItem(named: name) { out.append(m.parsed.record.attributes) }
        }
        return out
    }
}
