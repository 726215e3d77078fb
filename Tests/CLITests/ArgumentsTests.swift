import PushSealJSON
import Testing
@testable import PushSealCLI

@Suite struct ArgumentsTests {
    let specs: [OptionSpec] = [.value("--keychain", "DIR", "keychain"), .value("--access-group", "G", "group", repeatable: true), .flag("--reveal", "show")]

    @Test func parsesValuesFlagsAndPositionals() throws {
        let a = try Arguments(["--keychain", "/k", "--access-group=A", "--access-group", "B", "--reveal", "file.json"], specs: specs)
        #expect(a.value("--keychain") == "/k")
        #expect(a.values("--access-group") == ["A", "B"])
        #expect(a.has("--reveal"))
        #expect(a.positionals == ["file.json"])
    }

    @Test func dashIsAPositionalAndDoubleDashEndsOptions() throws {
        let a = try Arguments(["-", "--", "--reveal"], specs: specs)
        #expect(a.positionals == ["-", "--reveal"])
        #expect(!a.has("--reveal"))
    }

    @Test func unknownMissingAndRepeatedOptionsAreUsageErrors() {
        for argv in [["--nope"], ["--keychain"], ["--keychain", "a", "--keychain", "b"], ["--reveal=yes"]] {
            #expect(throws: CLIError.self) { try Arguments(argv, specs: specs) }
            do { _ = try Arguments(argv, specs: specs) } catch let e as CLIError { #expect(e.exitCode == .usage) } catch { Issue.record("wrong error \(error)") }
        }
    }

    @Test func durations() {
        #expect(Arguments.parseDuration("30d") == Int64(2_592_000))
        #expect(Arguments.parseDuration("90") == 90)
        #expect(Arguments.parseDuration("12h") == Int64(43_200))
        #expect(Arguments.parseDuration("-5") == nil)
        #expect(Arguments.parseDuration("d") == nil)
        #expect(Arguments.parseDuration("99999999999999999w") == nil)
    }

    /// One declaration gives the parse its range, default and value name (issue 27).
    @Test func declaredRangeDefaultAndValueNameDriveTheReaders() throws {
        let specs: [OptionSpec] = [.integer("--connections", "N", "connections", range: 1...16, default: 1),
                                   .duration("--grace", "grace", default: 2_592_000), .value("--out", "BLOB", "where"),
                                   .value("--environment", "ENV", "which", default: "production")]
        let absent = try Arguments([], specs: specs)
        #expect(try absent.integerWithDefault("--connections") == 1)
        #expect(try absent.durationWithDefault("--grace") == 2_592_000)
        #expect(try absent.valueWithDefault("--environment") == "production")
        #expect(!absent.has("--environment"))
        #expect(try Arguments(["--connections", "16"], specs: specs).integer("--connections") == 16)
        for (argv, message) in [(["--connections", "17"], "--connections needs 1 to 16, got 17"), (["--connections", "0"], "--connections needs 1 to 16, got 0")] {
            do { _ = try Arguments(argv, specs: specs).integer("--connections"); Issue.record("\(argv) parsed") } catch let e as CLIError {
                #expect(e.message == message && e.exitCode == .usage)
            }
        }
        do { _ = try absent.required("--out"); Issue.record("a missing --out parsed") } catch let e as CLIError {
            #expect(e.message == "missing --out BLOB")
        }
        do { _ = try absent.integerWithDefault("--out"); Issue.record("no default, yet a value") } catch let e as CLIError {
            #expect(e.code == "internal")
        }
        #expect(absent.declares("--out") && absent.declares("--json") && !absent.declares("--nope"))
    }

    /// `--help` states what the declaration says: range and default, the duration forms.
    @Test func helpLineStatesRangeAndDefault() {
        #expect(OptionSpec.integer("--connections", "N", "connections at most", range: 1...16, default: 1).helpLine == "connections at most (1 to 16; default 1)")
        #expect(OptionSpec.duration("--grace", "grace", default: 2_592_000).helpLine
                == "grace (default 30d); seconds, or a number with a unit s, m, h, d or w (90m, 12h, 30d, 2w)")
        #expect([0, 59, 90, 3600, 5400, 86_400 * 45].map(OptionSpec.durationText) == ["0", "59s", "90s", "1h", "90m", "45d"])
    }

    /// A probe's log finds reads of undeclared options and reads by another kind.
    @Test func readLogFindsUndeclaredAndMiskindedReads() throws {
        let log = ReadLog(lenient: true)
        let a = try Arguments([], specs: [.value("--port", "PORT", "port"), .integer("--jobs", "N", "jobs")], log: log)
        _ = try a.integer("--port")
        _ = a.value("--jobs")
        _ = a.value("--nope")
        _ = try a.required("--missing")
        #expect(log.read == ["--port", "--jobs", "--nope", "--missing"])
        #expect(log.mismatches == ["--port is read as an integer but declared text", "--jobs is read as text but declared integer",
                                   "--nope is read but not declared", "--missing is read but not declared"])
    }

    @Test func jsonStringEscapesOnlyWhatItMust() {
        #expect(Output.json(.string("a/b\"c\\\n\u{01}é")) == "\"a/b\\\"c\\\\\\n\\u0001é\"")
    }
}
