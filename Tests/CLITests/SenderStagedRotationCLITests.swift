import Foundation
import PushSealTestSupport
import Testing

/// Issue 24, staged sender key rotation through the tools on a server keychain: `sender add`
/// publishes a pending key that does not seal; a phone that pinned what `sender export --all`
/// published before the promote opens payloads sealed before and after it (zero fallbacks);
/// `sender promote` refuses without `--force` while the one registration has not reported the
/// next key pinned (a bare record); `sender retire
/// --revoke` lists the former key in `revocations export`, and a phone that applies it refuses
/// payloads of that key (`keyDisabled`).
@Suite(.serialized) struct SenderStagedRotationCLITests {
    typealias V2 = PushSealV2CLITests

    static func senderKeyID(_ payload: String) throws -> String? {
        let o = try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any]
        return o?["sender_key_id"] as? String
    }

    @Test func addRefreshPromoteRetireWithoutFallbacks() throws {
        let dir = try V2.setUp(sender: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let app = V2.app, kc = ["--keychain", "kc", "--app-id", app]
        let old = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("sender.json"))) as? [String: Any])
        let oldID = try #require(old["senderKeyId"] as? String)
        // add: published (pending), not sealing.
        let added = try V2.run("push-keys", ["sender", "add"] + kc + ["--json"], in: dir)
        #expect(added.status == 0, "\(added.stderr)")
        let next = try #require((try JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any])?["senderKey"] as? [String: Any])
        let nextID = try #require(next["keyId"] as? String)
        #expect(next["status"] as? String == "pending" && next["published"] as? Bool == true)
        #expect(try V2.run("push-keys", ["sender", "add"] + kc, in: dir).status == 65)  // one pending at a time
        let beforePromote = try V2.seal("alice", in: dir)
        #expect(try Self.senderKeyID(beforePromote.stdout) == oldID)
        // The phones refresh: they pin what is published now (both keys).
        let published = try V2.run("push-keys", ["sender", "export"] + kc + ["--all"], in: dir)
        #expect(published.stdout.split(separator: "\n").count == 2 && published.stdout.contains("\"status\":\"pending\""))
        try Data(published.stdout.utf8).write(to: dir.appendingPathComponent("published.json"))
        let status = try V2.run("push-keys", ["sender", "status"] + kc, in: dir)
        #expect(status.stdout.contains("\(oldID) primary") && status.stdout.contains("\(nextID) pending") && status.stdout.contains("active registrations 1"))
        // promote: refused without --force while alice (a bare record) has not reported the next key pinned; then switched.
        #expect(status.stdout.contains("next \(nextID) pinned by 0 of 1 (0 %); pins not reported by 1"), "\(status.stdout)")
        let refused = try V2.run("push-keys", ["sender", "promote"] + kc, in: dir)
        #expect(refused.status == 1 && refused.stderr.contains("pinned by 0 of 1"), "\(refused.stderr)")
        let promoted = try V2.run("push-keys", ["sender", "promote"] + kc + ["--force", "--grace", "7d"], in: dir)
        #expect(promoted.status == 0, "\(promoted.stderr)")
        #expect(promoted.stdout.contains("\(nextID) primary") && promoted.stdout.contains("\(oldID) decryptOnly"))
        let afterPromote = try V2.seal("alice", in: dir)
        #expect(try Self.senderKeyID(afterPromote.stdout) == nextID)
        // Zero fallbacks on the refreshed phone, before and after the switch.
        for payload in [beforePromote.stdout, afterPromote.stdout] {
            let opened = try V2.pushOpen(payload, in: dir, pinned: ["published.json"])
            #expect(opened.stdout.contains("decrypted"), "\(opened.stdout) \(opened.stderr)")
        }
        // A phone that pinned only the old key (did not refresh) shows the predicted fallback after the switch.
        #expect(try V2.pushOpen(afterPromote.stdout, in: dir, pinned: ["sender.json"]).stdout.contains("unknownSenderKey"))
        // retire --revoke: the former key is revoked and listed for phones.
        let retired = try V2.run("push-keys", ["sender", "retire"] + kc + ["--revoke"], in: dir)
        #expect(retired.status == 0 && retired.stdout == "\(app) \(oldID) revoked\n", "\(retired.stdout) \(retired.stderr)")
        let export = try V2.run("push-keys", ["revocations", "export"] + kc, in: dir)
        #expect(export.stdout.contains("\"keyIds\":[\"\(oldID)\"]"), "\(export.stdout)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(export.stdout.utf8)) as? [[String: Any]])
        try JSONSerialization.data(withJSONObject: try #require(list.first)).write(to: dir.appendingPathComponent("revocation.json"))
        let phone = "phone-leak"
        let identity = ["--keychain", phone, "--access-group", "T.shared", "--app-id", app]
        #expect(try V2.run("push-keys", ["keychain", "init", "--keychain", phone], in: dir).status == 0)
        #expect(try V2.run("push-keys", ["device", "import"] + identity + ["--key-file", "device.key", "--now", "1796000000"], in: dir).status == 0)
        #expect(try V2.run("push-keys", ["device", "pin-sender"] + identity + ["published.json"], in: dir).status == 0)
        #expect(try V2.run("push-keys", ["import"] + identity + ["revocation.json"], in: dir).status == 0)
        let refusedOld = try V2.run("push-open", identity + ["--no-replay-guard", "-"], in: dir, stdin: beforePromote.stdout)
        #expect(refusedOld.stdout.contains("keyDisabled"), "\(refusedOld.stdout)")
        let stillNew = try V2.run("push-open", identity + ["--no-replay-guard", "-"], in: dir, stdin: afterPromote.stdout)
        #expect(stillNew.stdout.contains("decrypted"), "\(stillNew.stdout)")
    }
}

