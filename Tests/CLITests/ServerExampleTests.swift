import PushSealJSON
import Foundation
import Testing

/// Runs Examples/server end to end: the library example (`seal-server-example`) and the CLI
/// batch script (`batch.sh`), and opens every payload they print with `push-open` as the
/// Notification Service Extension of the recipient's device.
@Suite struct ServerExampleTests {
    static var example: String { KeysCLI.buildDirectory.appendingPathComponent("seal-server-example").path }
    static var pushOpen: String { KeysCLI.buildDirectory.appendingPathComponent("push-open").path }
    static var pushSeal: String { KeysCLI.buildDirectory.appendingPathComponent("push-seal").path }
    static var serverDir: URL { KeysCLI.repo.appendingPathComponent("Examples/server") }

    /// Provisions a device keychain for `recipient` from the server keychain (export | import as the app).
    static func provisionDevice(server: String, recipient: String, in dir: URL) throws -> String {
        let device = dir.appendingPathComponent("device-\(recipient)").path
        let record = try KeysCLI.keys(["export", "--keychain", server, "--app-id", KeysCLI.appID, "--recipient", recipient])
        #expect(record.status == 0, "export \(recipient): \(record.stderr)")
        let imp = try KeysCLI.keys(["import", "--keychain", device, "--entitlements", dir.appendingPathComponent("app.json").path, "-"],
                                   stdin: Array(record.stdout.utf8))
        #expect(imp.status == 0, "import \(recipient): \(imp.stderr)")
        return device
    }

    /// Opens `payload` with push-open as the extension; returns its JSON result.
    static func open(_ payload: [UInt8], device: String, in dir: URL) throws -> (status: Int32, result: [String: Any]) {
        let r = try KeysCLI.run(pushOpen, ["--keychain", device, "--app-id", KeysCLI.appID,
                                           "--entitlements", dir.appendingPathComponent("ext.json").path, "-"], stdin: payload)
        return (r.status, KeysCLI.json(r.stdout))
    }

    static func object(_ bytes: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
    }

