import Foundation
import Testing
import PushSealTestSupport
@testable import PushSealCLI

/// HelpText wraps prose (OVERVIEW, option and exit-code descriptions, notes) at 95 columns with
/// a hanging indent and never wraps USAGE or EXAMPLES.
@Suite struct HelpTextTests {
    static let width = HelpText.wrapColumn

    @Test func wrapKeepsEveryWordInOrderWithinTheWidth() {
        var rng = SeededGenerator()
        for _ in 0..<200 {
            let words = (0..<Int.random(in: 0...80, using: &rng)).map { _ in
                String(repeating: "x", count: Int.random(in: 1...30, using: &rng)) + String(Int.random(in: 0...9, using: &rng))
            }
            let indent = Int.random(in: 0...40, using: &rng)
            let prefix = String(repeating: "p", count: Int.random(in: 0...40, using: &rng))
            let wrapped = HelpText.wrap(words.joined(separator: " "), firstPrefix: prefix, indent: indent)
            let lines = wrapped.components(separatedBy: "\n")
            #expect(lines[0].hasPrefix(prefix), seedNote())
            for line in lines.dropFirst() {
                #expect(line.hasPrefix(String(repeating: " ", count: indent)) && line.dropFirst(indent).first != " ", seedNote())
            }
            for line in lines where line.count > Self.width {
                // Only a line holding one word that alone does not fit may be longer.
                let body = line == lines[0] ? String(line.dropFirst(prefix.count)) : String(line.dropFirst(indent))
                #expect(!body.contains(" "), "\(line) — \(seedNote().rawValue)")
            }
            let back = (String(lines[0].dropFirst(prefix.count)) + " " + lines.dropFirst().joined(separator: " "))
                .split(separator: " ").map(String.init)
            #expect(back == words, seedNote())
        }
    }

    @Test func renderWrapsProseButNotUsageOrExamples() {
        let longUsage = "tool sub " + Array(repeating: "[--option VALUE]", count: 12).joined(separator: " ")
        let longExample = "tool sub " + Array(repeating: "--option value", count: 12).joined(separator: " ")
        let help = HelpText(
            overview: Array(repeating: "overview words", count: 20).joined(separator: " "),
            usage: [longUsage], examples: [longExample],
            exitCodes: ["0   success", "65  " + Array(repeating: "bad data", count: 20).joined(separator: " ")],
            notes: "LABEL: " + Array(repeating: "labelled note", count: 15).joined(separator: " ")
                + "\nshort line kept   as written\n" + Array(repeating: "plain note", count: 20).joined(separator: " "),
            jsonHelp: "errors as JSON")
        let text = help.render(options: [
            .value("--group", "G", Array(repeating: "a group", count: 20).joined(separator: " "), repeatable: true),
            .value("--more", "M", "repeat it for more", repeatable: true),
        ])
        let lines = text.components(separatedBy: "\n")
        #expect(lines.contains("  " + longUsage) && lines.contains("  " + longExample))
        for line in lines where line.count > Self.width {
            #expect(line == "  " + longUsage || line == "  " + longExample, "\(line)")
        }
        // Hanging indents: after "OVERVIEW: ", under the option description, after the code column, after "LABEL: ".
        func hangs(_ line: String, at column: Int) -> Bool {
            line.prefix(column).allSatisfy { $0 == " " } && line.dropFirst(column).first.map { $0 != " " } == true
        }
        let overview = lines.prefix { !$0.isEmpty }
        #expect(overview.count > 1 && overview.dropFirst().allSatisfy { hangs($0, at: 10) })
        let group = lines.firstIndex { $0.hasPrefix("  --group G") } ?? 0
        let column = lines[group].range(of: "a group")?.lowerBound.utf16Offset(in: lines[group]) ?? 0
        #expect(column > 11 && hangs(lines[group + 1], at: column))
        let groupText = lines[group...].prefix { $0 == lines[group] || hangs($0, at: column) }.joined(separator: " ")
            .split(separator: " ").joined(separator: " ")
        #expect(groupText.hasSuffix("a group (repeatable)") && groupText.components(separatedBy: "(repeatable)").count == 2)
        #expect(lines.contains("  --more M" + String(repeating: " ", count: column - 10) + "repeat it for more"))
        #expect(lines.contains("  --json" + String(repeating: " ", count: column - 8) + "errors as JSON"))
        let code = lines.firstIndex { $0.hasPrefix("  65  bad data") } ?? 0
        #expect(hangs(lines[code + 1], at: 6))
        let label = lines.firstIndex { $0.hasPrefix("LABEL: labelled") } ?? 0
        #expect(hangs(lines[label + 1], at: 7))
        #expect(lines.contains("short line kept   as written"))
        let plain = lines.firstIndex { $0.hasPrefix("plain note") } ?? 0
        #expect(hangs(lines[plain + 1], at: 2))
    }

    /// Every --help of the three tools: no line outside USAGE and EXAMPLES is wider than 95
    /// columns (unless it is one unbreakable word), and every DURATION option names its units.
    @Test func everyToolHelpIsWrapped() throws {
        let bin = KeysCLI.buildDirectory
        var helps: [(String, String)] = []
        for tool in ["push-seal", "push-open", "push-keys"] {
            let path = bin.appendingPathComponent(tool).path
            try #require(FileManager.default.isExecutableFile(atPath: path), "\(tool) is not built: run swift build")
            let top = try KeysCLI.run(path, ["--help"]).stdout
            helps.append((tool, top))
            // Commands: push-keys' COMMANDS list, push-seal's subcommand USAGE lines.
            let commands = top.components(separatedBy: "\n").compactMap { line -> [String]? in
                guard line.hasPrefix("  \(tool) ") else { return nil }
                let words = line.dropFirst(tool.count + 3).split(separator: " ").prefix { $0.allSatisfy { $0.isLowercase || $0 == "-" } && !$0.hasPrefix("-") }
                return words.isEmpty ? nil : words.map(String.init)
            }
            for c in Set(commands.map { $0.joined(separator: " ") }) {
                helps.append(("\(tool) \(c)", try KeysCLI.run(path, c.split(separator: " ").map(String.init) + ["--help"]).stdout))
            }
        }
        #expect(helps.count >= 19)
        for (name, text) in helps {
            var section = ""
            for line in text.components(separatedBy: "\n") {
                if let first = line.first, first.isUppercase, line.contains(":") { section = String(line.prefix { $0 != ":" }) }
                guard section != "USAGE", section != "EXAMPLES", line.count > Self.width else { continue }
                #expect(!line.trimmingCharacters(in: .whitespaces).contains(" "), "\(name): \(line.count) columns: \(line)")
            }
            for option in text.components(separatedBy: "\n  --").dropFirst() where option.hasPrefix("\(option.prefix { $0 != " " }) DURATION") {
                // Words joined by single spaces: the phrase may be wrapped onto the next line.
                let description = option.components(separatedBy: "\n\n")[0].split(whereSeparator: \.isWhitespace).joined(separator: " ")
                #expect(description.contains("s, m, h, d or w"), "\(name): --\(option.prefix { $0 != " " }) does not name its units")
            }
        }
    }
}
