#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The private-file rules PushSeal holds its secret files to (keychain items, key records,
/// lock files, the audit log): a private file is a regular file, never a symbolic link,
/// owned by the effective user, with no group or other permission bits (0600; directories
/// 0700). Checked before an open (so a FIFO cannot block it) and again on the open descriptor
/// (the file may have been replaced in between). Created files are 0600, exclusive
/// (`O_EXCL | O_NOFOLLOW`) and synced; replacement is atomic and durable.
public enum PrivateFile {
    /// What `lstat`/`fstat` says about a path: the parts the rules look at.
    public struct Status: Sendable, Hashable {
        /// The kinds of file the rules tell apart.
        public enum Kind: Sendable, Hashable { case regular, directory, symbolicLink, other }
        /// The file's kind.
        public let kind: Kind
        /// The permission bits (`st_mode & 0o777`).
        public let mode: UInt32
        /// The owner uid.
        public let owner: UInt32
        /// The size in bytes.
        public let byteCount: Int
        /// The last modification, in seconds since 1970, UTC (`st_mtim`, with its nanoseconds).
        public let modifiedSeconds: Double

        init(_ st: stat) {
            switch st.st_mode & S_IFMT {
            case S_IFREG: kind = .regular
            case S_IFDIR: kind = .directory
            case S_IFLNK: kind = .symbolicLink
            default: kind = .other
            }
            mode = UInt32(st.st_mode & 0o777)
            owner = UInt32(st.st_uid)
            byteCount = Int(st.st_size)
            modifiedSeconds = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
        }
    }

    /// `lstat(path)` (a link is reported as a link), or `nil` when the path does not exist.
    /// - Throws: ``SystemError`` (`stat`).
    public static func status(_ path: String) throws -> Status? {
        try status(at: AT_FDCWD, path, path: path)
    }

    /// ``status(_:)`` of `name` relative to the open directory `directory` (`fstatat` with
    /// `AT_SYMLINK_NOFOLLOW`).
    static func status(at directory: Int32, _ name: String, path: String) throws -> Status? {
        var st = stat()
        if fstatat(directory, name, &st, AT_SYMLINK_NOFOLLOW) == 0 { return Status(st) }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw SystemError.call("stat", path, errno: errno)
    }

    /// `stat(path)` (a link is followed to its target), or `nil` when the path does not exist.
    /// - Throws: ``SystemError`` (`stat`).
    public static func status(followingLinks path: String) throws -> Status? {
        var st = stat()
        if stat(path, &st) == 0 { return Status(st) }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw SystemError.call("stat", path, errno: errno)
    }

    /// `fstat` of an open descriptor.
    /// - Throws: ``SystemError`` (`stat`).
    public static func status(of file: FileDescriptor) throws -> Status {
        var st = stat()
        guard fstat(file.rawValue, &st) == 0 else { throw SystemError.call("stat", file.path, errno: errno) }
        return Status(st)
    }

    /// Refuses a file or directory owned by another user or accessible by group or others.
    /// - Throws: ``SystemError`` `.wrongOwner` (`PATH is owned by another user (uid N)`),
    ///   `.insecureMode` (`PATH is accessible by group or others (mode 644)`).
    public static func checkOwnership(_ status: Status, _ path: String) throws {
        if status.owner != UInt32(geteuid()) {
            throw SystemError(.wrongOwner, "\(path) is owned by another user (uid \(status.owner))", path: path, fileOwner: status.owner)
        }
        if status.mode & 0o077 != 0 {
            throw SystemError(.insecureMode, "\(path) is accessible by group or others (mode \(String(status.mode, radix: 8)))",
                              path: path, fileMode: status.mode)
        }
    }

    /// Checks a regular file by the rules (link, kind, owner, mode).
    /// - Throws: ``SystemError`` `.symbolicLink`, `.notRegularFile`, `.wrongOwner`, `.insecureMode`.
    public static func check(_ status: Status, _ path: String) throws {
        if status.kind == .symbolicLink { throw SystemError(.symbolicLink, "\(path) is a symbolic link", path: path) }
        guard status.kind == .regular else { throw SystemError(.notRegularFile, "\(path) is not a regular file", path: path) }
        try checkOwnership(status, path)
    }

