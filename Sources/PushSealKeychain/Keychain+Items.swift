#if canImport(FoundationEssentials)
import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import PushSealCrypto

extension Keychain {
    /// Largest secret data accepted by ``add(_:service:account:label:accessGroup:accessibility:data:)`` (1 MiB).
    public static let maxDataByteCount = ItemRecord.maxDataByteCount
    /// Largest service, account, label or access group, in UTF-8 bytes (4096).
    public static let maxAttributeByteCount = ItemRecord.maxStringByteCount

    // MARK: SecItemAdd

    /// Adds an item, as `SecItemAdd`.
    /// - Parameters:
    ///   - itemClass: `kSecClass` (default generic password).
    ///   - service: `kSecAttrService`, 1...4096 UTF-8 bytes.
    ///   - account: `kSecAttrAccount`, 1...4096 UTF-8 bytes.
    ///   - label: `kSecAttrLabel`, optional.
    ///   - accessGroup: `kSecAttrAccessGroup`; `nil` stores in the caller's first access group.
    ///   - accessibility: `kSecAttrAccessible` (default `whenUnlocked`, as on iOS).
    ///   - data: `kSecValueData`, 0...1 MiB.
    /// - Returns: the stored attributes (group resolved, dates set).
    /// - Throws: `KeychainError` `.missingEntitlement` (-34018, before any file is touched),
    ///   `.duplicateItem` (-25299, nothing changed, even if only accessibility differs),
    ///   `.interactionNotAllowed` (-25308, class key unavailable in this device state),
    ///   `.authFailed` (-25293, `whenPasscodeSetThisDeviceOnly` without a passcode), `.param` (-50),
    ///   `.corrupt`, `.io`.
    @discardableResult
    public func add(_ itemClass: ItemClass = .genericPassword, service: String, account: String, label: String? = nil,
                    accessGroup: String? = nil, accessibility: Accessibility = .default, data: SecretBytes) throws -> ItemAttributes {
        try validate(service: service, account: account, label: label, accessGroup: accessGroup)
        guard data.byteCount <= Self.maxDataByteCount else {
            throw KeychainError(.param, "secret data is \(data.byteCount) bytes, more than \(Self.maxDataByteCount)")
        }
        let group = try groupForWrite(accessGroup)
        let classKey = try classKey(for: accessibility, state: try readState())
        let now = ItemRecord.now()
        let record = ItemRecord(attributes: ItemAttributes(itemClass: itemClass, service: service, account: account, label: label,
                                                           accessGroup: group, accessibility: accessibility,
                                                           creationDate: now, modificationDate: now))
        let bytes = try record.encode(secret: data, metadataKey: metadataKeyForRecords, classKey: classKey)
        let name = record.fileName
        try withWriterLock {
            if try Posix.status(name, in: directories.items) != nil {
                throw KeychainError(.duplicateItem, "an item with service \"\(service)\" and account \"\(account)\" already exists in access group \(group)")
            }
            try Posix.writeAtomically(bytes, named: name, in: directories.items, temp: directories.temp)
        }
        return ItemAttributes(itemClass: itemClass, service: service, account: account, label: label, accessGroup: group,
                              accessibility: accessibility, creationDate: now, modificationDate: now)
    }

    // MARK: SecItemCopyMatching

    /// Searches, as `SecItemCopyMatching`.
    ///
    /// With `service`, `account` and `accessGroup` all given this opens exactly one file; with
    /// no group it probes one file per caller group; otherwise it reads every item's header
    /// (never decrypting an item it does not return).
    /// - Parameters:
    ///   - query: what to match; `nil` attributes match anything.
    ///   - limit: `.one` (the first match) or `.all`.
    ///   - returning: `.attributes` (never decrypts; works in any device state) and/or `.data`.
    /// - Returns: one item for `.one`, every match for `.all`; never empty (no match throws).
    /// - Throws: `KeychainError` `.itemNotFound` (-25300), `.missingEntitlement` (-34018, a group
    ///   the caller lacks), `.interactionNotAllowed` (-25308, data of an item not readable in this
    ///   device state), `.authFailed`, `.param`, `.corrupt` (damaged file of a searched group: never
    ///   skipped; one whose header names another group is skipped, see the `skipped:` form), `.io`.
    public func copyMatching(_ query: ItemQuery, limit: MatchLimit = .one, returning: ReturnOptions = .attributes) throws -> [KeychainItem] {
        var skipped: [KeychainError] = []
        return try copyMatching(query, limit: limit, returning: returning, skipped: &skipped)
    }

