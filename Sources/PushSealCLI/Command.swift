#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealJSON
import PushSealSystem

/// What a command's `run` receives: its parsed arguments and where to write.
public struct CommandContext: Sendable {
    /// The tool name for messages, e.g. `push-keys`.
    public let toolName: String
    /// The parsed arguments of this command.
    public let arguments: Arguments
    /// `true` when `--json` was given: print exactly one JSON object on stdout.
    public var json: Bool { arguments[Arguments.jsonFlag] }

    /// Creates a context.
    public init(toolName: String, arguments: Arguments) {
        self.toolName = toolName
        self.arguments = arguments
    }

    /// Writes a warning to stderr as `TOOL: warning: MESSAGE` (never with `--json` on stdout).
    public func warn(_ message: String) {
        Output.stderr("\(toolName): warning: \(Output.terminalSafe(message))\n")
    }
}

/// One command or subcommand of a tool: its options, help, and what it does.
public protocol Command: Sendable {
    /// Words after the tool name that select this command, e.g. `["keychain", "init"]`;
    /// empty for a tool's default command.
    var path: [String] { get }
    /// Options this command accepts (`--help` and `--json` are implicit).
    var options: [OptionSpec] { get }
    /// The `--help` text.
    var help: HelpText { get }
    /// Runs the command; returns the exit code. Throw `CLIError` for failures.
    func run(_ context: CommandContext) throws -> ExitCode
    /// The exit code when an argument given to this command is not valid UTF-8 (``Tool`` refuses
    /// it before ``run(_:)``): 64 (usage) by default; a command whose help documents another code
    /// for text that is not UTF-8 returns that one.
    var notUTF8ExitCode: ExitCode { get }
    /// `true` for a second name of another command (e.g. bare `push-seal` for `push-seal
    /// seal`): it runs, but the tool's command list shows only the other name.
    var isAlias: Bool { get }
}

extension Command {
    /// Not an alias.
    public var isAlias: Bool { false }

    /// 64 (usage): the command line is wrong.
    public var notUTF8ExitCode: ExitCode { .usage }
}

/// A command-line tool: a set of commands dispatched by their path words.
public struct Tool: Sendable {
    /// The tool's name, e.g. `push-keys`.
    public let name: String
    /// One line on what the tool does, for the tool-level help.
    public let overview: String
    /// The commands, longest paths are matched first.
    public let commands: [any Command]
    /// Where the tool's own help and error text goes (the commands print through ``Output``).
    public let printer: Printer

    /// Creates a tool.
    /// - Parameters:
    ///   - name: the tool's name for messages, e.g. `push-keys`.
    ///   - overview: one line for the tool-level help.
    ///   - commands: the commands; paths must be distinct.
    ///   - printer: where help and errors go; standard output and error by default.
    public init(name: String, overview: String, commands: [any Command], printer: Printer = .standard) {
        self.name = name
        self.overview = overview
        self.commands = commands
        self.printer = printer
    }

    /// Parses `argv` (without argv[0]), runs the matching command and returns the exit code.
    /// Errors print `TOOL: error: …` and `hint: …` on stderr, or a JSON error object on stdout
    /// with `--json`. When a write to standard output failed (``Output/standardOutputErrno``)
    /// and the command did not fail otherwise, the result is exit 74 with
    /// `TOOL: error: cannot write to standard output: …` (no line for `EPIPE`).
    public func run(_ argv: [String]) -> ExitCode {
        let wantsJSON = givesFlag(argv, "--json")
        do {
            let code = try dispatch(argv)
            if let e = Output.standardOutputErrno { throw CLIError.standardOutputFailed(errno: e) }
            return code
        } catch let error as CLIError {
            return report(error, json: wantsJSON)
        } catch {
            return report(CLIError(code: "internal", "\(error)", exitCode: .failure), json: wantsJSON)
        }
    }

