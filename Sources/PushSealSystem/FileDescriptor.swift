#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The C calls under names FileDescriptor's own methods do not shadow.
private func systemRead(_ fd: Int32, _ p: UnsafeMutableRawPointer?, _ n: Int) -> Int { read(fd, p, n) }
private func systemWrite(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int) -> Int { write(fd, p, n) }
private func systemOpen(at directory: Int32, _ name: String, _ flags: Int32, _ mode: mode_t) -> Int32 { openat(directory, name, flags, mode) }
private func systemClose(_ fd: Int32) -> Int32 { close(fd) }

/// An open POSIX file descriptor: the one place PushSeal reads, writes, syncs and locks files.
///
/// Every read and write retries after `EINTR` and short transfers; failures are
/// ``SystemError``s naming the call, the path and the errno text (never data). A descriptor
/// opened here is closed when the object goes away (or by ``close()``); one made with
/// ``init(borrowing:)`` (standard input/output/error) is never closed.
///
/// Not thread-safe by itself: share it only under a lock (``Locked``).
public final class FileDescriptor {
    /// The `open(2)` flags PushSeal uses, as a Swift option set (`O_CLOEXEC` is always added).
    public struct Options: OptionSet, Sendable {
        public let rawValue: Int32
        /// Wraps raw `open(2)` access/creation bits.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// `O_RDONLY`.
        public static let readOnly = Options([])
        /// `O_WRONLY`.
        public static let writeOnly = Options(rawValue: O_WRONLY)
        /// `O_RDWR`.
        public static let readWrite = Options(rawValue: O_RDWR)
        /// `O_CREAT`: create the file (with the mode given to `open`) when absent.
        public static let create = Options(rawValue: O_CREAT)
        /// `O_EXCL` (with ``create``): fail with `.alreadyExists` when the path exists.
        public static let exclusive = Options(rawValue: O_EXCL)
        /// `O_TRUNC`: empty an existing file.
        public static let truncate = Options(rawValue: O_TRUNC)
        /// `O_APPEND`: every write goes to the end.
        public static let append = Options(rawValue: O_APPEND)
        /// `O_NOFOLLOW`: refuse a symbolic link as the last component (`.symbolicLink`).
        public static let noFollow = Options(rawValue: O_NOFOLLOW)
        /// `O_NONBLOCK`: the open itself never blocks (a FIFO put in place of a file).
        public static let nonBlocking = Options(rawValue: O_NONBLOCK)
        /// `O_DIRECTORY`: the path must be a directory (for ``synchronizeDirectory(_:)``).
        public static let directory = Options(rawValue: O_DIRECTORY)
    }

    /// The descriptor number, or -1 after ``close()``.
    public private(set) var rawValue: Int32
    /// The path in messages (`standard output` for fd 1).
    public let path: String
    private let owned: Bool

    /// Takes ownership of an open descriptor (closed on deinit).
    public init(adopting rawValue: Int32, path: String) {
        self.rawValue = rawValue
        self.path = path
        self.owned = true
    }

    /// Uses a descriptor this object does not own (never closed here), e.g. 0, 1, 2.
    public init(borrowing rawValue: Int32, path: String) {
        self.rawValue = rawValue
        self.path = path
        self.owned = false
    }

    /// Standard input (fd 0, not owned).
    public static var standardInput: FileDescriptor { FileDescriptor(borrowing: 0, path: "standard input") }
    /// Standard output (fd 1, not owned).
    public static var standardOutput: FileDescriptor { FileDescriptor(borrowing: 1, path: "standard output") }
    /// Standard error (fd 2, not owned).
    public static var standardError: FileDescriptor { FileDescriptor(borrowing: 2, path: "standard error") }

    deinit { if owned, rawValue >= 0 { _ = systemClose(rawValue) } }

    /// Opens `path` with `options` plus `O_CLOEXEC`.
    /// - Parameters:
    ///   - path: the file.
    ///   - options: access and creation flags.
    ///   - mode: permission bits for a created file (then set exactly, past the umask, when
    ///     `exactMode` is true); default 0600.
    ///   - exactMode: `fchmod` a file created here to `mode`.
    /// - Throws: ``SystemError`` from ``SystemError/call(_:_:errno:)`` (`open`).
    public static func open(_ path: String, _ options: Options, mode: UInt32 = 0o600, exactMode: Bool = false) throws -> FileDescriptor {
        try open(at: AT_FDCWD, path, path: path, options, mode: mode, exactMode: exactMode)
    }

