public import Foundation
public import PushSealSystem

/// What a child process did: its exit, and everything it wrote.
public struct ToolResult: Sendable {
    /// The exit status, or the signal number when ``signaled``.
    public let status: Int32
    /// True when a signal ended it.
    public let signaled: Bool
    /// Standard output, bytes (empty when it went to a caller's file handle).
    public let stdoutBytes: Data
    /// Standard error, bytes.
    public let stderrBytes: Data
    /// Standard output as UTF-8 text (ill-formed bytes replaced).
    public var stdout: String { String(decoding: stdoutBytes, as: UTF8.self) }
    /// Standard error as UTF-8 text (ill-formed bytes replaced).
    public var stderr: String { String(decoding: stderrBytes, as: UTF8.self) }
}

/// The built executable `name` (a product of this package): looked for beside the running
/// test bundle first, walking up from `/proc/self/exe` (so a `--scratch-path` build tests its
/// own binaries), then in `.build/debug` and `.build/release` of the package.
/// - Returns: the path, or `nil` when it is not built.
public func builtTool(_ name: String) -> URL? {
    let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    var beside = URL(fileURLWithPath: exe)
    while beside.path != "/" {
        beside.deleteLastPathComponent()
        let url = beside.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    var package = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { package.deleteLastPathComponent() }
    for config in ["debug", "release"] {
        let url = package.appendingPathComponent(".build/\(config)/\(name)")
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    return nil
}

/// Runs `executable` with `arguments` and waits for it. Standard input gets `stdin` (then
/// end of file) from a writer thread and standard error is read on its own thread, so no
/// pipe can fill and stall the child, whatever the sizes.
///
/// Started with `posix_spawn` (``ChildProcess``: only descriptors 0–2 open in the child, a clean
/// signal state) and reaped by its own pid; the pipes are ``FileDescriptor``s, each closed once
/// by its owner. Not Foundation's `Process` and `Pipe`: under many concurrent children (tests
/// run in parallel) their descriptor handling closed a number that was by then another test's
/// open file (seen as `EBADF` on a keychain directory in CI).
/// - Parameters:
///   - executable: the program.
///   - arguments: its arguments (not including the program).
///   - cwd: its working directory (default: this process's).
///   - environment: variables set on top of this process's environment.
///   - stdin: its standard input (default: empty).
///   - stdout: a file handle for its standard output instead of a pipe (then
///     ``ToolResult/stdoutBytes`` is empty).
/// - Throws: ``ToolStartFailure`` when the program cannot be started; ``SystemError`` when a pipe
///   cannot be made.
public func runTool(_ executable: URL, _ arguments: [String], cwd: URL? = nil, environment: [String: String] = [:],
                    stdin: Data = Data(), stdout: FileHandle? = nil) throws -> ToolResult {
    ignoreBrokenPipes()
    let input = try FileDescriptor.makePipe()
    let out = try FileDescriptor.makePipe()
    let err = try FileDescriptor.makePipe()
    let outTarget: ChildProcess.Stream = stdout.map { .descriptor($0.fileDescriptor) } ?? .descriptor(out.write.rawValue)
    guard let child = ChildProcess.spawn([executable.path] + arguments,
                                         environment: environment.isEmpty ? nil : ChildProcess.environment(overriding: environment),
                                         workingDirectory: cwd?.path, stdin: .descriptor(input.read.rawValue), stdout: outTarget,
                                         stderr: .descriptor(err.write.rawValue)) else {
        throw ToolStartFailure(path: executable.path)
    }
    // The child has its copies: the parent keeps only its own ends, so end of file comes when the child ends.
    input.read.close()
    out.write.close()
    err.write.close()
    let writer = HandedOver(input.write)
    let wrote = DispatchSemaphore(value: 0)
    let bytes = [UInt8](stdin)
    Thread.detachNewThread {
        // A child may exit without reading all of its input (that is what some tests check):
        // the write then fails with EPIPE, which is not this test's failure.
        try? writer.value.writeAll(bytes)
        writer.value.close()
        wrote.signal()
    }
    let errors = DataBox()
    let errorEnd = HandedOver(err.read)
    let reader = Thread { errors.set(readToEnd(errorEnd.value)) }
    reader.start()
    let output = stdout == nil ? readToEnd(out.read) : Data()
    let exit = child.wait()
    wrote.wait()
    return ToolResult(status: exit.signal ?? exit.status, signaled: exit.signal != nil,
                      stdoutBytes: output, stderrBytes: errors.wait())
}

/// A program ``runTool(_:_:cwd:environment:stdin:stdout:)`` could not start (`posix_spawn` failed).
public struct ToolStartFailure: Error, CustomStringConvertible {
    /// The program's path.
    public let path: String
    /// What a test prints.
    public var description: String { "cannot start \(path)" }
}

/// Everything `descriptor` yields until end of file (a read error ends it too), then closes it.
public func readToEnd(_ descriptor: FileDescriptor) -> Data {
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = (try? buffer.withUnsafeMutableBytes { try descriptor.read(into: $0) }) ?? 0
        if n <= 0 { break }
        data.append(contentsOf: buffer[..<n])
    }
    descriptor.close()
    return data
}

/// Ignores `SIGPIPE` in the test process, once: a test that writes to a child's standard input
/// must see `EPIPE` when the child has exited, not die of the signal. Call it before writing to
/// any child's pipe (``runTool(_:_:cwd:environment:stdin:stdout:)`` does). Before this, whether the
/// signal was ignored depended on which suite had run first in the shared test process.
/// Tests of a tool's own `SIGPIPE` behaviour start it through `RawToolRun`, which resets the
/// signal to its default in the child as a shell would.
public func ignoreBrokenPipes() {
    _ = brokenPipesIgnored
}

private let brokenPipesIgnored: Bool = {
    signal(SIGPIPE, SIG_IGN)
    return true
}()

/// A value handed to one other thread, which alone uses it from then on.
/// `@unchecked Sendable`: the handing thread no longer touches `value` after the hand-over.
public final class HandedOver<Value>: @unchecked Sendable {
    /// The value.
    public let value: Value
    /// Wraps `value` for the hand-over.
    public init(_ value: Value) { self.value = value }
}

/// One `Data` handed from a reader thread, waited for once.
/// `@unchecked Sendable`: `data` is written once before `done` is signalled and read after.
final class DataBox: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)
    func set(_ d: Data) { data = d; done.signal() }
    func wait() -> Data { done.wait(); return data }
}