    /// Runs the tool on the raw bytes of its arguments (`argv` without argv[0]), as ``main()``
    /// does. An argument that is not valid UTF-8 is refused before anything runs (Swift's
    /// `CommandLine.arguments` would silently replace the bad bytes with U+FFFD):
    /// `TOOL: error: argument N (the value of --title) is not valid UTF-8: byte 0xFF at byte
    /// offset 3 of 9 (the value is not shown: it may be a secret)`, N counting from 1 after the
    /// tool name, with the exit code of the command it was given to
    /// (``Command/notUTF8ExitCode``, 64 unless the command documents another).
    public func run(rawArguments: [[UInt8]]) -> ExitCode {
        var argv: [String] = []
        var firstInvalid: Int?
        for (i, bytes) in rawArguments.enumerated() {
            if let text = String(validating: bytes, as: UTF8.self) {
                argv.append(text)
            } else {
                argv.append(String(decoding: bytes, as: UTF8.self))
                if firstInvalid == nil { firstInvalid = i }
            }
        }
        guard let i = firstInvalid else { return run(argv) }
        let command = self.command(for: argv)
        var what = "argument \(i + 1)"
        var shown = rawArguments[i][...]
        if let eq = argv[i].firstIndex(of: "="), argv[i].hasPrefix("--"), let rawEq = shown.firstIndex(of: UInt8(ascii: "=")) {
            what += " (the value of \(argv[i][..<eq]))"
            shown = shown[(rawEq + 1)...]
        } else if i > 0, !argv[i - 1].contains("="),
                  command?.options.contains(where: { $0.takesValue && $0.name == argv[i - 1] }) == true {
            what += " (the value of \(argv[i - 1]))"
        }
        let (offset, byte) = Self.firstInvalidByte(Array(shown))
        let error = CLIError(code: "notUTF8", "\(what) is not valid UTF-8: byte 0x\(byte < 0x10 ? "0" : "")\(String(byte, radix: 16, uppercase: true)) "
                             + "at byte offset \(offset) of \(shown.count) (the value is not shown: it may be a secret)",
                             hint: "give command-line text (file names included) as UTF-8, e.g. converted with iconv -t UTF-8",
                             exitCode: command?.notUTF8ExitCode ?? .usage)
        return report(error, json: givesFlag(argv, "--json"))
    }

