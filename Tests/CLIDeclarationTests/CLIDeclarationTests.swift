import Testing
@testable import PushSealCLI
@testable import push_seal
@testable import push_open
@testable import push_keys
@testable import push_send
@testable import push_gateway

/// Every command of every tool, driven from its option declarations (issue 27, "options declared
/// once"): the `--help` OPTIONS listing is exactly what the parser accepts, with the same value
/// names and kinds; the command's ``CommandOptions`` reads every declared option, reads no other,
/// and reads each with the reader its kind names; the USAGE and EXAMPLES lines of a command name
/// only options it accepts.
@Suite struct CLIDeclarationTests {
    static let tools: [Tool] = [pushSealTool, pushOpenTool, pushKeysTool, pushSendTool, pushGatewayTool]

    /// `(tool, command)` for every command, the alias forms included.
    static var commands: [(tool: Tool, command: any Command)] {
        tools.flatMap { tool in tool.commands.map { (tool, $0) } }
    }

    static func title(_ tool: Tool, _ command: any Command) -> String { ([tool.name] + command.path).joined(separator: " ") }

    /// `text` up to the first `marker`, or all of it.
    static func before(_ marker: String, in text: Substring) -> Substring {
        var i = text.startIndex
        while i < text.endIndex {
            if text[i...].hasPrefix(marker) { return text[..<i] }
            i = text.index(after: i)
        }
        return text
    }

