import Testing
@testable import PushSealCLI

/// `Option<Value>` (issue 27, "options declared once"): one declaration gives the parser and
/// `--help` their spec and the command its typed value, through `Arguments`' own readers.
@Suite struct OptionTests {
    static let title = Option.text("--title", "TEXT", "the title")
    static let format = Option.text("--format", "V", "the format", default: "v2")
    static let environment = Option.textWithDefault("--environment", "ENV", "where", default: "production")
    static let out = Option.required("--out", "FILE", "the output", hint: "give --out FILE")
    static let group = Option.repeated("--group", "G", "a group")
    static let force = Option.flag("--force", "overwrite")
    static let badge = Option.integer("--badge", "N", "the badge", range: 0...99)
    static let jobs = Option.integerWithDefault("--jobs", "N", "workers", range: 1...16, default: 4)
    static let ttl = Option.duration("--ttl", "expiry")
    static let grace = Option.durationWithDefault("--grace", "grace window", default: 86400)

    static let specs = OptionSpec.list(title, format, environment, out, group, force, badge, jobs, ttl, grace)

    func parse(_ argv: [String]) throws -> Arguments { try Arguments(argv, specs: Self.specs) }

    /// The message of the `CLIError` `body` throws, `nil` when it throws none.
    func usageError(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let e as CLIError {
            #expect(e.exitCode == .usage)
            return e.message
        } catch {
            Issue.record("not a CLIError: \(error)")
            return nil
        }
    }

    @Test func theSpecIsTheDeclaration() {
        #expect(Self.specs.map(\.name) == ["--title", "--format", "--environment", "--out", "--group", "--force", "--badge", "--jobs", "--ttl", "--grace"])
        #expect(Self.specs.map(\.kind) == [.text, .text, .text, .text, .text, .flag, .integer, .integer, .duration, .duration])
        #expect(Self.group.spec.repeatable && !Self.title.spec.repeatable)
        #expect(Self.format.spec.defaultValue == "v2")
        #expect(Self.jobs.spec.range == 1...16 && Self.jobs.spec.defaultValue == "4")
        #expect(Self.grace.spec.defaultValue == "1d" && Self.grace.spec.valueName == "DURATION")
        #expect(Self.out.name == "--out")
        // The spec list is what --help renders.
        let help = HelpText(overview: "o", usage: ["t"]).render(options: Self.specs)
        #expect(help.contains("--jobs N") && help.contains("workers (1 to 16; default 4)"))
    }

    @Test func everyKindReadsItsValue() throws {
        let a = try parse(["--title", "Hi", "--format=v1", "--environment", "development", "--out", "o.bin", "--group", "A",
                           "--group=B", "--force", "--badge", "7", "--jobs", "2", "--ttl", "15m", "--grace", "2h"])
        let title: String? = a[Self.title]
        let out: String = try a[Self.out]
        let groups: [String] = a[Self.group]
        let force: Bool = a[Self.force]
        let badge: Int64? = try a[Self.badge]
        let jobs: Int64 = try a[Self.jobs]
        let ttl: Int64? = try a[Self.ttl]
        let grace: Int64 = try a[Self.grace]
        #expect(title == "Hi")
        #expect(a[Self.format] == "v1")
        #expect(try a[Self.environment] == "development")
        #expect(out == "o.bin")
        #expect(groups == ["A", "B"])
        #expect(force)
        #expect(badge == 7 && jobs == 2 && ttl == 900 && grace == 7200)
        #expect(a.has(Self.badge) && a.declares(Self.badge))
    }

    @Test func absentOptionsReadAsTheirDefaults() throws {
        let a = try parse(["--out", "o.bin"])
        #expect(a[Self.title] == nil)
        #expect(a[Self.format] == "v2")
        #expect(try a[Self.environment] == "production")
        #expect(a[Self.group].isEmpty)
        #expect(!a[Self.force] && !a.has(Self.force))
        #expect(try a[Self.badge] == nil)
        #expect(try a[Self.jobs] == 4)
        #expect(try a[Self.ttl] == nil)
        #expect(try a[Self.grace] == 86400)
    }

    @Test func malformedAndMissingValuesAreTheReadersUsageErrors() throws {
        #expect(usageError { _ = try parse([])[Self.out] } == "missing --out FILE")
        #expect(usageError { _ = try parse(["--out", ""])[Self.out] } == "missing --out FILE")
        #expect(usageError { _ = try parse(["--badge", "x"])[Self.badge] } == "--badge needs an integer, got 'x'")
        #expect(usageError { _ = try parse(["--badge", "100"])[Self.badge] } == "--badge needs 0 to 99, got 100")
        #expect(usageError { _ = try parse(["--jobs", "0"])[Self.jobs] } == "--jobs needs 1 to 16, got 0")
        #expect(usageError { _ = try parse(["--ttl", "soon"])[Self.ttl] } == "--ttl needs a duration like 3600, 90m, 12h or 30d, got 'soon'")
        // The hint of the declaration comes with the missing-option error.
        do {
            _ = try parse([])[Self.out]
        } catch let e as CLIError {
            #expect(e.hint == "give --out FILE")
        }
        // A text option the command requires in one place, though it is optional in another.
        #expect(usageError { _ = try parse([]).required(Self.title, hint: "h") } == "missing --title TEXT")
        #expect(try parse(["--title", "T"]).required(Self.title) == "T")
    }

    @Test func withHelpKeepsTheNameKindAndReader() throws {
        let described = Self.jobs.withHelp("threads")
        #expect(described.spec.help == "threads")
        #expect(described.spec.name == "--jobs" && described.spec.kind == .integer && described.spec.range == 1...16)
        #expect(described.spec.defaultValue == "4")
        let renamed = Self.out.withHelp("the old file", valueName: "OLD")
        let a = try Arguments(["--jobs", "3"], specs: [described.spec, renamed.spec])
        #expect(try a[described] == 3)
        // The shared declaration reads the same option.
        #expect(try a[Self.jobs] == 3)
        #expect(usageError { _ = try a[renamed] } == "missing --out OLD")
    }

    @Test func readsAreLoggedWithTheirKind() throws {
        let log = ReadLog(lenient: false)
        let a = try Arguments(["--out", "o", "--badge", "1"], specs: Self.specs, log: log)
        _ = try (a[Self.title], a[Self.out], a[Self.group], a[Self.force], a[Self.badge], a[Self.jobs], a[Self.ttl], a[Self.grace],
                 a[Self.environment], a[Self.format])
        #expect(log.read == Set(Self.specs.map(\.name)))
        #expect(log.mismatches.isEmpty)
        // A declaration the command does not list is reported as undeclared.
        let b = try Arguments([], specs: [Self.title.spec], log: log)
        _ = try b[Self.badge]
        #expect(log.mismatches == ["--badge is read but not declared"])
    }
}
