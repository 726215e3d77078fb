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

    @Test func jsonStringEscapesOnlyWhatItMust() {
        #expect(Output.json(.string("a/b\"c\\\n\u{01}é")) == "\"a/b\\\"c\\\\\\n\\u0001é\"")
    }
}