/// Issue 24: a running `push-seal batch` follows a sender key promotion by another process
/// without a restart. Driven by the outputs: line by line, one answer read per line written;
/// the promotion happens between two lines; the test stops at the first payload with the new
/// key (a 20 s deadline only bounds a failing run). Every payload before the switch carries the
/// former key id, every one after it the new one, and each opens on a phone that refreshed.
@Suite(.serialized) struct RunningBatchFollowsPromotionCLITests {
    typealias V2 = PushSealV2CLITests

    /// Reads one line from `handle` (blocking).
    static func readLine(_ child: TestChild, buffer: inout Data) -> String? {
        while true {
            if let i = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<i], as: UTF8.self)
                buffer = Data(buffer[(i + 1)...])
                return line
            }
            let more = child.readOutput()
            if more.isEmpty { return nil }
            buffer.append(more)
        }
    }

    @Test func aRunningBatchSealsWithThePromotedKeyWithoutARestart() throws {
        let dir = try V2.setUp(sender: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let app = V2.app, kc = ["--keychain", "kc", "--app-id", app]
        #expect(try V2.run("push-keys", ["sender", "add"] + kc, in: dir).status == 0)
        let published = try V2.run("push-keys", ["sender", "export"] + kc + ["--all"], in: dir)
        try Data(published.stdout.utf8).write(to: dir.appendingPathComponent("published.json"))

        let errors = dir.appendingPathComponent("batch.stderr")
        let process = try TestChild([PushOpenCLITests.binary("push-seal").path, "batch", "--keychain", "kc", "--app-id", app, "-"],
                                    cwd: dir.path, stdinPipe: true, stderr: .file(errors.path))
        func stderrText() -> String { (try? String(contentsOf: errors, encoding: .utf8)) ?? "" }
        defer {
            process.closeInput()
            process.signal(SIGTERM)
            process.wait()
        }
        var buffer = Data()
        func sealOne(_ n: Int) throws -> (keyID: String?, payload: String) {
            // The throwing write: a batch that died is a recorded failure with its stderr, not a crash.
            try process.write(Array(#"{"recipient":"alice","notification":{"title":"n\#(n)","body":"b"}}"#.utf8) + [10])
            let line = try #require(Self.readLine(process, buffer: &buffer), "push-seal batch ended: \(stderrText())")
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            let payload = try #require(o["payload"] as? [String: Any], "\(line)")
            return (payload["sender_key_id"] as? String, String(decoding: try JSONSerialization.data(withJSONObject: payload), as: UTF8.self))
        }
        let first = try sealOne(0)
        let oldID = try #require(first.keyID)
        let promoted = try V2.run("push-keys", ["sender", "promote"] + kc + ["--force"], in: dir)
        #expect(promoted.status == 0, "\(promoted.stderr)")
        var ids: [String] = [oldID], payloads = [first.payload]
        let deadline = Date().addingTimeInterval(20)
        var n = 1
        while ids.last == oldID && Date() < deadline {
            let next = try sealOne(n)
            ids.append(next.keyID ?? "none")
            payloads.append(next.payload)
            n += 1
        }
        let newID = try #require(ids.last)
        #expect(newID != oldID, "the batch never switched to the promoted key")
        // Two more after the switch: still the new key.
        for k in 0..<2 { ids.append(try sealOne(n + k).keyID ?? "none") }
        let switchAt = try #require(ids.firstIndex(of: newID))
        #expect(ids[..<switchAt].allSatisfy { $0 == oldID } && ids[switchAt...].allSatisfy { $0 == newID }, "\(Set(ids))")
        // The refreshed phone opens the last payload before the switch and the first after it.
        for payload in [payloads[switchAt - 1], payloads[switchAt]] {
            #expect(try V2.pushOpen(payload, in: dir, pinned: ["published.json"]).stdout.contains("decrypted"))
        }
    }
}
