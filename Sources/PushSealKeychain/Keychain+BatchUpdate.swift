#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PushSealSystem
public import PushSealCrypto

extension Keychain {
    /// Replaces the secret data of several existing items as one durable step (a sender's seal
    /// counter reservations of one batch chunk): as many ``update(_:with:)`` calls with data
    /// only, but every item file is written first, the file system flushed once, and the
    /// renames followed by one sync of `items/` (``PrivateDirectory/replaceAtomically(_:tempDirectory:)``),
    /// instead of a flush and two directory syncs per item. Each item is replaced atomically and
    /// keeps its attributes (its modification date is bumped); all are durable when it returns.
    /// - Parameter updates: per item a fully specified query (class, service, account and access
    ///   group: one item) and its new data (0 ... 1 MiB); at most one entry per item.
    /// - Throws: `KeychainError` `.itemNotFound` (-25300, an item is missing: nothing changed),
    ///   `.param` (-50, a query not fully specified, an item named twice, data over 1 MiB),
    ///   `.missingEntitlement` (-34018), `.interactionNotAllowed` (-25308), `.corrupt`, `.io`
    ///   (then the items before the failing one may be replaced, each whole).
    public func updateData(_ updates: [(query: ItemQuery, data: SecretBytes)]) throws {
        guard !updates.isEmpty else { return }
        var names = Set<String>()
        for u in updates {
            guard let service = u.query.service, let account = u.query.account, let group = u.query.accessGroup else {
                throw KeychainError(.param, "a batch update names each item by class, service, account and access group")
            }
            try validate(service: service, account: account, label: nil)
            guard u.data.byteCount <= Self.maxDataByteCount else {
                throw KeychainError(.param, "secret data is \(u.data.byteCount) bytes, more than \(Self.maxDataByteCount)")
            }
            _ = try groupsForQuery(group)
            guard names.insert(ItemRecord.fileName(itemClass: u.query.itemClass, accessGroup: group, service: service, account: account)).inserted else {
                throw KeychainError(.param, "a batch update names the item \(service)/\(account) twice")
            }
        }
        try withWriterLock {
            let state = try readState()
            let now = ItemRecord.now()
            var files: [PrivateFileReplacement] = []
            files.reserveCapacity(updates.count)
            let prefix = ".tmp-\(getpid())-\(Hex.encode(SecureRandom.bytes(8)))-"
            for (i, u) in updates.enumerated() {
                guard let match = try findMatches(u.query, firstOnly: true).first else { throw notFound(u.query) }
                var attributes = match.parsed.record.attributes
                attributes.modificationDate = max(now, attributes.modificationDate.addingTimeInterval(0.000001))
                let record = ItemRecord(attributes: attributes)
                let bytes = try record.encode(secret: u.data, metadataKey: metadataKeyForRecords, classKey: try classKey(for: attributes.accessibility, state: state))
                files.append(PrivateFileReplacement(name: match.name, bytes: bytes, uniqueName: prefix + String(i)))
            }
            try Posix.mapped { try directories.items.replaceAtomically(files, tempDirectory: directories.temp) }
        }
    }
}

/// One new generic-password item of ``Keychain/addItems(_:)``.
public struct NewItem: Sendable {
    /// `kSecAttrService`, 1 ... 4096 UTF-8 bytes.
    public var service: String
    /// `kSecAttrAccount`, 1 ... 4096 UTF-8 bytes.
    public var account: String
    /// `kSecAttrLabel`, optional.
    public var label: String?
    /// `kSecAttrAccessGroup` (one of the caller's groups).
    public var accessGroup: String
    /// `kSecAttrAccessible`.
    public var accessibility: Accessibility
    /// `kSecValueData`, 0 ... 1 MiB.
    public var data: SecretBytes

    /// Creates a new item's description.
    public init(service: String, account: String, label: String?, accessGroup: String, accessibility: Accessibility, data: SecretBytes) {
        self.service = service
        self.account = account
        self.label = label
        self.accessGroup = accessGroup
        self.accessibility = accessibility
        self.data = data
    }
}

extension Keychain {
    /// Adds several generic-password items as one durable step (a store copying many keysets in,
    /// `push-keys registry export`): as many ``add(_:service:account:label:accessGroup:accessibility:data:)``
    /// calls, but every item file is written first, the file system flushed once, then the renames
    /// and one sync of `items/`.
    /// - Throws: `KeychainError` `.duplicateItem` (-25299, an item exists already, or one is named
    ///   twice: nothing changed), `.missingEntitlement` (-34018), `.interactionNotAllowed`
    ///   (-25308), `.param` (-50), `.corrupt`, `.io` (then the items before the failing one may be added).
    public func addItems(_ items: [NewItem]) throws {
        guard !items.isEmpty else { return }
        var names = Set<String>()
        for i in items {
            try validate(service: i.service, account: i.account, label: i.label, accessGroup: i.accessGroup)
            guard i.data.byteCount <= Self.maxDataByteCount else {
                throw KeychainError(.param, "secret data is \(i.data.byteCount) bytes, more than \(Self.maxDataByteCount)")
            }
            _ = try groupForWrite(i.accessGroup)
            guard names.insert(ItemRecord.fileName(itemClass: .genericPassword, accessGroup: i.accessGroup, service: i.service, account: i.account)).inserted else {
                throw KeychainError(.duplicateItem, "a batch add names the item \(i.service)/\(i.account) twice")
            }
        }
        let state = try readState()
        let now = ItemRecord.now()
        let prefix = ".tmp-\(getpid())-\(Hex.encode(SecureRandom.bytes(8)))-"
        var files: [PrivateFileReplacement] = []
        files.reserveCapacity(items.count)
        for (n, i) in items.enumerated() {
            let record = ItemRecord(attributes: ItemAttributes(itemClass: .genericPassword, service: i.service, account: i.account, label: i.label,
                                                               accessGroup: i.accessGroup, accessibility: i.accessibility, creationDate: now, modificationDate: now))
            let bytes = try record.encode(secret: i.data, metadataKey: metadataKeyForRecords, classKey: try classKey(for: i.accessibility, state: state))
            files.append(PrivateFileReplacement(name: record.fileName, bytes: bytes, uniqueName: prefix + String(n)))
        }
        try withWriterLock {
            for f in files where try Posix.status(f.name, in: directories.items) != nil {
                throw KeychainError(.duplicateItem, "an item of the batch already exists (\(paths.item(f.name)))")
            }
            try Posix.mapped { try directories.items.replaceAtomically(files, tempDirectory: directories.temp) }
        }
    }
}

extension ItemVersion {
    /// Whether both tokens saw the same device-state file (no lock, unlock or passcode change in
    /// between): a cache that accounts for its own write of an item compares the rest itself.
    public func hasSameDeviceState(as other: ItemVersion) -> Bool { state == other.state }
}