    /// Opens `name` relative to the open directory `directory` (`openat`; `AT_FDCWD` for a
    /// plain path), with `options` plus `O_CLOEXEC`; as ``open(_:_:mode:exactMode:)``.
    /// - Parameter path: the file's path in messages.
    static func open(at directory: Int32, _ name: String, path: String, _ options: Options, mode: UInt32 = 0o600,
                     exactMode: Bool = false) throws -> FileDescriptor {
        let fd = systemOpen(at: directory, name, options.rawValue | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else { throw SystemError.call("open", path, errno: errno) }
        let file = FileDescriptor(adopting: fd, path: path)
        if exactMode, options.contains(.create) { _ = fchmod(fd, mode_t(mode)) }
        return file
    }

    /// Reads into `buffer`, retrying after `EINTR`.
    /// - Returns: the byte count read, 0 at the end of the file.
    /// - Throws: ``SystemError`` (`read`).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let n = systemRead(rawValue, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw SystemError.call("read", path, errno: errno)
        }
    }

    /// Reads up to `count` bytes (fewer only at the end of the file).
    /// - Throws: ``SystemError`` (`read`).
    public func read(upToCount count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        try out.withUnsafeMutableBytes { buffer in
            while got < count {
                let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[got...]))
                if n == 0 { break }
                got += n
            }
        }
        out.removeSubrange(got...)
        return out
    }

    /// Reads to the end of the file, 64 KiB at a time.
    /// - Parameter limit: the most bytes accepted.
    /// - Throws: ``SystemError`` `.tooLarge` when there are more than `limit` bytes; as
    ///   ``read(into:)``.
    public func readAll(limit: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = try chunk.withUnsafeMutableBytes { try read(into: $0) }
            if n == 0 { return out }
            out.append(contentsOf: chunk[0..<n])
            if out.count > limit {
                throw SystemError(.tooLarge, "\(path) is larger than \(limit) bytes", path: path)
            }
        }
    }

    /// Writes all of `buffer`, retrying after `EINTR` and short writes.
    /// - Throws: ``SystemError`` (`write`, e.g. `ENOSPC`, `EPIPE`).
    public func writeAll(_ buffer: UnsafeRawBufferPointer) throws {
        guard var p = buffer.baseAddress else { return }
        var left = buffer.count
        while left > 0 {
            let n = systemWrite(rawValue, p, left)
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError.call("write", path, errno: errno)
            }
            p += n
            left -= n
        }
    }

    /// Writes all of `bytes` (as ``writeAll(_:)-(UnsafeRawBufferPointer)``).
    public func writeAll(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try writeAll($0) }
    }

    /// Writes all of `bytes`, read in place (as ``writeAll(_:)-(UnsafeRawBufferPointer)``), e.g. a
    /// media chunk borrowed from the fetcher.
    public func writeAll(_ bytes: Span<UInt8>) throws {
        // Safe: the span's bytes are valid for the closure, and `write` only reads them there.
        try bytes.withUnsafeBytes { try writeAll($0) }
    }

    /// Writes all of `text`'s UTF-8 (as ``writeAll(_:)-(UnsafeRawBufferPointer)``).
    public func writeAll(_ text: String) throws {
        var t = text
        try t.withUTF8 { try writeAll(UnsafeRawBufferPointer($0)) }
    }

    /// Flushes the file to storage (`fsync`).
    /// - Throws: ``SystemError`` (`fsync`).
    public func synchronize() throws {
        guard fsync(rawValue) == 0 else { throw SystemError.call("fsync", path, errno: errno) }
    }

    /// Blocks until this process holds an exclusive `flock` on the file (retrying after
    /// `EINTR`). The kernel releases it on ``unlock()``, on close, or when the process dies.
    /// - Throws: ``SystemError`` (`lock`).
    public func lockExclusive() throws {
        while flock(rawValue, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            throw SystemError.call("lock", path, errno: errno)
        }
    }

    /// Takes an exclusive `flock` if no other holder has one (retrying after `EINTR`).
    /// - Returns: `true` when this descriptor now holds the lock, `false` when another does.
    /// - Throws: ``SystemError`` (`lock`) for any other failure.
    public func tryLockExclusive() throws -> Bool {
        while flock(rawValue, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw SystemError.call("lock", path, errno: errno)
        }
        return true
    }

    /// Releases a lock taken with ``lockExclusive()``.
    public func unlock() { _ = flock(rawValue, LOCK_UN) }

    /// `true` when the descriptor is a terminal (`isatty`).
    public var isTerminal: Bool { isatty(rawValue) == 1 }

    /// Closes the descriptor now (once); later calls do nothing. A close never reports
    /// anything ``synchronize()`` has not: call that first for data that must be durable.
    public func close() {
        guard rawValue >= 0 else { return }
        let fd = rawValue
        rawValue = -1
        if owned { _ = systemClose(fd) }
    }
}
