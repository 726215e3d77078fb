// PushSeal device keys on a real iPhone: the keychain layout of docs/keychain.md ("Device key
// items (v1 and v2)"), read by the Notification Service Extension and written by the app.
// Module PushSealDevice, shared by both products (the app and the extension): the extension only
// reads (`PushSealDeviceKeys.lookup`, `pinnedSenderKeyIDs`), the app makes, rotates, pins,
// imports and lists. Apple frameworks only (CryptoKit, Security). Checked on Linux by
// LinuxCheck/check.sh; Tests/PushSealWireTests/IOSExampleDriftTests.swift compares its service names, labels,
// accessibility, record offsets, kinds and status codes with docs/keychain.md.
//
// The v2 provisioning story: the app makes its own X25519 key pair here, keeps the private key
// in the keychain access group it shares with its extension, and registers only the public key
// (PushSealRegistration.swift). No secret is ever sent to the phone for version 2.
import CryptoKit
import Foundation
import Security

/// The byte layout of a key item's `kSecValueData` (docs/keychain.md): 59 bytes, integers
/// big-endian.
public enum PushSealKeyLayout {
    /// Length of a key record: 1 + 1 + 1 + 8 + 8 + 8 + 32 bytes.
    public static let recordByteCount = 59
    /// Value of the first byte.
    public static let layoutVersion: UInt8 = 1
    public static let layoutVersionOffset = 0
    public static let kindOffset = 1
    public static let statusOffset = 2
    public static let createdAtOffset = 3
    public static let retiredAtOffset = 11
    public static let notAfterOffset = 19
    public static let keyBytesOffset = 27
    public static let keyByteCount = 32
    /// `retiredAt` / `notAfter` when not set.
    public static let noTime: Int64 = -1
    /// Grace window of a retired key: 30 days, in seconds (APNs may hold a message for weeks).
    public static let graceSeconds: Int64 = 30 * 24 * 60 * 60
}

/// What a key item holds (byte 1 of the record); each kind has its own service and label.
public enum PushSealKeyKind: UInt8, Sendable, CaseIterable {
    /// A version 1 AES-256-GCM key, provisioned by the server (`pushseal-key-record`).
    case v1Key = 1
    /// A version 2 X25519 private key, made on this device.
    case v2DeviceKey = 2
    /// A pinned X25519 sender public key (`pushseal-sender-key` record).
    case senderKey = 3

    /// `kSecAttrService` without the app id; the item's service is this followed by the app id.
    public var servicePrefix: String {
        switch self {
        case .v1Key, .v2DeviceKey: return "pushseal.key:"
        case .senderKey: return "pushseal.sender:"
        }
    }

    /// `kSecAttrLabel` (shown in keychain tools; not part of the item's identity).
    public var label: String {
        switch self {
        case .v1Key: return "PushSeal v1 key"
        case .v2DeviceKey: return "PushSeal v2 key"
        case .senderKey: return "PushSeal sender key"
        }
    }

    /// `kSecAttrService` for `appID`, e.g. `pushseal.key:com.example.app`.
    public func service(appID: String) -> String { servicePrefix + appID }
}

/// A key's lifecycle state (byte 2 of the record). A destroyed key has no item at all.
public enum PushSealKeyStatus: UInt8, Sendable, Comparable {
    case pending = 1
    case primary = 2
    case decryptOnly = 3
    case disabled = 4

    /// The spelling of `pushseal-key-record` (docs/keys.md) and of `list`.
    public var name: String {
        switch self {
        case .pending: return "pending"
        case .primary: return "primary"
        case .decryptOnly: return "decryptOnly"
        case .disabled: return "disabled"
        }
    }

    public init?(name: String) {
        switch name {
        case "pending": self = .pending
        case "primary": self = .primary
        case "decryptOnly": self = .decryptOnly
        case "disabled": self = .disabled
        default: return nil
        }
    }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// One key record (`kSecValueData` of a key item), docs/keychain.md.
public struct PushSealKeyRecord {
    public var kind: PushSealKeyKind
    public var status: PushSealKeyStatus
    /// Unix seconds (UTC).
    public var createdAt: Int64
    /// Unix seconds; -1 = not retired. Set when a key becomes decryptOnly or disabled.
    public var retiredAt: Int64
    /// Unix seconds; -1 = none. End of a decryptOnly key's grace window.
    public var notAfter: Int64
    /// 32 bytes: the AES key (kind 1), the X25519 private key (kind 2), the sender's public key (kind 3).
    public var keyBytes: Data

    public init(kind: PushSealKeyKind, status: PushSealKeyStatus, createdAt: Int64,
         retiredAt: Int64 = PushSealKeyLayout.noTime, notAfter: Int64 = PushSealKeyLayout.noTime, keyBytes: Data) {
        (self.kind, self.status, self.createdAt, self.retiredAt, self.notAfter, self.keyBytes)
            = (kind, status, createdAt, retiredAt, notAfter, keyBytes)
    }

    /// Decodes 59 bytes; `nil` for another length, layout version, kind or status (damaged:
    /// the reader shows the original content, `corruptKey`, and never guesses).
    public init?(decoding data: Data) {
        let bytes = [UInt8](data)
        guard bytes.count == PushSealKeyLayout.recordByteCount,
              bytes[PushSealKeyLayout.layoutVersionOffset] == PushSealKeyLayout.layoutVersion,
              let kind = PushSealKeyKind(rawValue: bytes[PushSealKeyLayout.kindOffset]),
              let status = PushSealKeyStatus(rawValue: bytes[PushSealKeyLayout.statusOffset]) else { return nil }
        func int64(at offset: Int) -> Int64 {
            bytes[offset..<offset + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }.toInt64
        }
        self.init(kind: kind, status: status,
                  createdAt: int64(at: PushSealKeyLayout.createdAtOffset),
                  retiredAt: int64(at: PushSealKeyLayout.retiredAtOffset),
                  notAfter: int64(at: PushSealKeyLayout.notAfterOffset),
                  keyBytes: Data(bytes[PushSealKeyLayout.keyBytesOffset..<PushSealKeyLayout.keyBytesOffset + PushSealKeyLayout.keyByteCount]))
    }