    /// The offset and value of the first byte of `bytes` that is not part of valid UTF-8
    /// (`(bytes.count, 0)` when there is none). The argument itself is never echoed: it may be a
    /// key or message text (`--title`).
    static func firstInvalidByte(_ bytes: [UInt8]) -> (offset: Int, byte: UInt8) {
        var parser = Unicode.UTF8.ForwardParser()
        var input = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &input) {
            case .valid(let encoded): offset += encoded.count
            case .error: return (offset, bytes[offset])
            case .emptyInput: return (bytes.count, 0)
            }
        }
    }

    /// `true` when `argv` gives `flag` (e.g. `--json`) as an option of the command it selects:
    /// not as the value of an option that takes one (`--title --json` is a title), nor after `--`.
    func givesFlag(_ argv: [String], _ flag: String) -> Bool {
        let command = command(for: argv)
        let takesValue = Set((command?.options ?? []).filter(\.takesValue).map(\.name))
        var i = command?.path.count ?? 0
        while i < argv.count {
            let arg = argv[i]
            if arg == "--" { return false }
            if arg == flag { return true }
            i += takesValue.contains(arg) ? 2 : 1
        }
        return false
    }

    /// The command `argv` selects (the longest matching path), if any.
    func command(for argv: [String]) -> (any Command)? {
        commands.sorted { $0.path.count > $1.path.count }.first { argv.starts(with: $0.path) }
    }

    /// Selects and runs the command; returns its exit code or throws the error to report.
    private func dispatch(_ argv: [String]) throws -> ExitCode {
        let sorted = commands.sorted { $0.path.count > $1.path.count }
        // `--version` alone, before a command or among a command's options (unless the command
        // has its own), prints the version: what `--version` means on every tool.
        if argv.first == "--version"
            || (givesFlag(argv, "--version") && command(for: argv).map { !$0.options.contains { $0.name == "--version" } } ?? true) {
            printer.out(PushSealVersion.line(tool: name) + "\n")
            return .success
        }
        // `help` alone, like `--help` on a tool without a default command, prints the command list.
        if argv == ["help"] || (argv.isEmpty || argv == ["--help"] || argv == ["-h"]) && !commands.contains(where: { $0.path.isEmpty }) {
            printer.out(toolHelp())
            return .success
        }
        // A command group without its subcommand (`push-keys keychain`, `push-keys keychain --help`).
        if let group = argv.first, !group.hasPrefix("-"),
           !sorted.contains(where: { !$0.path.isEmpty && argv.starts(with: $0.path) }),
           case let members = commands.filter({ $0.path.count > 1 && $0.path.first == group }), !members.isEmpty {
            let listing = toolHelp(only: members)
            if argv.count == 1 {
                printer.err(listing)
                throw CLIError.usage("'\(name) \(group)' needs a subcommand", hint: "run '\(name) \(group) --help'")
            }
            if argv.dropFirst().allSatisfy({ $0 == "--help" || $0 == "-h" }) {
                printer.out(listing)
                return .success
            }
            throw CLIError.usage("unknown command '\(name) \(argv.prefix(2).joined(separator: " "))'", hint: "run '\(name) \(group) --help' for its subcommands")
        }
        guard let command = command(for: argv) else {
            // Options before the command (`push-keys --json device generate`): each command takes
            // its own, after its name.
            let leading = argv.prefix { $0.hasPrefix("-") }
            if !leading.isEmpty, let meant = self.command(for: Array(argv.dropFirst(leading.count))), !meant.path.isEmpty {
                // The rest is not echoed (it may hold notification text).
                let rest = argv.count > leading.count + meant.path.count ? ["…"] : []
                let fixed = ([name] + meant.path + leading.map { Output.terminalSafe($0) } + rest).joined(separator: " ")
                throw CLIError.usage("\(quoted(leading[leading.startIndex])) comes before the command; options go after it",
                                     hint: "run '\(fixed)'")
            }
            throw CLIError.usage("unknown command \(quoted(argv.first ?? ""))", hint: "run '\(name) --help' for the commands")
        }
        let rest = Array(argv.dropFirst(command.path.count))
        if givesFlag(argv, "--help") || givesFlag(argv, "-h") {
            printer.out(command.help.render(options: command.options))
            return .success
        }
        let arguments = try Arguments(rest, specs: command.options)
        return try command.run(CommandContext(toolName: name, arguments: arguments))
    }

    /// Prints `error` the way the tool reports errors and returns its exit code: with `json`,
    /// `{"error": {"code", "message", "hint"?, …}}` on stdout; then, unless the error is silent,
    /// `TOOL: error: MESSAGE` and `hint: HINT` on stderr, each exactly one line (control
    /// characters shown as escapes by ``Output/terminalSafe(_:)``).
    public func report(_ error: CLIError, json: Bool) -> ExitCode {
        if json && error.reportsInJSON {
            var members: [(key: String, value: JSONValue)] = [("code", .string(error.code)), ("message", .string(error.message))]
            if let hint = error.hint { members.append(("hint", .string(hint))) }
            members += error.details.map { ($0.key, .string($0.value)) }
            members += error.jsonDetails
            printer.out(Output.json(.object(["error": .object(JSONObject(members))])) + "\n")
        }
        guard !error.isSilent else { return error.exitCode }
        // One line each, whatever user text the message quotes (see Output.terminalSafe).
        printer.err("\(name): error: \(Output.terminalSafe(error.message))\n")
        if let hint = error.hint { printer.err("hint: \(Output.terminalSafe(hint))\n") }
        return error.exitCode
    }

    /// The tool-level help: overview and the list of commands.
    public func toolHelp() -> String { toolHelp(only: commands.filter { !$0.isAlias }) }

    /// The help listing for some of the tool's commands (e.g. one command group).
    func toolHelp(only listed: [any Command]) -> String {
        var out = HelpText.wrap(overview, firstPrefix: "OVERVIEW: ", indent: 10) + "\n\nCOMMANDS:\n"
        for c in listed {
            let words = ([name] + c.path).joined(separator: " ")
            out += "  \(words)\n" + HelpText.wrap(c.help.overview, firstPrefix: "      ", indent: 6) + "\n"
        }
        out += "\nRun '\(name) COMMAND --help' for a command's options, examples and exit codes;\n'\(name) --version' prints the version.\n"
        return out
    }

    /// Runs the tool on the process's arguments (their raw bytes: see ``run(rawArguments:)``)
    /// and exits with the code.
    ///
    /// `SIGPIPE` is ignored first, so a reader that closes standard output early makes the next
    /// write fail with `EPIPE` (a quiet exit 74) instead of killing the tool, whatever signal
    /// disposition the parent process passed down.
    public func main() -> Never {
        ProcessControl.ignoreBrokenPipe()
        ProcessControl.exit(run(rawArguments: ProcessControl.rawArguments()).rawValue)
    }
}

/// Where a ``Tool`` writes its help and error text: standard output and error, or anywhere
/// a test wants (``silent`` keeps test logs clean).
public struct Printer: Sendable {
    /// Receives data and help text (standard output).
    public let out: @Sendable (String) -> Void
    /// Receives diagnostics (standard error).
    public let err: @Sendable (String) -> Void

    /// Creates a printer from two sinks.
    public init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void) {
        self.out = out
        self.err = err
    }

    /// The process's standard output and standard error.
    public static let standard = Printer(out: { Output.stdout($0) }, err: { Output.stderr($0) })
    /// Discards everything.
    public static let silent = Printer(out: { _ in }, err: { _ in })
}
