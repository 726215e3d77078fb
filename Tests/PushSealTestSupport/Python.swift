public import Foundation

/// The result of a `python3` run.
public struct PythonResult: Sendable {
    /// The exit status.
    public let status: Int32
    /// Standard output, as text.
    public let output: String
    /// Standard error, as text.
    public let errors: String
}

/// Runs `python3 -c script arguments…` (found on `PATH`), with `input` on its stdin.
/// - Returns: status and output, or `nil` when python3 cannot be started.
public func runPython(_ script: String, _ arguments: [String] = [], input: Data? = nil) -> PythonResult? {
    runPython3(["-c", script] + arguments, input: input)
}

/// Runs `python3 file arguments…` (a script file such as Tests/Interop/pushseal_ref.py), with
/// `input` on its stdin.
/// - Returns: status and output, or `nil` when python3 cannot be started.
public func runPython(file: URL, _ arguments: [String] = [], input: Data? = nil) -> PythonResult? {
    runPython3([file.path] + arguments, input: input)
}

private func runPython3(_ arguments: [String], input: Data?) -> PythonResult? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3"] + arguments
    let out = Pipe()
    let err = Pipe()
    let stdin = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input == nil ? FileHandle.nullDevice : stdin
    do { try process.run() } catch { return nil }
    if let input {
        // Write in the background: a large input must not block while python3's output fills.
        let writer = stdin.fileHandleForWriting
        Thread.detachNewThread {
            writer.write(input)
            try? writer.close()
        }
    }
    // Read stderr on its own thread so neither pipe can fill and stall the child.
    let errorData = ErrorBox()
    let reader = Thread { errorData.set(err.fileHandleForReading.readDataToEndOfFile()) }
    reader.start()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let errors = errorData.wait()
    return PythonResult(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self),
                        errors: String(decoding: errors, as: UTF8.self))
}

/// ``runPython(_:_:input:)`` for scripts that print one result: trimmed stdout when the
/// script exited 0, else `nil` (python3 or a module such as `cryptography` missing, or failed).
public func runPythonOutput(_ script: String, _ arguments: [String] = []) -> String? {
    guard let r = runPython(script, arguments), r.status == 0 else { return nil }
    return r.output.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// One `Data` handed from a reader thread, waited for once.
/// `@unchecked Sendable`: `data` is written once before `done` is signalled and read after.
private final class ErrorBox: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)
    func set(_ d: Data) { data = d; done.signal() }
    func wait() -> Data { done.wait(); return data }
}
