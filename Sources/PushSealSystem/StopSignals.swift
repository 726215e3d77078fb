#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Set to 1 by the SIGINT/SIGTERM handler of ``StopSignals``.
/// `nonisolated(unsafe)` is safe: a `sig_atomic_t` written only by the signal handler (one
/// aligned 32-bit store) and read by ``StopSignals/isRequested``; a waiting reader learns of it
/// through the pipe, whose write/read order the kernel gives.
nonisolated(unsafe) private var stopSignalFlag: sig_atomic_t = 0
/// The write end of the self-pipe the handler writes one byte to (-1 before installation).
/// `nonisolated(unsafe)` is safe: written once by ``StopSignals/install()`` before the handlers
/// are set, read only after.
nonisolated(unsafe) private var stopSignalPipeWrite: Int32 = -1
/// The read end of the self-pipe (-1 before installation); same rule as the write end.
nonisolated(unsafe) private var stopSignalPipeRead: Int32 = -1
/// The self-pipe, kept open for the life of the process (the handler uses only its numbers:
/// no retain or release in a signal handler). Same rule as the ends.
nonisolated(unsafe) private var stopSignalPipe: WakeUpPipe?

/// The SIGINT/SIGTERM handler: only async-signal-safe work (a flag store, one `write(2)`),
/// with `errno` kept for the interrupted code.
private func stopSignalHandler(_: Int32) {
    let saved = errno
    stopSignalFlag = 1
    var byte: UInt8 = 1
    _ = write(stopSignalPipeWrite, &byte, 1)
    errno = saved
}

/// SIGINT and SIGTERM as a request to stop cleanly: after ``install()`` a signal no longer
/// ends the process; it sets ``isRequested`` and wakes ``wait(for:wake:)``, so a tool
/// can finish what it has read, write it, and exit with its own code (130 for push-seal batch
/// and push-send).
///
/// The handler only stores a flag and writes one byte to a non-blocking self-pipe (both
/// async-signal-safe), so it may run on any thread: a thread blocked in
/// ``wait(for:wake:)`` wakes whichever thread took the signal.
public enum StopSignals {
    /// Installs the SIGINT and SIGTERM handlers (no `SA_RESTART`) and unblocks both signals on
    /// the calling thread (a parent may pass them down blocked). Calling it again does nothing.
    /// - Throws: ``SystemError`` (`pipe`) when the self-pipe (a ``WakeUpPipe``) cannot be made.
    public static func install() throws {
        guard stopSignalPipe == nil else { return }
        let pipe = try WakeUpPipe()
        stopSignalPipe = pipe
        stopSignalPipeRead = pipe.readEnd
        stopSignalPipeWrite = pipe.writeEnd
        var action = sigaction()
        #if canImport(Glibc)
        action.__sigaction_handler.sa_handler = stopSignalHandler
        #else
        action.__sigaction_u.__sa_handler = stopSignalHandler
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
    public static var isRequested: Bool { stopSignalFlag != 0 }

    /// Pauses the calling thread for `seconds`, or less when a stop is requested (before or
    /// during the pause): a back-off that SIGINT/SIGTERM cut short (before ``install()``, a
    /// plain pause). An `EINTR` resumes the pause after the stop check.
    /// - Parameter seconds: the pause, at least 0.
    /// - Returns: `false` when a stop was requested, else `true` after the full pause.
    public static func pause(seconds: Double) -> Bool {
        let deadline = monotonicNanoseconds() &+ UInt64(max(0, min(seconds, 86_400)) * 1e9)
        var request = pollfd(fd: stopSignalPipeRead, events: Int16(POLLIN), revents: 0)
        while !isRequested {
            let now = monotonicNanoseconds()
            guard now < deadline else { return true }
            let milliseconds = Int32(min((deadline - now + 999_999) / 1_000_000, UInt64(Int32.max)))
            _ = poll(&request, 1, milliseconds)
        }
        return false
    }

    /// What ``wait(for:wake:)`` saw first.
    public enum Wait: Sendable {
        /// The file is readable (a read returns at once).
        case readable
        /// The wake-up pipe was written to (``WakeUpPipe/wake()``); drain it when its event is handled.
        case woken
        /// SIGINT or SIGTERM arrived (checked first: a stop wins over waiting input).
        case stopped
    }

    /// Waits, with no timeout, until `file` is readable (as
    /// ``FileDescriptor/isReadable(timeoutMilliseconds:)``), `wake` is woken, or a stop is
    /// requested, whichever comes first. An `EINTR` restarts the wait after the stop check.
    /// - Parameters:
    ///   - file: the input to wait for.
    ///   - wake: a pipe another thread wakes this wait through, or `nil`.
    /// - Throws: ``SystemError`` (`poll`).
    public static func wait(for file: FileDescriptor, wake: WakeUpPipe? = nil) throws -> Wait {
        // A negative descriptor (no stop pipe before install(), no wake pipe) is ignored by poll(2).
        var requests = [pollfd(fd: file.rawValue, events: Int16(POLLIN), revents: 0),
                        pollfd(fd: stopSignalPipeRead, events: Int16(POLLIN), revents: 0),
                        pollfd(fd: wake?.readEnd ?? -1, events: Int16(POLLIN), revents: 0)]
        while true {
            if isRequested { return .stopped }
            let n = poll(&requests, 3, -1)
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError.call("poll", file.path, errno: errno)
            }
            if isRequested || requests[1].revents != 0 { return .stopped }
            // The waker's event first: a finished worker gets its next chunk without delay.
            if requests[2].revents != 0 { return .woken }
            if requests[0].revents != 0 { return .readable }
        }
    }
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
