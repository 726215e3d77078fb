#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import PushSealSystem

/// The media files the extension keeps in the App Group container, and their cleaning (F9 of
/// the December review: the container no longer accumulates media).
///
/// Layout in the container:
/// - `.<uuid>.download` and `.<uuid>.opening`: a download and its unverified plaintext while
///   in use, each held under an exclusive `flock` by its download.
/// - `Attachments/<uuid>/<uuid>.<ext>`: one directory per delivered notification's media (the
///   emulation's stand-in for iOS's own attachment store).
///
/// ``prepare(reservingByteCount:)``, at the start of every download, cleans:
/// - temporaries older than ``staleAgeSeconds`` (default: the extension's 30 s budget) that
///   no live download holds: what an extension killed mid-download (SIGKILL, iOS's memory
///   or time limit) left behind;
/// - attachment directories older than ``retentionSeconds`` (default 7 days), and empty ones
///   older than ``staleAgeSeconds``;
/// - the oldest attachment directories while the store (attachments plus temporaries) plus
///   the new download's largest possible size would pass ``capByteCount`` (default 256 MiB);
///   when even an empty attachment store leaves no room, the download is refused.
public struct MediaStore: Sendable {
    /// The default cap of the store: 256 MiB (five 50 MiB movies, or two sealed ones, which
    /// need the box and the plaintext at once).
    public static let defaultCapByteCount = 256 * 1_048_576
    /// The default age after which an unheld temporary is stale: 30 s, iOS's budget for a
    /// Notification Service Extension (``ExtensionHost/defaultBudgetSeconds``).
    public static let defaultStaleAgeSeconds: Double = ExtensionHost.defaultBudgetSeconds
    /// The default age after which an attachment directory is removed: 7 days (604,800 s).
    public static let defaultRetentionSeconds: Double = 7 * 86_400
    /// The attachments' directory name inside the container.
    public static let attachmentsDirectoryName = "Attachments"

    /// The App Group container.
    public let containerDirectory: URL
    /// Most bytes the store may hold.
    public let capByteCount: Int
    /// Seconds after which an unheld `.download`/`.opening` file is removed.
    public let staleAgeSeconds: Double
    /// Seconds after which an attachment directory is removed.
    public let retentionSeconds: Double

    /// Creates the store of a container (nothing is touched until used).
    /// - Parameters:
    ///   - containerDirectory: an existing directory (the App Group container).
    ///   - capByteCount: most bytes of media kept (default 256 MiB).
    ///   - staleAgeSeconds: age of a stale temporary in seconds (default 30).
    ///   - retentionSeconds: age of an expired attachment in seconds (default 7 days).
    public init(containerDirectory: URL, capByteCount: Int = MediaStore.defaultCapByteCount,
                staleAgeSeconds: Double = MediaStore.defaultStaleAgeSeconds,
                retentionSeconds: Double = MediaStore.defaultRetentionSeconds) {
        self.containerDirectory = containerDirectory
        self.capByteCount = capByteCount
        self.staleAgeSeconds = staleAgeSeconds
        self.retentionSeconds = retentionSeconds
    }

    /// `Attachments/` in the container.
    public var attachmentsDirectory: URL { containerDirectory.appendingPathComponent(Self.attachmentsDirectoryName) }

    /// True for the name of a temporary: `.<something>.download` or `.<something>.opening`.
    static func isTemporaryName(_ name: String) -> Bool {
        name.hasPrefix(".") && (name.hasSuffix(".download") || name.hasSuffix(".opening"))
    }

    /// Cleans the store and makes room for a download of at most `byteCount` bytes on disk.
    /// - Parameters:
    ///   - byteCount: the most bytes the coming download may write (body, and for sealed
    ///     media its plaintext beside it).
    ///   - now: the current time in seconds since 1970 (file ages are measured against it).
    /// - Throws: `ExtensionError` `.mediaTransferFailed` when the store is over its cap even
    ///   without attachments (other downloads in flight fill it).
    public func prepare(reservingByteCount byteCount: Int, now: Double = Date().timeIntervalSince1970) throws {
        var used = sweepTemporaries(now: now)
        var directories = attachmentDirectories()
        // Expired and empty directories first, then the oldest while over the cap.
        directories.removeAll { entry in
            let age = now - entry.modified
            guard (entry.byteCount == 0 && age > staleAgeSeconds) || age > retentionSeconds else { return false }
            remove(entry.url)
            return true
        }
        used += directories.reduce(0) { $0 + $1.byteCount }
        directories.sort { $0.modified < $1.modified }
        var index = 0
        while used + byteCount > capByteCount, index < directories.count {
            remove(directories[index].url)
            used -= directories[index].byteCount
            index += 1
        }
        guard used + byteCount <= capByteCount else {
            throw ExtensionError(.mediaTransferFailed,
                                 "the App Group container's media store is full (\(used) of \(capByteCount) bytes in downloads in flight)")
        }
    }

