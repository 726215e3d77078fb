#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A non-recursive mutual-exclusion lock over `pthread_mutex_t`: PushSeal's one mutex (for
/// modules that import only FoundationEssentials, which has no `NSLock`, and for the
/// Foundation-free media fetcher). Prefer ``Locked``, which ties the lock to the state it guards;
/// use this for code whose critical sections do not fit one closure. `Synchronization.Mutex`
/// would do, but needs macOS 15 and the package supports macOS 14.
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
    /// - Returns: what `body` returns.
    public func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A `Sendable` value behind a ``PosixLock``, for state shared between threads (the extension
/// host's work, the media fetcher's transfer, the CLI's record of a failed stdout write, a
/// batch's task counter).
///
/// `@unchecked Sendable`: `Value` is `Sendable`, and every access to `value` goes through
/// ``withLock(_:)``, which holds the lock for the whole closure, so no two threads touch
/// `value` at once.
public final class Locked<Value: Sendable>: @unchecked Sendable {
    private let mutex = PosixLock()
    private var value: Value

    /// Creates the lock around `value`.
    public init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value (not re-entrant: `body` must not call
    /// `withLock` on the same object).
    /// - Returns: what `body` returns.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&value)
    }
}

extension Locked where Value == Int {
    /// Takes the next index below `count` (0, 1, 2, … each once), or `nil` when all are taken:
    /// how the workers of one batch share out its tasks.
    public func takeIndex(below count: Int) -> Int? {
        withLock { value in
            guard value < count else { return nil }
            value += 1
            return value - 1
        }
    }
}
