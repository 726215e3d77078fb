// Runs the iOS reference's non-cryptographic logic on Linux against AppleStubs.swift (check.sh):
// every vector of Tests/Vectors and Tests/Vectors/v2 through the example's field checks and v2
// sender policy (a vector whose outcome needs real crypto must at least reach the crypto step),
// the 59-byte key record, the key lifecycle (make, rotate, promote, prune, import v1, pin,
// revoke) and the replay guard. Exits 1 with the failed checks listed.
import Foundation

@main struct LinuxCheck {
    nonisolated(unsafe) static var failures: [String] = []

    static func check(_ ok: Bool, _ what: String) {
        if !ok { failures.append(what) }
    }

    static func main() throws {
        let root = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "."
        try vectors(root: root)
        try keyRecord()
        try lifecycle()
        try manifest(root: root)
        try senderPins()
        try replayGuard()
        if failures.isEmpty {
            print("LinuxCheck: all checks passed")
        } else {
            for f in failures { print("LinuxCheck: FAILED: \(f)") }
            exit(1)
        }
    }

    /// Codes the example decides before any real cryptography (with the stub's all-zero point).
    static let decidedBeforeCrypto: Set<String> = [
        "missingField", "wrongFieldType", "emptyField", "unknownAlgorithm", "invalidKeyID", "invalidBase64", "truncatedBox",
        "invalidEnc", "unknownKeyID", "downgradeRefused", "unknownSenderKey", "invalidAppID", "zeroSharedSecret",
    ]

    static func vectors(root: String) throws {
        var count = 0
        for dir in ["Tests/Vectors", "Tests/Vectors/v2"] {
            let path = root + "/" + dir
            for name in try FileManager.default.contentsOfDirectory(atPath: path).sorted() where name.hasSuffix(".vector") {
                let text = try String(contentsOfFile: path + "/" + name, encoding: .utf8)
                guard let split = text.range(of: "\n\n") else { check(false, "\(name): no header"); continue }
                var header: [String: String] = [:]
                for line in text[..<split.lowerBound].split(separator: "\n") {
                    let kv = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    if kv.count == 2 { header[kv[0]] = kv[1] }
                }
                guard let payload = try? JSONSerialization.jsonObject(with: Data(text[split.upperBound...].utf8)) as? [AnyHashable: Any],
                      let appID = header["app-id"], let keyID = header["key-id"], let expect = header["expect"] else { continue }
                fakeKeychain = [:]
                if let hex = header["key"], let key = PushSealWire.hexBytes(hex) {
                    try PushSealDeviceKeys.store(PushSealKeyRecord(kind: .v1Key, status: .primary, createdAt: 0, keyBytes: key), keyID: keyID, appID: appID)
                }
                if let hex = header["device-key"], let key = PushSealWire.hexBytes(hex) {
                    try PushSealDeviceKeys.store(PushSealKeyRecord(kind: .v2DeviceKey, status: .primary, createdAt: 0, keyBytes: key), keyID: keyID, appID: appID)
                }
                if let sender = header["sender-key-id"], let hex = header["sender-public-key"], let key = PushSealWire.hexBytes(hex) {
                    try PushSealDeviceKeys.store(PushSealKeyRecord(kind: .senderKey, status: .primary, createdAt: 0, keyBytes: key), keyID: sender, appID: appID)
                }
                var outcome = "open"
                do { _ = try NotificationService.open(payload, appID: appID, now: 1_796_000_100) } catch let r as Refusal { outcome = r.code }
                let wanted = expect.replacingOccurrences(of: "error ", with: "")
                let expected = decidedBeforeCrypto.contains(wanted) ? wanted : "authenticationFailed"  // the stub's crypto always fails
                check(outcome == expected, "\(dir)/\(name): expected \(expected), the example gave \(outcome)")
                count += 1
            }
        }
        check(count >= 60, "only \(count) vectors found under \(root)")
        print("LinuxCheck: \(count) vectors")
    }

