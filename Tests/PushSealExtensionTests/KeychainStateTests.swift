import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
import PushSealKeychain
import Testing
@testable import PushSealExtension

/// A payload for `plaintext` sealed with the cases' key under `keyID` (wire format v1).
private func casePayload(_ title: String, keyID: String = "k1") throws -> JSONValue {
    let sealed = try WireFormat.seal(plaintext: PushNotification(title: title, body: "body of \(title)"),
                                     key: casesKey, keyID: keyID, appID: casesAppID)
    return .object([
        "aps": .object(["alert": .object(["title": .string(fallbackTitle), "body": .string(fallbackBody)]), "mutable-content": .integer(1)]),
        "encrypted_data": .string(sealed.encryptedData), "key_id": .string(keyID), "enc_alg": .string("A256GCM"),
    ])
}

/// The device keychain as the extension's key source: lock states, entitlements, key lifecycle.
@Suite struct KeychainStateTests {
    static let interactionNotAllowed = "keychain:errSecInteractionNotAllowed(-25308)"
    static let missingEntitlement = "keychain:errSecMissingEntitlement(-34018)"
    static let itemNotFound = "keychain:errSecItemNotFound(-25300)"

    private func expectFallback(_ r: ExtensionHost.Result, _ reason: String, _ logger: CollectingLogger,
                                sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(r.outcome == .original, sourceLocation: sourceLocation)
        #expect(r.reason == reason, "\(r.detail)", sourceLocation: sourceLocation)
        expectOriginalContent(r, sourceLocation: sourceLocation)
        // The reason is never shown, and key bytes never reach it or the log.
        #expect(!r.detail.contains(casesKeyBase64), sourceLocation: sourceLocation)
        #expect(!logger.lines.joined().contains(casesKeyBase64), sourceLocation: sourceLocation)
    }

    @Test func whenUnlockedKeyWhileLockedFallsBackNamingMinus25308() throws {
        let device = try DeviceFixture(accessibility: .whenUnlocked)
        defer { device.cleanUp() }
        #expect(try device.run(try casePayload("unlocked")).outcome == .decrypted)
        try device.setDeviceState(.locked)
        let r = try device.run(try casePayload("locked"))
        expectFallback(r, Self.interactionNotAllowed, device.logger)
        #expect(r.detail.contains("-25308"))
    }

    @Test func afterFirstUnlockKeyWhileLockedDecrypts() throws {
        let device = try DeviceFixture(accessibility: .afterFirstUnlockThisDeviceOnly)
        defer { device.cleanUp() }
        try device.setDeviceState(.locked)
        let r = try device.run(try casePayload("locked but unlocked once"))
        #expect(r.outcome == .decrypted, "\(r.reason) — \(r.detail)")
        #expect(r.content?.title == "locked but unlocked once")
    }

    @Test(arguments: [Accessibility.afterFirstUnlock, .afterFirstUnlockThisDeviceOnly, .whenUnlocked])
    func beforeFirstUnlockFallsBack(_ accessibility: Accessibility) throws {
        let device = try DeviceFixture(accessibility: accessibility)
        defer { device.cleanUp() }
        try device.setDeviceState(.beforeFirstUnlock)
        expectFallback(try device.run(try casePayload("after reboot")), Self.interactionNotAllowed, device.logger)
    }

    @Test func extensionLackingTheGroupFallsBackNamingMinus34018() throws {
        let device = try DeviceFixture()
        defer { device.cleanUp() }
        let lacking = Entitlements(applicationIdentifier: "TEAM.com.example.app.NotificationService",
                                   keychainAccessGroups: ["TEAM.com.example.other"], applicationGroups: [appGroup])
        let r = try device.run(try casePayload("no entitlement"), host: device.host(entitlements: lacking))
        expectFallback(r, Self.missingEntitlement, device.logger)
    }

    @Test func entitledButEmptyFallsBackNamingMinus25300() throws {
        let device = try DeviceFixture()
        defer { device.cleanUp() }
        // Entitled to a second group that holds nothing, and names it.
        let other = "TEAM.com.example.empty"
        let both = Entitlements(keychainAccessGroups: [sharedGroup, other], applicationGroups: [appGroup])
        let r = try device.run(try casePayload("empty group"), host: device.host(entitlements: both, keyGroup: other))
        expectFallback(r, Self.itemNotFound, device.logger)
        // Searching every group of the identity instead finds the key.
        #expect(try device.run(try casePayload("any group"), host: device.host(entitlements: both, keyGroup: nil)).outcome == .decrypted)
    }

    @Test func keyLifecycleStatesHaveTheirOwnReasons() throws {
        let k1 = #"{"keyId":"k1","status":"primary","createdAt":1700000000,"promotedAt":1700000000,"sealCount":0,"key":"\#(casesKeyBase64)"}"#
        let k2 = #"{"keyId":"k2","status":"disabled","createdAt":1690000000,"retiredAt":1695000000,"sealCount":0}"#
        let k3 = #"{"keyId":"k3","status":"destroyed","createdAt":1680000000,"retiredAt":1685000000,"sealCount":0}"#
        let device = try DeviceFixture(keys: [k1, k2, k3].joined(separator: ","))
        defer { device.cleanUp() }
        #expect(try device.run(try casePayload("current", keyID: "k1")).outcome == .decrypted)
        expectFallback(try device.run(try casePayload("revoked", keyID: "k2")), "keyDisabled", device.logger)
        expectFallback(try device.run(try casePayload("pruned", keyID: "k3")), "keyDestroyed", device.logger)
        expectFallback(try device.run(try casePayload("never provisioned", keyID: "k9")), "unknownKey", device.logger)
    }

    @Test func keychainReasonsAreDistinguishable() {
        let all = [Self.interactionNotAllowed, Self.missingEntitlement, Self.itemNotFound, "unknownKey", "keyDestroyed", "keyDisabled"]
        #expect(Set(all).count == all.count)
    }
}
