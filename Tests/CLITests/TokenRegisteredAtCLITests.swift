import Foundation
import Testing

/// `push-keys token add --registered-at` refuses a value in the wrong unit (issue 26, token
/// hygiene): a time in seconds or in microseconds would silently decide which tokens a 410
/// removes. Nothing is stored for a refused value.
@Suite struct TokenRegisteredAtCLITests {
    static let token = "aa11bb22"

    static func add(_ keychain: String, _ registeredAt: String) throws -> KeysCLI.Result {
        try KeysCLI.keys(["token", "add", "--keychain", keychain, "--app-id", KeysCLI.appID, "--recipient", "alice",
                          "--environment", "production", "--registered-at", registeredAt, token])
    }

    @Test func secondsAndMicrosecondsAreRefusedAndNothingIsStored() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let kc = dir.appendingPathComponent("server").path
        let seconds = try Self.add(kc, "1780000000")
        #expect(seconds.status == 64)
        #expect(seconds.stderr.hasPrefix("push-keys: error: --registered-at 1780000000 looks like seconds"))
        #expect(seconds.stderr.contains("hint: --registered-at 1780000000000"))
        let micros = try Self.add(kc, "1780000000000000")
        #expect(micros.status == 64)
        #expect(micros.stderr.contains("looks like microseconds"))
        let listed = try KeysCLI.keys(["token", "list", "--keychain", kc, "--app-id", KeysCLI.appID])
        #expect(!listed.stdout.contains(Self.token))
    }

    @Test func millisecondsAndSmallClocksAreAccepted() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let kc = dir.appendingPathComponent("server").path
        for value in ["1780000000000", "2000", "99999999999999"] {
            let r = try Self.add(kc, value)
            #expect(r.status == 0, "\(value): \(r.stderr)")
        }
        let listed = try KeysCLI.keys(["token", "list", "--keychain", kc, "--app-id", KeysCLI.appID])
        #expect(listed.stdout.contains("\(Self.token) 99999999999999"))
    }
}
