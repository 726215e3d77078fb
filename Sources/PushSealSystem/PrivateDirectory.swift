#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory opened once (`O_DIRECTORY | O_NOFOLLOW`), and the private files below it reached
/// only through it: `openat`, `fstatat`, `mkdirat`, `renameat` and `unlinkat` on one name (one
/// path component) at a time, never following a symbolic link (`O_NOFOLLOW`,
/// `AT_SYMLINK_NOFOLLOW`). A directory renamed away and replaced by a link (or by another
/// directory) after the open is never followed: every later operation still works on the
/// directory that was opened and checked (security review F21).
///
/// Files are held to the rules of ``PrivateFile`` (regular, not a link, owned by the caller,
/// 0600; directories 0700), checked before an open and on the open descriptor.
///
/// Sendable: the only state is the descriptor number and the path, both immutable; the `*at`
/// calls on one descriptor are safe from any thread. The descriptor is closed on deinit.
public final class PrivateDirectory: Sendable {
    /// The directory's path, for messages only (operations never resolve it again).
    public let path: String
    /// The open directory's descriptor number, for `*at` calls this type does not wrap; valid
    /// while the object lives.
    public let descriptor: Int32

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { _ = close(descriptor) }

    /// Opens the directory at `path` (the last component must not be a link; directories above
    /// it may be) and checks it by the rules (owned by the caller, no group or other bits).
    /// - Returns: `nil` when `path` does not exist.
    /// - Throws: ``SystemError`` `.symbolicLink` (`path` is a link), `.notRegularFile` (not a
    ///   directory), `.wrongOwner`, `.insecureMode`, or from `open`.
    public static func open(_ path: String) throws -> PrivateDirectory? {
        try open(at: AT_FDCWD, path, path: path)
    }

    /// Opens the subdirectory `name` (one path component) through this directory, checked as
    /// ``open(_:)``.
    /// - Returns: `nil` when it does not exist.
    /// - Throws: as ``open(_:)``; `.invalidName` is never thrown: a name with `/` is refused as
    ///   ``SystemError`` `.notFound`.
    public func openDirectory(_ name: String) throws -> PrivateDirectory? {
        try Self.checkName(name, in: self)
        return try Self.open(at: descriptor, name, path: child(name))
    }

    private static func open(at directory: Int32, _ name: String, path: String) throws -> PrivateDirectory? {
        let fd = openat(directory, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT { return nil }
            // ENOTDIR: a file or a link (O_NOFOLLOW | O_DIRECTORY on a link may say either).
            if e == ENOTDIR || e == ELOOP, let st = try PrivateFile.status(at: directory, name, path: path) {
                if st.kind == .symbolicLink { throw SystemError(.symbolicLink, "\(path) is a symbolic link", path: path) }
                throw SystemError(.notRegularFile, "\(path) is not a directory", path: path)
            }
            throw SystemError.call("open", path, errno: e)
        }
        let handle = PrivateDirectory(descriptor: fd, path: path)
        try PrivateFile.checkOwnership(try handle.status(), path)
        return handle
    }

    /// The path of `name` in this directory, for messages.
    public func child(_ name: String) -> String { path == "/" ? "/" + name : path + "/" + name }

    /// `fstat` of the directory itself.
    /// - Throws: ``SystemError`` (`stat`).
    public func status() throws -> PrivateFile.Status {
        var st = stat()
        guard fstat(descriptor, &st) == 0 else { throw SystemError.call("stat", path, errno: errno) }
        return PrivateFile.Status(st)
    }

    /// `fstatat(name, AT_SYMLINK_NOFOLLOW)` (a link is reported as a link), or `nil` when absent.
    /// - Throws: ``SystemError`` (`stat`).
    public func status(_ name: String) throws -> PrivateFile.Status? {
        try Self.checkName(name, in: self)
        return try PrivateFile.status(at: descriptor, name, path: child(name))
    }

    /// Reads the whole private file `name`, as ``PrivateFile/read(_:maxByteCount:)``.
    /// - Returns: the bytes, or `nil` when the file does not exist.
    public func read(_ name: String, maxByteCount: Int) throws -> [UInt8]? {
        try Self.checkName(name, in: self)
        return try PrivateFile.read(at: descriptor, name, path: child(name), maxByteCount: maxByteCount)
    }

    /// Opens the private file `name`, as ``PrivateFile/open(_:_:what:)``.
    public func open(_ name: String, _ options: FileDescriptor.Options, what: String = "") throws -> FileDescriptor {
        try Self.checkName(name, in: self)
        return try PrivateFile.open(at: descriptor, name, path: child(name), options, what: what)
    }

    /// Creates `name` holding `bytes` (0600, `O_EXCL | O_NOFOLLOW`, synced), as
    /// ``PrivateFile/createExclusive(_:_:mode:)``.
    public func createExclusive(_ name: String, _ bytes: [UInt8], mode: UInt32 = 0o600) throws {
        try Self.checkName(name, in: self)
        try PrivateFile.createExclusive(at: descriptor, name, path: child(name), bytes, mode: mode)
    }