    /// The OPTIONS section of a rendered help: `(name, value name or "")` in order.
    static func listedOptions(_ help: String) -> [(name: String, valueName: String)] {
        var out: [(String, String)] = []
        var inOptions = false
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "OPTIONS:" { inOptions = true; continue }
            guard inOptions else { continue }
            if line.isEmpty { break }
            guard line.hasPrefix("  --") else { continue }  // a wrapped description line
            let body = line.dropFirst(2)
            // The left column ("--name VALUE") ends at the first run of two spaces.
            let left = Self.before("  ", in: body)
            let words = left.split(separator: " ").map(String.init)
            out.append((words[0], words.count > 1 ? words[1] : ""))
        }
        return out
    }

    @Test func helpListsExactlyTheOptionsTheParserAccepts() throws {
        var problems: [String] = []
        var checked = 0
        for (tool, command) in Self.commands {
            let title = Self.title(tool, command)
            let declared = command.options + Arguments.implicit
            let names = declared.map(\.name)
            for name in Set(names) where names.filter({ $0 == name }).count > 1 {
                problems.append("\(title): \(name) is declared more than once")
            }
            let listed = Self.listedOptions(command.help.render(options: command.options))
            if Set(listed.map(\.name)) != Set(names) {
                problems.append("\(title): --help lists \(listed.map(\.name).sorted()) but the parser accepts \(names.sorted())")
            }
            for (name, valueName) in listed {
                checked += 1
                // The parser accepts the listed option, with a value exactly when help shows one.
                do {
                    _ = try Arguments(valueName.isEmpty ? [name] : [name, "v"], specs: command.options)
                } catch let e as CLIError {
                    problems.append("\(title): --help lists \(name) but the parser refuses it: \(e.message)")
                    continue
                }
                let probe = valueName.isEmpty ? [name + "=v"] : [name]
                let expected = valueName.isEmpty ? "option \(name) takes no value" : "option \(name) needs a value (\(valueName))"
                do {
                    _ = try Arguments(probe, specs: command.options)
                    problems.append("\(title): \(probe) parsed; expected \(expected)")
                } catch let e as CLIError {
                    if e.message != expected { problems.append("\(title): \(probe): \(e.message); expected \(expected)") }
                }
            }
        }
        #expect(problems.isEmpty, Comment(rawValue: "\n" + problems.joined(separator: "\n")))
        #expect(checked > 300)
    }

    /// The names and the problems found by parsing `C.Options` with probes: no option, each
    /// option alone, and every option at once (sample values by kind), dropping the last option
    /// an error names until the parse goes through or names none; each without and with one
    /// positional argument (text, or hex digits for a device token or key id). Missing required options read as `x`, so one probe reads on.
    static func probe<C: OptionsCommand>(_ command: C) -> (read: Set<String>, mismatches: [String], stops: [String]) {
        /// A value the option's own parse accepts where its value name says which (an
        /// environment, a wire format), else `x`.
        func text(_ spec: OptionSpec) -> String {
            ["E": "production", "ENV": "production", "V": "v2"][spec.valueName] ?? "x"
        }
        func sample(_ spec: OptionSpec) -> [String] {
            switch spec.kind {
            case .flag: return [spec.name]
            case .integer: return [spec.name, "1"]
            case .duration: return [spec.name, "1h"]
            case .text: return [spec.name, text(spec)]
            }
        }
        let samples = Dictionary(command.options.map { ($0.name, text($0)) }, uniquingKeysWith: { first, _ in first })
        var read = Set<String>()
        var mismatches: [String] = []
        var stops: [String] = []
        /// Parses `argv`; returns the error message, `nil` when the parse went through.
        func run(_ argv: [String]) -> String? {
            let log = ReadLog(lenient: true, samples: samples)
            guard let arguments = try? Arguments(argv, specs: command.options, log: log) else { return nil }
            defer {
                read.formUnion(log.read)
                mismatches += log.mismatches.filter { !mismatches.contains($0) }
            }
            do { _ = try C.Options(parsing: arguments); return nil } catch { return (error as? CLIError)?.message ?? "\(error)" }
        }
        for positional in [[], ["x"], ["0a1b"]] {
            for argv in [[]] + command.options.map(sample) {
                if let stop = run(argv + positional) { stops.append("\(argv + positional): \(stop)") }
            }
            var given = command.options
            while let stop = run(given.flatMap(sample) + positional) {
                // Drop the last option the error names (`--keychain or --registry, not both`:
                // --registry) and parse again.
                guard let named = given.last(where: { stop.contains($0.name) }) else {
                    stops.append("every option but those dropped before: \(stop)")
                    break
                }
                given.removeAll { $0 == named }
            }
        }
        return (read, mismatches, stops)
    }

    @Test func everyDeclaredOptionIsReadAndEveryReadIsDeclared() {
        var problems: [String] = []
        var probed = 0
        for (tool, command) in Self.commands {
            guard let typed = command as? any OptionsCommand else {
                problems.append("\(Self.title(tool, command)) is not an OptionsCommand")
                continue
            }
            probed += 1
            let (read, mismatches, stops) = Self.probe(typed)
            let unread = command.options.map(\.name).filter { !read.contains($0) }
            if !unread.isEmpty {
                problems.append("\(Self.title(tool, command)): declared but never read: \(unread) (the probes stopped at: \(stops))")
            }
            problems += mismatches.map { "\(Self.title(tool, command)): \($0)" }
        }
        #expect(problems.isEmpty, Comment(rawValue: "\n" + problems.joined(separator: "\n")))
        #expect(probed == Self.commands.count)
    }

    @Test func usageAndExamplesNameOnlyAcceptedOptions() {
        var problems: [String] = []
        for (tool, command) in Self.commands {
            let accepted = Set((command.options + Arguments.implicit).map(\.name))
            for line in command.help.usage + command.help.examples {
                // Only the lines of this command: the longest command path the words select.
                let words = line.split(separator: " ").map(String.init)
                guard words.first == tool.name,
                      let selected = tool.command(for: Array(words.dropFirst())),
                      selected.path == command.path else { continue }
                // The command's own words: up to a comment or a pipe into another program.
                var code = Self.before("  #", in: Substring(line))
                if let pipe = code.split(separator: " | ", omittingEmptySubsequences: false).first,
                   let next = code.dropFirst(pipe.count + 3).first, next.isLowercase {
                    code = pipe
                }
                for word in code.split(whereSeparator: { " [|(".contains($0) }) where word.hasPrefix("--") {
                    let name = String(word.prefix { $0 == "-" || $0.isLetter || $0.isNumber })
                    if !accepted.contains(name) {
                        problems.append("\(Self.title(tool, command)): \(name) in \"\(line)\" is not an option of the command")
                    }
                }
            }
        }
        #expect(problems.isEmpty, Comment(rawValue: "\n" + problems.joined(separator: "\n")))
    }
}
