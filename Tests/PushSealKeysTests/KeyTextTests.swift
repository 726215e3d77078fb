import Foundation
import PushSealCrypto
import PushSealDeviceKeys
@testable import PushSealKeyRecords
import Testing

/// Key text read in place by the key modules (no pointer code there): a key file's hex or
/// base64 (`DeviceKeyItem.privateKey(fromText:)`) and a key record's `key` member.
@Suite struct KeyTextTests {
    static let key: [UInt8] = (0..<32).map { UInt8(0x80 + $0) }

    @Test func readsAKeyFileInEitherForm() throws {
        let hex = Self.key.map { String(format: "%02x", $0) }.joined()
        let base64 = Data(Self.key).base64EncodedString()
        let url = base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        for text in [hex, hex.uppercased() + "\n", hex + " \r\n\t", base64, base64 + "\n", String(base64.dropLast()), url] {
            let secret = try #require(DeviceKeyItem.privateKey(fromText: Array(text.utf8)), "\(text)")
            #expect(secret.copyBytes() == Self.key, "\(text)")
        }
        for text in ["", "\n", String(hex.dropLast()), hex + "00", Data(Self.key.dropLast()).base64EncodedString(),
                     Data(Self.key + [0]).base64EncodedString(), "not a key at all", " " + String(hex.dropFirst())] {
            #expect(DeviceKeyItem.privateKey(fromText: Array(text.utf8)) == nil, "\(text)")
        }
    }

    @Test func aKeyRecordReportsAKeyOfTheWrongLength() {
        let good = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
        func reason(_ key: String) -> String? {
            let record = KeyRecordTests.v1.replacingOccurrences(of: good, with: key)
            do {
                _ = try KeyRecord(decoding: Array(record.utf8))
                return nil
            } catch let e as KeysError {
                return e.reason
            } catch {
                return "\(error)"
            }
        }
        #expect(reason(Data(Array(0..<33) as [UInt8]).base64EncodedString())?.contains("keys[0].key is 33 bytes, expected 32") == true)
        #expect(reason(Data(Array(0..<31) as [UInt8]).base64EncodedString())?.contains("keys[0].key is 31 bytes, expected 32") == true)
        #expect(reason(Data(Array(0..<48) as [UInt8]).base64EncodedString())?.contains("keys[0].key is not base64") == true)
        #expect(reason("AAEC*wQF")?.contains("keys[0].key is not base64") == true)
    }

    @Test func aKeysetItemIsWrittenAtTheSizeItReservesAndReadBack() throws {
        let keys = [
            ManagedKey(info: KeyInfo(keyID: "q3Zk_9Ab", status: .primary, createdAt: 1_767_225_600, promotedAt: 1_767_225_600, sealCount: 7),
                       secret: SecretBytes(copying: Self.key)),
            ManagedKey(info: KeyInfo(keyID: "gone", status: .destroyed, createdAt: 1_767_000_000, retiredAt: 1_767_100_000), secret: nil),
        ]
        for rotation in [nil, Keyset.Rotation(keyID: "q3Zk_9Ab", graceSeconds: 86_400, phase: .promoted)] {
            let keyset = Keyset(appID: "com.example.app", recipient: "alice-iphone", keys: keys, rotation: rotation, generation: 3)
            var bytes = keyset.encode()
            defer { SecretBytes.wipe(&bytes) }
            // Written into the capacity reserved up front: no reallocation left a copy of the key.
            #expect(bytes.count == keyset.encodedByteCount)
            let read = try Keyset.decode(bytes)
            #expect(read.keys.map(\.info) == keys.map(\.info) && read.rotation?.keyID == rotation?.keyID && read.generation == 3)
            #expect(read.keys[0].secret?.copyBytes() == Self.key && read.keys[1].secret == nil)
        }
    }
}
