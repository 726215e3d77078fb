import PushSealTestSupport
import Foundation
import Testing
import PushSealSystem

/// `push-seal batch` as the front of a live pipeline (issue 14): a line is written while the
/// input stays open, SIGINT/SIGTERM finish the lines read and say where they stopped, and
/// `--first-line` continues the numbering on a rerun.
@Suite struct BatchPipelineCLITests {
    /// A failure guard only: every wait below ends on an event (an output line, an exit) long
    /// before this unless push-seal is broken.
    static let guardSeconds: TimeInterval = 120

    static func line(_ title: String) -> String {
        "{\"recipient\":\"alice\",\"notification\":{\"title\":\"\(title)\"}}\n"
    }

    /// A running `push-seal batch` whose standard input is a pipe this test keeps open; its
    /// output lines are collected on a reader thread and can be waited for.
    /// `@unchecked Sendable`: `output`, `outputEnded` and `exited` are guarded by `condition`;
    /// the rest is set in `init` and only read after.
    final class LiveBatch: @unchecked Sendable {
        let child: TestChild
        private let condition = NSCondition()
        private var output = Data()
        private var outputEnded = false

        init(_ binary: URL, _ arguments: [String]) throws {
            child = try TestChild([binary.path] + arguments, stdinPipe: true)
            let child = self.child
            Thread.detachNewThread {
                while true {
                    let d = child.readOutput()
                    self.condition.lock()
                    if d.isEmpty { self.outputEnded = true } else { self.output.append(d) }
                    self.condition.broadcast()
                    self.condition.unlock()
                    if d.isEmpty { return }
                }
            }
        }

        func write(_ text: String) { try? child.write(Array(text.utf8)) }
        func closeInput() { child.closeInput() }

        /// The complete output lines so far.
        var lines: [String] {
            condition.lock()
            defer { condition.unlock() }
            return Self.completeLines(output)
        }

        /// Waits until `count` complete output lines arrived (or the output ended, or the guard).
        /// - Returns: `true` when they arrived.
        func waitForLines(_ count: Int) -> Bool {
            let deadline = Date().addingTimeInterval(BatchPipelineCLITests.guardSeconds)
            condition.lock()
            defer { condition.unlock() }
            while Self.completeLines(output).count < count {
                if outputEnded || !condition.wait(until: deadline) { return Self.completeLines(output).count >= count }
            }
            return true
        }

        /// Waits for the end of its output and its exit (or the guard, then kills it) and
        /// returns the status and stderr.
        func waitForExit() -> (status: Int32, signaled: Bool, stderr: String)? {
            let deadline = Date().addingTimeInterval(BatchPipelineCLITests.guardSeconds)
            condition.lock()
            while !outputEnded {
                if !condition.wait(until: deadline) { break }
            }
            condition.unlock()
            // Its standard output ended: the exit follows (polled for, up to the same guard).
            while child.isRunning && Date() < deadline { pauseThread(seconds: 0.005) }
            guard !child.isRunning else {
                child.signal(SIGKILL)
                child.wait()
                return nil
            }
            closeInput()
            let exit = child.wait()
            return (exit.signal ?? exit.status, exit.signal != nil, String(decoding: child.errorOutput(), as: UTF8.self))
        }

        static func completeLines(_ data: Data) -> [String] {
            var parts = String(decoding: data, as: UTF8.self).components(separatedBy: "\n")
            parts.removeLast() // the part after the last newline (empty when every line is complete)
            return parts
        }
    }

    /// The `line` numbers of batch output lines, in output order.
    static func lineNumbers(_ lines: [String]) throws -> [Int] {
        try lines.map { text in
            let o = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            #expect(o["payload"] != nil, "a sealed line: \(text)")
            return try #require(o["line"] as? Int)
        }
    }