    /// The 59 bytes (big-endian integers). Holds key bytes: do not log it.
    public func encoded() -> Data {
        var out = [UInt8](repeating: 0, count: PushSealKeyLayout.recordByteCount)
        out[PushSealKeyLayout.layoutVersionOffset] = PushSealKeyLayout.layoutVersion
        out[PushSealKeyLayout.kindOffset] = kind.rawValue
        out[PushSealKeyLayout.statusOffset] = status.rawValue
        for (offset, value) in [(PushSealKeyLayout.createdAtOffset, createdAt),
                                (PushSealKeyLayout.retiredAtOffset, retiredAt),
                                (PushSealKeyLayout.notAfterOffset, notAfter)] {
            let bits = UInt64(bitPattern: value)
            for i in 0..<8 { out[offset + i] = UInt8(truncatingIfNeeded: bits >> (56 - 8 * UInt64(i))) }
        }
        let key = [UInt8](keyBytes.prefix(PushSealKeyLayout.keyByteCount))
        out.replaceSubrange(PushSealKeyLayout.keyBytesOffset..<PushSealKeyLayout.keyBytesOffset + key.count, with: key)
        let data = Data(out)
        for i in out.indices { out[i] = 0 }  // best effort: Swift may have copied the array
        return data
    }

    /// The reader rules of docs/keychain.md before opening: `nil` when the key may open at
    /// `now` (Unix seconds), else the fallback code. A decryptOnly key without `notAfter` (-1)
    /// has no end, as in the emulation's DeviceKeyring.
    public func refusal(now: Int64) -> String? {
        switch status {
        case .pending, .primary: return nil
        case .decryptOnly: return notAfter == PushSealKeyLayout.noTime || now < notAfter ? nil : "keyExpired"
        case .disabled: return "keyDisabled"
        }
    }

    /// The reader rule after opening: a decryptOnly or disabled key with `retiredAt` ≥ 0 refuses
    /// a message whose sealed `iat` is later than `retiredAt` (`keys:keyRetired`).
    public func refusal(iat: Int64?) -> String? {
        guard status == .decryptOnly || status == .disabled, retiredAt >= 0, let iat, iat > retiredAt else { return nil }
        return "keys:keyRetired"
    }
}

extension UInt64 {
    fileprivate var toInt64: Int64 { Int64(bitPattern: self) }
}

/// The app's key manifest (docs/keychain.md "The key manifest"): the rollback guard of the key
/// items. One item per app: service `pushseal.manifest:<appID>`, account `manifest`, label
/// `PushSeal key manifest`, same access group and accessibility as the key items. It lists every
/// key item with the SHA-256 of the record the item must hold; a key item it does not vouch for
/// (an older copy put back, a pruned key or removed pin restored) never opens: `keyRolledBack`.
public enum PushSealKeyManifestLayout {
    public static let servicePrefix = "pushseal.manifest:"
    public static let account = "manifest"
    public static let label = "PushSeal key manifest"
    public static let layoutVersion: UInt8 = 1
    public static let versionOffset = 0
    public static let generationOffset = 1
    public static let entryCountOffset = 9
    public static let entriesOffset = 11
    public static let digestByteCount = 32
    public static let maxEntryCount = 4096

    public static func service(appID: String) -> String { servicePrefix + appID }
}

/// The manifest's bytes (big-endian): version(1) ‖ generation(8, ≥ 1) ‖ entry count(2) ‖ entries
/// sorted by (kind, key id bytes), each kind(1) ‖ key id length(1) ‖ key id ‖ digest(32) ‖
/// previous digest(32); 32 zero bytes = none (a digest: the item is being deleted; a previous
/// digest: no write in progress).
public struct PushSealKeyManifest: Equatable {
    public struct Entry: Equatable {
        public var kind: PushSealKeyKind
        public var keyID: String
        /// SHA-256 of the record the item holds; nil while the item is being deleted.
        public var digest: Data?
        /// SHA-256 of the record before the write in progress; nil when none.
        public var previousDigest: Data?

        public func accepts(_ digest: Data) -> Bool { digest == self.digest || digest == previousDigest }
    }

    public var generation: UInt64 = 0
    public var entries: [Entry] = []

    public static func digest(_ data: Data) -> Data { Data(SHA256.hash(data: data)) }

    /// The entry of the item `keyID` under `kind`'s service (kinds 1 and 2 share one).
    public func entry(_ kind: PushSealKeyKind, keyID: String) -> Entry? {
        entries.first { $0.keyID == keyID && $0.kind.servicePrefix == kind.servicePrefix }
    }

    private static func ordered(_ a: Entry, _ b: Entry) -> Bool {
        a.kind.rawValue != b.kind.rawValue ? a.kind.rawValue < b.kind.rawValue
            : Array(a.keyID.utf8).lexicographicallyPrecedes(Array(b.keyID.utf8))
    }

    public init() {}

    /// `nil` for bytes that break the layout (damaged: nothing opens, `corruptKey`).
    public init?(decoding data: Data) {
        let bytes = [UInt8](data)
        typealias L = PushSealKeyManifestLayout
        guard bytes.count >= L.entriesOffset, bytes[L.versionOffset] == L.layoutVersion else { return nil }
        func uint(_ offset: Int, _ count: Int) -> UInt64 { bytes[offset..<offset + count].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        generation = uint(L.generationOffset, 8)
        let count = Int(uint(L.entryCountOffset, 2))
        guard generation >= 1, count <= L.maxEntryCount else { return nil }
        let zero = Data(count: L.digestByteCount)
        var at = L.entriesOffset
        for _ in 0..<count {
            guard at + 2 <= bytes.count, let kind = PushSealKeyKind(rawValue: bytes[at]) else { return nil }
            let length = Int(bytes[at + 1])
            let end = at + 2 + length + 2 * L.digestByteCount
            guard end <= bytes.count else { return nil }
            let keyID = String(decoding: bytes[at + 2..<at + 2 + length], as: UTF8.self)
            guard PushSealWire.isValidKeyID(keyID), keyID.utf8.count == length else { return nil }
            let digest = Data(bytes[at + 2 + length..<end - L.digestByteCount]), previous = Data(bytes[end - L.digestByteCount..<end])
            let entry = Entry(kind: kind, keyID: keyID, digest: digest == zero ? nil : digest, previousDigest: previous == zero ? nil : previous)
            guard entry.digest != nil || entry.previousDigest != nil else { return nil }
            if let last = entries.last, !Self.ordered(last, entry) { return nil }
            entries.append(entry)
            at = end
        }
        guard at == bytes.count else { return nil }
    }

    public func encoded() -> Data {
        typealias L = PushSealKeyManifestLayout
        let sorted = entries.sorted(by: Self.ordered)
        var out: [UInt8] = [L.layoutVersion]
        for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: generation >> (56 - 8 * UInt64(i)))) }
        out += [UInt8(truncatingIfNeeded: sorted.count >> 8), UInt8(truncatingIfNeeded: sorted.count)]
        let zero = Data(count: L.digestByteCount)
        for e in sorted {
            out += [e.kind.rawValue, UInt8(e.keyID.utf8.count)] + Array(e.keyID.utf8) + [UInt8](e.digest ?? zero) + [UInt8](e.previousDigest ?? zero)
        }
        return Data(out)
    }
}

