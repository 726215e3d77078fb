import Foundation
import PushSealJSON
import PushSealServerKeys
import Testing

/// Issue 24, "the upload reports which sender key ids the device has pinned": `push-keys
/// register` takes the app's upload body and stores its `pinnedSenderKeyIds` with the
/// registration, on a server keychain and on the registry alike; `sender status` counts the active
/// registrations that pinned the next key, and `sender promote --min-pinned` goes ahead only at or
/// above the threshold, without `--force`. On the registry the pins are inside the row MAC: a pin
/// list changed (or cleared) by SQL without the KEK is refused as corrupt.
@Suite struct SenderPinsCLITests {
    static let app = TokenCLITests.app
    typealias Run = (status: Int32, stdout: String, stderr: String)

    /// The upload body of a fresh device key (a new key pair), with `pins` when not `nil`.
    static func upload(createdAt: Int64, token: String, pins: [String]?, in dir: URL, name: String) throws -> String {
        let registration = try RegistrationStoreContract.registration(createdAt, appID: app)
        var members: [(String, JSONValue)] = [("registration", .object(registration.record)), ("apnsDeviceToken", .string(token)),
                                              ("apnsEnvironment", .string("production"))]
        if let pins { members.append(("pinnedSenderKeyIds", .array(pins.map { .string($0) }))) }
        let path = dir.appendingPathComponent(name).path
        try Data(try JSONWriter.serialize(.object(JSONObject(members)))).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func json(_ s: String) -> [String: Any] { TokenCLITests.json(s) }

    @Test(arguments: ["keychain", "registry"])
    func uploadsReportPinsAndPromoteFollowsThem(_ store: String) throws {
        let dir = try TokenCLITests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = RegistryCLITests.tool("push-keys")
        let s = try TokenCLITests.storeArguments(store, in: dir)
        let app = ["--app-id", Self.app]
        func run(_ args: [String]) throws -> Run { try RegistryCLITests.run([keys] + args) }
        let now = Int64(Date().timeIntervalSince1970)
        #expect(try run(["sender", "generate"] + s + app).status == 0)
        let oldID = try #require((Self.json(try run(["sender", "status"] + s + app + ["--json"]).stdout)["senderKeys"] as? [[String: Any]])?.first?["keyId"] as? String)
        let added = try run(["sender", "add"] + s + app + ["--json"])
        let nextID = try #require((Self.json(added.stdout)["senderKey"] as? [String: Any])?["keyId"] as? String, "\(added.stderr)")

        // Four phones: one pinned both keys, one only the old key, one never said (an older app),
        // one that pinned both but registered 40 days ago (not active: left out of the counts).
        let both = try Self.upload(createdAt: now - 60, token: "a1a1", pins: [oldID, nextID], in: dir, name: "both.json")
        let oldOnly = try Self.upload(createdAt: now - 60, token: "b2b2", pins: [oldID], in: dir, name: "old.json")
        let silent = try Self.upload(createdAt: now - 60, token: "c3c3", pins: nil, in: dir, name: "silent.json")
        let stale = try Self.upload(createdAt: now - 41 * 86_400, token: "d4d4", pins: [oldID, nextID], in: dir, name: "stale.json")
        let first = try run(["register"] + s + app + ["--recipient", "alice", both])
        #expect(first.status == 0 && first.stdout.contains("alice: registered") && first.stdout.contains("token production stored")
                && first.stdout.contains("pinned sender keys: \([oldID, nextID].sorted().joined(separator: " "))"), "\(first.stdout) \(first.stderr)")
        #expect(try run(["register"] + s + app + ["--recipient", "bob", oldOnly]).status == 0)
        #expect(try run(["register"] + s + app + ["--recipient", "carol", silent]).status == 0)
        #expect(try run(["register"] + s + app + ["--recipient", "dave", "--now", String(now - 40 * 86_400), stale]).status == 0)
        // The token went in with the registration (one step).
        #expect(try run(["token", "list"] + s + app + ["--recipient", "alice"]).stdout.contains(" production a1a1 "))
        let listed = Self.json(try run(["registrations"] + s + app + ["--recipient", "alice", "--json"]).stdout)
        let aliceCurrent = ((listed["registrations"] as? [[String: Any]])?.first?["registrations"] as? [[String: Any]])?.last
        #expect(aliceCurrent?["pinnedSenderKeyIds"] as? [String] == [oldID, nextID].sorted(), "\(listed)")

        // status: 1 of the 3 active registrations pinned the next key; carol never reported.
        let status = try run(["sender", "status"] + s + app)
        #expect(status.stdout.contains("active registrations 3 ") && status.stdout.contains("next \(nextID) pinned by 1 of 3 (33 %); pins not reported by 1"),
                "\(status.stdout) \(status.stderr)")
        let statusJSON = Self.json(try run(["sender", "status"] + s + app + ["--json"]).stdout)
        #expect(statusJSON["activeRegistrations"] as? Int == 3 && statusJSON["pinnedNext"] as? Int == 1 && statusJSON["pinsOutstanding"] as? Int == 2
                && statusJSON["pinsNotReported"] as? Int == 1 && statusJSON["nextKeyId"] as? String == nextID, "\(statusJSON)")

        // promote: refused below the threshold (33 % < 50 %, and the default 100 %), nothing changed.
        for minimum in [["--min-pinned", "50"], []] {
            let refused = try run(["sender", "promote"] + s + app + minimum)
            #expect(refused.status == 1 && refused.stderr.contains("below --min-pinned") && refused.stderr.contains("pinned by 1 of 3"), "\(refused.stderr)")
        }
        #expect(try run(["sender", "status"] + s + app).stdout.contains("\(nextID) pending"))

        // bob's app refreshes and uploads the same registration with the new pins: 2 of 3.
        let refreshed = dir.appendingPathComponent("refreshed.json").path
        let bobRecord = try String(contentsOfFile: oldOnly, encoding: .utf8).replacingOccurrences(of: "\"pinnedSenderKeyIds\":[\"\(oldID)\"]",
                                                                                                 with: "\"pinnedSenderKeyIds\":[\"\(nextID)\",\"\(oldID)\"]")
        try Data(bobRecord.utf8).write(to: URL(fileURLWithPath: refreshed))
        let again = try run(["register"] + s + app + ["--recipient", "bob", refreshed])
        #expect(again.status == 0 && again.stdout.contains("bob: already registered"), "\(again.stdout) \(again.stderr)")
        #expect(try run(["sender", "status"] + s + app).stdout.contains("pinned by 2 of 3 (66 %)"))
        #expect(try run(["audit"] + s + ["--recipient", "bob", "--app-id", Self.app]).stdout.contains("\"event\":\"reportPins\""))
        // At the threshold exactly (2 of 3 is 66.7 % >= 66 %): allowed without --force.
        let refusedAt67 = try run(["sender", "promote"] + s + app + ["--min-pinned", "67"])
        #expect(refusedAt67.status == 1, "\(refusedAt67.stdout)")
        let promoted = try run(["sender", "promote"] + s + app + ["--min-pinned", "66"])
        #expect(promoted.status == 0 && promoted.stdout.contains("\(nextID) primary") && promoted.stdout.contains("\(oldID) decryptOnly"),
                "\(promoted.stdout) \(promoted.stderr)")

        // Bad pins are bad input (65): not key ids.
        let badPins = try String(contentsOfFile: both, encoding: .utf8).replacingOccurrences(of: "\"pinnedSenderKeyIds\":[", with: "\"pinnedSenderKeyIds\":[\"not a key id\",")
        try Data(badPins.utf8).write(to: dir.appendingPathComponent("bad.json"))
        let bad = try run(["register"] + s + app + ["--recipient", "erin", dir.appendingPathComponent("bad.json").path])
        #expect(bad.status == 65 && bad.stderr.contains("the upload's pinnedSenderKeyIds"), "\(bad.stderr)")
        #expect(try run(["registrations"] + s + app + ["--recipient", "erin"]).status == 66)
    }

    /// The pins decide a promotion, so they are inside the registration row's MAC: rewriting them
    /// (another list) or clearing them (NULL: "not reported") by SQL without the KEK is refused as
    /// corrupt, by sender status and by the lookups sealing uses.
    @Test func pinsChangedWithoutTheKEKAreRefused() throws {
        let dir = try TokenCLITests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = RegistryCLITests.tool("push-keys")
        let s = try TokenCLITests.storeArguments("registry", in: dir)
        let cs = s[1]
        let app = ["--app-id", Self.app]
        func run(_ args: [String]) throws -> Run { try RegistryCLITests.run([keys] + args) }
        let now = Int64(Date().timeIntervalSince1970)
        #expect(try run(["sender", "generate"] + s + app).status == 0)
        let added = try run(["sender", "add"] + s + app + ["--json"])
        let nextID = try #require((Self.json(added.stdout)["senderKey"] as? [String: Any])?["keyId"] as? String, "\(added.stderr)")
        let pinnedNothing = try Self.upload(createdAt: now - 60, token: "a1a1", pins: [], in: dir, name: "a.json")
        let pinnedNext = try Self.upload(createdAt: now - 60, token: "b2b2", pins: [nextID], in: dir, name: "b.json")
        #expect(try run(["register"] + s + app + ["--recipient", "alice", pinnedNothing]).status == 0)
        #expect(try run(["register"] + s + app + ["--recipient", "bob", pinnedNext]).status == 0)
        #expect(try run(["sender", "status"] + s + app).stdout.contains("pinned by 1 of 2"))
        let server = try PostgresServer.sharedServer()

        // alice's empty list rewritten to the next key (a database role inflating the count).
        _ = try server.psql(cs, "UPDATE pushseal_registrations SET pinned_sender_key_ids = '\(nextID)' WHERE recipient = 'alice'")
        for args in [["sender", "status"] + s + app, ["sender", "promote"] + s + app + ["--min-pinned", "100"],
                     ["registrations"] + s + app + ["--recipient", "alice"]] {
            let r = try run(args)
            #expect(r.status == 65 && r.stderr.contains("pushseal_registrations") && r.stderr.contains("alice"), "\(args): \(r.stdout) \(r.stderr)")
        }
        _ = try server.psql(cs, "UPDATE pushseal_registrations SET pinned_sender_key_ids = '' WHERE recipient = 'alice'")
        #expect(try run(["sender", "status"] + s + app).stdout.contains("pinned by 1 of 2"))  // put back: it verifies again

        // bob's pins cleared (NULL reads as "never reported"): refused too, not silently uncounted.
        _ = try server.psql(cs, "UPDATE pushseal_registrations SET pinned_sender_key_ids = NULL, pins_reported_at = NULL WHERE recipient = 'bob'")
        let cleared = try run(["sender", "status"] + s + app)
        #expect(cleared.status == 65 && cleared.stderr.contains("pushseal_registrations") && cleared.stderr.contains("bob"), "\(cleared.stderr)")
        // The next key still not promoted: the refusal changed nothing.
        #expect(try server.psql(cs, "SELECT status FROM pushseal_sender_keys WHERE key_id = '\(nextID)'").contains("pending"))
    }
}