    /// Atomic, durable replace of `name`: a temp file `uniqueName` is created in
    /// `tempDirectory` (same file system) and synced, renamed over `name` (`renameat`), then
    /// this directory (and `tempDirectory`, when another) is synced.
    /// - Throws: ``SystemError`` from the create, `rename into`, or the syncs.
    public func replaceAtomically(_ bytes: [UInt8], named name: String, tempDirectory: PrivateDirectory, uniqueName: String) throws {
        try Self.checkName(name, in: self)
        try tempDirectory.createExclusive(uniqueName, bytes)
        guard renameat(tempDirectory.descriptor, uniqueName, descriptor, name) == 0 else {
            let e = errno
            _ = unlinkat(tempDirectory.descriptor, uniqueName, 0)
            throw SystemError.call("rename into", child(name), errno: e)
        }
        try synchronize()
        if tempDirectory !== self { try tempDirectory.synchronize() }
    }

    /// Removes the file `name` (`unlinkat`; a link is removed, never followed).
    /// - Returns: `false` when it did not exist.
    /// - Throws: ``SystemError`` (`remove`).
    @discardableResult
    public func remove(_ name: String) throws -> Bool {
        try Self.checkName(name, in: self)
        if unlinkat(descriptor, name, 0) == 0 { return true }
        if errno == ENOENT { return false }
        throw SystemError.call("remove", child(name), errno: errno)
    }

    /// Creates the subdirectory `name` (0700, exact, past the umask) and opens it; an existing
    /// one is opened and checked instead.
    /// - Throws: as ``openDirectory(_:)``; ``SystemError`` (`create directory`, `chmod`).
    public func makeDirectory(_ name: String) throws -> PrivateDirectory {
        try Self.checkName(name, in: self)
        let created = mkdirat(descriptor, name, 0o700) == 0
        if !created, errno != EEXIST { throw SystemError.call("create directory", child(name), errno: errno) }
        let fd = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            if let existing = try Self.open(at: descriptor, name, path: child(name)) { return existing }
            throw SystemError.call("open", child(name), errno: ENOENT)
        }
        let handle = PrivateDirectory(descriptor: fd, path: child(name))
        // mkdir is subject to the umask; make the mode exact on the directory we opened.
        if created, fchmod(fd, 0o700) != 0 { throw SystemError.call("chmod", handle.path, errno: errno) }
        try PrivateFile.checkOwnership(try handle.status(), handle.path)
        return handle
    }

    /// The names in the directory (not `.` and `..`), read through a duplicate of the descriptor.
    /// - Throws: ``SystemError`` (`open`).
    public func names() throws -> [String] {
        let copy = dup(descriptor)
        guard copy >= 0 else { throw SystemError.call("open", path, errno: errno) }
        guard let d = fdopendir(copy) else {
            let e = errno
            _ = close(copy)
            throw SystemError.call("open", path, errno: e)
        }
        rewinddir(d)
        return Self.names(d)
    }

    /// The names in the directory at `path` (not `.` and `..`), without the rules' checks: for
    /// a directory about to become private (an empty one `Keychain.create` takes over).
    /// - Throws: ``SystemError`` (`open`; `.notFound` when it does not exist).
    public static func names(atPath path: String) throws -> [String] {
        guard let d = opendir(path) else { throw SystemError.call("open", path, errno: errno) }
        return names(d)
    }

    /// Reads the entries of `d` and closes it.
    private static func names(_ d: OpaquePointer) -> [String] {
        defer { closedir(d) }
        var names: [String] = []
        while let entry = readdir(d) {
            let name = Self.entryName(entry)
            if name == "." || name == ".." { continue }
            names.append(name)
        }
        return names
    }

    /// Flushes the directory (a rename or create inside it) to storage.
    /// - Throws: ``SystemError`` (`fsync`).
    public func synchronize() throws {
        guard fsync(descriptor) == 0 else { throw SystemError.call("fsync", path, errno: errno) }
    }

    /// Runs `body` holding an exclusive `flock` on the private file `name` (created 0600 when
    /// absent), as ``PrivateFile/withExclusiveLock(_:_:)``.
    public func withExclusiveLock<R>(_ name: String, _ body: () throws -> R) throws -> R {
        let file = try open(name, [.readWrite, .create], what: "lock file")
        try file.lockExclusive()
        defer { file.unlock() }
        return try body()
    }

    /// The name of one `readdir` entry, read in place: glibc's entries are variable-length, so
    /// copying `d_name` (a 256-byte tuple) could read past the last entry of a buffer.
    static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafeMutablePointer(to: &entry.pointee.d_name) { tuple in
            // A homogeneous tuple of CChar is bound to CChar, so this assumes nothing new.
            String(cString: UnsafeRawPointer(tuple).assumingMemoryBound(to: CChar.self))
        }
    }

    /// One path component: not empty, `.`, `..`, and without `/` (so a `*at` call never walks).
    private static func checkName(_ name: String, in directory: PrivateDirectory) throws {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.utf8.contains(0) else {
            throw SystemError(.notFound, "\"\(name)\" is not a name inside \(directory.path)", path: directory.child(name))
        }
    }
}