    static func keyRecord() throws {
        let record = PushSealKeyRecord(kind: .v2DeviceKey, status: .decryptOnly, createdAt: 0x0102030405060708, retiredAt: -1,
                                       notAfter: 1_796_000_000, keyBytes: Data(0..<32))
        let bytes = record.encoded()
        check(PushSealWire.hexString(bytes) == "010203" + "0102030405060708" + "ffffffffffffffff" + "000000006b0cc900"
              + PushSealWire.hexString(Data(0..<32)), "key record bytes \(PushSealWire.hexString(bytes))")
        let back = PushSealKeyRecord(decoding: bytes)
        check(back?.createdAt == record.createdAt && back?.retiredAt == -1 && back?.notAfter == 1_796_000_000 && back?.keyBytes == Data(0..<32),
              "key record round trip")
        var bad = bytes
        bad[2] = 5
        check(PushSealKeyRecord(decoding: bad) == nil && PushSealKeyRecord(decoding: bytes.prefix(58)) == nil, "damaged records decode")
        bad = bytes
        bad[0] = 2
        check(PushSealKeyRecord(decoding: bad) == nil, "layout version 2 decodes")
        check(record.refusal(now: 1_795_999_999) == nil && record.refusal(now: 1_796_000_000) == "keyExpired", "grace window")
        let retired = PushSealKeyRecord(kind: .v1Key, status: .decryptOnly, createdAt: 0, retiredAt: 100, keyBytes: Data(count: 32))
        check(retired.refusal(iat: 100) == nil && retired.refusal(iat: 101) == "keys:keyRetired", "retiredAt rule")
        check(PushSealKeyRecord(kind: .v1Key, status: .disabled, createdAt: 0, keyBytes: Data(count: 32)).refusal(now: 0) == "keyDisabled", "disabled")
    }

