#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A self-pipe through which one thread wakes another that waits in ``StopSignals/wait(for:wake:)``
/// (e.g. a finished worker task waking the thread that reads input).
///
/// Both ends are non-blocking and close-on-exec, closed when the object goes away. `Sendable`:
/// its state is two descriptor numbers fixed at creation; `write(2)`/`read(2)` on them are safe
/// from any thread.
public final class WakeUpPipe: Sendable {
    /// The read end (polled by the waiter).
    public let readEnd: Int32
    /// The write end (written by ``wake()``).
    let writeEnd: Int32

    /// Makes the pipe.
    /// - Throws: ``SystemError`` (`pipe`).
    public init() throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SystemError.call("pipe", "for a wake-up", errno: errno) }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        _ = close(readEnd)
        _ = close(writeEnd)
    }

    /// Wakes the waiter: writes one byte (a full pipe already wakes it, so that is no error).
    public func wake() {
        var byte: UInt8 = 1
        while write(writeEnd, &byte, 1) < 0 && errno == EINTR {}
    }

    /// Reads every pending wake-up byte, so the next wait blocks again.
    public func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while true {
            let n = bytes.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if n > 0 { continue }
            if n < 0 && errno == EINTR { continue }
            return
        }
    }
}
