#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Set by the SIGINT/SIGTERM handler of ``StopSignals/install()``; only ever written 0 → 1.
nonisolated(unsafe) private var stopSignalArrived: sig_atomic_t = 0

/// SIGINT and SIGTERM as a request to stop (`push-send` finishes the lines it has read, then
/// exits 130): the handler only sets a flag that the tool reads between lines.
public enum StopSignals {
    /// Installs handlers for SIGINT and SIGTERM that set ``requested`` (`sigaction` without
    /// `SA_RESTART`, so a blocked `read(2)` returns `EINTR` and the reader can look at the
    /// flag), and unblocks both on the calling thread (a parent may pass them down blocked).
    public static func install() {
        var action = sigaction()
        #if canImport(Glibc)
        action.__sigaction_handler.sa_handler = { _ in stopSignalArrived = 1 }
        #else
        action.__sigaction_u.__sa_handler = { _ in stopSignalArrived = 1 }
        #endif
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// `true` once SIGINT or SIGTERM arrived after ``install()``.
    public static var requested: Bool { stopSignalArrived != 0 }
}

/// Runs `body` with every signal blocked on the calling thread, then restores the thread's
/// previous mask: a thread started inside `body` (``startDetachedThread(_:)``) inherits the full
/// mask and so never takes a signal meant for the tool's own threads (libcurl's transfer thread).
/// - Returns: what `body` returns.
public func withAllSignalsBlocked<R>(_ body: () throws -> R) rethrows -> R {
    var all = sigset_t(), previous = sigset_t()
    sigfillset(&all)
    pthread_sigmask(SIG_BLOCK, &all, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    return try body()
}
