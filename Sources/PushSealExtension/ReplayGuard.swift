#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import PushSealCrypto
import PushSealSystem

/// Remembers the most recent notification `id`s so a replayed payload falls back to the
/// original content with reason `replayed`.
///
/// The cache is a text file in the App Group container, one id per line, oldest first, at most
/// ``capacity`` lines. Each change rewrites it atomically (temporary file, then rename), so a
/// crash leaves the old or the new list. Calls within one process are serialized by a lock;
/// two processes writing at the very same moment may lose one id (the app and its extension do
/// not record ids at once), never corrupt the file.
public final class ReplayGuard: Sendable {
    /// Default number of ids kept (1,000).
    public static let defaultCapacity = 1000
    /// The file name inside the container.
    public static let fileName = "pushseal-replay-cache.txt"

    /// The cache file.
    public let fileURL: URL
    /// Most ids kept; the oldest is forgotten first.
    public let capacity: Int
    private let lock = Locked<Void>(())

    /// Creates a guard over `<containerDirectory>/pushseal-replay-cache.txt`.
    /// - Parameters:
    ///   - containerDirectory: the App Group container (an existing directory).
    ///   - capacity: ids kept, at least 1 (default 1,000).
    public init(containerDirectory: URL, capacity: Int = ReplayGuard.defaultCapacity) {
        fileURL = containerDirectory.appendingPathComponent(Self.fileName)
        self.capacity = max(1, capacity)
    }

    /// Records `id` and tells whether it was new.
    /// - Parameter id: a notification id (any string; line breaks are escaped).
    /// - Returns: true if `id` was not among the remembered ids (it is now), false if it was.
    /// - Throws: `ExtensionError` `.replayCacheFailed` when the file cannot be read or written.
    public func checkAndRecord(_ id: String) throws -> Bool {
        let line = id.replacing("\\", with: "\\\\").replacing("\n", with: "\\n")
            .replacing("\r", with: "\\r")
        return try lock.withLock { _ in
            var ids = try load()
            if ids.contains(line) { return false }
            ids.append(line)
            if ids.count > capacity { ids.removeFirst(ids.count - capacity) }
            try store(ids)
            return true
        }
    }

    /// The remembered ids (escaped form), oldest first.
    /// - Throws: `ExtensionError` `.replayCacheFailed`.
    public func rememberedIDs() throws -> [String] {
        try lock.withLock { _ in try load() }
    }

    /// Largest cache file read (16 MiB).
    static let maxFileByteCount = 16 << 20

    // Read and written by PushSealSystem's private-file rules, as the keychain's files (F16): read
    // only if a regular file owned by the caller, mode 0600, never through a symbolic link;
    // written as a new 0600 file (`O_EXCL | O_NOFOLLOW`) in the same directory, synced, renamed over.
    private func load() throws -> [String] {
        let bytes: [UInt8]?
        do {
            bytes = try PrivateFile.read(fileURL.path, maxByteCount: Self.maxFileByteCount)
        } catch {
            throw ExtensionError(.replayCacheFailed, "cannot read the replay cache")
        }
        guard let bytes else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    private func store(_ ids: [String]) throws {
        let text = ids.joined(separator: "\n") + "\n"
        do {
            let directory = fileURL.deletingLastPathComponent().path
            let name = ".tmp-\(ProcessInfo.processInfo.processIdentifier)-\(Hex.encode(SecureRandom.bytes(8)))"
            try PrivateFile.replaceAtomically(Array(text.utf8), at: fileURL.path, directory: directory, uniqueName: name)
        } catch {
            throw ExtensionError(.replayCacheFailed, "cannot write the replay cache")
        }
    }
}
