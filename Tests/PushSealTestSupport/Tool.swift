public import Foundation

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
/// - Parameters:
///   - executable: the program.
///   - arguments: its arguments (not including the program).
///   - cwd: its working directory (default: this process's).
///   - environment: variables set on top of this process's environment.
///   - stdin: its standard input (default: empty).
///   - stdout: a file handle for its standard output instead of a pipe (then
///     ``ToolResult/stdoutBytes`` is empty).
/// - Throws: what `Process.run()` throws (the program cannot be started).
public func runTool(_ executable: URL, _ arguments: [String], cwd: URL? = nil, environment: [String: String] = [:],
                    stdin: Data = Data(), stdout: FileHandle? = nil) throws -> ToolResult {
    ignoreBrokenPipes()
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let cwd { process.currentDirectoryURL = cwd }
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let out = Pipe(), err = Pipe(), input = Pipe()
    process.standardOutput = stdout ?? out
    process.standardError = err
    process.standardInput = input
    try process.run()
    let writer = input.fileHandleForWriting
    let wrote = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        // A child may exit without reading all of its input (that is what some tests check):
        // the write then fails with EPIPE, which is not this test's failure.
        try? writer.write(contentsOf: stdin)
        try? writer.close()
        wrote.signal()
    }
    let errors = DataBox()
    let reader = Thread { errors.set(err.fileHandleForReading.readDataToEndOfFile()) }
    reader.start()
    let output = stdout == nil ? out.fileHandleForReading.readDataToEndOfFile() : Data()
    process.waitUntilExit()
    wrote.wait()
    return ToolResult(status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
                      stdoutBytes: output, stderrBytes: errors.wait())
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

/// One `Data` handed from a reader thread, waited for once.
/// `@unchecked Sendable`: `data` is written once before `done` is signalled and read after.
final class DataBox: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)
    func set(_ d: Data) { data = d; done.signal() }
    func wait() -> Data { done.wait(); return data }
}
