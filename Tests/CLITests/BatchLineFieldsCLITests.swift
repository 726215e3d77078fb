import PushSealTestSupport
import Foundation
import Testing

/// Issue 14, a batch line's own fields end to end: `push-seal batch` seals them, `push-open`
/// shows them as iOS would (decrypted, and as the fallback when the extension cannot open);
/// push-open's localized fallback (`--strings`) and its error for push-seal's wrapper.
@Suite(.serialized)
struct BatchLineFieldsCLITests {
    typealias Open = PushOpenCLITests

    static let batch = ["batch", "--app-id", "com.example.app", "--keychain", "srv", "--badge", "7", "--sound", "flag.caf", "--thread-id", "flag-thread", "--target-content-id", "flag-target"]

    static func lines(_ stdout: String) throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    static func openLine(_ line: [String: Any], _ extra: [String], in dir: URL) throws -> Open.Result {
        let payload = try DeviceAcceptsCLITests.write(try #require(line["payload"] as? [String: Any]), "p.json", in: dir)
        return try Open.run("push-open", Open.base + ["--no-replay-guard"] + extra + [payload], in: dir)
    }

    /// A time after every default exp: the device falls back to the alert as sent.
    static let later = String(Int64(Date().timeIntervalSince1970) + 40 * 86_400)

    @Test func eachFieldRoundTripsAndFlagsAreTheDefaults() throws {
        let dir = try DeviceAcceptsCLITests.setUpWithServer()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = [
            #"{"recipient":"device","notification":{"title":"Ana","body":"Dinner?"}}"#,
            #"{"recipient":"device","deviceToken":"0a0b0c","collapseId":"chat-9","notification":{"title":"Ana","body":"Dinner?","aps":{"thread-id":"sealed-thread","category":"MSG","interruption-level":"time-sensitive","sound":{"critical":1,"name":"alarm.caf","volume":0.4}}},"aps":{"badge":0,"sound":{"critical":1,"name":"alarm.caf","volume":0.4},"thread-id":"clear-thread","category":"MSG","interruption-level":"time-sensitive","relevance-score":0.75,"target-content-id":"win-2","filter-criteria":"work","alert":{"title":"Clear title","subtitle":"Clear sub","body":"Clear body"}}}"#,
            #"{"recipient":"device","notification":{"title":"t"},"aps":{"badge":-1}}"#,
            #"{"recipient":"device","notification":{"title":"Ana"},"aps":{"alert":{"title-loc-key":"NEW_FROM","title-loc-args":["Ana"],"loc-key":"OPEN","loc-args":["2"]}}}"#,
        ].joined(separator: "\n") + "\n"
        let r = try Open.run("push-seal", Self.batch + ["-"], in: dir, stdin: Data(input.utf8))
        #expect(r.status == 2, "one bad line: \(r.stderr)")
        let out = try Self.lines(r.stdout)
        #expect(out.map { $0["line"] as? Int } == [1, 2, 3, 4])
        #expect(((out[2]["error"] as? [String: Any])?["code"] as? String) == "invalidNotification")
        #expect(out[1]["deviceToken"] as? String == "0a0b0c")
        #expect((out[1]["headers"] as? [String: String])?["apns-collapse-id"] == "chat-9")

        // Line 1, decrypted: the flags' badge and sound; no sealed aps, so the clear thread stays,
        // no category, level active (F3).
        let d1 = try Self.openLine(out[0], [], in: dir).json
        #expect(d1["outcome"] as? String == "decrypted" && d1["title"] as? String == "Ana", "\(d1)")
        #expect(d1["badge"] as? Int == 7 && (d1["sound"] as? [String: Any])?["name"] as? String == "flag.caf")
        #expect(d1["threadIdentifier"] as? String == "flag-thread" && d1["categoryIdentifier"] as? String == "")
        #expect(d1["targetContentIdentifier"] as? String == "flag-target" && d1["filterCriteria"] is NSNull)

        // Line 2, decrypted: its own badge and clear fields; the sealed aps decides thread,
        // category, level and the critical sound.
        let d2 = try Self.openLine(out[1], [], in: dir).json
        #expect(d2["outcome"] as? String == "decrypted" && d2["body"] as? String == "Dinner?", "\(d2)")
        #expect(d2["badge"] as? Int == 0 && d2["relevanceScore"] as? Double == 0.75)
        #expect(d2["targetContentIdentifier"] as? String == "win-2" && d2["filterCriteria"] as? String == "work")
        #expect(d2["threadIdentifier"] as? String == "sealed-thread" && d2["categoryIdentifier"] as? String == "MSG")
        #expect(d2["interruptionLevel"] as? String == "time-sensitive")
        let sound = d2["sound"] as? [String: Any]
        #expect(sound?["name"] as? String == "alarm.caf" && sound?["critical"] as? Bool == true && sound?["volume"] as? Double == 0.4)

        // Line 2 as the fallback (expired): the line's clear alert and fields, as iOS shows them.
        let f2 = try Self.openLine(out[1], ["--now", Self.later], in: dir).json
        #expect(f2["outcome"] as? String == "original" && f2["reason"] as? String == "expired", "\(f2)")
        #expect(f2["title"] as? String == "Clear title" && f2["subtitle"] as? String == "Clear sub" && f2["body"] as? String == "Clear body")
        #expect(f2["threadIdentifier"] as? String == "clear-thread" && f2["categoryIdentifier"] as? String == "MSG")

        // Line 4 as the fallback: without --strings the keys, with them the localized text.
        let bare = try Self.openLine(out[3], ["--now", Self.later], in: dir).json
        #expect(bare["title"] as? String == "NEW_FROM" && bare["body"] as? String == "OPEN", "\(bare)")
        let lproj = dir.appendingPathComponent("strings/fr.lproj")
        try FileManager.default.createDirectory(at: lproj, withIntermediateDirectories: true)
        // UTF-16 with its byte order mark, as Xcode writes it.
        let text = "/* fr */\n\"NEW_FROM\" = \"Nouveau message de %@\";\n\"OPEN\" = \"Ouvrez l’app (%1$@ non lus)\";\n"
        try (Data([0xFF, 0xFE]) + (text.data(using: .utf16LittleEndian) ?? Data())).write(to: lproj.appendingPathComponent("Localizable.strings"))
        let fr = try Self.openLine(out[3], ["--now", Self.later, "--strings", "strings", "--locale", "fr-CA"], in: dir).json
        #expect(fr["title"] as? String == "Nouveau message de Ana" && fr["body"] as? String == "Ouvrez l’app (2 non lus)", "\(fr)")
        // A locale without a table, and no Base.lproj or top-level file: a clear error, 66.
        let none = try Self.openLine(out[3], ["--strings", "strings", "--locale", "de"], in: dir)
        #expect(none.status == 66 && none.stderr.contains("push-open: error: no Localizable.strings in strings for locale de"), "\(none.stderr)")
        // A broken file: 65, naming the file and line.
        try Data("\"NEW_FROM\" = \"x\"\n\"OPEN\" = \"y\";\n".utf8).write(to: lproj.appendingPathComponent("Localizable.strings"))
        let broken = try Self.openLine(out[3], ["--strings", "strings", "--locale", "fr"], in: dir)
        #expect(broken.status == 65 && broken.stderr.contains("fr.lproj/Localizable.strings: line 2: expected ; after the value"), "\(broken.stderr)")
    }

    @Test func theWrapperAndABatchErrorLineAreRefusedWithAHint() throws {
        let dir = try DeviceAcceptsCLITests.setUpWithServer()
        defer { try? FileManager.default.removeItem(at: dir) }
        let wrapped = try Open.run("push-seal", DeviceAcceptsCLITests.seal + ["--title", "T", "--body", "B", "--with-headers"], in: dir)
        try #require(wrapped.status == 0, "\(wrapped.stderr)")
        let r = try Open.run("push-open", Open.base + ["-"], in: dir, stdin: Data(wrapped.stdout.utf8))
        #expect(r.status == 65 && r.stderr.contains("push-open: error: the input is push-seal's {\"headers\", \"payload\"} wrapper"), "\(r.stderr)")
        #expect(r.stderr.contains("hint: pass its payload member: jq -c .payload FILE | push-open … -"))
        let line = try Open.run("push-seal", ["batch", "--app-id", "com.example.app", "--keychain", "srv", "-"], in: dir,
                                stdin: Data(#"{"recipient":"device","notification":{"title":"x"},"aps":{"badge":-1}}"#.utf8))
        let e = try Open.run("push-open", Open.base + ["-"], in: dir, stdin: Data(line.stdout.utf8))
        #expect(e.status == 65 && e.stderr.contains("batch error line"), "\(e.stderr)")
        // A whole batch output (several JSON lines): 65 with a hint to pass one line's payload; a truncated payload gets none.
        let two = try Open.run("push-seal", ["batch", "--app-id", "com.example.app", "--keychain", "srv", "-"], in: dir,
                               stdin: Data((#"{"recipient":"device","notification":{"title":"x"}}"# + "\n" + #"{"recipient":"device","notification":{"title":"y"}}"# + "\n").utf8))
        try #require(two.status == 0, "\(two.stderr)")
        let several = try Open.run("push-open", Open.base + ["-"], in: dir, stdin: Data(two.stdout.utf8))
        #expect(several.status == 65 && several.stdout.isEmpty)
        #expect(several.stderr.contains("\nhint: push-open opens one payload; the input holds 2 JSON lines"), "\(several.stderr)")
        let truncated = try Open.run("push-open", Open.base + ["-"], in: dir, stdin: Data(wrapped.stdout.utf8.prefix(40)))
        #expect(truncated.status == 65 && truncated.stderr.hasPrefix("push-open: error: the payload is not JSON: ") && !truncated.stderr.contains("hint:"))
    }
}
