import Testing
@testable import PushSealCLI

/// A command that records that it ran and returns a fixed code.
private struct Probe: Command {
    var notUTF8Code = ExitCode.usage
    var notUTF8ExitCode: ExitCode { notUTF8Code }
    let path: [String]
    var options: [OptionSpec] { [.value("--name", "N", "a name")] }
    var help: HelpText { HelpText(overview: "probe \(path.joined(separator: " "))", usage: ["probe"]) }
    func run(_ context: CommandContext) throws -> ExitCode {
        guard context.arguments.value("--name") != "bad" else { throw CLIError.dataError("bad name") }
        return ExitCode(Int32(10 + path.count))
    }
}

/// A typed command: its options parse, then validate, and run sees only what validated.
private struct TypedProbe: OptionsCommand {
    let path = ["typed"]
    var options: [OptionSpec] { [.value("--count", "N", "a count"), .flag("--loud", "loud")] }
    var help: HelpText { HelpText(overview: "typed probe", usage: ["probe typed --count N"]) }
    struct Options: CommandOptions {
        let count: Int64, loud: Bool
        init(parsing a: Arguments) throws {
            guard let count = try a.integer("--count") else { throw CLIError.usage("missing --count N") }
            (self.count, loud) = (count, a.has("--loud"))
        }
        func validate() throws {
            if count > 9 { throw CLIError(code: "tooMany", "--count at most 9", exitCode: .dataError) }
        }
    }
    func run(_ o: Options, _ context: CommandContext) throws -> ExitCode { ExitCode(Int32(20 + o.count + (o.loud ? 100 : 0))) }
}

@Suite struct ToolDispatchTests {
    let tool = Tool(name: "probe", overview: "test tool", commands: [Probe(path: ["group", "a"]), Probe(path: ["group", "b"]), Probe(path: ["solo"])], printer: .silent)

    final class Sink: @unchecked Sendable { // test-only; written on the test's thread only
        var out = "", err = ""
    }

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
        let sink = Sink()
        let t = Tool(name: "probe", overview: "o", commands: tool.commands,
                     printer: Printer(out: { sink.out += $0 }, err: { sink.err += $0 }))
        #expect(t.run(["--version"]) == .success)
        #expect(sink.out == "probe \(PushSealVersion.current) (PushSeal, wire formats v1 and v2)\n")
        #expect(t.run(["solo", "--name", "bad"]) == .dataError)
        #expect(sink.err.contains("probe: error: bad name"))
    }

    @Test("--version before a command or among its options prints the version; an option before the command says where it goes, without echoing the rest")
    func versionAnywhereAndOptionsBeforeTheCommand() {
        let sink = Sink()
        let t = Tool(name: "probe", overview: "o", commands: tool.commands,
                     printer: Printer(out: { sink.out += $0 }, err: { sink.err += $0 }))
        let line = "probe \(PushSealVersion.current) (PushSeal, wire formats v1 and v2)\n"
        #expect(t.run(["--version", "solo"]) == .success && sink.out == line)
        sink.out = ""
        #expect(t.run(["group", "a", "--version"]) == .success && sink.out == line)
        sink.out = ""
        // A value, not the flag: the command runs.
        #expect(t.run(["solo", "--name", "--version"]) == ExitCode(11) && sink.out.isEmpty)
        #expect(t.run(["--json", "group", "a", "--name", "Secret-Title"]) == .usage)
        #expect(sink.err.contains("probe: error: '--json' comes before the command; options go after it"))
        #expect(sink.err.contains("hint: run 'probe group a --json …'"))
        #expect(!sink.err.contains("Secret-Title"))
        sink.err = ""
        #expect(t.run(["--json", "zzz"]) == .usage)
        #expect(sink.err.contains("unknown command '--json'"))
    }

    @Test func typedOptionsParseThenValidateBeforeRun() {
        let t = Tool(name: "probe", overview: "o", commands: [TypedProbe()], printer: .silent)
        #expect(t.run(["typed", "--count", "3"]) == ExitCode(23))
        #expect(t.run(["typed", "--count", "3", "--loud"]) == ExitCode(123))
        #expect(t.run(["typed"]) == .usage)  // parse: missing
        #expect(t.run(["typed", "--count", "x"]) == .usage)  // parse: not an integer
        #expect(t.run(["typed", "--count", "12"]) == .dataError)  // validate, before run
    }

    @Test func flagsGivenAsOptionValuesAreValues() {
        let sink = Sink()
        let t = Tool(name: "probe", overview: "o", commands: [Probe(path: ["solo"])], printer: Printer(out: { sink.out += $0 }, err: { sink.err += $0 }))
        // "--json" and "--help" as the value of --name are a name: the command runs, and its
        // error is reported as text, not as a JSON object.
        #expect(t.run(["solo", "--name", "--help"]) == ExitCode(11))
        #expect(sink.out.isEmpty)
        #expect(t.run(["solo", "--name", "bad", "--name", "--json"]) == .usage)
        #expect(sink.out.isEmpty && sink.err.contains("given more than once"))
        #expect(t.run(["solo", "--name", "bad", "--json"]) == .dataError)
        #expect(sink.out.contains("\"code\":\"badInput\""))
    }

    @Test func errorsMapToTheirExitCodes() {
        #expect(tool.run(["solo", "--name", "bad"]) == .dataError)
        #expect(tool.run(["solo", "--nope"]) == .usage)
        #expect(tool.run(["solo", "--help"]) == .success)
    }

    @Test func rawArgumentsThatAreNotUTF8AreRefusedBeforeTheCommandRuns() {
        let sink = Sink()
        let t = Tool(name: "probe", overview: "o", commands: [Probe(path: ["solo"]), Probe(notUTF8Code: .dataError, path: ["strict"])],
                     printer: Printer(out: { sink.out += $0 }, err: { sink.err += $0 }))
        func raw(_ words: String...) -> [[UInt8]] { words.map { Array($0.utf8) } }
        // Valid UTF-8 runs the command (its code 11); one bad byte anywhere is refused with 64.
        #expect(t.run(rawArguments: raw("solo", "--name", "é🍝")) == ExitCode(11))
        #expect(t.run(rawArguments: raw("solo", "--name") + [[0x61, 0xFF, 0x0A]]) == .usage)
        #expect(sink.err == "probe: error: argument 3 (the value of --name) is not valid UTF-8: byte 0xFF at byte offset 1 of 3 (the value is not shown: it may be a secret)\n"
            + "hint: give command-line text (file names included) as UTF-8, e.g. converted with iconv -t UTF-8\n")
        // A positional, and the command's own code.
        sink.err = ""
        #expect(t.run(rawArguments: raw("strict") + [[0xC0, 0xAF]]) == .dataError)
        #expect(sink.err.hasPrefix("probe: error: argument 2 is not valid UTF-8: byte 0xC0 at byte offset 0 of 2 (the value is not shown: it may be a secret)\n"))
        // No command matched: 64; with --json, the error object too.
        sink.err = ""
        #expect(t.run(rawArguments: [[0xFF], Array("--json".utf8)]) == .usage)
        #expect(sink.out.contains("\"code\":\"notUTF8\""))
        #expect(sink.err.hasPrefix("probe: error: argument 1 is not valid UTF-8"))
    }
}
