#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file of ``PrivateDirectory/replaceAtomically(_:tempDirectory:)``.
public struct PrivateFileReplacement: Sendable {
    /// The file's name in the directory (one path component).
    public var name: String
    /// Its new contents.
    public var bytes: [UInt8]
    /// The temp file's name in the temp directory (unique per writer, e.g. pid plus random hex).
    public var uniqueName: String

    /// Creates a replacement of `name` by `bytes` through the temp file `uniqueName`.
    public init(name: String, bytes: [UInt8], uniqueName: String) {
        self.name = name
        self.bytes = bytes
        self.uniqueName = uniqueName
    }
}

extension PrivateDirectory {
    /// Atomic, durable replace of several files at once, with one flush of the file system
    /// instead of one per file: every temp file is created in `tempDirectory` (0600,
    /// `O_EXCL | O_NOFOLLOW`) and written, then all are flushed together (`syncfs(2)` on the temp
    /// directory where the C library has it, else `fsync` of each), renamed over their names one
    /// by one (`renameat`, in the order given), and this directory (and `tempDirectory`, when
    /// another) is synced once. Each file is replaced atomically (a reader sees the old or the
    /// new bytes); when the call returns, every replacement is durable. When it throws, the
    /// files before the failing rename are replaced, the others are untouched, and no temp file
    /// is left.
    /// - Throws: ``SystemError`` from a create, `write`, `fsync`/`syncfs`, `rename into`, or the
    ///   directory syncs.
    public func replaceAtomically(_ files: [PrivateFileReplacement], tempDirectory: PrivateDirectory) throws {
        guard !files.isEmpty else { return }
        var created: [String] = []
        var open: [FileDescriptor] = []
        defer {
            for f in open { f.close() }
            for name in created { _ = unlinkat(tempDirectory.descriptor, name, 0) }
        }
        for f in files {
            guard !f.name.isEmpty, f.name != ".", f.name != "..", !f.name.contains("/") else {
                throw SystemError(.notFound, "\"\(f.name)\" is not a name inside \(path)", path: child(f.name))
            }
            let file = try tempDirectory.createForBatch(f.uniqueName)
            created.append(f.uniqueName)
            open.append(file)
            try file.writeAll(f.bytes)
        }
        if let syncfs = Self.syncfsFunction {
            guard syncfs(tempDirectory.descriptor) == 0 else { throw SystemError.call("syncfs", tempDirectory.path, errno: errno) }
        } else {
            for file in open { try file.synchronize() }
        }
        for file in open { file.close() }
        open.removeAll()
        for f in files {
            guard renameat(tempDirectory.descriptor, f.uniqueName, descriptor, f.name) == 0 else {
                throw SystemError.call("rename into", child(f.name), errno: errno)
            }
            created.removeFirst()
        }
        try synchronize()
        if tempDirectory !== self { try tempDirectory.synchronize() }
    }

    /// Creates the temp file `name` for ``replaceAtomically(_:tempDirectory:)`` (0600, `O_EXCL`, not a link).
    private func createForBatch(_ name: String) throws -> FileDescriptor {
        do {
            return try FileDescriptor.open(at: descriptor, name, path: child(name), [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600)
        } catch let e as SystemError {
            throw SystemError.call("create", child(name), errno: e.errno)
        }
    }

    /// glibc's `syncfs(2)` (flush the file system holding a descriptor), looked up once: the
    /// Swift Glibc module does not export it (it is a GNU extension). `nil` elsewhere.
    private static let syncfsFunction = glibcFunction("syncfs", as: (@convention(c) (Int32) -> Int32).self)
}
