import Foundation
import PushSealCrypto
import PushSealKeychain
import PushSealKeyRecords
import PushSealDeviceKeys
import PushSealSystem
import PushSealTestSupport
import PushSealWire
import Testing

/// The emulation's side of the one device key layout (PushSealDeviceKeys' `DeviceKeyKind`,
/// `DeviceKeyRecord`, `DeviceKeyItem`) against docs/keychain.md's table and record diagram and
/// the iOS reference's `PushSealKeyKind` / `PushSealKeyLayout` / `PushSealKeyStatus`: not the
/// constants alone but the items and bytes the emulation actually writes and reads.
extension IOSExampleDriftTests {
    /// keychain.md's field name → the emulation's offset constant.
    static let emulationOffsets: [String: Int] = [
        "layout version": DeviceKeyRecord.versionOffset, "kind": DeviceKeyRecord.kindOffset, "status": DeviceKeyRecord.statusOffset,
        "createdAt": DeviceKeyRecord.createdAtOffset, "retiredAt": DeviceKeyRecord.retiredAtOffset, "notAfter": DeviceKeyRecord.notAfterOffset,
        "key bytes": DeviceKeyRecord.keyOffset,
    ]

    @Test("the emulation's services, labels, accessibility and kinds are keychain.md's and the example's, in the items it writes")
    func emulationKeychainItems() throws {
        let layout = try Self.keychainLayout()
        let keys = try Self.deviceKeys()
        let exampleKinds = try Self.enumCases("PushSealKeyKind", in: keys)
        let examplePrefixes = try Self.kindProperty("servicePrefix", in: keys)
        let exampleLabels = try Self.kindProperty("label", in: keys)
        #expect(Set(DeviceKeyKind.allCases.map { Int($0.rawValue) }) == Set(layout.columns.map(\.kind)))
        for column in layout.columns {
            let kind = try #require(DeviceKeyKind(rawValue: UInt8(column.kind)), "the emulation has no kind \(column.kind)")
            #expect(kind.service(appID: "<appID>") == column.service, "kind \(column.kind): \(kind.service(appID: "<appID>")) vs keychain.md \(column.service)")
            #expect(kind.label == column.label, "kind \(column.kind): \(kind.label) vs keychain.md \(column.label)")
            #expect(DeviceKeyItem.accessibility.rawValue == column.accessibility)
            let name = try #require(exampleKinds.first { $0.value == column.kind }?.key)
            #expect(examplePrefixes[name] == kind.servicePrefix, "kind \(column.kind): the example's prefix \(examplePrefixes[name] ?? "none")")
            #expect(exampleLabels[name] == kind.label, "kind \(column.kind): the example's label \(exampleLabels[name] ?? "none")")
        }
        // The items the emulation's writers make: a v2 device key and a pinned sender key.
        let dir = try TemporaryDirectory("pushseal-drift-layout")
        defer { dir.remove() }
        let url = dir.appending("kc")
        try Keychain.create(at: url)
        let kc = try Keychain(opening: url, as: Entitlements(keychainAccessGroups: ["T.shared"]))
        let device = try X25519.PrivateKey(), sender = try X25519.PrivateKey()
        try DeviceKeyItem.store(device, keyID: "dev-1", appID: "com.example.app", in: kc, accessGroup: "T.shared", now: 1_796_000_000)
        try DeviceKeyItem.pinSender(try PinnedSenderKey(keyID: "snd-1", publicKey: sender.publicKey), appID: "com.example.app", in: kc,
                                    accessGroup: "T.shared", now: 1_796_000_000)
        for (kind, account) in [(2, "dev-1"), (3, "snd-1")] {
            let column = try #require(layout.columns.first { $0.kind == kind })
            let service = column.service.replacingOccurrences(of: "<appID>", with: "com.example.app")
            let item = try #require(try kc.copyMatching(ItemQuery(service: service, account: account), returning: [.attributes, .data]).first)
            #expect(item.attributes.itemClass == .genericPassword)
            #expect(item.attributes.label == column.label)
            #expect(item.attributes.accessibility.rawValue == column.accessibility)
            #expect(item.attributes.accessGroup == "T.shared")
            let data = try #require(item.data).copyBytes()
            #expect(data.count == layout.recordByteCount)
            #expect(Int(data[try #require(layout.fields.first { $0.name == "kind" }).offset]) == kind)
        }
    }

