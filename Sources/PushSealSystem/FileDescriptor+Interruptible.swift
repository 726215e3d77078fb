#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private func systemReadOnce(_ fd: Int32, _ p: UnsafeMutableRawPointer?, _ n: Int) -> Int { read(fd, p, n) }
private func systemPread(_ fd: Int32, _ p: UnsafeMutableRawPointer?, _ n: Int, _ offset: off_t) -> Int { pread(fd, p, n, offset) }

extension FileDescriptor {
    /// Reads into `buffer` like ``read(into:)``, but returns `nil` when a signal interrupted the
    /// read (`EINTR`) instead of retrying: for a reader that must look at a stop flag set by a
    /// signal handler (``StopSignals``) while it waits for input.
    /// - Returns: the byte count read, 0 at the end of the file, `nil` after `EINTR`.
    /// - Throws: ``SystemError`` (`read`).
    public func readUnlessInterrupted(into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
        let n = systemReadOnce(rawValue, buffer.baseAddress, buffer.count)
        if n >= 0 { return n }
        if errno == EINTR { return nil }
        throw SystemError.call("read", path, errno: errno)
    }

    /// The byte at `offset` (`pread(2)`, the file position unchanged), `nil` past the end.
    /// - Throws: ``SystemError`` (`read`).
    public func byte(atOffset offset: Int) throws -> UInt8? {
        var b: UInt8 = 0
        while true {
            let n = systemPread(rawValue, &b, 1, off_t(offset))
            if n == 1 { return b }
            if n == 0 { return nil }
            if errno == EINTR { continue }
            throw SystemError.call("read", path, errno: errno)
        }
    }
}
