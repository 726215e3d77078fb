#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawnp` (a bare name is searched in `PATH`), with a
/// clean signal state (nothing blocked; SIGPIPE, SIGTERM, SIGINT and SIGHUP at their
/// defaults) and only descriptors 0, 1 and 2 open, reaped with `wait4(pid)` for its exit
/// status and peak RSS. For tools that run other programs and measure them (push-bench) and
/// for tests' children; not for anything that handles secrets. Unlike Foundation's `Process`
/// it keeps no monitor thread: nothing else waits for the child, so one child that runs on
/// can never hold up noticing another's exit.
public struct ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// A file: read for standard input; else created or truncated, 0600.
        case file(String)
        /// An open descriptor of the parent's, duplicated onto the stream.
        case descriptor(Int32)
    }

    /// How a child ended and what it cost.
    public struct Exit: Sendable {
        /// Exit status (0…255), or 128 + the signal number when a signal killed it; 127 when
        /// it could not start.
        public let status: Int32
        /// Wall clock from the spawn to the reap, nanoseconds (monotonic clock).
        public let wallNanoseconds: UInt64
        /// Peak resident set size (`ru_maxrss`), KiB on Linux. Linux carries the parent's
        /// high-water mark before `exec` into it, so small children read high.
        public let maxRSSKiB: Int
        /// The signal that ended the child, or `nil` when it exited (``status`` is then its
        /// exit status; 128 + a signal number there can also be an ordinary exit).
        public let signal: Int32?

        /// Creates a result (`status` 127 with zero costs: a child that never started).
        public init(status: Int32, wallNanoseconds: UInt64 = 0, maxRSSKiB: Int = 0, signal: Int32? = nil) {
            self.status = status
            self.wallNanoseconds = wallNanoseconds
            self.maxRSSKiB = maxRSSKiB
            self.signal = signal
        }

        /// The result for a `wait4` status word.
        init(waitStatus: Int32, wallNanoseconds: UInt64, usage: rusage) {
            let signal = waitStatus & 0x7f
            self.init(status: signal == 0 ? (waitStatus >> 8) & 0xff : 128 + signal, wallNanoseconds: wallNanoseconds,
                      maxRSSKiB: Int(usage.ru_maxrss), signal: signal == 0 ? nil : signal)
        }
    }

    /// The child's process id.
    public let pid: Int32
    /// ``monotonicNanoseconds()`` just before the spawn.
    public let startedNanoseconds: UInt64

    /// Starts `argv` (its first element is the program) with the given streams.
    /// - Parameters:
    ///   - argv: the program and its arguments.
    ///   - environment: the child's whole environment (`NAME=value` entries); `nil`: this
    ///     process's.
    ///   - workingDirectory: the child's working directory (glibc's
    ///     `posix_spawn_file_actions_addchdir_np`); `nil`: this process's.
    /// - Returns: the child, or `nil` when it could not be started (`posix_spawnp` failed, or a
    ///   working directory was asked for where that call is missing).
    public static func spawn(_ argv: [String], environment: [String]? = nil, workingDirectory: String? = nil,
                             stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null) -> ChildProcess? {
        guard let program = argv.first else { return nil }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (stream, target) in [(stdin, Int32(0)), (stdout, 1), (stderr, 2)] {
            switch stream {
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, target == 0 ? O_RDONLY : (O_WRONLY | O_CREAT | O_TRUNC), 0o600)
            case .descriptor(let fd):
                posix_spawn_file_actions_adddup2(&actions, fd, target)
            }
        }
        // Nothing else of the parent's (another child's pipe end would keep that child's
        // reader from seeing end of file until this one exits too).
        closeFrom3(&actions)
        if let workingDirectory {
            guard let addChdir else { return nil }
            guard addChdir(&actions, workingDirectory) == 0 else { return nil }
        }
        // The parent may run with signals blocked (a test runner's Process does that) and
        // SIGPIPE ignored; a child must see the defaults.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cArguments { free(p) } }
        var cEnvironment: [UnsafeMutablePointer<CChar>?] = (environment ?? []).map { strdup($0) } + [nil]
        defer { for p in cEnvironment { free(p) } }
        let started = monotonicNanoseconds()
        var pid: pid_t = 0
        let rc = environment == nil ? posix_spawnp(&pid, program, &actions, &attributes, &cArguments, environ)
                                    : posix_spawnp(&pid, program, &actions, &attributes, &cArguments, &cEnvironment)
        guard rc == 0 else { return nil }
        return ChildProcess(pid: pid, startedNanoseconds: started)
    }

    /// This process's environment with `overrides` set on top, as `NAME=value` entries for
    /// ``spawn(_:environment:workingDirectory:stdin:stdout:stderr:)``.
    public static func environment(overriding overrides: [String: String]) -> [String] {
        var entries: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            let name = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? text
            if overrides[name] == nil { entries.append(text) }
            index += 1
        }
        for (name, value) in overrides.sorted(by: { $0.key < $1.key }) { entries.append("\(name)=\(value)") }
        return entries
    }

    /// Starts `argv` and waits for it; an ``Exit`` with status 127 when it could not start.
    public static func run(_ argv: [String], stdin: Stream = .null, stdout: Stream = .null,
                           stderr: Stream = .null) -> Exit {
        guard let child = spawn(argv, stdin: stdin, stdout: stdout, stderr: stderr) else { return Exit(status: 127) }
        return child.wait()
    }

    /// Waits for the child to end (`wait4`, retried after `EINTR`).
    /// - Parameter since: the start of the wall time reported (default: the spawn), in
    ///   ``monotonicNanoseconds()``.
    public func wait(since: UInt64? = nil) -> Exit {
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0, errno == EINTR {}
        return Exit(waitStatus: status, wallNanoseconds: monotonicNanoseconds() - (since ?? startedNanoseconds), usage: usage)
    }

    /// The child's ``Exit`` if it has ended (reaped now, `wait4` with `WNOHANG`), else `nil`.
    /// Reap a child once: after an ``Exit`` has been returned the pid is gone. A child that
    /// someone else reaped reads as status 0.
    public func poll() -> Exit? {
        var status: Int32 = 0
        var usage = rusage()
        var reaped: pid_t
        repeat { reaped = wait4(pid, &status, WNOHANG, &usage) } while reaped < 0 && errno == EINTR
        if reaped == 0 { return nil }
        let wall = monotonicNanoseconds() - startedNanoseconds
        if reaped < 0 { return Exit(status: 0, wallNanoseconds: wall) }
        return Exit(waitStatus: status, wallNanoseconds: wall, usage: usage)
    }

    /// Sends `signal` to the child (`kill(2)`). Only before the child has been reaped by
    /// ``poll()`` or ``wait(since:)``: after that its pid may be another process's.
    public func send(_ signal: Int32) { sendSignal(signal, to: pid) }

    /// Sends SIGKILL (for a helper that holds no state worth a clean exit); reap it with
    /// ``wait(since:)``.
    public func kill() { sendSignal(SIGKILL, to: pid) }
}