/// A child process a test drives while it runs: started with ``ChildProcess`` (posix_spawn,
/// only descriptors 0–2 open in the child, a clean signal state), reaped by its own pid, its
/// pipes ``FileDescriptor``s each closed once by their owner (see
/// ``runTool(_:_:cwd:environment:stdin:stdout:)`` for why not Foundation's `Process`).
/// Standard error, when piped, is read on a thread of its own so the child never stalls on it.
public final class TestChild: @unchecked Sendable {
    // @unchecked Sendable: `ended` is guarded by `lock`; the descriptors are used by one thread
    // at a time (the test's), the error pipe only by its reader thread.

    /// Where one of the child's output streams goes.
    public enum Output: Sendable {
        /// A pipe this object reads (standard output: ``readOutput()``; standard error: ``errorOutput()``).
        case pipe
        /// `/dev/null`.
        case null
        /// A file, created or truncated (0600).
        case file(String)
        /// An open descriptor of the test's, duplicated onto the stream.
        case descriptor(Int32)
    }

    /// The child's process id.
    public let pid: Int32
    private let child: ChildProcess
    private let input: FileDescriptor?
    private let output: FileDescriptor?
    private let errors: DataBox?
    private let lock = NSLock()
    private var ended: ChildProcess.Exit?

    /// Starts `argv` (the program first; a bare name is looked up in `PATH`).
    /// - Parameters:
    ///   - environment: variables set on top of this process's environment.
    ///   - cwd: the working directory (default: this process's).
    ///   - stdinPipe: `true`: standard input is a pipe fed by ``write(_:)`` and ended by
    ///     ``closeInput()``; `false`: `stdinFile`, or `/dev/null`.
    ///   - stdinFile: a file read as standard input (a regular file, as a shell's `<` gives).
    ///   - stdout: where standard output goes.
    ///   - stderr: where standard error goes.
    /// - Throws: ``ToolStartFailure`` when it cannot be started; ``SystemError`` for a pipe.
    public init(_ argv: [String], environment: [String: String] = [:], cwd: String? = nil, stdinPipe: Bool = false,
                stdinFile: String? = nil, stdout: Output = .pipe, stderr: Output = .pipe) throws {
        ignoreBrokenPipes()
        let inputPipe = stdinPipe ? try FileDescriptor.makePipe() : nil
        let outputPipe = if case .pipe = stdout { try FileDescriptor.makePipe() } else { nil as (read: FileDescriptor, write: FileDescriptor)? }
        let errorPipe = if case .pipe = stderr { try FileDescriptor.makePipe() } else { nil as (read: FileDescriptor, write: FileDescriptor)? }
        func stream(_ output: Output, _ pipe: (read: FileDescriptor, write: FileDescriptor)?) -> ChildProcess.Stream {
            switch output {
            case .pipe: pipe.map { .descriptor($0.write.rawValue) } ?? .null
            case .null: .null
            case .file(let path): .file(path)
            case .descriptor(let fd): .descriptor(fd)
            }
        }
        guard let child = ChildProcess.spawn(argv, environment: environment.isEmpty ? nil : ChildProcess.environment(overriding: environment),
                                             workingDirectory: cwd,
                                             stdin: inputPipe.map { .descriptor($0.read.rawValue) } ?? stdinFile.map { .file($0) } ?? .null,
                                             stdout: stream(stdout, outputPipe), stderr: stream(stderr, errorPipe)) else {
            throw ToolStartFailure(path: argv.first ?? "")
        }
        inputPipe?.read.close()
        outputPipe?.write.close()
        errorPipe?.write.close()
        self.child = child
        pid = child.pid
        input = inputPipe?.write
        output = outputPipe?.read
        if let errorPipe {
            let box = DataBox()
            let end = HandedOver(errorPipe.read)
            Thread.detachNewThread { box.set(readToEnd(end.value)) }
            errors = box
        } else {
            errors = nil
        }
    }

