#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
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

    private func load() throws -> [String] {
        guard FileManager.default.fileExists(atPath: fileURL.path) else { return [] }
        guard let data = FileManager.default.contents(atPath: fileURL.path) else {
            throw ExtensionError(.replayCacheFailed, "cannot read the replay cache")
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    private func store(_ ids: [String]) throws {
        let text = ids.joined(separator: "\n") + "\n"
        do {
            try Data(text.utf8).write(to: fileURL, options: .atomic)
        } catch {
            throw ExtensionError(.replayCacheFailed, "cannot write the replay cache")
        }
    }
}
