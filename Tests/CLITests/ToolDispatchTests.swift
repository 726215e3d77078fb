import Testing
@testable import PushSealCLI

/// A command that records that it ran and returns a fixed code.
private struct Probe: Command {
    let path: [String]
    var options: [OptionSpec] { [.value("--name", "N", "a name")] }
    var help: HelpText { HelpText(overview: "probe \(path.joined(separator: " "))", usage: ["probe"]) }
    func run(_ context: CommandContext) throws -> ExitCode {
        guard context.arguments.value("--name") != "bad" else { throw CLIError.dataError("bad name") }
        return ExitCode(Int32(10 + path.count))
    }
}

@Suite struct ToolDispatchTests {
    let tool = Tool(name: "probe", overview: "test tool", commands: [Probe(path: ["group", "a"]), Probe(path: ["group", "b"]), Probe(path: ["solo"])], printer: .silent)

    @Test func dispatchesByLongestPath() {
        #expect(tool.run(["group", "a"]) == ExitCode(12))
        #expect(tool.run(["solo", "--name", "x"]) == ExitCode(11))
    }

    @Test func groupHelpAndMissingSubcommand() {
        #expect(tool.run(["group", "--help"]) == .success)
        #expect(tool.run(["help"]) == .success)
        #expect(tool.run(["group"]) == .usage)
        #expect(tool.run(["group", "zzz"]) == .usage)
        #expect(tool.run(["zzz"]) == .usage)
    }

    @Test func versionAndErrorTextGoThroughThePrinter() {
        final class Sink: @unchecked Sendable { // test-only; written on this thread only
            var out = "", err = ""
        }
        let sink = Sink()
        let t = Tool(name: "probe", overview: "o", commands: tool.commands,
                     printer: Printer(out: { sink.out += $0 }, err: { sink.err += $0 }))
        #expect(t.run(["--version"]) == .success)
        #expect(sink.out.hasPrefix("probe \(Tool.packageVersion)"))
        #expect(t.run(["solo", "--name", "bad"]) == .dataError)
        #expect(sink.err.contains("probe: error: bad name"))
    }

    @Test func errorsMapToTheirExitCodes() {
        #expect(tool.run(["solo", "--name", "bad"]) == .dataError)
        #expect(tool.run(["solo", "--nope"]) == .usage)
        #expect(tool.run(["solo", "--help"]) == .success)
    }
}