    /// Checks a file that may be absent by the rules; nothing when it is absent.
    /// - Throws: as ``check(_:_:)``; ``SystemError`` (`stat`).
    public static func checkIfPresent(_ path: String) throws {
        if let st = try status(path) { try check(st, path) }
    }

    /// Opens a private file (created 0600 when `options` has `.create`), checked by the rules
    /// before the open and on the open descriptor; `O_NOFOLLOW` is added.
    /// - Parameters:
    ///   - path: the file.
    ///   - options: access and creation flags.
    ///   - what: the file's role in messages, e.g. `lock file` (`cannot open lock file PATH: …`).
    /// - Throws: as ``check(_:_:)``; ``SystemError`` from the `open` (`.symbolicLink` for `ELOOP`).
    public static func open(_ path: String, _ options: FileDescriptor.Options, what: String = "") throws -> FileDescriptor {
        try open(at: AT_FDCWD, path, path: path, options, what: what)
    }

    /// ``open(_:_:what:)`` of `name` relative to the open directory `directory` (`AT_FDCWD`:
    /// a plain path); `path` names it in messages.
    static func open(at directory: Int32, _ name: String, path: String, _ options: FileDescriptor.Options,
                     what: String = "") throws -> FileDescriptor {
        if let st = try status(at: directory, name, path: path) { try check(st, path) }
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(at: directory, name, path: path, options.union(.noFollow))
        } catch let e as SystemError {
            throw SystemError.call(what.isEmpty ? "open" : "open \(what)", path, errno: e.errno)
        }
        try check(try status(of: file), path)
        return file
    }

    /// Reads a whole private file (opened `O_NONBLOCK | O_NOFOLLOW`, checked on the descriptor).
    /// - Parameters:
    ///   - path: the file.
    ///   - maxByteCount: the most bytes accepted.
    /// - Returns: the bytes, or `nil` when the file does not exist.
    /// - Throws: ``SystemError`` `.symbolicLink`, `.notRegularFile`, `.wrongOwner`, `.insecureMode`,
    ///   `.tooLarge` (`PATH is N bytes, more than the M allowed`, or `PATH grew while being read`),
    ///   or from `open`/`read`.
    public static func read(_ path: String, maxByteCount: Int) throws -> [UInt8]? {
        try read(at: AT_FDCWD, path, path: path, maxByteCount: maxByteCount)
    }

    /// ``read(_:maxByteCount:)`` of `name` relative to the open directory `directory`.
    static func read(at directory: Int32, _ name: String, path: String, maxByteCount: Int) throws -> [UInt8]? {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(at: directory, name, path: path, [.readOnly, .noFollow, .nonBlocking])
        } catch let e as SystemError where e.code == .notFound && e.errno == ENOENT {
            return nil
        }
        try check(try status(of: file), path)
        let size = try status(of: file).byteCount
        guard size <= maxByteCount else {
            throw SystemError(.tooLarge, "\(path) is \(size) bytes, more than the \(maxByteCount) allowed", path: path)
        }
        var buffer = [UInt8](repeating: 0, count: size + 1)
        var total = 0
        try buffer.withUnsafeMutableBytes { b in
            while true {
                let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: b[total...]))
                if n == 0 { break }
                total += n
                if total == b.count { throw SystemError(.tooLarge, "\(path) grew while being read", path: path) }
            }
        }
        buffer.removeLast(buffer.count - total)
        return buffer
    }

    /// Creates `path` holding `bytes`, mode 0600, failing when it exists (`O_EXCL | O_NOFOLLOW`),
    /// then syncs it. A file that cannot be written whole is removed again.
    /// - Throws: ``SystemError`` `.alreadyExists` (`PATH already exists`); from `open`
    ///   (operation `create`), `write`, `fsync`.
    public static func createExclusive(_ path: String, _ bytes: [UInt8], mode: UInt32 = 0o600) throws {
        try createExclusive(at: AT_FDCWD, path, path: path, bytes, mode: mode)
    }

    /// ``createExclusive(_:_:mode:)`` of `name` relative to the open directory `directory`.
    static func createExclusive(at directory: Int32, _ name: String, path: String, _ bytes: [UInt8], mode: UInt32 = 0o600) throws {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(at: directory, name, path: path, [.writeOnly, .create, .exclusive, .noFollow], mode: mode)
        } catch let e as SystemError {
            if e.code == .alreadyExists { throw SystemError(.alreadyExists, "\(path) already exists", path: path, errno: e.errno, operation: "create") }
            throw SystemError.call("create", path, errno: e.errno)
        }
        do {
            try file.writeAll(bytes)
            try file.synchronize()
            file.close()
        } catch {
            // A half-written private file helps nobody: remove it, report the write.
            file.close()
            unlinkat(directory, name, 0)
            throw error
        }
    }

    /// Syncs a directory, so a rename or create inside it is durable.
    /// - Throws: ``SystemError`` (`open`, `fsync`).
    public static func synchronizeDirectory(_ path: String) throws {
        try FileDescriptor.open(path, [.readOnly, .directory]).synchronize()
    }

    /// Atomic, durable replace: a unique temp file in `tempDirectory` (same file system) is
    /// created 0600 with `bytes` and synced, renamed over `path`, then `directory` (and
    /// `tempDirectory`, when different) is synced. Readers see the old or the new bytes,
    /// never a mix, even when the writer is killed.
    /// - Parameters:
    ///   - bytes: the new contents.
    ///   - path: the file to replace.
    ///   - directory: the directory holding `path`.
    ///   - tempDirectory: where the temp file goes; default `directory`.
    ///   - uniqueName: the temp file's name (unique per writer, e.g. pid plus random hex).
    /// - Throws: ``SystemError`` from the create, `rename into`, or the syncs.
    public static func replaceAtomically(_ bytes: [UInt8], at path: String, directory: String,
                                         tempDirectory: String? = nil, uniqueName: String) throws {
        let temp = tempDirectory ?? directory
        let name = "\(temp)/\(uniqueName)"
        try createExclusive(name, bytes)
        guard rename(name, path) == 0 else {
            let e = errno
            unlink(name)
            throw SystemError.call("rename into", path, errno: e)
        }
        try synchronizeDirectory(directory)
        if temp != directory { try synchronizeDirectory(temp) }
    }

    /// Runs `body` holding an exclusive `flock` on `lockPath` (a private file, created 0600
    /// when absent). The kernel releases the lock when the holder exits or is killed, so a dead
    /// holder never blocks.
    /// - Throws: as ``open(_:_:what:)`` (`lock file`); ``SystemError`` (`lock`); what `body` throws.
    public static func withExclusiveLock<R>(_ lockPath: String, _ body: () throws -> R) throws -> R {
        let file = try open(lockPath, [.readWrite, .create], what: "lock file")
        try file.lockExclusive()
        defer { file.unlock() }
        return try body()
    }

    /// Removes `path` (`unlink`), ignoring failure: for cleaning up a file this process
    /// created and could not finish.
    public static func remove(_ path: String) { _ = unlink(path) }

    /// Creates the directory `path` with `mode` (default 0700; the umask may only narrow it).
    /// - Returns: `true` when it was created, `false` when something already existed there
    ///   (`EEXIST`: check its ``status(_:)`` when that matters).
    /// - Throws: ``SystemError`` (`mkdir`) for any other failure.
    @discardableResult
    public static func makeDirectory(_ path: String, mode: UInt32 = 0o700) throws -> Bool {
        if mkdir(path, mode_t(mode)) == 0 { return true }
        if errno == EEXIST { return false }
        throw SystemError.call("mkdir", path, errno: errno)
    }

    /// The current process id (for unique temp names).
    public static var processID: Int32 { getpid() }
}
