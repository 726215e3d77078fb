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
