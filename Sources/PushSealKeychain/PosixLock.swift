#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A non-recursive mutual-exclusion lock over `pthread_mutex_t`, for modules that import only
/// FoundationEssentials (which has no `NSLock`). `Synchronization.Mutex` would do, but needs
/// macOS 15 and the package supports macOS 14.
///
/// `@unchecked Sendable`: the mutex lives at a fixed heap address for the object's lifetime and
/// pthread mutexes are made to be used from any thread.
public final class PosixLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// Creates an unlocked lock.
    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Blocks until the lock is held by the caller.
    public func lock() { pthread_mutex_lock(mutex) }

    /// Releases the lock (the caller must hold it).
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` with the lock held.
    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
