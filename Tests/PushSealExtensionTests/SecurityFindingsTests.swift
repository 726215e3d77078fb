import PushSealSystem
import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
import PushSealKeychain
import Testing
@testable import PushSealExtension

/// Issue 12, "What the device accepts": F3 (what the app and the user see is sealed), F4 (a
/// retired key vouches only for what was sealed before), F15 (no plaintext in error text) and
/// reserved names in `data`.
@Suite struct SecurityFindingsTests {
    static let appID = "com.example.app"
    static let now: Int64 = 1_800_000_000

    /// Keys in memory with an optional retirement time for every key.
    struct RetiringKeys: NotificationKeyProvider {
        var key: SecretBytes
        var retiredAt: Int64?
        func key(for keyID: String) throws -> SecretBytes { key }
        func keyAndRetirement(for keyID: String) throws -> (key: SecretBytes, retiredAt: Int64?) { (key, retiredAt) }
    }

    static func run(_ plaintext: JSONObject, key: SecretBytes = SecretBytes(copying: Array(0..<32)), retiredAt: Int64? = nil,
                    extra: [(String, JSONValue)] = [], aps: [(String, JSONValue)] = []) throws -> ExtensionHost.Result {
        var payload = try sealPayload(plaintext, key: key)
        if case .object(var root) = payload {
            for (k, v) in extra { root[k] = v }
            if case .object(var a)? = root["aps"] {
                for (k, v) in aps { a[k] = v }
                root["aps"] = .object(a)
            }
            payload = .object(root)
        }
        let config = DecryptingServiceConfiguration(appID: appID, keyProvider: RetiringKeys(key: key, retiredAt: retiredAt), now: { now })
        let host = ExtensionHost(budgetSeconds: 5, logger: CollectingLogger(), makeExtension: DecryptingServiceExtension.factory(config))
        return host.run(UNNotificationRequest(identifier: UUID().uuidString, apnsPayload: payload))
    }

    static let criticalSound: JSONValue = .object(["critical": .integer(1), "name": .string("alarm.caf"), "volume": .number(1)])

    @Test("F3: userInfo holds the delivered aps and the sealed data under pushseal, nothing unsealed")
    func userInfoIsSealedOnly() throws {
        let r = try Self.run(["title": "Bank", "data": .object(["deeplink": .string("app://ok"), "n": .integer(1)])],
                             extra: [("deeplink", .string("https://evil.example/login")), ("extra", .integer(9))])
        #expect(r.outcome == .decrypted)
        let info = try #require(r.content).userInfo
        #expect(info.map(\.key).sorted() == ["aps", "pushseal"], "userInfo keys: \(info.map(\.key))")
        // Member order is the test sealer's (JSONSerialization's), so compare by name.
        guard case .object(let sealed)? = info["pushseal"] else { Issue.record("no pushseal"); return }
        #expect(sealed.count == 2 && sealed["deeplink"] == .string("app://ok") && sealed["n"] == .integer(1))
        #expect(info["deeplink"] == nil && info["encrypted_data"] == nil && info["key_id"] == nil)
        // Nothing sealed in data: an empty object, still apart from the envelope.
        let bare = try Self.run(["title": "Bank"], extra: [("deeplink", .string("https://evil.example"))])
        #expect(bare.content?.userInfo["pushseal"] == .object(JSONObject()) && bare.content?.userInfo["deeplink"] == nil)
    }

