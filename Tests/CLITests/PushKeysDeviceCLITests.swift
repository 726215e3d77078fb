import Foundation
import Testing
import PushSealCrypto
import PushSealKeychain
import PushSealDeviceKeys
import PushSealSystem
import PushSealTestSupport

/// `push-keys device generate` / `device import`: the item of docs/keychain.md "Device key
/// items" and the registration record of FORMAT.md §V.6, through the built tool.
@Suite(.serialized) struct PushKeysDeviceCLITests {
    static let identity = ["--access-group", "T.shared"]
    /// FORMAT.md §V.9's device private key and its registration record (createdAt 1796000000).
    static let exampleKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    static let exampleRecord = #"{"format":"pushseal-device-key","version":2,"appId":"com.example.app","keyId":"7t2IPaCpRRWT3Ao4","publicKey":"j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8=","createdAt":1796000000}"#

    static func setUp() throws -> TemporaryDirectory {
        let dir = try TemporaryDirectory("pushseal-device-cli")
        #expect(try keys(["keychain", "init", "--keychain", "kc"], in: dir).status == 0)
        return dir
    }

    static func keys(_ args: [String], in dir: TemporaryDirectory) throws -> PushOpenCLITests.Result {
        try PushOpenCLITests.run("push-keys", args, in: dir.url)
    }

    static func writeKey(_ text: String, mode: Int = 0o600, in dir: TemporaryDirectory) throws {
        try Data(text.utf8).write(to: dir.appending("device.key"))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: dir.appending("device.key").path)
    }

    /// The stored key record, read back as the extension's identity would.
    static func storedRecord(appID: String, keyID: String, in dir: TemporaryDirectory) throws -> [UInt8] {
        let kc = try Keychain(opening: dir.appending("kc"), as: Entitlements(keychainAccessGroups: ["T.shared"]))
        return try kc.copyData(ItemQuery(service: "pushseal.key:" + appID, account: keyID)).copyBytes()
    }

    @Test func importPrintsTheRegistrationRecordOfTheWorkedExample() throws {
        let dir = try Self.setUp()
        defer { dir.remove() }
        try Self.writeKey(Self.exampleKeyHex + "\n", in: dir)
        let r = try Self.keys(["device", "import", "--keychain", "kc"] + Self.identity
                              + ["--app-id", "com.example.app", "--key-file", "device.key", "--now", "1796000000"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == Self.exampleRecord + "\n")
        #expect(!r.stdout.contains(Self.exampleKeyHex) && !r.stderr.contains(Self.exampleKeyHex))
        // The item: a 59-byte key record, layout 1, kind 2, status primary, createdAt, -1, -1, the key.
        let record = try Self.storedRecord(appID: "com.example.app", keyID: "7t2IPaCpRRWT3Ao4", in: dir)
        #expect(record.count == 59)
        #expect(Array(record[0..<3]) == [1, 2, 2])
        #expect(Array(record[3..<11]) == withUnsafeBytes(of: Int64(1_796_000_000).bigEndian) { Array($0) })
        #expect(Array(record[11..<27]) == [UInt8](repeating: 0xFF, count: 16))
        #expect(Hex.encode(record[27...]) == Self.exampleKeyHex)
        let listed = try Self.keys(["keychain", "list", "--keychain", "kc"], in: dir)
        #expect(listed.stdout.contains("T.shared\tgenericPassword\tpushseal.key:com.example.app\t7t2IPaCpRRWT3Ao4\tafterFirstUnlockThisDeviceOnly\tPushSeal v2 key"))
        // Base64 of the same key, another key id, another app: the same public key.
        try Self.writeKey(Data(try #require(Hex.decode(Self.exampleKeyHex))).base64EncodedString(), in: dir)
        let b64 = try Self.keys(["device", "import", "--keychain", "kc"] + Self.identity
                                + ["--app-id", "com.example.other", "--key-file", "device.key", "--key-id", "restored-1", "--json"], in: dir)
        #expect(b64.status == 0, "\(b64.stderr)")
        let registration = try #require(b64.json["registration"] as? [String: Any])
        #expect(registration["keyId"] as? String == "restored-1")
        #expect(registration["publicKey"] as? String == "j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8=")
        #expect((b64.json["item"] as? [String: Any])?["label"] as? String == "PushSeal v2 key")
    }

    @Test func generateMakesAKeyPairWhosePublicHalfIsTheRecordsAndRefusesASecond() throws {
        let dir = try Self.setUp()
        defer { dir.remove() }
        let args = ["device", "generate", "--keychain", "kc"] + Self.identity + ["--app-id", "com.example.app"]
        let r = try Self.keys(args, in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        let record = r.json
        #expect(record["format"] as? String == "pushseal-device-key")
        #expect(record["version"] as? Int == 2)
        let keyID = try #require(record["keyId"] as? String)
        let publicKey = try #require((record["publicKey"] as? String).flatMap { Data(base64Encoded: $0) })
        // The stored private key's public half is the registered one, and the key id is derived from it.
        let stored = try Self.storedRecord(appID: "com.example.app", keyID: keyID, in: dir)
        let privateKey = try X25519.PrivateKey(rawRepresentation: SecretBytes(copying: stored[27...]))
        #expect(privateKey.publicKey.rawRepresentation == Array(publicKey))
        #expect(try DeviceKeyItem.keyID(for: privateKey.publicKey) == keyID)
        #expect(keyID.count == 16)
        // A second key for the same app would be a second registration: refused (73).
        let again = try Self.keys(args, in: dir)
        #expect(again.status == 73)
        #expect(again.stderr.hasPrefix("push-keys: error: "))
        // Another app in the same keychain is fine.
        #expect(try Self.keys(["device", "generate", "--keychain", "kc"] + Self.identity + ["--app-id", "com.example.other"], in: dir).status == 0)
    }

    @Test func badInputsGetTheirExitCodes() throws {
        let dir = try Self.setUp()
        defer { dir.remove() }
        let base = ["device", "import", "--keychain", "kc"] + Self.identity + ["--app-id", "com.example.app"]
        try Self.writeKey(Self.exampleKeyHex, mode: 0o644, in: dir)
        let open = try Self.keys(base + ["--key-file", "device.key"], in: dir)
        #expect(open.status == 77)
        #expect(open.stderr.contains("hint: chmod 600"))
        try Self.writeKey("not a key", in: dir)
        #expect(try Self.keys(base + ["--key-file", "device.key"], in: dir).status == 65)
        #expect(try Self.keys(base + ["--key-file", "missing.key"], in: dir).status == 66)
        #expect(try Self.keys(base, in: dir).status == 64)
        #expect(try Self.keys(base + ["--key-file", "device.key", "--key-id", "a|b"], in: dir).status == 64)
        #expect(try Self.keys(["device", "generate", "--keychain", "kc", "--app-id", "com.example.app"], in: dir).status == 64)
        #expect(try Self.keys(["device", "generate", "--keychain", "kc"] + Self.identity + ["--app-id", "bad app"], in: dir).status == 64)
        #expect(try Self.keys(["device", "generate", "--keychain", "nowhere"] + Self.identity + ["--app-id", "com.example.app"], in: dir).status == 66)
    }
}
