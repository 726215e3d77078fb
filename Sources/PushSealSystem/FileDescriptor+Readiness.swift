#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension FileDescriptor {
    /// Whether a read would return at once (data, the end of the file, or an error) instead of
    /// blocking: `poll(2)` for `POLLIN` on this descriptor. A regular file is always readable;
    /// a pipe or terminal is when bytes are waiting or its writer has gone (`POLLHUP`).
    /// - Parameter timeoutMilliseconds: how long to wait, in milliseconds: 0 answers for right
    ///   now without waiting, -1 waits until it is readable. An `EINTR` restarts the wait.
    /// - Returns: `true` when a ``read(into:)`` would not block.
    /// - Throws: ``SystemError`` (`poll`).
    public func isReadable(timeoutMilliseconds: Int32) throws -> Bool {
        var request = pollfd(fd: rawValue, events: Int16(POLLIN), revents: 0)
        while true {
            let n = poll(&request, 1, timeoutMilliseconds)
            if n >= 0 { return n > 0 }
            if errno == EINTR { continue }
            throw SystemError.call("poll", path, errno: errno)
        }
    }
}