    @Test("reserved names inside data (aps, encrypted_data, key_id, …) never overwrite envelope fields")
    func reservedNamesStayApart() throws {
        let data: JSONObject = ["aps": .object(["category": .string("PAY")]), "key_id": .string("forged"), "encrypted_data": .string("x"),
                                "pushseal": .string("nested")]
        let r = try Self.run(["title": "Bank", "data": .object(data)])
        #expect(r.outcome == .decrypted)
        #expect(r.content?.userInfo["key_id"] == nil && r.content?.userInfo["encrypted_data"] == nil)
        guard case .object(let sealed)? = r.content?.userInfo["pushseal"] else { Issue.record("no pushseal"); return }
        #expect(sealed.count == data.count && data.allSatisfy { sealed[$0.key] == $0.value })
        if case .object(let aps)? = r.content?.userInfo["aps"] { #expect(aps["category"] == nil) } else { Issue.record("no aps") }
    }

    @Test("F3: unsealed category dropped, interruption level capped at active, critical sound made the default sound")
    func unsealedPresentationIsMadeHarmless() throws {
        let r = try Self.run(["title": "Bank"], aps: [("category", .string("APPROVE_PAYMENT")), ("sound", Self.criticalSound),
                                                      ("interruption-level", .string("critical")), ("thread-id", .string("t1"))])
        #expect(r.outcome == .decrypted)
        #expect(r.content?.categoryIdentifier == "")
        #expect(r.content?.interruptionLevel == .active)
        #expect(r.content?.sound == .default && r.content?.sound?.isCritical == false)
        #expect(r.content?.threadIdentifier == "t1")
    }

    @Test("F3: the sealed aps sets thread, category, interruption level and sound; a critical sound only when sealed")
    func sealedPresentationWins() throws {
        let sealed: JSONObject = ["thread-id": .string("chat-7"), "category": .string("REPLY"), "interruption-level": .string("time-sensitive"),
                                  "sound": Self.criticalSound]
        let r = try Self.run(["title": "Alarm", "aps": .object(sealed)],
                             aps: [("category", .string("APPROVE_PAYMENT")), ("thread-id", .string("other")), ("sound", .string("x.caf"))])
        #expect(r.outcome == .decrypted)
        #expect(r.content?.threadIdentifier == "chat-7" && r.content?.categoryIdentifier == "REPLY")
        #expect(r.content?.interruptionLevel == .timeSensitive)
        #expect(r.content?.sound == UNNotificationSound(name: "alarm.caf", isCritical: true, volume: 1))
        // A sealed aps without sound means no sound, whatever the clear aps says.
        let quiet = try Self.run(["title": "t", "aps": .object(["category": .string("REPLY")])], aps: [("sound", Self.criticalSound)])
        #expect(quiet.content?.sound == nil && quiet.content?.interruptionLevel == .active && quiet.content?.threadIdentifier == "")
        // A sealed aps of the wrong shape is invalidPlaintext.
        let bad = try Self.run(["title": "t", "aps": .object(["interruption-level": .string("loud")])])
        #expect(bad.outcome == .original && bad.reason == "invalidPlaintext")
    }

    @Test("F4: a retired key opens messages sealed up to retiredAt, refuses later or undated ones (keys:keyRetired)")
    func retiredKey() throws {
        let retired = Self.now - 100
        #expect(try Self.run(["title": "t", "iat": .integer(retired)], retiredAt: retired).outcome == .decrypted)
        let later = try Self.run(["title": "t", "iat": .integer(retired + 1)], retiredAt: retired)
        #expect(later.outcome == .original && later.reason == "keys:keyRetired")
        let undated = try Self.run(["title": "t"], retiredAt: retired)
        #expect(undated.outcome == .original && undated.reason == "keys:keyRetired")
    }

    @Test("F15: a decrypted plaintext's duplicate member name or bad locale tag never reaches the error text")
    func noPlaintextInErrors() throws {
        let secret = "patient-4711-diagnosis-HIV"
        for text in ["{\"title\":\"t\",\"\(secret)\":1,\"\(secret)\":2}", "{\"title\":\"t\",\"localizations\":{\"\(secret)!\":{\"title\":\"x\"}}}"] {
            #expect(throws: FormatError.self) { try PushNotification(jsonBytes: Array(text.utf8)) }
            do {
                _ = try PushNotification(jsonBytes: Array(text.utf8))
            } catch let e as FormatError {
                #expect(e.code == .invalidPlaintext)
                #expect(!e.reason.contains("patient") && !e.reason.contains("4711"), "\(e.reason)")
            }
        }
        do {
            _ = try PushNotification(jsonBytes: Array("{\"title\":\"t\",\"\(secret)\":1,\"\(secret)\":2}".utf8))
        } catch let e as FormatError {
            #expect(e.reason.contains("duplicateKey at byte offset"), "\(e.reason)")
        }
    }
}
