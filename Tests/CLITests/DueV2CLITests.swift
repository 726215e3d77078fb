import Foundation
import PushSealCrypto
import PushSealDeviceKeys
import PushSealJSON
import PushSealServerKeys
import Testing

/// Issue 24, "Operators": `push-keys due` covers version 2 on a server keychain — the primary
/// sender key older than the rotation period (senderKeyAge), a next sender key not promoted with
/// the active registrations that have not pinned it (nextKeyNotPromoted, pinsOutstanding=N), and
/// registrations not rotated within 45 days (registrationNotRotated: the app's background task
/// never runs) — in text and `--json`, beside the v1 keysets, at a `--now` the test chooses.
@Suite struct DueV2CLITests {
    typealias V2 = PushSealV2CLITests
    static let t0: Int64 = 1_790_000_000
    static let day: Int64 = 86_400

    /// An upload body of a fresh device key created at `createdAt`, with `pins` when not `nil`.
    static func upload(_ name: String, createdAt: Int64, token: String, pins: [String]?, in dir: URL) throws -> String {
        let key = try X25519.PrivateKey()
        let registration = try DeviceRegistration(appID: V2.app, keyID: try DeviceKeyItem.keyID(for: key.publicKey), publicKey: key.publicKey, createdAt: createdAt)
        var members: [(String, JSONValue)] = [("registration", .object(registration.record)), ("apnsDeviceToken", .string(token)),
                                              ("apnsEnvironment", .string("production"))]
        if let pins { members.append(("pinnedSenderKeyIds", .array(pins.map { .string($0) }))) }
        try Data(try JSONWriter.serialize(.object(JSONObject(members)))).write(to: dir.appendingPathComponent(name))
        return name
    }

    @Test func dueListsSenderKeysNextKeysPinsAndStaleRegistrations() throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-due-v2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let kc = ["--keychain", "kc", "--app-id", V2.app]
        let (t0, day) = (Self.t0, Self.day)
        #expect(try V2.run("push-keys", ["keychain", "init", "--keychain", "kc"], in: dir).status == 0)
        let generated = try V2.run("push-keys", ["sender", "generate"] + kc + ["--now", String(t0), "--json"], in: dir)
        let oldID = try #require((try JSONSerialization.jsonObject(with: Data(generated.stdout.utf8)) as? [String: Any])?["senderKeyId"] as? String
                                 ?? ((try JSONSerialization.jsonObject(with: Data(generated.stdout.utf8)) as? [String: Any])?["senderKey"] as? [String: Any])?["keyId"] as? String,
                                 "\(generated.stdout) \(generated.stderr)")
        // Nothing due yet at t0 + 1 day (an empty list, exit 0).
        let early = try V2.run("push-keys", ["due", "--keychain", "kc", "--now", String(t0 + day)], in: dir)
        #expect(early.status == 0 && early.stdout.isEmpty, "\(early.stdout) \(early.stderr)")

        let added = try V2.run("push-keys", ["sender", "add"] + kc + ["--now", String(t0 + 10 * day), "--json"], in: dir)
        let nextID = try #require(((try JSONSerialization.jsonObject(with: Data(added.stdout.utf8)) as? [String: Any])?["senderKey"] as? [String: Any])?["keyId"] as? String)
        // bob registered at t0 - 10 days and never again (50 days at the check: not rotated, and
        // not active); carol and dave at t0 + 35 days, carol without the next key, dave with it.
        let uploads: [(String, Int64, [String]?)] = [("bob", t0 - 10 * day, [oldID]), ("carol", t0 + 35 * day, [oldID]), ("dave", t0 + 36 * day, [oldID, nextID])]
        for (i, (recipient, at, pins)) in uploads.enumerated() {
            let body = try Self.upload("\(recipient).json", createdAt: at - 60, token: "a\(i)a\(i)", pins: pins, in: dir)
            let r = try V2.run("push-keys", ["register"] + kc + ["--recipient", recipient, "--now", String(at), body], in: dir)
            #expect(r.status == 0, "\(r.stderr)")
        }
        let now = t0 + 40 * day
        let due = try V2.run("push-keys", ["due", "--keychain", "kc", "--now", String(now)], in: dir)
        #expect(due.status == 0, "\(due.stderr)")
        #expect(due.stdout == """
            \(V2.app)\t-\t\(oldID)\t\(40 * day)\t-\tsenderKeyAge
            \(V2.app)\t-\t\(nextID)\t\(30 * day)\t-\tnextKeyNotPromoted,pinsOutstanding=1
            \(V2.app)\tbob\t\(try Self.keyID(dir, "bob"))\t\(50 * day)\t-\tregistrationNotRotated

            """, "\(due.stdout)")
        // A longer sender period and registration period: only the next key is left.
        let relaxed = try V2.run("push-keys", ["due", "--keychain", "kc", "--now", String(now), "--period", "60d", "--registration-period", "60d"], in: dir)
        #expect(relaxed.stdout == "\(V2.app)\t-\t\(nextID)\t\(30 * day)\t-\tnextKeyNotPromoted,pinsOutstanding=1\n", "\(relaxed.stdout)")

        let json = try V2.run("push-keys", ["due", "--keychain", "kc", "--now", String(now), "--json"], in: dir)
        let entries = try #require((try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["due"] as? [[String: Any]])
        #expect(entries.map { "\($0["recipient"] as? String ?? "null") \(($0["reasons"] as? [String])?.joined(separator: ",") ?? "")" }
                == ["null senderKeyAge", "null nextKeyNotPromoted", "bob registrationNotRotated"])
        let next = try #require(entries.first { $0["keyId"] as? String == nextID })
        #expect(next["activeRegistrations"] as? Int == 2 && next["pinnedNext"] as? Int == 1 && next["pinsOutstanding"] as? Int == 1
                && next["pinsNotReported"] as? Int == 0 && next["ageSeconds"] as? Int == Int(30 * day), "\(next)")

        // After the promote (and every phone's pins): no next key line; the promoted key is young.
        #expect(try V2.run("push-keys", ["sender", "promote"] + kc + ["--force", "--now", String(now)], in: dir).status == 0)
        let after = try V2.run("push-keys", ["due", "--keychain", "kc", "--now", String(now)], in: dir)
        #expect(after.stdout == "\(V2.app)\tbob\t\(try Self.keyID(dir, "bob"))\t\(50 * day)\t-\tregistrationNotRotated\n", "\(after.stdout)")
    }

    static func keyID(_ dir: URL, _ recipient: String) throws -> String {
        let o = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("\(recipient).json"))) as? [String: Any]
        return try #require((o?["registration"] as? [String: Any])?["keyId"] as? String)
    }
}
