#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `body` on a new detached POSIX thread (FoundationEssentials has no `Thread`): for work
/// that may block (semaphores, downloads, a libcurl transfer) and must not tie up a Dispatch
/// pool thread.
/// - Returns: `false` if the thread could not be created (`body` then never runs).
@discardableResult
public func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Bool {
    final class Box: @unchecked Sendable {
        // Immutable after creation; handed to exactly one thread.
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    #if canImport(Glibc)
    var thread = pthread_t()
    #else
    var thread: pthread_t?
    #endif
    let rc = pthread_create(&thread, nil, { raw in
        #if canImport(Glibc)
        guard let raw else { return nil }
        #endif
        Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
        return nil
    }, context)
    guard rc == 0 else {
        Unmanaged<Box>.fromOpaque(context).release()
        return false
    }
    #if canImport(Glibc)
    pthread_detach(thread)
    #else
    if let thread { pthread_detach(thread) }
    #endif
    return true
}