    /// The read end of the child's standard output pipe (`nil` unless ``Output/pipe``), for a
    /// caller that reads it its own way.
    public var outputPipe: FileDescriptor? { output }

    /// Writes `bytes` to the child's standard input (all of them, unless it stopped reading).
    /// - Throws: ``SystemError`` (`write`: `EPIPE` once the child closed its end).
    public func write(_ bytes: [UInt8]) throws { try input?.writeAll(bytes) }

    /// Ends the child's standard input (end of file for it).
    public func closeInput() { input?.close() }

    /// The next bytes on the child's standard output (one read, blocking); empty at end of file.
    public func readOutput() -> Data {
        guard let output else { return Data() }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = (try? buffer.withUnsafeMutableBytes { try output.read(into: $0) }) ?? 0
        return n > 0 ? Data(buffer[..<n]) : Data()
    }

    /// The rest of the child's standard output, to end of file.
    public func readOutputToEnd() -> Data {
        var data = Data()
        while true {
            let chunk = readOutput()
            if chunk.isEmpty { return data }
            data.append(chunk)
        }
    }

    /// Everything the child wrote to standard error (waits for end of file: the child and
    /// anything it left running closed it); empty when it was not piped.
    public func errorOutput() -> Data { errors?.wait() ?? Data() }

    /// Whether the child still runs (it is reaped once it has ended).
    public var isRunning: Bool { lock.withLock { poll() == nil } }

    /// Sends `signal` unless the child has ended and been reaped (its pid could be reused).
    public func signal(_ signal: Int32) {
        lock.withLock { if poll() == nil { child.send(signal) } }
    }

    /// Waits for the child's end.
    @discardableResult
    public func wait() -> ChildProcess.Exit {
        if let done = lock.withLock({ poll() }) { return done }
        let exit = child.wait()
        lock.withLock { ended = exit }
        return exit
    }

    /// Under `lock`: the exit once reaped (reaping now if it just ended).
    private func poll() -> ChildProcess.Exit? {
        if ended == nil { ended = child.poll() }
        return ended
    }

    deinit {
        // A test that failed early may leave its child running: never leave it behind.
        if lock.withLock({ poll() }) == nil {
            child.kill()
            _ = child.wait()
        }
    }
}
