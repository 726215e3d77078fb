import PushSealTestSupport
import Foundation
import Testing

/// Issue 12, "What the device accepts" (F2, F3, F4, F15, `ttl 0`, reserved names), end to end
/// through the built `push-seal`, `push-keys` and `push-open`, as the review's commands ran them.
/// Every test here drives only the tools, so it runs unchanged against older builds (where each
/// one fails: that is the issue's "a test that failed before the fix").
@Suite(.serialized)
struct DeviceAcceptsCLITests {
    typealias Open = PushOpenCLITests

    /// The key record of ``PushOpenCLITests/setUp(accessibility:)`` (key bytes 0…31 under `k1`).
    static let record = #"{"format":"pushseal-key-record","version":1,"appId":"com.example.app","recipient":"device","keys":[{"keyId":"k1","status":"primary","createdAt":1700000000,"promotedAt":1700000000,"sealCount":0,"key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}]}"#

    /// A scratch directory as ``PushOpenCLITests/setUp(accessibility:)`` makes it, plus a
    /// server keychain `srv` holding the same key, so `push-seal` seals what `push-open` opens.
    static func setUpWithServer() throws -> URL {
        let dir = try Open.setUp()
        let imported = try Open.run("push-keys", ["import", "--keychain", "srv", "-"], in: dir, stdin: Data(record.utf8))
        #expect(imported.status == 0, "\(imported.stderr)")
        return dir
    }

    static let seal = ["--app-id", "com.example.app", "--recipient", "device", "--keychain", "srv"]

    /// Seals `plaintext` (raw bytes, sealed as they are) under key bytes 0…31 as `keyID` with
    /// the Python reference's `seal_bytes` (Python `cryptography`), and writes the APNs payload
    /// to `name` in `dir`.
    static func pythonSealed(_ plaintext: String, keyID: String = "k1", name: String, in dir: URL) throws -> String {
        let script = """
        import base64, json, sys
        sys.path.insert(0, sys.argv[1])
        import pushseal_ref
        box = pushseal_ref.seal_bytes(sys.stdin.buffer.read(), bytes(range(32)), sys.argv[2], "com.example.app")
        print(json.dumps({"aps": {"alert": {"title": "New message", "body": "Open the app"}, "mutable-content": 1},
                          "encrypted_data": base64.b64encode(box).decode(), "key_id": sys.argv[2], "enc_alg": "A256GCM"}))
        """
        let interop = repositoryRoot.appendingPathComponent("Tests/Interop").path
        let r = try #require(runPython(script, [interop, keyID], input: Data(plaintext.utf8)), "python3 did not run")
        try #require(r.status == 0, "the Python reference did not seal: \(r.output)")
        let path = dir.appendingPathComponent(name)
        try Data(r.output.utf8).write(to: path)
        return path.path
    }

    static func write(_ json: [String: Any], _ name: String, in dir: URL) throws -> String {
        let path = dir.appendingPathComponent(name)
        try JSONSerialization.data(withJSONObject: json).write(to: path)
        return path.path
    }

