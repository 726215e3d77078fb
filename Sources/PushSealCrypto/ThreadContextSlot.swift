#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// One reusable OpenSSL context per thread (POSIX thread-specific data): the mechanism behind
/// `CipherContext` (AES-256-GCM), `MACContext` (HMAC-SHA256) and `KeygenContext` (X25519 keygen).
///
/// Creating an OpenSSL 3 context costs microseconds (a provider fetch, allocation, cleansing on
/// free), more than the operation itself for short inputs; so each thread keeps one, made on
/// first use by `make` and freed by the slot's destructor at thread exit. A context never
/// crosses threads and no operation suspends while holding it. After a failure the owner calls
/// ``discard()``; the next ``context()`` makes a fresh one.
struct ThreadContextSlot: Sendable {
    /// The destructor pthread calls with a thread's context at thread exit (frees it).
    #if canImport(Darwin)
    typealias Destructor = @convention(c) (UnsafeMutableRawPointer) -> Void
    #else
    typealias Destructor = @convention(c) (UnsafeMutableRawPointer?) -> Void
    #endif

    private let key: pthread_key_t?
    private let make: @Sendable () -> OpaquePointer?
    private let free: @Sendable (OpaquePointer) -> Void

    /// - Parameters:
    ///   - destructor: frees a context at thread exit (a C function: a closure literal that
    ///     captures nothing).
    ///   - make: creates and configures a context; nil on failure (it frees its own partial work).
    ///   - free: frees a context (OpenSSL cleanses it).
    init(destructor: Destructor, make: @escaping @Sendable () -> OpaquePointer?, free: @escaping @Sendable (OpaquePointer) -> Void) {
        var key = pthread_key_t()
        self.key = pthread_key_create(&key, destructor) == 0 ? key : nil
        self.make = make
        self.free = free
    }

    /// This thread's context, made on first use; nil if it could not be made.
    @inline(__always)
    func context() -> OpaquePointer? {
        guard let key else { return nil }
        if let existing = pthread_getspecific(key) { return OpaquePointer(existing) }
        guard let ctx = make() else { return nil }
        guard pthread_setspecific(key, UnsafeRawPointer(ctx)) == 0 else {
            free(ctx)
            return nil
        }
        return ctx
    }

    /// This thread's context if it has one (without making one).
    func existing() -> OpaquePointer? {
        guard let key, let existing = pthread_getspecific(key) else { return nil }
        return OpaquePointer(existing)
    }

    /// Frees this thread's context; the next ``context()`` makes a fresh one.
    func discard() {
        guard let key, let existing = pthread_getspecific(key) else { return }
        _ = pthread_setspecific(key, nil)
        free(OpaquePointer(existing))
    }
}
