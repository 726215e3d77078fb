/// A value behind a ``PosixLock``, for state shared between threads (the extension host's
/// work, expiry timer and media fetcher thread; the CLI's record of a failed stdout write).
///
/// `@unchecked Sendable`: every access to `value` goes through `withLock`, which holds the
/// `PosixLock` (a pthread mutex) for the whole closure, so no two threads touch `value` at once.
/// (`Synchronization.Mutex` would do, but needs macOS 15 and the package supports macOS 14.)
public final class Locked<Value>: @unchecked Sendable {
    private let lock = PosixLock()
    private var value: Value

    /// Creates the lock around `value`.
    public init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    /// - Returns: what `body` returns.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