    static func lifecycle() throws {
        let app = "com.example.app"
        fakeKeychain = [:]
        func statuses() throws -> [String: String] {
            Dictionary(uniqueKeysWithValues: try PushSealDeviceKeys.list(appID: app).map { ($0.keyId, $0.status) })
        }
        let first = try PushSealDeviceKeys.makeDeviceKey(appID: app, now: 1000)
        check(first.keyId.count == 16 && first.format == "pushseal-device-key" && first.version == 2, "registration record")
        let second = try PushSealDeviceKeys.rotate(appID: app, now: 2000)
        check(try statuses() == [first.keyId: "primary", second.keyId: "pending"], "rotate makes a pending key")
        try PushSealDeviceKeys.promote(keyID: second.keyId, appID: app, now: 3000, graceSeconds: 100)
        let old = try PushSealDeviceKeys.list(appID: app).first { $0.keyId == first.keyId }
        check(old?.status == "decryptOnly" && old?.retiredAt == 3000 && old?.notAfter == 3100, "promote retires the old key")
        check(try PushSealDeviceKeys.prune(appID: app, now: 3099, graceSeconds: 100).isEmpty, "prune before the end of grace")
        check(try PushSealDeviceKeys.prune(appID: app, now: 3100, graceSeconds: 100) == [first.keyId], "prune after grace")
        let v1 = #"{"format":"pushseal-key-record","version":1,"appId":"com.example.app","recipient":"r","keys":[{"keyId":"k1","status":"decryptOnly","createdAt":1,"retiredAt":5,"notAfter":99999,"sealCount":0,"key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="},{"keyId":"k2","status":"primary","createdAt":2,"sealCount":0,"key":"//////////////////////////////////////////8="},{"keyId":"k0","status":"destroyed","createdAt":0,"sealCount":0}]}"#
        _ = try PushSealDeviceKeys.importV1(recordJSON: Data(v1.utf8), appID: app)
        let backwards = #"{"format":"pushseal-key-record","version":1,"appId":"com.example.app","recipient":"r","keys":[{"keyId":"k1","status":"primary","createdAt":1,"sealCount":0,"key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}]}"#
        _ = try PushSealDeviceKeys.importV1(recordJSON: Data(backwards.utf8), appID: app)
        check(try statuses()["k1"] == "decryptOnly" && (try statuses()["k2"]) == "primary", "v1 import only moves forward")
        func code(_ body: () throws -> Any) -> String {
            do { _ = try body(); return "ok" } catch let f as PushSealDeviceKeys.Failure { return f.code } catch { return "other" }
        }
        let otherBytes = v1.replacingOccurrences(of: "//////////////////////////////////////////8=", with: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
        check(code { try PushSealDeviceKeys.importV1(recordJSON: Data(otherBytes.utf8), appID: app) } == "duplicateKeyID", "same id, other bytes")
        check(code { try PushSealDeviceKeys.importV1(recordJSON: Data(v1.utf8), appID: "com.other") } == "wrongAppID", "v1 record of another app")
        let sender = #"{"format":"pushseal-sender-key","version":2,"appId":"com.example.app","senderKeyId":"oCiYEAMutBcnTuvE","publicKey":"NYBy1jZYgNGu6jKa35EhODhR7SGijjt16WXQ0s0WYlQ="}"#
        check(code { try PushSealDeviceKeys.pinSender(recordJSON: Data(sender.utf8), appID: app) } == "ok", "pin a sender key")
        check(code { try PushSealDeviceKeys.pinSender(recordJSON: Data(sender.utf8), appID: app) } == "ok", "pin the same key again")
        let lowOrder = sender.replacingOccurrences(of: "NYBy1jZYgNGu6jKa35EhODhR7SGijjt16WXQ0s0WYlQ=", with: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
            .replacingOccurrences(of: "oCiYEAMutBcnTuvE", with: "zero")
        check(code { try PushSealDeviceKeys.pinSender(recordJSON: Data(lowOrder.utf8), appID: app) } == "lowOrderPoint", "low-order sender key")
        let revocation = #"{"format":"pushseal-revocation","version":1,"appId":"com.example.app","keyIds":["k2","oCiYEAMutBcnTuvE","gone"],"revokedAt":4000}"#
        check(try PushSealDeviceKeys.importRevocation(recordJSON: Data(revocation.utf8), appID: app) == ["k2", "oCiYEAMutBcnTuvE"], "revocation")
        if case .found(let k2) = PushSealDeviceKeys.lookup(.v1Key, keyID: "k2", appID: app) {
            check(k2.status == .disabled && k2.retiredAt == 4000 && k2.keyBytes == Data(count: 32), "revoked v1 key")
        } else {
            check(false, "revoked k2 not found")
        }
        if case .otherKind = PushSealDeviceKeys.lookup(.v1Key, keyID: second.keyId, appID: app) {} else {
            check(false, "a v2 key id read as a v1 key is not otherKind")
        }
        check((try? PushSealDeviceKeys.pinnedSenderKeyIDs(appID: app).get()) == ["oCiYEAMutBcnTuvE"], "pinned list")
    }

    /// The key manifest (docs/keychain.md "The key manifest"): the worked example's bytes, and
    /// an older item or manifest put back does not open.
    static func manifest(root: String) throws {
        let doc = try String(contentsOfFile: root + "/docs/keychain.md", encoding: .utf8)
        let hex = doc.components(separatedBy: "```manifest-example\n").dropFirst().first?.components(separatedBy: "\n").first ?? ""
        var example = PushSealKeyManifest()
        example.generation = 3
        example.entries = [.init(kind: .senderKey, keyID: "snd-1", digest: Data(repeating: 0x22, count: 32), previousDigest: Data(repeating: 0x33, count: 32)),
                           .init(kind: .v2DeviceKey, keyID: "dev-1", digest: Data(repeating: 0x11, count: 32), previousDigest: nil)]
        check(PushSealWire.hexString(example.encoded()) == hex && !hex.isEmpty, "the manifest worked example of keychain.md")
        check(PushSealKeyManifest(decoding: example.encoded())?.entries.map(\.keyID) == ["dev-1", "snd-1"], "the manifest decodes sorted")
        let app = "com.example.app"
        fakeKeychain = [:]
        func code(_ body: () throws -> Any) -> String {
            do { _ = try body(); return "ok" } catch let f as PushSealDeviceKeys.Failure { return f.code } catch { return "other" }
        }
        let first = try PushSealDeviceKeys.makeDeviceKey(appID: app, now: 1000)
        let saved = fakeKeychain
        let revocation = #"{"format":"pushseal-revocation","version":1,"appId":"com.example.app","keyIds":["\#(first.keyId)"],"revokedAt":2000}"#
        _ = try PushSealDeviceKeys.importRevocation(recordJSON: Data(revocation.utf8), appID: app)
        let itemKey = "pushseal.key:\(app)|\(first.keyId)", manifestKey = "pushseal.manifest:\(app)|manifest"
        check(fakeKeychain[itemKey] != saved[itemKey] && fakeKeychain[manifestKey] != saved[manifestKey], "a revoke writes the item and the manifest")
        for key in [itemKey, manifestKey] {
            let current = fakeKeychain
            fakeKeychain[key] = saved[key]
            if case .rolledBack = PushSealDeviceKeys.lookup(.v2DeviceKey, keyID: first.keyId, appID: app) {} else { check(false, "\(key) put back still opens") }
            check(code { try PushSealDeviceKeys.importRevocation(recordJSON: Data(revocation.utf8), appID: app) } == "keyRolledBack", "a write over \(key) put back")
            fakeKeychain = current
        }
        if case .found(let r) = PushSealDeviceKeys.lookup(.v2DeviceKey, keyID: first.keyId, appID: app) {
            check(r.status == .disabled, "the revoked key")
        } else {
            check(false, "the revoked key is not found")
        }
        fakeKeychain[manifestKey] = nil
        if case .rolledBack = PushSealDeviceKeys.lookup(.v2DeviceKey, keyID: first.keyId, appID: app) {} else { check(false, "an item without a manifest opens") }
        check(code { try PushSealDeviceKeys.makeDeviceKey(appID: app, now: 3000) } == "keyRolledBack", "a write without a manifest")
    }

    /// Pinned sender keys carry the record's status and an end the device measures (G15, G14);
    /// pinning a sender key ends version 1 with a migration window, and a v1 payload for an app
    /// with a pin opens only inside it (G2); retired pins are unpinned after notAfter.
    static func senderPins() throws {
        let app = "com.example.app"
        fakeKeychain = [:]
        func code(_ body: () throws -> Any) -> String {
            do { _ = try body(); return "ok" } catch let f as PushSealDeviceKeys.Failure { return f.code } catch { return "other" }
        }
        func pin(_ id: String) -> PushSealKeyRecord? {
            if case .found(let r) = PushSealDeviceKeys.lookup(.senderKey, keyID: id, appID: app) { return r }
            return nil
        }
        let key = "NYBy1jZYgNGu6jKa35EhODhR7SGijjt16WXQ0s0WYlQ="
        func record(_ extra: String) -> Data {
            Data(#"{"format":"pushseal-sender-key","version":2,"appId":"com.example.app","senderKeyId":"snd-old","publicKey":"\#(key)"\#(extra)}"#.utf8)
        }
        // A v1 key, primary, before any pin: a v1 payload for it reaches the crypto (no downgrade).
        try PushSealDeviceKeys.store(PushSealKeyRecord(kind: .v1Key, status: .primary, createdAt: 0, keyBytes: Data(count: 32)), keyID: "v1a", appID: app)
        let v1Payload: [AnyHashable: Any] = ["encrypted_data": PushSealWire.encodeBase64(Data(count: 40)), "key_id": "v1a", "enc_alg": "A256GCM"]
        func outcome(now: Int64) -> String {
            do { _ = try NotificationService.open(v1Payload, appID: app, now: now); return "open" } catch let r as Refusal { return r.code } catch { return "other" }
        }
        check(outcome(now: 1000) == "authenticationFailed", "v1 before any pin reaches the crypto")
        // A primary pin (no status member: an older server).
        check(code { try PushSealDeviceKeys.pinSender(recordJSON: record(""), appID: app, now: 1000, graceSeconds: 500, v1GraceSeconds: 300) } == "ok", "pin")
        check(pin("snd-old")?.status == .primary && pin("snd-old")?.notAfter == PushSealKeyLayout.noTime, "a pin without status is primary, no end")
        if case .found(let v1) = PushSealDeviceKeys.lookup(.v1Key, keyID: "v1a", appID: app) {
            check(v1.status == .decryptOnly && v1.retiredAt == 1000 && v1.notAfter == 1300, "G2: the pin ends version 1 with a window")
        } else {
            check(false, "the v1 key is gone")
        }
        check(outcome(now: 1200) == "authenticationFailed", "G2: v1 inside its window reaches the crypto")
        check(outcome(now: 1300) == "keyExpired", "G2: v1 after its window")
        try PushSealDeviceKeys.store(PushSealKeyRecord(kind: .v1Key, status: .primary, createdAt: 0, keyBytes: Data(count: 32)), keyID: "v1a", appID: app)
        check(outcome(now: 1200) == "downgradeRefused", "G2: a v1 key kept without an end date is a downgrade once a sender key is pinned")
        // G15 + G14: the same key published decryptOnly: the pin moves forward, with the device's end.
        let retired = #","status":"decryptOnly","retiredAt":1500,"notAfter":99999999"#
        check(code { try PushSealDeviceKeys.pinSender(recordJSON: record(retired), appID: app, now: 2000, graceSeconds: 500) } == "ok", "pin retired")
        check(pin("snd-old")?.status == .decryptOnly && pin("snd-old")?.retiredAt == 1500 && pin("snd-old")?.notAfter == 2500,
              "G15/G14: status from the record, end = first sight + grace, not the sender's notAfter")
        check(pin("snd-old")?.refusal(now: 2499) == nil && pin("snd-old")?.refusal(now: 2500) == "keyExpired", "G15: a retired pin stops verifying after notAfter")
        check(pin("snd-old")?.refusal(iat: 1501) == "keys:keyRetired" && pin("snd-old")?.refusal(iat: 1500) == nil, "G14: iat after retirement")
        // Publishing it again later neither extends its end nor moves it back.
        check(code { try PushSealDeviceKeys.pinSender(recordJSON: record(retired), appID: app, now: 2400, graceSeconds: 500) } == "ok", "pin retired again")
        check(code { try PushSealDeviceKeys.pinSender(recordJSON: record(""), appID: app, now: 2400) } == "ok", "pin primary again")
        check(pin("snd-old")?.status == .decryptOnly && pin("snd-old")?.notAfter == 2500, "a pin's status and end only move forward")
        check(try PushSealDeviceKeys.usableSenderKeyIDs(appID: app, now: 2499) == ["snd-old"] && (try PushSealDeviceKeys.usableSenderKeyIDs(appID: app, now: 2500)).isEmpty,
              "usable sender key ids for the upload")
        check(code { try PushSealDeviceKeys.pinSender(recordJSON: record(#","status":"retired""#), appID: app) } == "malformedRecord", "unknown status")
        // Unpinned after notAfter, but only while another pin remains (the downgrade check stays on).
        check(!(try PushSealDeviceKeys.prune(appID: app, now: 2500)).contains("snd-old"), "the last pin is kept")
        let next = #"{"format":"pushseal-sender-key","version":2,"appId":"com.example.app","senderKeyId":"snd-new","publicKey":"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=","status":"pending"}"#
        check(code { try PushSealDeviceKeys.pinSender(recordJSON: Data(next.utf8), appID: app, now: 2500) } == "ok", "pin the next key (pending)")
        check(pin("snd-new")?.status == .primary, "a pending sender key is pinned usable")
        check(try PushSealDeviceKeys.prune(appID: app, now: 2500).contains("snd-old") && pin("snd-old") == nil, "G15: unpinned after notAfter")
    }

    static func replayGuard() throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("pushseal-linuxcheck-\(getpid())")
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let g = PushSealReplayGuard(directory: dir)
        let now: Int64 = 1_796_000_000
        check(g.checkAndRecord(id: "a", iat: now, exp: now + 100, now: now) == .fresh, "first id")
        check(g.checkAndRecord(id: "a", iat: now, exp: now + 100, now: now + 1) == .replayed, "repeated id")
        check(g.checkAndRecord(id: "old", iat: now - 31 * 86_400, exp: nil, now: now) == .tooOld, "older than the max age")
        check(g.checkAndRecord(id: nil, iat: nil, exp: nil, now: now) == .unchecked, "no id")
        let mode = (try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent(PushSealReplayGuard.fileName).path)[.posixPermissions] as? NSNumber)?.intValue
        check(mode == 0o600, "store mode \(String(mode ?? 0, radix: 8))")
        for i in 0...PushSealReplayGuard.capacity {
            _ = g.checkAndRecord(id: "x\(i)", iat: now, exp: now + 1000 + Int64(i), now: now)
        }
        check(g.checkAndRecord(id: "x0", iat: now, exp: now + 1000, now: now) == .tooOld, "an id evicted early is refused, not new")
        check(g.checkAndRecord(id: "y", iat: now, exp: now + 500, now: now) == .tooOld, "a message within the evicted range")
        check(g.checkAndRecord(id: "z", iat: now, exp: now + 99_999, now: now) == .fresh, "a later message after the flood")
        try Data("garbage".utf8).write(to: dir.appendingPathComponent(PushSealReplayGuard.fileName))
        check(g.checkAndRecord(id: "q", iat: now, exp: now + 100, now: now) == .unavailable, "damaged store fails closed")
        check(PushSealReplayGuard(directory: nil).checkAndRecord(id: "q", iat: now, exp: now + 100, now: now) == .unavailable, "no container")
        check(PushSealReplayGuard(directory: dir.appendingPathComponent("missing")).checkAndRecord(id: "q", iat: now, exp: now + 100, now: now) == .unavailable,
              "unwritable container")
        check(g.reset(now: now), "reset")
        check(g.checkAndRecord(id: "q", iat: now - 1, exp: now + 100, now: now) == .tooOld, "older than the reset")
        check(g.checkAndRecord(id: "q2", iat: now, exp: now + 100, now: now) == .fresh, "after the reset")
    }
}
