#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PushSealSystem
import Testing

/// `ChildProcess`: what the child gets (environment, working directory, descriptors) and how its
/// end is reported (exit status or signal).
@Suite struct ChildProcessTests {
    /// Runs `argv` with standard output on a pipe: what it printed, and how it ended.
    static func output(_ argv: [String], environment: [String]? = nil, workingDirectory: String? = nil) throws -> (text: String, exit: ChildProcess.Exit) {
        let pipe = try FileDescriptor.makePipe()
        let child = try #require(ChildProcess.spawn(argv, environment: environment, workingDirectory: workingDirectory,
                                                    stdout: .descriptor(pipe.write.rawValue)))
        pipe.write.close()
        let text = String(decoding: try pipe.read.readAll(limit: 1 << 16), as: UTF8.self)
        return (text, child.wait())
    }

    @Test("environment(overriding:) keeps this process's variables and sets the given ones; nil inherits as is")
    func environmentOverrides() throws {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let overridden = try Self.output(["/bin/sh", "-c", #"printf '%s|%s' "$PUSHSEAL_CHILD_TEST" "$PATH""#],
                                         environment: ChildProcess.environment(overriding: ["PUSHSEAL_CHILD_TEST": "a=b c"]))
        #expect(overridden.text == "a=b c|\(path)" && overridden.exit.status == 0)
        let replaced = try Self.output(["/bin/sh", "-c", #"printf '%s' "$PATH""#], environment: ChildProcess.environment(overriding: ["PATH": "/bin"]))
        #expect(replaced.text == "/bin")
        let inherited = try Self.output(["/bin/sh", "-c", #"printf '%s' "${PUSHSEAL_CHILD_TEST-unset}""#])
        #expect(inherited.text == "unset")
    }

    @Test("workingDirectory is the child's; one that does not exist fails the spawn")
    func workingDirectory() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushseal-child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try Self.output(["/bin/pwd", "-P"], workingDirectory: dir.path)
        #expect(r.text == dir.resolvingSymlinksInPath().path + "\n" && r.exit.status == 0)
        #expect(ChildProcess.spawn(["/bin/true"], workingDirectory: dir.appendingPathComponent("missing").path) == nil)
    }

    @Test("an exit reports its status and no signal; a signal reports itself and 128 + its number")
    func exitAndSignal() throws {
        let exited = try #require(ChildProcess.spawn(["/bin/sh", "-c", "exit 3"])).wait()
        #expect(exited.status == 3 && exited.signal == nil)
        let exitedHigh = try #require(ChildProcess.spawn(["/bin/sh", "-c", "exit 137"])).wait()
        #expect(exitedHigh.status == 137 && exitedHigh.signal == nil, "an exit of 137 is not a SIGKILL")
        let sleeper = try #require(ChildProcess.spawn(["/bin/sleep", "60"]))
        #expect(sleeper.poll() == nil)
        sleeper.send(SIGKILL)
        let killed = sleeper.wait()
        #expect(killed.signal == SIGKILL && killed.status == 128 + SIGKILL)
    }
}
