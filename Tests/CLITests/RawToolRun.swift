import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a built tool as a shell would, with what `Process` cannot give: arguments as raw bytes
/// (so they can be invalid UTF-8), and standard output sent to a file such as `/dev/full` or to a
/// pipe whose reader has already gone. `SIGPIPE` is reset to its default in the child, as a shell
/// leaves it, so a tool that does not ignore it itself dies of it (status 141).
struct RawToolRun {
    /// Where the child's standard output goes.
    enum Stdout {
        /// A temporary file, read back into ``stdout``.
        case capture
        /// The file at this path, opened for writing (e.g. `/dev/full`).
        case file(String)
        /// A pipe whose reading end is closed before the child starts: every write gets `EPIPE`.
        case closedPipe
    }

    /// The exit status, or 128 + the signal number when a signal ended the child.
    var status: Int32
    var stdout: [UInt8]
    var stderr: [UInt8]
    var out: String { String(decoding: stdout, as: UTF8.self) }
    var err: String { String(decoding: stderr, as: UTF8.self) }
    /// stderr split into lines (without the final newline).
    var errLines: [Substring] { err.split(separator: "\n", omittingEmptySubsequences: false).dropLast() }

    /// Runs `tool` (a name in the build directory) with `arguments`, `stdin` as its standard input.
    static func run(_ tool: String, _ arguments: [[UInt8]], stdin: [UInt8] = [], stdout target: Stdout = .capture) throws -> RawToolRun {
        let executable = KeysCLI.buildDirectory.appendingPathComponent(tool).path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "\(executable) (run swift build --build-tests)"])
        }
        let tmp = FileManager.default.temporaryDirectory
        let tag = UUID().uuidString
        let inPath = tmp.appendingPathComponent("raw-run-in-\(tag)").path
        let outPath = tmp.appendingPathComponent("raw-run-out-\(tag)").path
        let errPath = tmp.appendingPathComponent("raw-run-err-\(tag)").path
        try Data(stdin).write(to: URL(fileURLWithPath: inPath))
        defer { for p in [inPath, outPath, errPath] { unlink(p) } }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var pipeWriteEnd: Int32 = -1
        switch target {
        case .capture:
            posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        case .file(let path):
            posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY, 0)
        case .closedPipe:
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { throw POSIXError(.EIO) }
            close(fds[0])
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC) // only the child's fd 1 (a dup2 copy) stays open in it
            pipeWriteEnd = fds[1]
            posix_spawn_file_actions_adddup2(&actions, pipeWriteEnd, 1)
        }
        defer { if pipeWriteEnd >= 0 { close(pipeWriteEnd) } }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([Array(executable.utf8)] + arguments).map { bytes in
            let p = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (i, b) in bytes.enumerated() { p[i] = CChar(bitPattern: b) }
            p[bytes.count] = 0
            return p
        } + [nil]
        defer { for p in argv { p?.deallocate() } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw POSIXError(.ECHILD) }
        }
        let signal = status & 0x7F
        let out = (try? Data(contentsOf: URL(fileURLWithPath: outPath))).map { [UInt8]($0) } ?? []
        let err = (try? Data(contentsOf: URL(fileURLWithPath: errPath))).map { [UInt8]($0) } ?? []
        return RawToolRun(status: signal == 0 ? (status >> 8) & 0xFF : 128 + signal, stdout: out, stderr: err)
    }

    /// `run` with arguments given as text.
    static func run(_ tool: String, _ arguments: [String], stdin: [UInt8] = [], stdout target: Stdout = .capture) throws -> RawToolRun {
        try run(tool, arguments.map { Array($0.utf8) }, stdin: stdin, stdout: target)
    }
}