    /// Creates `Attachments/<name>/` (0700) for one notification's media.
    /// - Throws: `ExtensionError` `.mediaTransferFailed` when it cannot be created.
    func makeAttachmentDirectory(named name: String) throws -> URL {
        let root = attachmentsDirectory
        do {
            try PrivateFile.makeDirectory(root.path)
        } catch {
            throw ExtensionError(.mediaTransferFailed, "cannot create the attachment store in the App Group container")
        }
        let dir = root.appendingPathComponent(name)
        guard (try? PrivateFile.makeDirectory(dir.path)) == true else {
            throw ExtensionError(.mediaTransferFailed, "cannot create the attachment directory in the App Group container")
        }
        return dir
    }

    /// Removes a notification's attachment directory (the file's parent inside `Attachments/`);
    /// a file elsewhere is removed by itself.
    public func removeAttachment(at fileURL: URL) {
        let parent = fileURL.deletingLastPathComponent()
        if parent.deletingLastPathComponent().standardizedFileURL.path == attachmentsDirectory.standardizedFileURL.path {
            remove(parent)
        } else {
            PrivateFile.remove(fileURL.path)
        }
    }

    /// Removes stale, unheld temporaries; returns the bytes of those that remain.
    private func sweepTemporaries(now: Double) -> Int {
        var remaining = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: containerDirectory.path)) ?? [] where Self.isTemporaryName(name) {
            let path = containerDirectory.appendingPathComponent(name).path
            guard let status = try? PrivateFile.status(path), status.kind == .regular else { continue }
            guard now - status.modifiedSeconds > staleAgeSeconds, let lock = TemporaryFileLock(path: path, wait: false) else {
                remaining += status.byteCount
                continue
            }
            // Held by nobody and old: its download died. Unlink while holding the lock.
            PrivateFile.remove(path)
            lock.release()
        }
        return remaining
    }

    private struct Entry {
        let url: URL
        let modified: Double
        let byteCount: Int
    }

    private func attachmentDirectories() -> [Entry] {
        let root = attachmentsDirectory
        var out: [Entry] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [] {
            let dir = root.appendingPathComponent(name)
            guard let status = try? PrivateFile.status(dir.path), status.kind == .directory else { continue }
            var bytes = 0
            for file in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] {
                bytes += (try? PrivateFile.status(dir.appendingPathComponent(file).path))??.byteCount ?? 0
            }
            out.append(Entry(url: dir, modified: status.modifiedSeconds, byteCount: bytes))
        }
        return out
    }

    private func remove(_ url: URL) {
        try? FileManager.default.removeItem(at: url)
    }
}

/// An exclusive `flock` on a temporary media file, held while its download uses it, so a
/// concurrent extension's sweep never removes a live file. The kernel releases it when the
/// descriptor closes (``release()``, deinit, or the process's death).
///
/// `@unchecked Sendable`: the descriptor is opened once and closed once (`release`), by the
/// download that owns the lock; nothing else touches it.
final class TemporaryFileLock: @unchecked Sendable {
    private let file: FileDescriptor

    /// Opens `path` (no links followed) and locks it; nil when it cannot be opened, or, with
    /// `wait` false, when another holder has it.
    init?(path: String, wait: Bool) {
        guard let file = try? FileDescriptor.open(path, [.readOnly, .noFollow]) else { return nil }
        if wait {
            guard (try? file.lockExclusive()) != nil else { return nil }
        } else {
            guard (try? file.tryLockExclusive()) == true else { return nil }
        }
        self.file = file
    }

    /// Unlocks and closes (once; later calls and deinit do nothing more).
    func release() { file.close() }
}
