import PushSealSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// What one child process cost: wall time from spawn to reap, peak RSS from `wait4`'s rusage.
struct SpawnResult {
    /// Exit status (0…255), or 128 + signal number when killed by a signal; 127 if it could not start.
    let status: Int32
    /// Wall clock from `posix_spawn` to `wait4`, nanoseconds.
    let wallNanoseconds: UInt64
    /// Peak resident set size of the child (`ru_maxrss`), KiB on Linux.
    let maxRSSKiB: Int
}

/// Where a child's standard stream goes.
enum ChildStream {
    case null
    case file(String)
    case fd(Int32)
}

/// Spawns `argv` (searching `PATH` for a bare name, like `posix_spawnp`) with the given streams
/// and returns its pid, or nil if it could not start. The caller reaps it with ``reap(_:started:)``.
func spawnChild(_ argv: [String], stdin: ChildStream = .null, stdout: ChildStream = .null, stderr: ChildStream = .null) -> pid_t? {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for (stream, target) in [(stdin, Int32(0)), (stdout, 1), (stderr, 2)] {
        switch stream {
        case .null:
            posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
        case .file(let path):
            posix_spawn_file_actions_addopen(&actions, target, path, target == 0 ? O_RDONLY : (O_WRONLY | O_CREAT | O_TRUNC), 0o600)
        case .fd(let fd):
            posix_spawn_file_actions_adddup2(&actions, fd, target)
        }
    }
    // A clean signal state: push-bench may itself run with signals blocked (a test runner's
    // Process does that), and SIGPIPE is ignored here; children must see the defaults.
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
    var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
    defer { for p in cArgs { free(p) } }
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, argv[0], &actions, &attributes, &cArgs, environ)
    return rc == 0 ? pid : nil
}

/// Waits for `pid` with `wait4` and returns its status, wall time since `started` and peak RSS.
func reap(_ pid: pid_t, started: UInt64) -> SpawnResult {
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
    let wall = monotonicNanoseconds() - started
    let signal = status & 0x7f
    let code = signal == 0 ? (status >> 8) & 0xff : 128 + signal
    return SpawnResult(status: code, wallNanoseconds: wall, maxRSSKiB: Int(usage.ru_maxrss))
}

/// Runs `argv` to completion; see ``spawnChild(_:stdin:stdout:stderr:)``.
func runChild(_ argv: [String], stdin: ChildStream = .null, stdout: ChildStream = .null, stderr: ChildStream = .null) -> SpawnResult {
    let start = monotonicNanoseconds()
    guard let pid = spawnChild(argv, stdin: stdin, stdout: stdout, stderr: stderr) else {
        return SpawnResult(status: 127, wallNanoseconds: 0, maxRSSKiB: 0)
    }
    return reap(pid, started: start)
}

/// `pipe` with both ends close-on-exec (children get only what their file actions dup).
/// push-bench spawns from one thread, so no child can inherit an end between the two calls.
func makePipe(_ fds: inout [Int32]) -> Bool {
    guard pipe(&fds) == 0 else { return false }
    _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
    _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
    return true
}

/// Runs every command in `commands` at once, each fed `lines` copies of `line` on its standard
/// input by its own feeder thread, standard output discarded; returns the wall time until the
/// last one exits, the worst exit status and the largest peak RSS.
func runFed(_ commands: [[String]], line: [UInt8], lines: [Int]) -> SpawnResult {
    let start = monotonicNanoseconds()
    var pids: [pid_t] = []
    let group = DispatchGroup()
    for (command, count) in zip(commands, lines) {
        var fds: [Int32] = [0, 0]
        guard makePipe(&fds) else { return SpawnResult(status: 127, wallNanoseconds: 0, maxRSSKiB: 0) }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        let pid = spawnChild(command, stdin: .fd(readEnd))
        close(readEnd)
        guard let pid else {
            close(writeEnd)
            continue
        }
        pids.append(pid)
        group.enter()
        DispatchQueue.global().async {
            feed(writeEnd, line: line, count: count)
            close(writeEnd)
            group.leave()
        }
    }
    var worst: Int32 = pids.count == commands.count ? 0 : 127
    var rss = 0
    for pid in pids {
        let r = reap(pid, started: start)
        worst = max(worst, r.status)
        rss = max(rss, r.maxRSSKiB)
    }
    group.wait()
    return SpawnResult(status: worst, wallNanoseconds: monotonicNanoseconds() - start, maxRSSKiB: rss)
}

/// Writes `count` copies of `line` to `fd` in blocks of up to 1,000 lines; stops on a write error.
private func feed(_ fd: Int32, line: [UInt8], count: Int) {
    let perBlock = 1_000
    let block = Array([[UInt8]](repeating: line, count: perBlock).joined())
    var remaining = count
    while remaining > 0 {
        let n = min(remaining, perBlock)
        let ok = block.withUnsafeBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return false }
            var offset = 0
            let total = n * line.count
            while offset < total {
                let w = write(fd, base + offset, total - offset)
                if w < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += w
            }
            return true
        }
        if !ok { return }
        remaining -= n
    }
}