    /// ``copyMatching(_:limit:returning:)``, reporting what a scan skipped: damaged item files
    /// whose header names an access group the query does not search (one `.corrupt` error each,
    /// naming the file). A damaged file of a searched group still throws.
    /// - Throws: as ``copyMatching(_:limit:returning:)``.
    public func copyMatching(_ query: ItemQuery, limit: MatchLimit = .one, returning: ReturnOptions = .attributes,
                             skipped: inout [KeychainError]) throws -> [KeychainItem] {
        let matches = try findMatches(query, firstOnly: limit == .one, skipped: &skipped)
        guard !matches.isEmpty else { throw notFound(query) }
        let state: Session? = returning.contains(.data) ? try readState() : nil
        return try matches.map { match in
            var data: SecretBytes?
            if let state {
                let key = try classKey(for: match.parsed.record.attributes.accessibility, state: state)
                data = try match.parsed.openSecret(classKey: key, path: match.path)
            }
            return KeychainItem(attributes: match.parsed.record.attributes, data: data)
        }
    }

    /// The secret data of the first item matching `query` (match limit one, return data): the
    /// extension's read path.
    /// - Throws: as ``copyMatching(_:limit:returning:)``.
    public func copyData(_ query: ItemQuery) throws -> SecretBytes {
        let items = try copyMatching(query, limit: .one, returning: .data)
        guard let data = items.first?.data else { throw notFound(query) }
        return data
    }

    // MARK: SecItemUpdate

    /// Updates every item matching `query`, as `SecItemUpdate`; bumps each modification date.
    ///
    /// All-or-nothing checks first (entitlements, device state, collisions), then each item is
    /// rewritten atomically. Items are re-sealed, so every matched item's class key must be
    /// available (as on iOS, updating a `WhenUnlocked` item while locked fails).
    /// - Parameters:
    ///   - query: which items.
    ///   - changes: the new attributes and/or data.
    /// - Returns: the number of items updated (>= 1).
    /// - Throws: `KeychainError` `.itemNotFound` (-25300), `.duplicateItem` (-25299, the change
    ///   would collide with another item; nothing changed), `.missingEntitlement` (-34018),
    ///   `.interactionNotAllowed` (-25308), `.authFailed`, `.param`, `.corrupt`, `.io`.
    @discardableResult
    public func update(_ query: ItemQuery, with changes: ItemChanges) throws -> Int {
        try validate(service: changes.service ?? "-", account: changes.account ?? "-", label: changes.label ?? nil, accessGroup: changes.accessGroup)
        if let g = changes.accessGroup { _ = try groupForWrite(g) }
        if let d = changes.data, d.byteCount > Self.maxDataByteCount {
            throw KeychainError(.param, "secret data is \(d.byteCount) bytes, more than \(Self.maxDataByteCount)")
        }
        _ = try groupsForQuery(query.accessGroup)
        return try withWriterLock {
            let matches = try findMatches(query, firstOnly: false)
            guard !matches.isEmpty else { throw notFound(query) }
            let state = try readState()
            let now = ItemRecord.now()
            var plans: [(oldName: String, newName: String, bytes: [UInt8])] = []
            var newNames = Set<String>()
            let oldNames = Set(matches.map(\.name))
            for match in matches {
                let old = match.parsed.record.attributes
                let oldKey = try classKey(for: old.accessibility, state: state)
                var new = old
                if let s = changes.service { new.service = s }
                if let a = changes.account { new.account = a }
                if let l = changes.label { new.label = l }
                if let g = changes.accessGroup { new.accessGroup = g }
                if let acc = changes.accessibility { new.accessibility = acc }
                new.modificationDate = max(now, old.modificationDate.addingTimeInterval(0.000001))
                let newKey = try classKey(for: new.accessibility, state: state)
                let secret = try changes.data ?? match.parsed.openSecret(classKey: oldKey, path: match.path)
                let record = ItemRecord(attributes: new)
                let newName = record.fileName
                guard newNames.insert(newName).inserted else {
                    throw KeychainError(.duplicateItem, "the update would give two items the same service, account and access group")
                }
                if newName != match.name, !oldNames.contains(newName), try Posix.status(newName, in: directories.items) != nil {
                    throw KeychainError(.duplicateItem, "an item with service \"\(new.service)\" and account \"\(new.account)\" already exists in access group \(new.accessGroup)")
                }
                plans.append((match.name, newName, try record.encode(secret: secret, metadataKey: metadataKeyForRecords, classKey: newKey)))
            }
            for plan in plans {
                try Posix.writeAtomically(plan.bytes, named: plan.newName, in: directories.items, temp: directories.temp)
            }
            let removed = Set(plans.map(\.oldName)).subtracting(plans.map(\.newName))
            for name in removed { try Posix.remove(name, in: directories.items) }
            if !removed.isEmpty { try Posix.synchronize(directories.items) }
            return plans.count
        }
    }