/// Adds glibc's `posix_spawn_file_actions_addclosefrom_np(actions, 3)` (glibc 2.34+): the Swift
/// Glibc module does not export it (a GNU extension), so it is looked up once. Without it
/// (another libc) the child keeps what the parent did not mark close-on-exec.
/// - Parameter actions: a `posix_spawn_file_actions_t` the caller initialized (`&actions`).
public func closeFrom3(_ actions: UnsafeMutableRawPointer) {
    if let add = addCloseFrom { _ = add(actions.assumingMemoryBound(to: posix_spawn_file_actions_t.self), 3) }
}

/// glibc's `posix_spawn_file_actions_addchdir_np` (2.29+), looked up once; `nil` where missing.
private let addChdir = glibcFunction("posix_spawn_file_actions_addchdir_np",
                                     as: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32).self)

private let addCloseFrom = glibcFunction("posix_spawn_file_actions_addclosefrom_np",
                                         as: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)

/// `kill(pid, signal)` (outside the type, whose `kill()` would shadow libc's).
private func sendSignal(_ signal: Int32, to pid: pid_t) { _ = kill(pid, signal) }

extension FileDescriptor {
    /// A pipe, both ends close-on-exec (a child gets an end only through
    /// ``ChildProcess/Stream/descriptor(_:)``, which dups it).
    /// - Returns: the read end and the write end, each closed when released.
    /// - Throws: ``SystemError`` (`pipe`).
    public static func makePipe() throws -> (read: FileDescriptor, write: FileDescriptor) {
        var fds: [Int32] = [0, 0]
        if let pipe2 = pipe2Function {
            // Both ends close-on-exec from the start: a child spawned by another thread at the
            // same moment (tests run in parallel) cannot inherit one.
            guard pipe2(&fds, O_CLOEXEC) == 0 else { throw SystemError.call("pipe2", "a pipe", errno: errno) }
        } else {
            guard pipe(&fds) == 0 else { throw SystemError.call("pipe", "a pipe", errno: errno) }
            _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        }
        return (FileDescriptor(adopting: fds[0], path: "a pipe"), FileDescriptor(adopting: fds[1], path: "a pipe"))
    }
}

/// glibc's `pipe2(2)`, looked up once: the Swift Glibc module does not export it. `nil` where it
/// is missing (then `pipe` and `fcntl`, with a moment in which a concurrent spawn could inherit
/// an end).
private let pipe2Function = glibcFunction("pipe2", as: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32).self)