/// The key items of one app in the shared keychain access group.
public enum PushSealDeviceKeys {
    /// Info.plist key of both targets: the keychain access group they share (the app's first
    /// `keychain-access-groups` entry, e.g. `TEAMID.com.example.app.pushseal`).
    public static let accessGroupInfoKey = "PushSealKeychainAccessGroup"

    /// Why an app-side operation failed. `code` is stable; no key bytes are ever included.
    public struct Failure: Error, CustomStringConvertible {
        public let code: String
        public let status: OSStatus?
        public init(_ code: String, status: OSStatus? = nil) { (self.code, self.status) = (code, status) }
        public var description: String { status.map { "\(code) (OSStatus \($0))" } ?? code }
    }

    /// The result of reading one key item (extension side).
    public enum Lookup {
        case found(PushSealKeyRecord)
        /// No item under this service and account.
        case notFound
        /// An item of another kind under this service and account (v1 and v2 device keys share
        /// a service): a v1 payload looks only at kind 1, a v2 payload only at kind 2.
        case otherKind
        /// The item exists but its record breaks the layout, or the app's key manifest is
        /// damaged (`corruptKey`).
        case damaged
        /// The item exists but the app's key manifest does not vouch for it: an older copy put
        /// back, a pruned key or a removed pin restored, no manifest at all (`keyRolledBack`).
        case rolledBack
        /// SecItemCopyMatching failed: -25308 locked with a WhenUnlocked item, -34018 missing
        /// entitlement, …
        case failed(OSStatus)
    }

    public static func accessGroup() -> String? {
        Bundle.main.object(forInfoDictionaryKey: accessGroupInfoKey) as? String
    }