    // MARK: SecItemDelete

    /// Deletes every item matching `query`, as `SecItemDelete`. Needs no class key (works while locked).
    /// - Returns: the number of items deleted (>= 1).
    /// - Throws: `KeychainError` `.itemNotFound` (-25300), `.missingEntitlement` (-34018),
    ///   `.param`, `.corrupt`, `.io`.
    @discardableResult
    public func delete(_ query: ItemQuery) throws -> Int {
        _ = try groupsForQuery(query.accessGroup)
        return try withWriterLock {
            let matches = try findMatches(query, firstOnly: false)
            guard !matches.isEmpty else { throw notFound(query) }
            for m in matches { try Posix.remove(m.name, in: directories.items) }
            try Posix.synchronize(directories.items)
            return matches.count
        }
    }

    // MARK: Internals

    struct Match {
        /// The item file's name in `items/`.
        var name: String
        /// Its path, for messages.
        var path: String
        var parsed: ItemRecord.Parsed
    }

    /// Runs `body` as the keychain's one writer: holding the `flock` on `.lock`, after removing
    /// the temp files killed writers left in `tmp/`.
    func withWriterLock<R>(_ body: () throws -> R) throws -> R {
        try Posix.withExclusiveLock(".lock", in: directories.root) {
            try Posix.removeAll(in: directories.temp)
            return try body()
        }
    }

    func notFound(_ q: ItemQuery) -> KeychainError {
        var parts: [String] = []
        if let s = q.service { parts.append("service \"\(s)\"") }
        if let a = q.account { parts.append("account \"\(a)\"") }
        if let l = q.label { parts.append("label \"\(l)\"") }
        let where_ = q.accessGroup.map { "access group \($0)" } ?? "the caller's access groups (\(accessGroups.joined(separator: ", ")))"
        return KeychainError(.itemNotFound, "no \(q.itemClass) item\(parts.isEmpty ? "" : " with " + parts.joined(separator: ", ")) in \(where_)")
    }

    /// The groups a query searches, in the caller's order.
    func groupsForQuery(_ group: String?) throws -> [String] {
        guard let group else { return accessGroups }
        guard accessGroups.contains(group) else {
            throw KeychainError(.missingEntitlement, "the caller is not entitled to access group \(group) (its groups: \(accessGroups.joined(separator: ", ")))")
        }
        return [group]
    }

    func groupForWrite(_ group: String?) throws -> String {
        guard let group else {
            guard let first = accessGroups.first else {
                throw KeychainError(.missingEntitlement, "the caller has no keychain access group")
            }
            try validate(service: "-", account: "-", label: nil, accessGroup: first)
            return first
        }
        return try groupsForQuery(group)[0]
    }

    /// Checks attribute lengths before anything is written: every string the item header keeps
    /// with a 16-bit length (service, account, label, access group) is at most
    /// ``maxAttributeByteCount`` bytes (F10: a longer group once wrote an unreadable item).
    func validate(service: String, account: String, label: String?, accessGroup: String? = nil) throws {
        if let accessGroup {
            guard !accessGroup.isEmpty else { throw KeychainError(.param, "access group must not be empty") }
            guard accessGroup.utf8.count <= Self.maxAttributeByteCount else {
                throw KeychainError(.param, "access group is longer than \(Self.maxAttributeByteCount) bytes")
            }
        }
        for (name, value) in [("service", service), ("account", account)] {
            guard !value.isEmpty else { throw KeychainError(.param, "\(name) must not be empty") }
            guard value.utf8.count <= Self.maxAttributeByteCount else { throw KeychainError(.param, "\(name) is longer than \(Self.maxAttributeByteCount) bytes") }
        }
        if let label, label.utf8.count > Self.maxAttributeByteCount { throw KeychainError(.param, "label is longer than \(Self.maxAttributeByteCount) bytes") }
    }

