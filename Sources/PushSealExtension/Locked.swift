#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealKeychain
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a lock, for state shared between the host's threads (the extension's work,
/// the expiry timer, the media fetcher's thread).
///
/// `@unchecked Sendable`: every access to `value` goes through `withLock`, which holds an
/// `PosixLock` (a pthread mutex) for the whole closure, so no two threads touch `value` at once.
/// (`Synchronization.Mutex` would do, but needs macOS 15 and the package supports macOS 14.)
final class Locked<Value>: @unchecked Sendable {
    private let lock = PosixLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
