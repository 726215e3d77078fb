#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The C calls under names the methods below do not shadow.
private func posixWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int { write(fd, p, n) }
private func posixRead(_ fd: Int32, _ p: UnsafeMutableRawPointer, _ n: Int) -> Int { read(fd, p, n) }
private func posixClose(_ fd: Int32) -> Int32 { close(fd) }

/// A file descriptor for streaming media to and from the App Group container, with POSIX calls
/// only (FoundationEssentials has no `FileHandle`; Foundation's costs push-open startup time
/// and memory).
///
/// Not thread-safe by itself: its users serialize access (``Transfer`` under its lock).
final class PosixFile {
    /// A failed read, write or sync, with `errno`.
    struct Failure: Error { let errno: Int32 }

    private var fd: Int32

    private init(fd: Int32) { self.fd = fd }

    deinit { close() }

    /// Creates a new file (fails if it exists), mode 0600, open for writing.
    static func create(atPath path: String) -> PosixFile? {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        return fd < 0 ? nil : PosixFile(fd: fd)
    }

    /// Opens an existing file for reading.
    static func openForReading(atPath path: String) -> PosixFile? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        return fd < 0 ? nil : PosixFile(fd: fd)
    }

    /// Writes all of `bytes`.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard var p = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            let n = posixWrite(fd, p, left)
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(errno: errno)
            }
            left -= n
            p += n
        }
    }

    /// Reads up to `count` bytes (fewer only at the end of the file).
    func read(upToCount count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        try out.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            while got < count {
                let n = posixRead(fd, base + got, count - got)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw Failure(errno: errno)
                }
                if n == 0 { break }
                got += n
            }
        }
        out.removeSubrange(got...)
        return out
    }

    /// Flushes the file to storage (`fsync`).
    func synchronize() throws {
        if fsync(fd) != 0 { throw Failure(errno: errno) }
    }

    /// Closes the descriptor (once).
    func close() {
        if fd >= 0 {
            _ = posixClose(fd)
            fd = -1
        }
    }
}
