import PushSealSystem
import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealKeychain
@testable import PushSealKeyRecords
@testable import PushSealServerKeys
import Testing
import PushSealDeviceKeys

/// Issue 12, F4: revocation reaches the device.
@Suite struct RevocationTests {
    @Test("a revocation record imported on the device disables the listed keys there; a decryptOnly key reports its retiredAt")
    func revocationRecordDisablesKeysOnTheDevice() throws {
        let f = try KeysFixture()
        defer { f.cleanup() }
        let now: Int64 = 1_796_000_000
        let first = try f.device.generate(appID: KeysFixture.appID, recipient: "alice", now: now)
        let second = KeyInfo(keyID: KeyID.generate(), status: .pending, createdAt: now + 10)
        try f.device.mutate(appID: KeysFixture.appID, recipient: "alice") { ks, _ in
            ks.keys.append(ManagedKey(info: second, secret: SecretBytes(randomByteCount: 32)))
            return [KeyStore.AuditEvent(event: "testAdd", time: now + 10)]
        }
        try f.device.promote(appID: KeysFixture.appID, recipient: "alice", keyID: second.keyID, now: now + 20)
        let keyring = try f.extensionKeyring()
        // The superseded key is decryptOnly: it opens, and says since when it is retired.
        let retired = try keyring.lookup(first.keyID, appID: KeysFixture.appID, now: now + 30)
        #expect(retired.retiredAt == now + 20)
        #expect(try keyring.lookup(second.keyID, appID: KeysFixture.appID, now: now + 30).retiredAt == nil)

        let json = #"{"format":"pushseal-revocation","version":1,"appId":"com.example.app","keyIds":["\#(second.keyID)","unknown1"],"revokedAt":\#(now + 40)}"#
        #expect(RevocationRecord.isRevocationRecord(Array(json.utf8)))
        let record = try RevocationRecord(json: Array(json.utf8))
        let result = try f.device.importRevocation(record, now: now + 50)
        #expect(result.disabled.map(\.keyID) == [second.keyID] && result.unknownKeyIDs == ["unknown1"])
        expectKeys(.keyDisabled) { try keyring.key(for: second.keyID, appID: KeysFixture.appID, now: now + 60) }
        let info = try #require(try f.device.keyset(appID: KeysFixture.appID, recipient: "alice").keys.first { $0.keyID == second.keyID })
        #expect(info.status == .disabled && info.retiredAt == now + 40)
        // Idempotent.
        #expect(try f.device.importRevocation(record, now: now + 70).disabled.isEmpty)
        // Another app's record, or a malformed one, changes nothing.
        expectKeys(.wrongAppID) { try f.device.importRevocation(record, expectedAppID: "com.example.other") }
        for bad in [#"{"format":"pushseal-revocation","version":2,"appId":"com.example.app","keyIds":["a"],"revokedAt":1}"#,
                    #"{"format":"pushseal-revocation","version":1,"appId":"com.example.app","keyIds":[],"revokedAt":1}"#,
                    #"{"format":"pushseal-revocation","version":1,"appId":"com.example.app","keyIds":["a"],"revokedAt":1,"x":1}"#] {
            expectKeys(.malformedRecord) { try RevocationRecord(json: Array(bad.utf8)) }
        }
    }
}
