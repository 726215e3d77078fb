#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a command's `run` receives: its parsed arguments and where to write.
public struct CommandContext: Sendable {
    /// The tool name for messages, e.g. `push-keys`.
    public let toolName: String
    /// The parsed arguments of this command.
    public let arguments: Arguments
    /// `true` when `--json` was given: print exactly one JSON object on stdout.
    public var json: Bool { arguments.has("--json") }

    /// Creates a context.
    public init(toolName: String, arguments: Arguments) {
        self.toolName = toolName
        self.arguments = arguments
    }

    /// Writes a warning to stderr as `TOOL: warning: MESSAGE` (never with `--json` on stdout).
    public func warn(_ message: String) {
        Output.stderr("\(toolName): warning: \(message)\n")
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

    /// The PushSeal release these tools belong to, printed by `--version`.
    public static let packageVersion = "0.1.0"

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
    /// with `--json`.
    public func run(_ argv: [String]) -> ExitCode {
        let wantsJSON = argv.contains("--json")
        let sorted = commands.sorted { $0.path.count > $1.path.count }
        if argv == ["--version"] {
            printer.out("\(name) \(Tool.packageVersion) (PushSeal, wire format v1)\n")
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
                return report(CLIError.usage("'\(name) \(group)' needs a subcommand", hint: "run '\(name) \(group) --help'"), json: wantsJSON)
            }
            if argv.dropFirst().allSatisfy({ $0 == "--help" || $0 == "-h" }) {
                printer.out(listing)
                return .success
            }
            return report(CLIError.usage("unknown command '\(name) \(argv.prefix(2).joined(separator: " "))'", hint: "run '\(name) \(group) --help' for its subcommands"), json: wantsJSON)
        }
        guard let command = sorted.first(where: { argv.starts(with: $0.path) }) else {
            return report(CLIError.usage("unknown command \(quoted(argv.first ?? ""))", hint: "run '\(name) --help' for the commands"), json: wantsJSON)
        }
        let rest = Array(argv.dropFirst(command.path.count))
        if rest.contains("--help") || rest.contains("-h") {
            printer.out(command.help.render(options: command.options))
            return .success
        }
        do {
            let arguments = try Arguments(rest, specs: command.options)
            let context = CommandContext(toolName: name, arguments: arguments)
            return try command.run(context)
        } catch let error as CLIError {
            return report(error, json: wantsJSON)
        } catch {
            return report(CLIError(code: "internal", "\(error)", exitCode: .failure), json: wantsJSON)
        }
    }

    /// Prints `error` the way the tool reports errors and returns its exit code.
    public func report(_ error: CLIError, json: Bool) -> ExitCode {
        if json {
            var members: [(String, String)] = [("code", error.code), ("message", error.message)]
            if let hint = error.hint { members.append(("hint", hint)) }
            members += error.details.map { ($0.key, $0.value) }
            let typed = error.jsonDetails.map { "," + Output.jsonString($0.key) + ":" + Output.json($0.value) }.joined()
            printer.out("{\"error\":{" + members.map { "\(Output.jsonString($0.0)):\(Output.jsonString($0.1))" }.joined(separator: ",") + typed + "}}\n")
        }
        printer.err("\(name): error: \(error.message)\n")
        if let hint = error.hint { printer.err("hint: \(hint)\n") }
        return error.exitCode
    }

    /// The tool-level help: overview and the list of commands.
    public func toolHelp() -> String { toolHelp(only: commands) }

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

    /// Runs the tool on the process's arguments and exits with the code.
    public func main() -> Never {
        let code = run(Array(CommandLine.arguments.dropFirst()))
        exit(code.rawValue)
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