    @Test("the emulation's key record bytes follow keychain.md's diagram and the example's offsets, status codes and refusals")
    func emulationKeyRecordLayout() throws {
        let layout = try Self.keychainLayout()
        let keys = try Self.deviceKeys()
        #expect(DeviceKeyRecord.byteCount == layout.recordByteCount)
        #expect(keys.contains("static let recordByteCount = \(DeviceKeyRecord.byteCount)\n"))
        for field in layout.fields {
            let offset = try #require(Self.emulationOffsets[field.name], "the emulation has no offset for \(field.name)")
            #expect(offset == field.offset, "\(field.name): the emulation's offset \(offset), keychain.md's \(field.offset)")
            #expect(keys.contains("static let \(Self.camelCase(field.name))Offset = \(offset)\n"), "the example's \(field.name) offset is not \(offset)")
        }
        #expect(layout.fields.last?.size == DeviceKeyRecord.keyByteCount)
        // The bytes the emulation writes, field by field, big-endian; -1 for an unset time.
        let key = SecretBytes(copying: (0..<32).map { UInt8($0 + 0xA0) })
        let record = DeviceKeyRecord(kind: .v2DeviceKey, status: .decryptOnly, createdAt: 0x0102_0304_0506_0708, notAfter: 5, key: key)
        let bytes = try record.encoded().copyBytes()
        func field(_ name: String) throws -> [UInt8] {
            let f = try #require(layout.fields.first { $0.name == name })
            return Array(bytes[f.offset..<f.offset + f.size])
        }
        let version = try #require(layout.fields.first?.text)
        #expect(try field("layout version") == [try #require(UInt8(version))])
        #expect(try field("kind") == [2])
        #expect(try field("createdAt") == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(try field("retiredAt") == [UInt8](repeating: 0xFF, count: 8))
        #expect(try field("notAfter") == [0, 0, 0, 0, 0, 0, 0, 5])
        #expect(try field("key bytes") == key.copyBytes())
        // Status codes: keychain.md's and the example's numbers are the bytes the emulation writes.
        let statusText = try #require(layout.fields.first { $0.name == "status" }?.text)
        let exampleStatus = try Self.enumCases("PushSealKeyStatus", in: keys)
        for m in try Self.matches(#"(\d+) (\w+)"#, in: statusText) {
            let status = try #require(KeyStatus(rawValue: m[2]), "the emulation has no status \(m[2])")
            let written = try DeviceKeyRecord(kind: .v1Key, status: status, createdAt: 0, key: key).encoded().copyBytes()
            #expect(Int(written[DeviceKeyRecord.statusOffset]) == Int(m[1]), "\(m[2]): the emulation writes \(written[DeviceKeyRecord.statusOffset])")
            #expect(exampleStatus[m[2]] == Int(m[1]))
            #expect(try DeviceKeyRecord(decoding: SecretBytes(copying: written)).status == status)
        }
        // What the example's decoder refuses, the emulation's refuses: another length, version, kind or status.
        #expect(keys.contains("guard bytes.count == PushSealKeyLayout.recordByteCount"))
        let kinds = Set(try Self.enumCases("PushSealKeyKind", in: keys).values)
        let statuses = Set(exampleStatus.values)
        let badKinds = (0...5).filter { !kinds.contains($0) }.map { (DeviceKeyRecord.kindOffset, $0) }
        let badStatuses = (0...6).filter { !statuses.contains($0) }.map { (DeviceKeyRecord.statusOffset, $0) }
        for (offset, value) in [(DeviceKeyRecord.versionOffset, 0), (DeviceKeyRecord.versionOffset, 2)] + badKinds + badStatuses {
            var bad = bytes
            bad[offset] = UInt8(value)
            expectCode(KeysError.Code.corruptKey) { _ = try DeviceKeyRecord(decoding: SecretBytes(copying: bad)) }
        }
        expectCode(KeysError.Code.corruptKey) { _ = try DeviceKeyRecord(decoding: SecretBytes(copying: bytes + [0])) }
        expectCode(KeysError.Code.corruptKey) { _ = try DeviceKeyRecord(decoding: SecretBytes(copying: bytes.dropLast())) }
        // keychain.md's reader codes are the emulation's fallback tokens, which the iOS reference
        // reports too: corruptKey, keyExpired, keyDisabled by code name, keys:keyRetired its own token.
        let rules = try Self.keychainDoc().section(from: "Rules every reader applies", to: "## At rest")
        let names = Set(try rules.matches("`((?:keys:)?(?:corruptKey|keyExpired|keyDisabled|keyRetired))`"))
        let emulated: Set<String> = [KeysError.Code.corruptKey.name, KeysError.Code.keyExpired.name, KeysError.Code.keyDisabled.name, "keys:keyRetired"]
        #expect(names == emulated, "keychain.md's reader codes \(names.sorted()) vs the emulation's \(emulated.sorted())")
    }
}