    private static func baseQuery(kind: PushSealKeyKind, appID: String, account: String?) -> [String: Any]? {
        guard let group = accessGroup() else { return nil }
        var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword,
                                    kSecAttrService as String: kind.service(appID: appID),
                                    kSecAttrAccessGroup as String: group]
        if let account { query[kSecAttrAccount as String] = account }
        return query
    }

    // MARK: Reading (extension and app)

    /// Reads the item of `kind` under `keyID` (the account). The account must equal the
    /// payload's key id: no other key is ever tried.
    public static func lookup(_ kind: PushSealKeyKind, keyID: String, appID: String) -> Lookup {
        guard var query = baseQuery(kind: kind, appID: appID, account: keyID) else { return .failed(errSecMissingEntitlement) }
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return .notFound }
        guard status == errSecSuccess else { return .failed(status) }
        guard let data = result as? Data else { return .damaged }
        // The rollback guard first: the manifest must list this item with this record's digest.
        switch manifest(appID: appID) {
        case .failure(let failure): return failure.code == "corruptKey" ? .damaged : .failed(failure.status ?? errSecParam)
        case .success(nil): return .rolledBack
        case .success(let manifest?):
            guard let entry = manifest.entry(kind, keyID: keyID), entry.accepts(PushSealKeyManifest.digest(data)) else { return .rolledBack }
        }
        guard let record = PushSealKeyRecord(decoding: data) else { return .damaged }
        return record.kind == kind ? .found(record) : .otherKind
    }

    private static func manifestQuery(appID: String) -> [String: Any]? {
        guard let group = accessGroup() else { return nil }
        return [kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: PushSealKeyManifestLayout.service(appID: appID),
                kSecAttrAccount as String: PushSealKeyManifestLayout.account,
                kSecAttrAccessGroup as String: group]
    }

    /// The app's key manifest; `nil` when it has none (never provisioned); `corruptKey` when damaged.
    public static func manifest(appID: String) -> Result<PushSealKeyManifest?, Failure> {
        guard var query = manifestQuery(appID: appID) else { return .failure(Failure("notConfigured")) }
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return .success(nil) }
        guard status == errSecSuccess else { return .failure(Failure("keychain", status: status)) }
        guard let data = result as? Data, let manifest = PushSealKeyManifest(decoding: data) else { return .failure(Failure("corruptKey")) }
        return .success(manifest)
    }

    /// Writes the manifest with its generation one higher (adds the item for the first one).
    /// A compare-and-swap on the generation: when the stored manifest is no longer the one this
    /// write started from (another writer, e.g. an extension process), nothing is written
    /// (`manifestChanged`: retry the whole change).
    private static func save(_ manifest: inout PushSealKeyManifest, appID: String) throws {
        guard var query = manifestQuery(appID: appID) else { throw Failure("notConfigured") }
        let stored = try Self.manifest(appID: appID).get()?.generation ?? 0
        guard stored == manifest.generation else { throw Failure("manifestChanged") }
        let first = manifest.generation == 0
        manifest.generation += 1
        let data = manifest.encoded()
        let status: OSStatus
        if first {
            query[kSecValueData as String] = data
            query[kSecAttrLabel as String] = PushSealKeyManifestLayout.label
            query[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            status = SecItemAdd(query as CFDictionary, nil)
        } else {
            status = SecItemUpdate(query as CFDictionary, [kSecValueData as String: data] as CFDictionary)
        }
        guard status == errSecSuccess else { throw Failure("keychain", status: status) }
    }

    /// The accounts (key ids) of every item of `kind` for `appID`, attributes only (works in
    /// any lock state). Pinned sender keys: `pinnedSenderKeyIDs`.
    public static func keyIDs(_ kind: PushSealKeyKind, appID: String) -> Result<[String], Failure> {
        guard var query = baseQuery(kind: kind, appID: appID, account: nil) else { return .failure(Failure("notConfigured")) }
        query[kSecReturnAttributes as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitAll
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return .success([]) }
        guard status == errSecSuccess, let items = result as? [[String: Any]] else {
            return .failure(Failure("keychain", status: status))
        }
        return .success(items.compactMap { $0[kSecAttrAccount as String] as? String }.sorted())
    }

    /// The sender key ids pinned for `appID` (kind 3 items, whatever their status): a non-empty
    /// list turns on the downgrade check of FORMAT.md §V.7 step 2.
    /// The manifest's kind 3 entries count too: a pin item deleted behind the app's back keeps
    /// the downgrade check on; pin items without a manifest are `keyRolledBack`.
    public static func pinnedSenderKeyIDs(appID: String) -> Result<[String], Failure> {
        let items: [String]
        switch keyIDs(.senderKey, appID: appID) {
        case .success(let ids): items = ids
        case .failure(let failure): return .failure(failure)
        }
        switch manifest(appID: appID) {
        case .failure(let failure): return .failure(failure)
        case .success(nil): return items.isEmpty ? .success([]) : .failure(Failure("keyRolledBack"))
        case .success(let manifest?):
            return .success(Array(Set(items + manifest.entries.filter { $0.kind == .senderKey }.map(\.keyID))).sorted())
        }
    }

    // MARK: Writing (app)

    /// Adds the item, or replaces its data and label when it exists. New items get
    /// `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`: readable while the phone is locked
    /// (when most notifications arrive), never in a backup or on another device. Written under
    /// the key manifest (`write`).
    public static func store(_ record: PushSealKeyRecord, keyID: String, appID: String) throws {
        guard PushSealWire.isValidKeyID(keyID), PushSealWire.isValidAppID(appID) else { throw Failure("invalidName") }
        guard record.keyBytes.count == PushSealKeyLayout.keyByteCount else { throw Failure("invalidKey") }
        // v1 and v2 device keys share a service: never overwrite a key of the other kind.
        if case .otherKind = lookup(record.kind, keyID: keyID, appID: appID) { throw Failure("duplicateKeyID") }
        try write(record.kind, keyID: keyID, appID: appID, data: record.encoded())
    }

    /// Deletes the item (a destroyed key: its item no longer exists), under the key manifest.
    public static func delete(_ kind: PushSealKeyKind, keyID: String, appID: String) throws {
        try write(kind, keyID: keyID, appID: appID, data: nil)
    }

    /// One item's change under the key manifest, in three writes: the manifest accepting both
    /// the old and the new record, the item, the manifest with the new record alone. A reader
    /// alongside, or a crash in between, finds the item in an accepted state. The item there
    /// now must be one the manifest vouches for (a rolled-back item is never blessed), and the
    /// first write of an app without a manifest needs it to have no key items.
    ///
    /// Serialized (security review G3: concurrent writers lost each other's manifest entries):
    /// every write of the process holds `writeLock` from the manifest read to its last manifest
    /// write, and `save` refuses to overwrite a manifest another process changed meanwhile. A
    /// write first finishes the entries an interrupted write left with two digests
    /// (`finishHalfWritten`), as the emulation does (docs/keychain.md "The key manifest").
    private static func write(_ kind: PushSealKeyKind, keyID: String, appID: String, data: Data?) throws {
        writeLock.lock()
        defer { writeLock.unlock() }
        guard var query = baseQuery(kind: kind, appID: appID, account: keyID) else { throw Failure("notConfigured") }
        var manifest: PushSealKeyManifest
        switch Self.manifest(appID: appID) {
        case .failure(let failure): throw failure
        case .success(var held?):
            if try finishHalfWritten(&held, appID: appID) { try save(&held, appID: appID) }
            manifest = held
        case .success(nil):
            for k in [PushSealKeyKind.v1Key, .senderKey] where !(try keyIDs(k, appID: appID).get()).isEmpty { throw Failure("keyRolledBack") }
            manifest = PushSealKeyManifest()
        }
        var read = query
        read[kSecReturnData as String] = true
        read[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(read as CFDictionary, &result)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw Failure("keychain", status: status) }
        let current = status == errSecSuccess ? (result as? Data).map(PushSealKeyManifest.digest) ?? Data() : nil
        let index = manifest.entries.firstIndex { $0.keyID == keyID && $0.kind.servicePrefix == kind.servicePrefix }
        if let current, index.map({ manifest.entries[$0].accepts(current) }) != true { throw Failure("keyRolledBack") }
        let new = data.map(PushSealKeyManifest.digest)
        if current == nil, new == nil {
            if let index { manifest.entries.remove(at: index); try save(&manifest, appID: appID) }
            return
        }
        let entry = PushSealKeyManifest.Entry(kind: kind, keyID: keyID, digest: new, previousDigest: current)
        if let index { manifest.entries[index] = entry } else { manifest.entries.append(entry) }
        try save(&manifest, appID: appID)
        var itemStatus: OSStatus
        if let data {
            let update: [String: Any] = [kSecValueData as String: data, kSecAttrLabel as String: kind.label]
            itemStatus = SecItemUpdate(query as CFDictionary, update as CFDictionary)
            if itemStatus == errSecItemNotFound {
                query[kSecValueData as String] = data
                query[kSecAttrLabel as String] = kind.label
                query[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
                itemStatus = SecItemAdd(query as CFDictionary, nil)
            }
        } else {
            itemStatus = SecItemDelete(query as CFDictionary)
            if itemStatus == errSecItemNotFound { itemStatus = errSecSuccess }
        }
        guard itemStatus == errSecSuccess else { throw Failure("keychain", status: itemStatus) }
        if let at = manifest.entries.firstIndex(where: { $0.keyID == keyID && $0.kind.servicePrefix == kind.servicePrefix }) {
            if new == nil { manifest.entries.remove(at: at) } else { manifest.entries[at].previousDigest = nil }
        }
        try save(&manifest, appID: appID)
    }

    /// Moves PushSeal's items (services `pushseal.…`, of `appID`) from the access group `from`
    /// to `to` with their key manifest, for the app's first launch after adding a shared group
    /// for its extension (docs/keychain.md "Moving keys between access groups"; the emulation's
    /// `push-keys keychain migrate`): checks every target first (another item of the same name
    /// with other data: `targetConflict`, nothing changed), adds the missing copies (the manifest
    /// last), reads them back, then deletes each source naming `from` (a delete without a group
    /// would match every group the app reaches), the manifest last. A crash leaves two copies or
    /// the source only; calling it again finishes. Returns how many items moved (0: nothing to
    /// migrate). Call it before `accessGroup()` names `to`, under the same write lock.
    @discardableResult
    static func migrateAccessGroup(from: String, to: String, appID: String) throws -> Int {
        writeLock.lock()
        defer { writeLock.unlock() }
        guard from != to, PushSealWire.isValidAppID(appID) else { throw Failure("invalidName") }
        let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccessGroup as String: from,
                                    kSecReturnAttributes as String: true, kSecReturnData as String: true,
                                    kSecMatchLimit as String: kSecMatchLimitAll]
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return 0 }
        guard status == errSecSuccess else { throw Failure("keychain", status: status) }
        var sources = ((result as? [[String: Any]]) ?? []).filter {
            let service = $0[kSecAttrService as String] as? String ?? ""
            return service.hasPrefix("pushseal.") && service.hasSuffix(":" + appID)
        }
        func isManifest(_ item: [String: Any]) -> Bool { (item[kSecAttrService as String] as? String ?? "").hasPrefix(PushSealKeyManifestLayout.servicePrefix) }
        sources.sort { !isManifest($0) && isManifest($1) }
        func copy(of item: [String: Any], in group: String) throws -> Data? {
            var read: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccessGroup as String: group,
                                       kSecAttrService as String: item[kSecAttrService as String] ?? "",
                                       kSecAttrAccount as String: item[kSecAttrAccount as String] ?? ""]
            read[kSecReturnData as String] = true
            read[kSecMatchLimit as String] = kSecMatchLimitOne
            var found: CFTypeRef?
            let status = SecItemCopyMatching(read as CFDictionary, &found)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess else { throw Failure("keychain", status: status) }
            return found as? Data
        }
        var missing: [[String: Any]] = []
        for item in sources {
            guard let held = try copy(of: item, in: to) else { missing.append(item); continue }
            guard held == item[kSecValueData as String] as? Data else { throw Failure("targetConflict") }
        }
        for item in missing {
            var add: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccessGroup as String: to,
                                      kSecAttrService as String: item[kSecAttrService as String] ?? "",
                                      kSecAttrAccount as String: item[kSecAttrAccount as String] ?? "",
                                      kSecValueData as String: item[kSecValueData as String] ?? Data(),
                                      kSecAttrAccessible as String: item[kSecAttrAccessible as String] ?? kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly]
            if let label = item[kSecAttrLabel as String] { add[kSecAttrLabel as String] = label }
            let added = SecItemAdd(add as CFDictionary, nil)
            guard added == errSecSuccess else { throw Failure("keychain", status: added) }
        }
        for item in sources where try copy(of: item, in: to) != item[kSecValueData as String] as? Data {
            throw Failure("verifyFailed")
        }
        for item in sources {
            let delete: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccessGroup as String: from,
                                         kSecAttrService as String: item[kSecAttrService as String] ?? "",
                                         kSecAttrAccount as String: item[kSecAttrAccount as String] ?? ""]
            let deleted = SecItemDelete(delete as CFDictionary)
            guard deleted == errSecSuccess || deleted == errSecItemNotFound else { throw Failure("keychain", status: deleted) }
        }
        return sources.count
    }

    /// The install marker's name in the App Group container (docs/keychain.md "Reinstall").
    static let installMarkerName = "pushseal-install.marker"

    /// The first launch after a reinstall: keychain items outlive an uninstall, the App Group
    /// container does not. Without the install marker in `container`, PushSeal's own leftover
    /// items of `appID` (key items, pins, key manifest; never another service's items) are
    /// deleted, each naming the access group, and the marker is written; a container that
    /// already holds PushSeal's files (the replay guard) is an update from before the marker
    /// and nothing is removed. Call it before making the device key (`makeDeviceKey`), so the
    /// app ends with exactly one current key. Returns how many of the three kinds of items
    /// (keys, pins, manifest) had leftovers.
    @discardableResult
    static func removeLeftoversAfterReinstall(appID: String, container: URL) throws -> Int {
        writeLock.lock()
        defer { writeLock.unlock() }
        let marker = container.appendingPathComponent(installMarkerName)
        guard !FileManager.default.fileExists(atPath: marker.path) else { return 0 }
        guard let group = accessGroup() else { throw Failure("notConfigured") }
        var removed = 0
        let earlier = FileManager.default.fileExists(atPath: container.appendingPathComponent("pushseal-replay-guard.json").path)  // the extension's replay guard
        if !earlier {
            let services = [PushSealKeyKind.v1Key.service(appID: appID), PushSealKeyKind.senderKey.service(appID: appID),
                            PushSealKeyManifestLayout.service(appID: appID)]
            for service in services {
                let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                                            kSecAttrAccessGroup as String: group]
                let status = SecItemDelete(query as CFDictionary)
                guard status == errSecSuccess || status == errSecItemNotFound else { throw Failure("keychain", status: status) }
                if status == errSecSuccess { removed += 1 }
            }
        }
        guard FileManager.default.createFile(atPath: marker.path, contents: Data("PushSeal install marker\n".utf8),
                                             attributes: [.posixPermissions: 0o600]) else { throw Failure("markerUnwritable") }
        return removed
    }

    /// Serializes the process's key writers (the app's foreground and background work).
    private static let writeLock = NSLock()

    /// Finishes entries a write killed between its manifest writes left with two digests: the
    /// item's data decides (new state: keep it alone; old state: the write never happened; a
    /// delete that went through: drop the entry). Returns true when the manifest changed.
    private static func finishHalfWritten(_ manifest: inout PushSealKeyManifest, appID: String) throws -> Bool {
        var changed = false
        for index in manifest.entries.indices.reversed() {
            let entry = manifest.entries[index]
            guard let previous = entry.previousDigest,
                  var read = baseQuery(kind: entry.kind, appID: appID, account: entry.keyID) else { continue }
            read[kSecReturnData as String] = true
            read[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(read as CFDictionary, &result)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw Failure("keychain", status: status) }
            let held = status == errSecSuccess ? (result as? Data).map(PushSealKeyManifest.digest) : nil
            if held == entry.digest {
                if entry.digest == nil { manifest.entries.remove(at: index) } else { manifest.entries[index].previousDigest = nil }
                changed = true
            } else if held == previous {
                manifest.entries[index].digest = previous
                manifest.entries[index].previousDigest = nil
                changed = true
            }
        }
        return changed
    }

    /// Reads a record the app is about to change; a missing item is `nil`, anything else throws.
    private static func existing(_ kind: PushSealKeyKind, keyID: String, appID: String) throws -> PushSealKeyRecord? {
        switch lookup(kind, keyID: keyID, appID: appID) {
        case .found(let record): return record
        case .notFound: return nil
        case .otherKind: throw Failure("duplicateKeyID")  // never overwrite a key of another kind
        case .damaged: throw Failure("corruptKey")
        case .rolledBack: throw Failure("keyRolledBack")
        case .failed(let status): throw Failure("keychain", status: status)
        }
    }

    private static func records(_ kind: PushSealKeyKind, appID: String) throws -> [(keyID: String, record: PushSealKeyRecord)] {
        try keyIDs(kind, appID: appID).get().compactMap { keyID in
            switch lookup(kind, keyID: keyID, appID: appID) {
            case .found(let record): return (keyID, record)
            case .notFound, .otherKind: return nil  // gone meanwhile, or the other version's key
            case .damaged: throw Failure("corruptKey")
            case .rolledBack: throw Failure("keyRolledBack")
            case .failed(let status): throw Failure("keychain", status: status)
            }
        }
    }

    public static func unixNow() -> Int64 { Int64(Date().timeIntervalSince1970) }

    // MARK: Version 2 device keys (FORMAT.md §V.5, §V.6)

    /// The registration record of FORMAT.md §V.6, what the app uploads with its APNs device token.
    public struct RegistrationRecord: Codable, Sendable {
        public var format = "pushseal-device-key"
        public var version = 2
        public var appId: String
        public var keyId: String
        /// Standard padded base64 of the 32-byte X25519 public key.
        public var publicKey: String
        /// Unix seconds (UTC).
        public var createdAt: Int64

        /// Compact JSON, members sorted (readers ignore order), e.g.
        /// `{"appId":"com.example.app","createdAt":1796000000,"format":"pushseal-device-key",…}`.
        public func json() throws -> Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return try encoder.encode(self)
        }
    }

    /// Makes a new X25519 key pair and stores its private key (kind 2): `primary` when the app
    /// has no usable v2 key yet, else `pending` until `promote(keyID:appID:now:)` after the new
    /// record was registered (so the old key keeps opening until the server has the new one).
    /// - Returns: the registration record (no secret in it).
    /// - Throws: `Failure` `invalidName`, `notConfigured`, `corruptKey`, `keychain` (OSStatus).
    public static func makeDeviceKey(appID: String, now: Int64 = unixNow()) throws -> RegistrationRecord {
        guard PushSealWire.isValidAppID(appID) else { throw Failure("invalidAppID") }
        let privateKey = Curve25519.KeyAgreement.PrivateKey()
        let publicKey = privateKey.publicKey.rawRepresentation
        let keyID = PushSealWire.keyID(forPublicKey: publicKey)
        let hasUsable = try records(.v2DeviceKey, appID: appID).contains { $0.record.status <= .primary }
        var secret = privateKey.rawRepresentation
        defer { secret.resetBytes(in: 0..<secret.count) }  // best effort: CryptoKit keeps its own copy
        try store(PushSealKeyRecord(kind: .v2DeviceKey, status: hasUsable ? .pending : .primary, createdAt: now, keyBytes: secret),
                  keyID: keyID, appID: appID)
        return RegistrationRecord(appId: appID, keyId: keyID, publicKey: PushSealWire.encodeBase64(publicKey), createdAt: now)
    }

    /// The registration record of a key the app holds (to upload it again).
    public static func registrationRecord(keyID: String, appID: String) throws -> RegistrationRecord {
        guard let record = try existing(.v2DeviceKey, keyID: keyID, appID: appID) else { throw Failure("unknownKeyID") }
        let privateKey = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: record.keyBytes)
        return RegistrationRecord(appId: appID, keyId: keyID, publicKey: PushSealWire.encodeBase64(privateKey.publicKey.rawRepresentation),
                                  createdAt: record.createdAt)
    }

    /// Makes `keyID` the primary v2 key; every other pending or primary v2 key becomes
    /// `decryptOnly` with `retiredAt = now` and `notAfter = now + grace` (30 days by default).
    /// Call it once the server has accepted the new registration record.
    public static func promote(keyID: String, appID: String, now: Int64 = unixNow(), graceSeconds: Int64 = PushSealKeyLayout.graceSeconds) throws {
        guard var new = try existing(.v2DeviceKey, keyID: keyID, appID: appID) else { throw Failure("unknownKeyID") }
        guard new.status <= .primary else { throw Failure("invalidState") }  // never resurrect a retired key
        for (otherID, var other) in try records(.v2DeviceKey, appID: appID) where otherID != keyID && other.status <= .primary {
            other.status = .decryptOnly
            other.retiredAt = now
            other.notAfter = now + graceSeconds
            try store(other, keyID: otherID, appID: appID)
        }
        new.status = .primary
        try store(new, keyID: keyID, appID: appID)
    }

    /// Rotation on the device: a new pair (pending while an older key is primary) and its new
    /// record; the caller registers it, then calls `promote`. Older private keys stay
    /// decryptOnly for the grace window and are deleted by `prune` after it.
    public static func rotate(appID: String, now: Int64 = unixNow()) throws -> RegistrationRecord {
        try makeDeviceKey(appID: appID, now: now)
    }

    /// Deletes v1 and v2 key items whose grace window is over: decryptOnly or disabled with
    /// `notAfter` ≤ now, and disabled keys without `notAfter` retired more than a grace ago; and
    /// unpins retired sender keys after their `notAfter` (G15) while another pin remains (so the
    /// downgrade check never turns off). A revoked (disabled) sender pin stays, so the same key
    /// is never pinned again.
    /// - Returns: the key ids deleted.
    public static func prune(appID: String, now: Int64 = unixNow(), graceSeconds: Int64 = PushSealKeyLayout.graceSeconds) throws -> [String] {
        var pruned: [String] = []
        for kind in [PushSealKeyKind.v1Key, .v2DeviceKey] {
            for (keyID, record) in try records(kind, appID: appID) where record.status >= .decryptOnly {
                let end = record.notAfter != PushSealKeyLayout.noTime ? record.notAfter
                    : record.retiredAt != PushSealKeyLayout.noTime ? record.retiredAt + graceSeconds : Int64.max
                guard end <= now else { continue }
                try delete(kind, keyID: keyID, appID: appID)
                pruned.append(keyID)
            }
        }
        // Retired pins past their end, while another pin remains (the downgrade check stays on).
        let pins = try records(.senderKey, appID: appID)
        let ended = pins.filter { $0.record.status == .decryptOnly && $0.record.notAfter != PushSealKeyLayout.noTime && $0.record.notAfter <= now }
        if ended.count < pins.count {
            for (keyID, _) in ended {
                try delete(.senderKey, keyID: keyID, appID: appID)
                pruned.append(keyID)
            }
        }
        return pruned
    }

    // MARK: Pinned sender keys (FORMAT.md §V.6, §V.7 step 2)

    /// The sender key record the server publishes (FORMAT.md §V.6). `status`, `retiredAt` and
    /// `notAfter` are optional (older servers omit them; security review G15): `pending` (published
    /// ahead of a rotation, not sealing yet), `primary` (sealing), `decryptOnly` (retired at
    /// `retiredAt`, accepted for messages sealed before it until `notAfter`).
    public struct SenderKeyRecord: Codable, Sendable {
        public var format: String
        public var version: Int
        public var appId: String
        public var senderKeyId: String
        public var publicKey: String
        public var status: String?
        public var retiredAt: Int64?
        public var notAfter: Int64?
    }

    /// Pins a sender public key (kind 3) from a `pushseal-sender-key` record. Several may be
    /// pinned at once (a staged rotation publishes the next key before the server switches to
    /// it). Refuses another app id, a bad key id, a key that is not 32 bytes, and a low-order
    /// point (X25519 with any private key gives all zero: RFC 9180 §7.1.4).
    ///
    /// Status (G15): `pending`, `primary` or none → pinned `primary` (it verifies); `decryptOnly`
    /// → pinned `decryptOnly` with the record's `retiredAt`, and an end this device measures
    /// itself (G14): the earlier of the record's `notAfter` and now + `graceSeconds` (device
    /// clock), so a retired key never verifies for longer than the grace after this device
    /// learned of its retirement, whatever the sender claims. A pin's status only moves forward
    /// (`primary` → `decryptOnly` → `disabled`); a revoked (disabled) pin stays disabled.
    ///
    /// Version 1 (G2): pinning a sender key ends the app's version 1 keys — each pending or
    /// primary v1 key becomes `decryptOnly`, retired now, until now + `v1GraceSeconds` — so v1
    /// payloads open only inside that migration window and only if sealed before the pin;
    /// after it, only auth-mode payloads by a pinned sender open.
    /// - Returns: the sender key id.
    /// - Throws: `Failure` `malformedRecord`, `wrongAppID`, `invalidKeyID`, `invalidKey`,
    ///   `lowOrderPoint`, `duplicateKeyID` (same id, other bytes), `keychain`.
    public static func pinSender(recordJSON: Data, appID: String, now: Int64 = unixNow(),
                          graceSeconds: Int64 = PushSealKeyLayout.graceSeconds,
                          v1GraceSeconds: Int64 = PushSealKeyLayout.graceSeconds) throws -> String {
        guard let record = try? JSONDecoder().decode(SenderKeyRecord.self, from: recordJSON),
              record.format == "pushseal-sender-key", record.version == 2 else { throw Failure("malformedRecord") }
        guard record.appId == appID else { throw Failure("wrongAppID") }
        guard PushSealWire.isValidKeyID(record.senderKeyId) else { throw Failure("invalidKeyID") }
        let published: PushSealKeyStatus
        switch record.status {
        case nil, "pending", "primary": published = .primary
        case "decryptOnly": published = .decryptOnly
        default: throw Failure("malformedRecord")
        }
        guard let publicKey = PushSealWire.decodeBase64(record.publicKey), publicKey.count == PushSealWire.keyByteCount,
              let point = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: publicKey) else { throw Failure("invalidKey") }
        // A fresh scalar times a low-order point is the neutral element: all-zero output (or a
        // thrown error, which CryptoKit may give for it instead).
        guard let probe = try? Curve25519.KeyAgreement.PrivateKey().sharedSecretFromKeyAgreement(with: point),
              !PushSealWire.isAllZero(probe) else { throw Failure("lowOrderPoint") }
        var pin = PushSealKeyRecord(kind: .senderKey, status: published, createdAt: now, keyBytes: publicKey)
        if published == .decryptOnly {
            pin.retiredAt = min(record.retiredAt ?? now, now)
            pin.notAfter = min(record.notAfter ?? Int64.max, now + graceSeconds)
        }
        if let held = try existing(.senderKey, keyID: record.senderKeyId, appID: appID) {
            guard held.keyBytes == publicKey else { throw Failure("duplicateKeyID") }
            if held.status >= pin.status {
                pin = held  // a status only moves forward; the device-measured end is kept
            } else {
                pin.createdAt = held.createdAt
            }
        }
        try store(pin, keyID: record.senderKeyId, appID: appID)
        try endVersion1(appID: appID, now: now, graceSeconds: v1GraceSeconds)
        return record.senderKeyId
    }

    /// The migration window's end (G2): every pending or primary v1 key of `appID` becomes
    /// `decryptOnly`, retired `now`, until `now + graceSeconds` (0: ends now). Called by
    /// `pinSender`; a v1 key still primary once a sender key is pinned is refused
    /// (`downgradeRefused`) by the extension.
    public static func endVersion1(appID: String, now: Int64 = unixNow(), graceSeconds: Int64 = PushSealKeyLayout.graceSeconds) throws {
        for (keyID, var record) in try records(.v1Key, appID: appID) where record.status <= .primary {
            record.status = .decryptOnly
            record.retiredAt = now
            record.notAfter = now + max(0, graceSeconds)
            try store(record, keyID: keyID, appID: appID)
        }
    }

    /// The sender key ids this device would accept now (pinned `primary`, or `decryptOnly` before
    /// its end), for the registration upload's `pinnedSenderKeyIds` (the server counts who is
    /// ready for a rotation: `push-keys sender status`).
    public static func usableSenderKeyIDs(appID: String, now: Int64 = unixNow()) throws -> [String] {
        try records(.senderKey, appID: appID).filter { $0.record.refusal(now: now) == nil }.map(\.keyID).sorted()
    }

    // MARK: Version 1 keys from the server (docs/keys.md "Provisioning")

    /// A `pushseal-key-record`, version 1 (docs/keys.md; Sources/PushSealKeyRecords/KeyRecord.swift).
    public struct V1KeyRecord: Decodable {
        public struct Entry: Decodable {
            public var keyId: String
            public var status: String
            public var createdAt: Int64
            public var retiredAt: Int64?
            public var notAfter: Int64?
            /// Standard base64 of 32 bytes; absent for disabled and destroyed keys.
            public var key: String?
        }
        public var format: String
        public var version: Int
        public var appId: String
        public var recipient: String
        public var keys: [Entry]
    }

    /// Imports a version 1 key record (received over the app's own authenticated API) into
    /// the layout: one kind 1 item per key. All-or-nothing validation first; then per key:
    /// new ids are added, known ones only move forward (pending → primary → decryptOnly →
    /// disabled), `destroyed` deletes the item, the same id with other bytes is refused.
    /// A disabled key's bytes are replaced by zeros (it never opens again).
    /// The JSON text holds key bytes: the caller wipes `recordJSON` after the call (best effort).
    /// - Returns: the key ids written or deleted.
    /// - Throws: `Failure` `malformedRecord`, `wrongAppID`, `invalidKeyID`, `invalidKey`,
    ///   `duplicateKeyID`, `corruptKey`, `keychain`.
    public static func importV1(recordJSON: Data, appID: String) throws -> [String] {
        guard let record = try? JSONDecoder().decode(V1KeyRecord.self, from: recordJSON),
              record.format == "pushseal-key-record", record.version == 1 else { throw Failure("malformedRecord") }
        guard record.appId == appID else { throw Failure("wrongAppID") }
        var planned: [(keyID: String, record: PushSealKeyRecord?)] = []
        for entry in record.keys {
            guard PushSealWire.isValidKeyID(entry.keyId) else { throw Failure("invalidKeyID") }
            if entry.status == "destroyed" { planned.append((entry.keyId, nil)); continue }
            guard let status = PushSealKeyStatus(name: entry.status) else { throw Failure("malformedRecord") }
            var bytes = Data(count: PushSealKeyLayout.keyByteCount)
            if status != .disabled {
                guard let text = entry.key, let key = PushSealWire.decodeBase64(text), key.count == PushSealKeyLayout.keyByteCount
                else { throw Failure("invalidKey") }
                bytes = key
            }
            var new = PushSealKeyRecord(kind: .v1Key, status: status, createdAt: entry.createdAt,
                                        retiredAt: entry.retiredAt ?? PushSealKeyLayout.noTime,
                                        notAfter: entry.notAfter ?? PushSealKeyLayout.noTime, keyBytes: bytes)
            if let held = try existing(.v1Key, keyID: entry.keyId, appID: appID) {
                if status != .disabled, held.status != .disabled, held.keyBytes != bytes { throw Failure("duplicateKeyID") }
                if held.status >= status { new = held }  // only forward
                else if status == .disabled { new.keyBytes = Data(count: PushSealKeyLayout.keyByteCount) }
            }
            planned.append((entry.keyId, new))
        }
        for (keyID, new) in planned {
            if let new { try store(new, keyID: keyID, appID: appID) } else { try delete(.v1Key, keyID: keyID, appID: appID) }
        }
        return planned.map(\.keyID)
    }

    // MARK: Revocation (security review F4)

    /// A revocation record: the listed key ids (device keys of kind 1 or 2, or pinned sender
    /// keys) become `disabled`, retired at `revokedAt`. Provisional format, see README.md:
    /// `{"format":"pushseal-revocation","version":1,"appId":"…","keyIds":["…"],"revokedAt":1796000000}`.
    public struct RevocationRecord: Codable, Sendable {
        public var format: String
        public var version: Int
        public var appId: String
        public var keyIds: [String]
        /// Unix seconds (UTC).
        public var revokedAt: Int64
    }

    /// Imports a revocation record (from the app's own authenticated API; a forged one can only
    /// make notifications fall back, never open one). Every matching item becomes `disabled`
    /// with `retiredAt` = the earlier of its own and `revokedAt`; device key bytes are zeroed.
    /// Unknown ids are skipped (the key may have been pruned).
    /// - Returns: the key ids disabled.
    public static func importRevocation(recordJSON: Data, appID: String) throws -> [String] {
        guard let record = try? JSONDecoder().decode(RevocationRecord.self, from: recordJSON),
              record.format == "pushseal-revocation", record.version == 1 else { throw Failure("malformedRecord") }
        guard record.appId == appID else { throw Failure("wrongAppID") }
        guard record.keyIds.allSatisfy(PushSealWire.isValidKeyID) else { throw Failure("invalidKeyID") }
        var disabled: [String] = []
        for keyID in record.keyIds {
            for kind in PushSealKeyKind.allCases {
                var held: PushSealKeyRecord
                switch lookup(kind, keyID: keyID, appID: appID) {
                case .found(let record): held = record
                case .notFound, .otherKind: continue  // pruned, or found under its own kind
                case .damaged: throw Failure("corruptKey")
                case .rolledBack: throw Failure("keyRolledBack")
                case .failed(let status): throw Failure("keychain", status: status)
                }
                held.status = .disabled
                held.retiredAt = held.retiredAt == PushSealKeyLayout.noTime ? record.revokedAt : min(held.retiredAt, record.revokedAt)
                if kind != .senderKey { held.keyBytes = Data(count: PushSealKeyLayout.keyByteCount) }
                try store(held, keyID: keyID, appID: appID)
                disabled.append(keyID)
            }
        }
        return disabled
    }

    // MARK: Listing (no secrets)

    /// One key item's metadata; `publicKey` (base64) for v2 device keys and sender keys.
    public struct KeyInfo: Codable, Sendable {
        public var kind: String
        public var keyId: String
        public var status: String
        public var createdAt: Int64
        public var retiredAt: Int64?
        public var notAfter: Int64?
        public var publicKey: String?
    }

    /// Every key item of `appID`, without key bytes (v2 device keys show their public key).
    public static func list(appID: String) throws -> [KeyInfo] {
        var infos: [KeyInfo] = []
        for kind in PushSealKeyKind.allCases {
            for (keyID, record) in try records(kind, appID: appID) {
                var publicKey: String?
                switch kind {
                case .v1Key: publicKey = nil
                case .v2DeviceKey:
                    publicKey = (try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: record.keyBytes))
                        .map { PushSealWire.encodeBase64($0.publicKey.rawRepresentation) }
                case .senderKey: publicKey = PushSealWire.encodeBase64(record.keyBytes)
                }
                infos.append(KeyInfo(kind: kind.label, keyId: keyID, status: record.status.name, createdAt: record.createdAt,
                                     retiredAt: record.retiredAt == PushSealKeyLayout.noTime ? nil : record.retiredAt,
                                     notAfter: record.notAfter == PushSealKeyLayout.noTime ? nil : record.notAfter,
                                     publicKey: publicKey))
            }
        }
        return infos
    }
}