    /// Reads and authenticates one item file; `nil` when absent. The file's name must be the hash
    /// of the primary key inside it (catches files swapped or renamed on disk).
    func readItem(named name: String) throws -> Match? {
        let path = paths.item(name)
        guard let bytes = try Posix.readFile(name, in: directories.items, maxByteCount: ItemRecord.maxFileByteCount) else { return nil }
        let parsed = try ItemRecord.parse(bytes, path: path, metadataKey: metadataKeyForRecords)
        guard parsed.record.fileName == name else {
            throw KeychainError(.corrupt, "keychain item file \(path) holds another item's attributes (file moved or swapped)")
        }
        return Match(name: name, path: path, parsed: parsed)
    }

    func findMatches(_ query: ItemQuery, firstOnly: Bool) throws -> [Match] {
        var skipped: [KeychainError] = []
        return try findMatches(query, firstOnly: firstOnly, skipped: &skipped)
    }

    /// A scan's read of one item file: a damaged file whose header names an access group outside
    /// `groups` is skipped and reported in `skipped` (it cannot be the caller's item, and one
    /// such file must not break every lookup: F10); any other damage throws.
    func readItemForScan(named name: String, groups: [String: Int], skipped: inout [KeychainError]) throws -> Match? {
        do {
            return try readItem(named: name)
        } catch let e as KeychainError where e.code == .corrupt {
            guard let bytes = try? Posix.readFile(name, in: directories.items, maxByteCount: ItemRecord.maxFileByteCount),
                  let claimed = ItemRecord.claimedAccessGroup(bytes), groups[claimed] == nil else { throw e }
            skipped.append(KeychainError(.corrupt, "skipped \(e.reason) (an item of another access group)"))
            return nil
        }
    }

    func findMatches(_ query: ItemQuery, firstOnly: Bool, skipped: inout [KeychainError]) throws -> [Match] {
        let groups = try groupsForQuery(query.accessGroup)
        func labelMatches(_ m: Match) -> Bool { query.label == nil || m.parsed.record.attributes.label == query.label }
        if let service = query.service, let account = query.account {
            var out: [Match] = []
            for g in groups {
                let name = ItemRecord.fileName(itemClass: query.itemClass, accessGroup: g, service: service, account: account)
                if let m = try readItem(named: name), labelMatches(m) {
                    out.append(m)
                    if firstOnly { break }
                }
            }
            return out
        }
        let rank = Dictionary(groups.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        var out: [Match] = []
        for name in try Posix.names(in: directories.items) where name.hasSuffix(".item") {
            guard let m = try readItemForScan(named: name, groups: rank, skipped: &skipped) else { continue }  // deleted meanwhile, or skipped
            let a = m.parsed.record.attributes
            guard a.itemClass == query.itemClass, rank[a.accessGroup] != nil, labelMatches(m) else { continue }
            if let s = query.service, s != a.service { continue }
            if let acc = query.account, acc != a.account { continue }
            out.append(m)
        }
        out.sort { x, y in
            let a = x.parsed.record.attributes, b = y.parsed.record.attributes
            let ra = rank[a.accessGroup] ?? 0, rb = rank[b.accessGroup] ?? 0
            if ra != rb { return ra < rb }
            if a.creationDate != b.creationDate { return a.creationDate < b.creationDate }
            if a.service != b.service { return a.service < b.service }
            return a.account < b.account
        }
        return firstOnly ? Array(out.prefix(1)) : out
    }
}

extension Keychain {
    /// Every access group that holds at least one item, sorted: a device-wide view for
    /// inspection tools (`push-keys keychain list` without an identity). Reads item headers only.
    /// - Throws: `KeychainError` `.corrupt` (a damaged item file), `.io`.
    public func storedAccessGroups() throws -> [String] {
        var groups = Set<String>()
        for name in try Posix.names(in: directories.items) where name.hasSuffix(".item") {
            if let m = try readItem(named: name) { groups.insert(m.parsed.record.attributes.accessGroup) }
        }
        return groups.sorted()
    }
}
