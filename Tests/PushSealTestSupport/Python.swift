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
    guard let r = try? runTool(URL(fileURLWithPath: "/usr/bin/env"), ["python3"] + arguments, stdin: input ?? Data()) else {
        return nil
    }
    return PythonResult(status: r.status, output: r.stdout, errors: r.stderr)
}

/// ``runPython(_:_:input:)`` for scripts that print one result: trimmed stdout when the
/// script exited 0, else `nil` (python3 or a module such as `cryptography` missing, or failed).
public func runPythonOutput(_ script: String, _ arguments: [String] = []) -> String? {
    guard let r = runPython(script, arguments), r.status == 0 else { return nil }
    return r.output.trimmingCharacters(in: .whitespacesAndNewlines)
}