    @Test func libraryExamplePrintsAnAPNsRequestWhosePayloadOpens() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let srv = dir.appendingPathComponent("server-kc").path
        let g = try KeysCLI.keys(["generate", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice"])
        #expect(g.status == 0, "\(g.stderr)")
        let keyID = g.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let before = Int64(Date().timeIntervalSince1970)
        let r = try KeysCLI.run(Self.example, ["--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice", "--device-token", "abc123"])
        let after = Int64(Date().timeIntervalSince1970)
        try #require(r.status == 0, "seal-server-example: \(r.stderr)")
        #expect(!r.stderr.contains("encrypted_data"))

        // Headers, a blank line, then the payload as the only last line.
        let parts = r.stdout.components(separatedBy: "\n\n")
        try #require(parts.count == 2, "expected headers, a blank line and the payload: \(r.stdout)")
        var headers: [String: String] = [:]
        for line in parts[0].split(separator: "\n") {
            guard let colon = line.dropFirst().firstIndex(of: ":") else { Issue.record("not a header line: \(line)"); continue }
            headers[String(line[..<colon])] = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        }
        let payloadText = parts[1].hasSuffix("\n") ? String(parts[1].dropLast()) : parts[1]
        let payload = Array(payloadText.utf8)
        #expect(!payloadText.contains("\n"))
        #expect(headers[":method"] == "POST")
        #expect(headers[":path"] == "/3/device/abc123")
        #expect(headers["apns-push-type"] == "alert")
        #expect(headers["apns-topic"] == KeysCLI.appID)
        #expect(headers["apns-priority"] == "10")
        #expect(headers["apns-collapse-id"] == "conversation-42")
        #expect(headers["content-length"] == String(payload.count))
        let expiration = Int64(headers["apns-expiration"] ?? "") ?? 0
        #expect(expiration >= before + 3600 && expiration <= after + 3600, "apns-expiration \(expiration)")

        // What APNs sees: the fallback alert, mutable-content 1, the pass-through aps fields, no text.
        #expect(payload.count <= 4096)
        let json = Self.object(payload)
        let aps = try #require(json["aps"] as? [String: Any])
        #expect((aps["alert"] as? [String: Any])?["title"] as? String == "New message")
        #expect(aps["mutable-content"] as? Int == 1)
        #expect(aps["sound"] as? String == "default" && aps["badge"] as? Int == 3)
        #expect(aps["thread-id"] as? String == "conversation-42" && aps["interruption-level"] as? String == "time-sensitive")
        #expect(json["key_id"] as? String == keyID)
        // No text outside the sealed box (the base64 itself may spell "Ana" by chance: leave it out).
        var clear = json
        clear["encrypted_data"] = nil
        let clearText = String(decoding: try JSONSerialization.data(withJSONObject: clear), as: UTF8.self)
        #expect(!clearText.contains("Ana") && !clearText.contains("Dinner"), "\(clearText)")

        // What the user sees: the device opens it with the key provisioned from the server.
        let device = try Self.provisionDevice(server: srv, recipient: "alice", in: dir)
        let opened = try Self.open(payload, device: device, in: dir)
        #expect(opened.status == 0, "\(opened.result)")
        #expect(opened.result["outcome"] as? String == "decrypted")
        #expect(opened.result["title"] as? String == "Ana")
        #expect(opened.result["subtitle"] as? String == "Dinner on Friday")
        #expect(opened.result["body"] as? String == "Table for four at 8 — shall I book it? 🍝")
        // The sealed data reaches the app under userInfo["pushseal"] (security review F3).
        let userInfo = (opened.result["userInfo"] as? [String: Any])?["pushseal"] as? [String: Any] ?? [:]
        #expect(userInfo["conversationID"] as? String == "conversation-42" && userInfo["messageID"] as? Int == 1234)

        // Every seal is counted against the key: the stored counter moved (a block is reserved).
        let list = try KeysCLI.keys(["list", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice", "--json"])
        #expect(list.status == 0 && list.stdout.contains("\"sealCount\"") && !list.stdout.contains("\"sealCount\":0"), "\(list.stdout)")
    }

    @Test func libraryExampleExitCodes() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let srv = dir.appendingPathComponent("server-kc").path
        let missing = try KeysCLI.run(Self.example, ["--keychain", srv])
        #expect(missing.status == 66 && missing.stderr.hasPrefix("seal-server-example: error: ") && missing.stderr.contains("hint: push-keys generate"))
        #expect(try KeysCLI.keys(["generate", "--keychain", srv, "--app-id", KeysCLI.appID, "--recipient", "alice"]).status == 0)
        let unknown = try KeysCLI.run(Self.example, ["--keychain", srv, "--recipient", "bob"])
        #expect(unknown.status == 67 && unknown.stdout.isEmpty, "\(unknown.stderr)")
        #expect(try KeysCLI.run(Self.example, []).status == 64)
        #expect(try KeysCLI.run(Self.example, ["--keychain", srv, "--bogus", "x"]).status == 64)
    }

    /// The input lines of notifications.jsonl: recipient and notification.
    static func inputLines() throws -> [(recipient: String, notification: [String: Any])] {
        let text = try String(contentsOf: serverDir.appendingPathComponent("notifications.jsonl"), encoding: .utf8)
        return text.split(separator: "\n").map { line in
            let o = object(Array(line.utf8))
            return (o["recipient"] as? String ?? "", o["notification"] as? [String: Any] ?? [:])
        }
    }

    /// The exact payload bytes of one batch output line `{"recipient":…,"payload":{…},"headers":{…}}`.
    static func payloadBytes(of line: Substring) -> [UInt8]? {
        guard let start = line.range(of: ",\"payload\":"), let end = line.range(of: ",\"headers\":", options: .backwards),
              start.upperBound < end.lowerBound else { return nil }
        return Array(line[start.upperBound..<end.lowerBound].utf8)
    }

    @Test func batchScriptSealsEveryLineAndEachPayloadOpens() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let srv = dir.appendingPathComponent("server-kc").path
        let env = ["PUSH_SEAL": Self.pushSeal, "PUSH_KEYS": KeysCLI.tool, "KEYCHAIN": srv]
        let r = try KeysCLI.run(Self.serverDir.appendingPathComponent("batch.sh").path, [], env: env)
        try #require(r.status == 0, "batch.sh: \(r.stderr)")
        let input = try Self.inputLines()
        #expect(input.count >= 3 && Set(input.map(\.recipient)).count >= 3)
        let output = r.stdout.split(separator: "\n")
        try #require(output.count == input.count, "one output line per input line: \(r.stdout)")

        var devices: [String: String] = [:]
        for (line, sent) in zip(output, input) {
            let o = Self.object(Array(line.utf8))
            #expect(o["recipient"] as? String == sent.recipient, "output in input order")
            #expect(o["error"] == nil, "\(line)")
            let headers = o["headers"] as? [String: Any] ?? [:]
            #expect(headers["apns-topic"] as? String == KeysCLI.appID && headers["apns-push-type"] as? String == "alert")
            #expect(headers["apns-expiration"] != nil, "every line expires (ttl or the script's --ttl 1d)")
            let payload = try #require(Self.payloadBytes(of: line), "\(line)")
            #expect(payload.count <= 4096)
            let aps = Self.object(payload)["aps"] as? [String: Any] ?? [:]
            #expect(aps["mutable-content"] as? Int == 1 && aps["sound"] as? String == "default")
            // The title is not in clear (the payload's members but encrypted_data, whose base64 may hold "Ana" by chance).
            if let title = sent.notification["title"] as? String {
                var clear = Self.object(payload)
                clear["encrypted_data"] = nil
                let clearText = String(decoding: try JSONSerialization.data(withJSONObject: clear), as: UTF8.self)
                #expect(!clearText.contains(title) && !clear.isEmpty, "\(clearText)")
            }

            let device: String
            if let d = devices[sent.recipient] {
                device = d
            } else {
                device = try Self.provisionDevice(server: srv, recipient: sent.recipient, in: dir)
                devices[sent.recipient] = device
            }
            let opened = try Self.open(payload, device: device, in: dir)
            #expect(opened.status == 0 && opened.result["outcome"] as? String == "decrypted", "\(sent.recipient): \(opened.result)")
            #expect(opened.result["title"] as? String == sent.notification["title"] as? String)
            #expect(opened.result["body"] as? String == sent.notification["body"] as? String)
        }

        // A payload opens only on its recipient's device: alice's first payload on bob's phone falls back.
        if let bobDevice = devices["bob"], let first = output.first, let payload = Self.payloadBytes(of: first), input.first?.recipient == "alice" {
            let wrong = try Self.open(payload, device: bobDevice, in: dir)
            #expect(wrong.status == 1 && wrong.result["outcome"] as? String == "original" && wrong.result["title"] as? String == "New message")
        }

        // Rerun with the same keychain: no new keys, same key ids.
        let again = try KeysCLI.run(Self.serverDir.appendingPathComponent("batch.sh").path, [], env: env)
        #expect(again.status == 0 && !again.stderr.contains("generated key"), "\(again.stderr)")
        let firstKeys = output.map { Self.object(Self.payloadBytes(of: $0) ?? [])["key_id"] as? String }
        let secondKeys = again.stdout.split(separator: "\n").map { Self.object(Self.payloadBytes(of: $0) ?? [])["key_id"] as? String }
        #expect(firstKeys == secondKeys)
    }

    @Test func batchScriptWithATemporaryKeychainCleansUpAndReportsBadLines() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tmp = dir.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let env = ["PUSH_SEAL": Self.pushSeal, "PUSH_KEYS": KeysCLI.tool, "TMPDIR": tmp.path]
        let lines = """
            {"recipient": "dora", "notification": {"title": "Hi", "body": "first"}}
            {"recipient": "dora", "notification": {"title": "", "body": ""}}
            {"recipient": "dora", "notification": {"title": "Hi", "body": "third"}}

            """
        let r = try KeysCLI.run(Self.serverDir.appendingPathComponent("batch.sh").path, ["-"], env: env, stdin: Array(lines.utf8))
        #expect(r.status == 2, "a bad line gives exit 2: \(r.stderr)")
        let out = r.stdout.split(separator: "\n").map { Self.object(Array($0.utf8)) }
        #expect(out.count == 3)
        #expect(out.count == 3 && out[0]["payload"] != nil && out[1]["error"] != nil && out[2]["payload"] != nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "the temporary keychain is removed")
        #expect(try KeysCLI.run(Self.serverDir.appendingPathComponent("batch.sh").path, [dir.appendingPathComponent("nope.jsonl").path], env: env).status == 66)
    }

    @Test func batchScriptIsStrictAndShellcheckClean() throws {
        let script = Self.serverDir.appendingPathComponent("batch.sh")
        let text = try String(contentsOf: script, encoding: .utf8)
        #expect(text.hasPrefix("#!/usr/bin/env bash") && text.contains("\nset -euo pipefail\n"))
        #expect(FileManager.default.isExecutableFile(atPath: script.path))
        guard let sc = ["/usr/bin/shellcheck", "/usr/local/bin/shellcheck", "/bin/shellcheck"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            print("server example: shellcheck is not installed: batch.sh not linted (apt-get install -y shellcheck)")
            return
        }
        let r = try KeysCLI.run(sc, [script.path])
        #expect(r.status == 0, "\(r.stdout)")
    }
}
