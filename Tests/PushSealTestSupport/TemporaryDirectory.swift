public import Foundation

/// A fresh directory under the system's temporary directory (mode 0700), removed with
/// everything in it when the object goes away (or by ``remove()``).
public final class TemporaryDirectory {
    /// The directory.
    public let url: URL
    /// Its path.
    public var path: String { url.path }

    /// Creates `…/pushseal-<prefix>-<UUID>`.
    /// - Throws: when the directory cannot be created.
    public init(_ prefix: String = "test") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("pushseal-\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// `url` + `component`.
    public func appending(_ component: String) -> URL { url.appendingPathComponent(component) }

    /// Removes the directory now.
    public func remove() { try? FileManager.default.removeItem(at: url) }

    deinit { remove() }
}