    @Test func aLineIsWrittenWhileTheInputStaysOpen() throws {
        guard let binary = PushSealCLITests.binary else { return }
        let s = try PushSealCLITests.Scratch()
        let batch = try LiveBatch(binary, ["batch"] + s.keyArgs + ["-"])
        batch.write(Self.line("one-time code 123456"))
        // Before the input is closed: the line must come out on its own, not after 2,048 more.
        #expect(batch.waitForLines(1), "no output line while the input stayed open")
        #expect(try Self.lineNumbers(batch.lines) == [1])
        batch.write(Self.line("second"))
        #expect(batch.waitForLines(2), "no second output line while the input stayed open")
        #expect(try Self.lineNumbers(batch.lines) == [1, 2])
        batch.closeInput()
        let exit = try #require(batch.waitForExit())
        #expect(exit.status == 0 && !exit.signaled, "\(exit.stderr)")
        #expect(exit.stderr.isEmpty, "\(exit.stderr)")
        #expect(try Self.lineNumbers(batch.lines) == [1, 2])
    }

    @Test(arguments: ["SIGTERM", "SIGINT"])
    func aStopSignalFinishesTheLinesReadAndSaysWhere(_ signal: String) throws {
        guard let binary = PushSealCLITests.binary else { return }
        let s = try PushSealCLITests.Scratch()
        let total = 6
        let inputs = (1...total).map { Self.line("note \($0)") }
        let batch = try LiveBatch(binary, ["batch"] + s.keyArgs + ["-"])
        batch.write(inputs[0..<3].joined())
        #expect(batch.waitForLines(1), "no first output line")
        // More complete lines and a partial one, then the signal: wherever the reading stopped,
        // each line up to N has one output line and none after N has any.
        batch.write(inputs[3..<5].joined() + "{\"recipient\":\"alice\",\"notif")
        batch.child.signal(signal == "SIGTERM" ? SIGTERM : SIGINT)
        let exit = try #require(batch.waitForExit(), "push-seal batch did not stop on \(signal)")
        #expect(exit.status == 130 && !exit.signaled, "status \(exit.status): \(exit.stderr)")
        let stopLines = exit.stderr.split(separator: "\n").filter { $0.hasPrefix("push-seal: stopped after line ") }
        #expect(stopLines.count == 1, "\(exit.stderr)")
        let n = try #require(Int(stopLines.first?.dropFirst("push-seal: stopped after line ".count) ?? ""), "\(exit.stderr)")
        #expect((1...5).contains(n), "N = \(n): the partial line is never counted")
        #expect(try Self.lineNumbers(batch.lines) == Array(1...n))

        // The rerun on the rest of the input continues the numbering: every input line has
        // exactly one output line over both runs.
        let rest = try runTool(binary, ["batch"] + s.keyArgs + ["--first-line", "\(n + 1)", "-"],
                               stdin: Data(inputs[n...].joined().utf8))
        #expect(rest.status == 0, "\(rest.stderr)")
        let combined = try Self.lineNumbers(batch.lines) + Self.lineNumbers(PushSealCLITests.Run.lines(rest.stdout))
        #expect(combined == Array(1...total))
    }

    @Test func firstLineNumbersTheLinesIncludingBlankOnes() throws {
        guard let binary = PushSealCLITests.binary else { return }
        let s = try PushSealCLITests.Scratch()
        let r = try runTool(binary, ["batch"] + s.keyArgs + ["--first-line", "5001", "-"],
                            stdin: Data((Self.line("a") + "\n" + Self.line("b")).utf8))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Self.lineNumbers(PushSealCLITests.Run.lines(r.stdout)) == [5001, 5003])
    }

    @Test(arguments: ["0", "-3", "x", "1.5", "", "9223372036854775807"])
    func aBadFirstLineIsAUsageErrorWithAHint(_ value: String) throws {
        guard let binary = PushSealCLITests.binary else { return }
        let s = try PushSealCLITests.Scratch()
        let r = try runTool(binary, ["batch"] + s.keyArgs + ["--first-line", value, "-"], stdin: Data(Self.line("a").utf8))
        #expect(r.status == 64, "\(r.stderr)")
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.hasPrefix("push-seal: error: --first-line needs an integer of at least 1"), "\(r.stderr)")
        #expect(r.stderr.contains("\nhint: ") && r.stderr.contains("--first-line N+1"), "\(r.stderr)")
    }
}

extension PushSealCLITests.Run {
    /// The complete lines of `text` (the part after the last newline dropped).
    static func lines(_ text: String) -> [String] {
        BatchPipelineCLITests.LiveBatch.completeLines(Data(text.utf8))
    }
}
