#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where one item's file and the device state live, resolved once from a fully specified query
/// (class, service, account, access group) so that ``Keychain/itemVersion(at:)`` costs two
/// `fstatat` calls and no hashing.
public struct ItemLocation: Sendable, Hashable {
    /// The item file's name in `items/` (reached through the keychain's open directory, F21).
    let itemName: String
    /// Paths for messages.
    let itemPath: String
    let statePath: String
}

/// A cheap change token of one keychain item: the identity of its file (device, inode, size,
/// modification and status-change times in nanoseconds) and of the device-state file.
///
/// Every write of an item or of the lock state replaces the file (temp file, fsync, rename), so
/// any `SecItemUpdate`, `SecItemDelete`, re-add or lock/unlock gives a different token. Equal
/// tokens mean "unchanged" with one theoretical exception: a file replaced twice within one tick
/// of the file system's timestamp clock (a few milliseconds on Linux) whose new file reuses the
/// old inode number and size. A cache that must bound staleness also re-reads at intervals.
public struct ItemVersion: Sendable, Hashable {
    struct FileIdentity: Sendable, Hashable {
        var device: UInt64
        var inode: UInt64
        var byteCount: Int64
        var modifiedNanoseconds: Int64
        var changedNanoseconds: Int64

        init(_ st: stat) {
            device = UInt64(st.st_dev)
            inode = UInt64(st.st_ino)
            byteCount = Int64(st.st_size)
            modifiedNanoseconds = Int64(st.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(st.st_mtim.tv_nsec)
            changedNanoseconds = Int64(st.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(st.st_ctim.tv_nsec)
        }
    }

    let item: FileIdentity
    let state: FileIdentity
}

extension Keychain {
    /// Resolves the file of the one item `query` names (no file is read).
    /// - Parameter query: class, `service`, `account` and `accessGroup` all given.
    /// - Returns: a location for ``itemVersion(at:)``.
    /// - Throws: `KeychainError` `.param` (-50) when service, account or access group is missing,
    ///   `.missingEntitlement` (-34018) for a group the caller lacks.
    public func location(of query: ItemQuery) throws -> ItemLocation {
        guard let service = query.service, let account = query.account, let group = query.accessGroup else {
            throw KeychainError(.param, "an item version needs the query's service, account and access group")
        }
        try validate(service: service, account: account, label: nil)
        _ = try groupsForQuery(group)
        let name = ItemRecord.fileName(itemClass: query.itemClass, accessGroup: group, service: service, account: account)
        return ItemLocation(itemName: name, itemPath: paths.item(name), statePath: paths.state)
    }

    /// The current change token of the item at `location`, or `nil` when it does not exist.
    /// Reads no file contents and takes no lock: two `fstatat` calls below the open directories.
    /// - Throws: `KeychainError` `.corrupt` (the device state is missing), `.io`.
    public func itemVersion(at location: ItemLocation) throws -> ItemVersion? {
        var item = stat()
        guard fstatat(directories.items.descriptor, location.itemName, &item, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw Posix.ioError("stat", location.itemPath)
        }
        var state = stat()
        guard fstatat(directories.root.descriptor, "device-state", &state, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno == ENOENT { throw KeychainError(.corrupt, "\(location.statePath) is missing") }
            throw Posix.ioError("stat", location.statePath)
        }
        return ItemVersion(item: ItemVersion.FileIdentity(item), state: ItemVersion.FileIdentity(state))
    }

    /// The current change token of the one item `query` names (see ``location(of:)`` and
    /// ``itemVersion(at:)``), or `nil` when it does not exist.
    /// - Throws: as ``location(of:)`` and ``itemVersion(at:)``.
    public func itemVersion(_ query: ItemQuery) throws -> ItemVersion? {
        try itemVersion(at: try location(of: query))
    }
}
