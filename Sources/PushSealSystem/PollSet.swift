#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Several file descriptors waited on at once (`poll(2)`), with a buffer kept between waits.
/// Used by one thread at a time (not `Sendable`).
public final class PollSet {
    private var entries: [pollfd] = []

    /// An empty set.
    public init() {}

    /// Descriptors in the set.
    public var count: Int { entries.count }

    /// Empties the set (the buffer is kept).
    public func removeAll() { entries.removeAll(keepingCapacity: true) }

    /// Adds `descriptor`, waited on for reading and/or writing.
    public func add(_ descriptor: Int32, read: Bool, write: Bool) {
        let events = (read ? Int16(POLLIN) : 0) | (write ? Int16(POLLOUT) : 0)
        entries.append(pollfd(fd: descriptor, events: events, revents: 0))
    }

    /// Waits until a descriptor is ready or `timeoutMilliseconds` pass (-1: no limit; 0: only
    /// looks). Returns how many are ready; 0 on a timeout or a signal (EINTR).
    /// - Throws: ``SystemError`` (`poll`) for any other failure.
    public func wait(timeoutMilliseconds: Int32) throws -> Int {
        let n = entries.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), timeoutMilliseconds) }
        if n >= 0 { return Int(n) }
        if errno == EINTR { return 0 }
        throw SystemError.call("poll", "", errno: errno)
    }

    /// The descriptor at `index` (in the order added).
    public func descriptor(at index: Int) -> Int32 { entries[index].fd }

    /// What the last ``wait(timeoutMilliseconds:)`` found for the descriptor at `index`:
    /// readable, writable, and failed (an error or hang-up: `POLLERR`, `POLLHUP`, `POLLNVAL`).
    public func readiness(at index: Int) -> (readable: Bool, writable: Bool, failed: Bool) {
        let r = Int32(entries[index].revents)
        return (r & Int32(POLLIN) != 0, r & Int32(POLLOUT) != 0, r & Int32(POLLERR | POLLHUP | POLLNVAL) != 0)
    }
}
