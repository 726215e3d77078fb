import Foundation
import PushSealCrypto
import PushSealJSON
import PushSealKeychain
import PushSealKeyRecords
import PushSealServerKeys
import PushSealSystem
import PushSealWire
import Testing

/// The ``RegistrationStoreContract`` on the file keychain, the registration record's checks,
/// and what only the file keychain shows (audit lines, no sender private key in clear on disk).
@Suite struct RegistrationStoreTests {
    /// A fresh server keychain in `root`.
    static func store(in root: URL, _ name: String) throws -> KeyStore {
        let dir = root.appendingPathComponent(name)
        try Keychain.create(at: dir)
        return try KeyStore(keychain: try Keychain(opening: dir, as: KeyStore.serverIdentity), audit: .keychainFile)
    }

    static func scratch() throws -> URL {
        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-reg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return root
    }

    @Test(arguments: RegistrationStoreContract.names)
    func fileKeychain(_ check: String) throws {
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        var made = 0
        try RegistrationStoreContract.run(check) {
            made += 1
            return try Self.store(in: root, "server\(made)")
        }
        #expect(made >= 1)
    }

    static let example = #"{"format":"pushseal-device-key","version":2,"appId":"com.example.app","keyId":"7t2IPaCpRRWT3Ao4","publicKey":"j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8=","createdAt":1796000000}"#

    static func record(_ replacing: String, with: String) -> [UInt8] { Array(example.replacingOccurrences(of: replacing, with: with).utf8) }

    /// FORMAT.md §V.9's record reads; every malformed variant is refused with its code.
    @Test func registrationRecordChecks() throws {
        let r = try DeviceRegistration(record: Array(Self.example.utf8), expectedAppID: "com.example.app")
        #expect(r.keyID == "7t2IPaCpRRWT3Ao4" && r.createdAt == 1_796_000_000)
        #expect(r.publicKey.rawRepresentation == Hex.decode("8f40c5adb68f25624ae5b214ea767a6ec94d829d3d7b5e1ad1ba6f3e2138285f"))
        #expect(try JSONWriter.serialize(.object(r.record)) == Array(Self.example.utf8))
        #expect(try DeviceRegistration(record: Array(Self.example.utf8), expectedAppID: nil) == r)
        expectKeys(.wrongAppID) { try DeviceRegistration(record: Array(Self.example.utf8), expectedAppID: "com.example.other") }
        let malformed: [[UInt8]] = [
            Array("not json".utf8), Array("[1]".utf8),
            Self.record("pushseal-device-key", with: "pushseal-sender-key"),
            Self.record(#""version":2"#, with: #""version":1"#),
            Self.record(#""createdAt":1796000000"#, with: #""createdAt":"1796000000""#),
            Self.record("j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8=", with: "j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KA=="),
            Self.record("j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8=", with: "not base64!"),
            Self.record(#""keyId":"7t2IPaCpRRWT3Ao4""#, with: #""keyId":7"#),
        ]
        for m in malformed { expectKeys(.malformedRecord) { try DeviceRegistration(record: m, expectedAppID: nil) } }
        expectKeys(.invalidName) { try DeviceRegistration(record: Self.record("7t2IPaCpRRWT3Ao4", with: "7t2I|PaCp"), expectedAppID: nil) }
        expectKeys(.timeOutOfRange) { try DeviceRegistration(record: Self.record("1796000000", with: "-5"), expectedAppID: nil) }
        // Low-order points (RFC 7748 §6.1): 0, 1, and the order-8 point of Curve25519.
        let lowOrder = ["0000000000000000000000000000000000000000000000000000000000000000",
                        "0100000000000000000000000000000000000000000000000000000000000000",
                        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"]
        for hex in lowOrder {
            let b64 = WireBase64.encode(try #require(Hex.decode(hex)))
            expectKeys(.lowOrderPublicKey) {
                try DeviceRegistration(record: Self.record("j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8=", with: b64), expectedAppID: nil)
            }
        }
    }

    /// Audit lines name events and key ids; the sender private key is nowhere in the keychain
    /// directory in clear (items are encrypted at rest), nor in the audit log.
    @Test func auditAndAtRest() throws {
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try Self.store(in: root, "server")
        let r = try DeviceRegistration(record: Array(Self.example.utf8), expectedAppID: nil)
        try store.register(r, recipient: "alice", now: 1_800_000_000)
        try store.generateSenderKey(appID: "com.example.app", now: 1_800_000_000)
        try store.rotateSenderKey(appID: "com.example.app", graceSeconds: 60, now: 1_800_000_001)
        try store.revokeRegistration(appID: "com.example.app", recipient: "alice", keyID: r.keyID, now: 1_800_000_002)
        let dir = root.appendingPathComponent("server")
        let audit = try String(contentsOf: dir.appendingPathComponent(KeyAudit.fileName), encoding: .utf8)
        let events = audit.split(separator: "\n").compactMap { line -> String? in
            guard case .object(let o)? = try? JSONReader.parse(Array(line.utf8)) else { return nil }
            return "\(o["event"]?.stringValue ?? "?"):\(o["recipient"]?.stringValue ?? "?")"
        }
        #expect(events == ["register:alice", "senderGenerate:-", "senderRotate:-", "revokeRegistration:alice"])
        let secret = try #require(try store.sealingSenderKey(appID: "com.example.app")).key.rawRepresentation.copyBytes()
        let files = try FileManager.default.subpathsOfDirectory(atPath: dir.path)
        #expect(!files.isEmpty)
        for f in files {
            guard let data = FileManager.default.contents(atPath: dir.appendingPathComponent(f).path) else { continue }
            let bytes = [UInt8](data)
            #expect(!bytes.indices.contains { i in i + 32 <= bytes.count && Array(bytes[i..<(i + 32)]) == secret }, "\(f) holds the sender private key")
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(!text.contains(WireBase64.encode(secret)) && !text.contains(Hex.encode(secret)), "\(f)")
        }
    }
}