    @Test("F2: a default push-seal payload carries an id and an exp: the second open is replayed, an open 31 days later expired")
    func defaultPayloadIsReplayedAndExpires() throws {
        let dir = try Self.setUpWithServer()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sealed = try Open.run("push-seal", Self.seal + ["--title", "Transfer", "--body", "approved"], in: dir)
        try #require(sealed.status == 0, "\(sealed.stderr)")
        let payload = try Self.write(try #require(sealed.json as [String: Any]?), "p.json", in: dir)
        let first = try Open.run("push-open", Open.base + [payload], in: dir)
        #expect(first.json["outcome"] as? String == "decrypted", "\(first.stdout)\(first.stderr)")
        let again = try Open.run("push-open", Open.base + [payload], in: dir)
        #expect(again.status == 1 && again.json["outcome"] as? String == "original" && again.json["reason"] as? String == "replayed",
                "\(again.stdout)")
        // A fresh seal, opened a month later (the review's "open one year later -> decrypted").
        let later = try Open.run("push-seal", Self.seal + ["--title", "Transfer", "--body", "approved"], in: dir)
        let payload2 = try Self.write(try #require(later.json as [String: Any]?), "p2.json", in: dir)
        let monthLater = Int64(Date().timeIntervalSince1970) + 31 * 86_400
        let late = try Open.run("push-open", Open.base + ["--no-replay-guard", "--now", String(monthLater), payload2], in: dir)
        #expect(late.status == 1 && late.json["reason"] as? String == "expired", "\(late.stdout)")
    }

    @Test("ttl 0: apns-expiration 0 and a payload that opens at once (never born expired)")
    func ttlZeroIsNowOrNever() throws {
        let dir = try Self.setUpWithServer()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sealed = try Open.run("push-seal", Self.seal + ["--title", "Code", "--body", "1234", "--ttl", "0", "--with-headers"], in: dir)
        try #require(sealed.status == 0, "\(sealed.stderr)")
        let headers = sealed.json["headers"] as? [String: Any]
        #expect("\(headers?["apns-expiration"] ?? "absent")" == "0", "\(sealed.stdout)")
        let payload = try Self.write(try #require(sealed.json["payload"] as? [String: Any]), "p.json", in: dir)
        let opened = try Open.run("push-open", Open.base + [payload], in: dir)
        #expect(opened.status == 0 && opened.json["outcome"] as? String == "decrypted", "\(opened.stdout)")
    }

    @Test("F2: the replay guard is bounded by time (an id past iat + 30 days is replayTooOld) and fails closed")
    func replayGuardIsTimeBoundedAndFailsClosed() throws {
        let dir = try Open.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let iat: Int64 = 1_796_000_000
        let old = try Self.pythonSealed(#"{"title":"Transfer","body":"approved","iat":\#(iat),"id":"old-1"}"#, name: "old.json", in: dir)
        let tooLate = try Open.run("push-open", Open.base + ["--now", String(iat + 31 * 86_400), old], in: dir)
        #expect(tooLate.status == 1 && tooLate.json["reason"] as? String == "replayTooOld", "\(tooLate.stdout)")
        // A store that cannot be read (a directory where the file goes, under both the old and
        // the new file name) shows the original content, never the message as authentic.
        let group = dir.appendingPathComponent("dev/app-groups/group.x")
        for name in ["pushseal-replay-guard.json", "pushseal-replay-cache.txt"] {
            try FileManager.default.createDirectory(at: group.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        let fresh = try Self.pythonSealed(#"{"title":"Transfer","body":"approved","iat":\#(iat),"id":"new-1"}"#, name: "new.json", in: dir)
        let broken = try Open.run("push-open", Open.base + ["--now", String(iat + 60), fresh], in: dir)
        #expect(broken.status == 1 && broken.json["reason"] as? String == "replayGuardUnavailable", "\(broken.stdout)")
    }

    @Test("F3: a member added to the payload in transit never reaches userInfo; the sealed data is under pushseal")
    func unsealedMembersAreDropped() throws {
        let dir = try Self.setUpWithServer()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.write(["title": "Hi", "body": "there", "data": ["deeplink": "app://orders/7"]], "n.json", in: dir)
        let sealed = try Open.run("push-seal", Self.seal + [file], in: dir)
        try #require(sealed.status == 0, "\(sealed.stderr)")
        var payload = sealed.json
        payload["deeplink"] = "https://evil.example/login"  // the review's poc02
        let path = try Self.write(payload, "p.json", in: dir)
        let r = try Open.run("push-open", Open.base + [path], in: dir)
        #expect(r.status == 0 && r.json["outcome"] as? String == "decrypted", "\(r.stdout)")
        let userInfo = r.json["userInfo"] as? [String: Any] ?? [:]
        #expect(userInfo["deeplink"] == nil && userInfo["encrypted_data"] == nil, "\(userInfo)")
        #expect((userInfo["pushseal"] as? [String: Any])?["deeplink"] as? String == "app://orders/7", "\(userInfo)")
    }

    @Test("reserved names at the top of data (aps, key_id, …) are refused at seal time")
    func reservedDataNamesAreRefused() throws {
        let dir = try Self.setUpWithServer()
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["aps", "encrypted_data", "key_id", "enc_alg"] {
            let file = try Self.write(["title": "Hi", "data": [name: "x"]], "n.json", in: dir)
            let r = try Open.run("push-seal", Self.seal + [file], in: dir)
            #expect(r.status == 65 && r.stdout.isEmpty && r.stderr.contains("data.\(name) is a reserved name"), "\(name): \(r.status) \(r.stderr)")
        }
    }

    @Test("F15: a decrypted plaintext's duplicate member name or bad locale tag never reaches push-open's detail")
    func errorTextNeverQuotesPlaintext() throws {
        let dir = try Open.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        let cases = [#"{"title":"T","data":{"patient-4711-diagnosis":1,"patient-4711-diagnosis":2}}"#,
                     #"{"title":"T","localizations":{"patient 4711 diagnosis":{"title":"x"}}}"#]
        for (i, plaintext) in cases.enumerated() {
            let path = try Self.pythonSealed(plaintext, name: "p\(i).json", in: dir)
            let r = try Open.run("push-open", Open.base + ["--no-replay-guard", path], in: dir)
            #expect(r.status == 1 && r.json["outcome"] as? String == "original", "\(r.stdout)")
            #expect(!r.stdout.contains("patient") && !r.stderr.contains("patient"), "\(r.stdout)")
        }
    }

    @Test("F4: a decryptOnly key refuses a message sealed after its retirement (keys:keyRetired); a revocation record disables a key on the device")
    func retiredAndRevokedKeysOnTheDevice() throws {
        let dir = try Open.setUp()
        defer { try? FileManager.default.removeItem(at: dir) }
        // The device learns of a rotation: k1 retired at 1796000000 (grace to 1798592000), k2 primary.
        let retiredAt: Int64 = 1_796_000_000
        let rotated = #"{"format":"pushseal-key-record","version":1,"appId":"com.example.app","recipient":"device","keys":[{"keyId":"k1","status":"decryptOnly","createdAt":1700000000,"promotedAt":1700000000,"retiredAt":\#(retiredAt),"notAfter":1798592000,"sealCount":0,"key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="},{"keyId":"k2","status":"primary","createdAt":1796000000,"promotedAt":1796000000,"sealCount":0,"key":"ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="}]}"#
        let imported = try Open.run("push-keys", ["import", "--keychain", "dev", "--access-group", "T.shared", "--app-group", "group.x", "--now", String(retiredAt), "-"],
                                    in: dir, stdin: Data(rotated.utf8))
        try #require(imported.status == 0, "\(imported.stderr)")
        let now = ["--now", String(retiredAt + 3_600), "--no-replay-guard"]
        let before = try Self.pythonSealed(#"{"title":"T","iat":\#(retiredAt - 60)}"#, name: "before.json", in: dir)
        let after = try Self.pythonSealed(#"{"title":"T","iat":\#(retiredAt + 60)}"#, name: "after.json", in: dir)
        let undated = try Self.pythonSealed(#"{"title":"T"}"#, name: "undated.json", in: dir)
        #expect(try Open.run("push-open", Open.base + now + [before], in: dir).json["outcome"] as? String == "decrypted")
        for path in [after, undated] {
            let r = try Open.run("push-open", Open.base + now + [path], in: dir)
            #expect(r.status == 1 && r.json["reason"] as? String == "keys:keyRetired", "\(r.stdout)")
        }
        // A revocation record (Examples/iOS/README.md's shape) disables k1 on the device itself.
        let revocation = #"{"format":"pushseal-revocation","version":1,"appId":"com.example.app","keyIds":["k1"],"revokedAt":\#(retiredAt + 1_800)}"#
        let revoked = try Open.run("push-keys", ["import", "--keychain", "dev", "--access-group", "T.shared", "--app-group", "group.x",
                                                 "--now", String(retiredAt + 1_800), "-"], in: dir, stdin: Data(revocation.utf8))
        #expect(revoked.status == 0 && revoked.stdout.contains("disabled v1:k1"), "\(revoked.stdout)\(revoked.stderr)")
        let r = try Open.run("push-open", Open.base + now + [before], in: dir)
        #expect(r.status == 1 && r.json["reason"] as? String == "keyDisabled", "\(r.stdout)")
    }
}