extension IOSExampleDriftTests {
    @Test("the key manifest: keychain.md's table, diagram and worked example are the emulation's items and bytes and the example's constants")
    func manifestLayout() throws {
        let section = try Self.keychainDoc().section(from: "### The key manifest", to: "### Legacy keyset items")
        let keys = try Self.deviceKeys()
        func row(_ attribute: String) throws -> String {
            let cell = try #require(try section.matches(#"(?m)^\| `\#(attribute)` \| (.+) \|$"#).first, "no \(attribute) row")
            return try #require(try Self.matches("`([^`]+)`", in: cell).first?[1], "\(attribute): \(cell)")
        }
        let service = try row("kSecAttrService"), account = try row("kSecAttrAccount"), label = try row("kSecAttrLabel")
        let accessible = try row("kSecAttrAccessible")
        #expect(service == DeviceKeyManifest.service(appID: "<appID>"))
        #expect(account == DeviceKeyManifest.account && label == DeviceKeyManifest.label)
        #expect(accessible == DeviceKeyItem.accessibility.rawValue)
        // The example's constants are the same strings and numbers.
        for line in ["static let servicePrefix = \"\(DeviceKeyManifest.servicePrefix)\"", "static let account = \"\(account)\"",
                     "static let label = \"\(label)\"", "static let layoutVersion: UInt8 = \(DeviceKeyManifest.layoutVersion)",
                     "static let generationOffset = \(DeviceKeyManifest.generationOffset)", "static let entryCountOffset = \(DeviceKeyManifest.entryCountOffset)",
                     "static let entriesOffset = \(DeviceKeyManifest.entriesOffset)", "static let digestByteCount = \(DeviceKeyManifest.digestByteCount)",
                     "static let maxEntryCount = \(DeviceKeyManifest.maxEntryCount)"] {
            #expect(keys.text.contains(line), "the example lacks \(line)")
        }
        // The diagram's header offsets are the emulation's.
        let diagram = try section.section(from: "offset  size  field", to: "```")
        let header = try Self.matches(#"(?m)^(\d+)\s+(\d+)\s+([A-Za-z ]+?):"#, in: diagram.text).map { ($0[3], Int($0[1]) ?? -1, Int($0[2]) ?? -1) }
        #expect(header.map(\.0) == ["layout version", "generation", "entry count N"], "\(header)")
        #expect(header.map(\.1) == [DeviceKeyManifest.versionOffset, DeviceKeyManifest.generationOffset, DeviceKeyManifest.entryCountOffset])
        #expect(header.map(\.2) == [1, 8, 2])
        #expect(try diagram.matches(#"(?m)^11\s+"#, group: 0).count == 1 && DeviceKeyManifest.entriesOffset == 11)
        // The worked example is what the emulation encodes (and decodes back).
        let hex = try #require(try section.matches("```manifest-example\n([0-9a-f]+)\n").first)
        let example = DeviceKeyManifest(generation: 3, entries: [
            DeviceKeyManifest.Entry(kind: .senderKey, keyID: "snd-1", digest: [UInt8](repeating: 0x22, count: 32), previousDigest: [UInt8](repeating: 0x33, count: 32)),
            DeviceKeyManifest.Entry(kind: .v2DeviceKey, keyID: "dev-1", digest: [UInt8](repeating: 0x11, count: 32)),
        ])
        let bytes = try example.encoded().copyBytes()
        #expect(Hex.encode(bytes) == hex)
        #expect(try section.matches(#"(\d+) bytes:"#).first == String(bytes.count))
        #expect(try DeviceKeyManifest(decoding: SecretBytes(copying: bytes)).entries == example.entries.reversed())
        // The item the emulation's writer makes beside a key item.
        let dir = try TemporaryDirectory("pushseal-drift-manifest")
        defer { dir.remove() }
        try Keychain.create(at: dir.appending("kc"))
        let kc = try Keychain(opening: dir.appending("kc"), as: Entitlements(keychainAccessGroups: ["T.shared"]))
        try DeviceKeyItem.store(try X25519.PrivateKey(), keyID: "dev-1", appID: "com.example.app", in: kc, accessGroup: "T.shared", now: 1_796_000_000)
        let item = try #require(try kc.copyMatching(ItemQuery(service: service.replacingOccurrences(of: "<appID>", with: "com.example.app"), account: account),
                                                    returning: [.attributes, .data]).first)
        #expect(item.attributes.itemClass == .genericPassword && item.attributes.label == label)
        #expect(item.attributes.accessibility.rawValue == accessible && item.attributes.accessGroup == "T.shared")
        let record = try kc.copyData(ItemQuery(service: DeviceKeyKind.v2DeviceKey.service(appID: "com.example.app"), account: "dev-1"))
        let data = try #require(item.data).copyBytes()
        #expect(data == [1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 2, 5] + Array("dev-1".utf8) + (try SHA256Hasher.hash(record.copyBytes())) + [UInt8](repeating: 0, count: 32))
    }
}
