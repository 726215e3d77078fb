import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
import PushSealKeychain
import PushSealKeyRecords
import PushSealServerKeys
import PushSealDeviceKeyProviders
@testable import PushSealExtension

/// The shared cases' key: the 32 bytes 0x00 … 0x1f, key id `k1`, app id `com.example.app`.
let casesKeyBase64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
let casesKey = SecretBytes(copying: Array(0..<32))
let casesAppID = "com.example.app"
let sharedGroup = "TEAM.com.example.shared"
let appGroup = "group.com.example"

/// An emulated device: a keychain holding the app's keyset (imported as a key record, as the
/// app does when provisioned), read by the Notification Service Extension as its own identity
/// through the real ``KeychainKeyProvider``, run in the real host.
struct DeviceFixture {
    let directory: URL
    let keychainURL: URL
    let logger = CollectingLogger()
    /// Watches every instance this fixture's hosts make (``expectExactlyOneDelivery(_:watch:)``).
    let watch = DeliveryWatch()

    /// The app's identity (writes the keyset).
    static let appEntitlements = Entitlements(applicationIdentifier: "TEAM.com.example.app", keychainAccessGroups: [sharedGroup],
                                              applicationGroups: [appGroup])
    /// The extension's identity (reads it).
    static let extensionEntitlements = Entitlements(applicationIdentifier: "TEAM.com.example.app.NotificationService",
                                                    keychainAccessGroups: [sharedGroup], applicationGroups: [appGroup])

    /// Creates a keychain and imports `keys` (key record members) for `casesAppID`.
    /// - Parameters:
    ///   - accessibility: of the keyset item.
    ///   - keys: key record entries; default: `k1` = the cases' key, primary.
    init(accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly,
         keys: String = #"{"keyId":"k1","status":"primary","createdAt":1700000000,"promotedAt":1700000000,"sealCount":0,"key":"\#(casesKeyBase64)"}"#) throws {
        directory = try makeTemporaryDirectory()
        keychainURL = directory.appendingPathComponent("device")
        try Keychain.create(at: keychainURL)
        let appKeychain = try Keychain(opening: keychainURL, as: Self.appEntitlements)
        let store = try KeyStore(keychain: appKeychain, accessGroup: sharedGroup, accessibility: accessibility)
        let record = #"{"format":"pushseal-key-record","version":1,"appId":"\#(casesAppID)","recipient":"device","keys":[\#(keys)]}"#
        try store.importRecord(try KeyRecord(decoding: Array(record.utf8)), now: 1_700_000_000)
    }

    /// Sets the device lock state (as the device, not an identity).
    func setDeviceState(_ state: DeviceState) throws {
        try Keychain(opening: keychainURL, as: Self.appEntitlements).setDeviceState(state)
    }

    /// A host running the decrypting extension as `entitlements`, naming `keyGroup` in its key lookup.
    func host(entitlements: Entitlements = DeviceFixture.extensionEntitlements, keyGroup: String? = sharedGroup,
              budget: Double = 5, locale: String? = nil, now: Int64 = 1_796_000_000, mediaServer loopback: Bool = true) throws -> ExtensionHost {
        let keychain = try Keychain(opening: keychainURL, as: entitlements)
        let container = try entitlements.applicationGroups.first.map { try keychain.appGroupContainer(for: $0) }
        let provider = KeychainKeyProvider(keychain: keychain, accessGroup: keyGroup, appID: casesAppID, now: { now })
        let config = DecryptingServiceConfiguration(appID: casesAppID, keyProvider: provider, locale: locale,
                                                    containerDirectory: container, allowInsecureLoopback: loopback, now: { now })
        return ExtensionHost(budgetSeconds: budget, logger: logger, makeExtension: watch.wrap(DecryptingServiceExtension.factory(config)))
    }

    /// Runs `payload` through `host` (default: ``host()``).
    func run(_ payload: JSONValue, host: ExtensionHost? = nil) throws -> ExtensionHost.Result {
        try (host ?? self.host()).run(UNNotificationRequest(identifier: UUID().uuidString, apnsPayload: payload))
    }

    func cleanUp() { try? FileManager.default.removeItem(at: directory) }
}
