#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import PushSealKeychain
import PushSealKeyRecords
import PushSealSystem

/// The first run after a reinstall (docs/keychain.md "Reinstall"): on iOS keychain items outlive
/// an uninstall, the App Group container does not. Before the app makes a key, the toolkit's
/// install marker in the container tells a first run apart: without it, PushSeal's own leftover
/// items of the app (``leftoverServices(appID:)``: key items, pins, key manifest, legacy keysets
/// and their counters) are removed — never another service's items of the same group — so the
/// app ends with exactly one current key. A container that already holds PushSeal's files
/// (``earlierRunFiles``: the replay guard, media) is an app updated from before the marker:
/// nothing is removed. The iOS reference's `PushSealDeviceKeys.removeLeftoversAfterReinstall`
/// is the same routine (`IOSExampleDriftTests` compares them).
public enum DeviceInstallMarker {
    /// The marker's file name in the App Group container: `pushseal-install.marker`.
    public static let fileName = "pushseal-install.marker"
    /// The marker's bytes.
    public static let contents = Array("PushSeal install marker\n".utf8)
    /// The container files that show an earlier run of this install (no reinstall).
    public static let earlierRunFiles = ["pushseal-replay-guard.json", "pushseal-replay-guard.lock", "Attachments"]

    /// The services a first run clears, in order, the key manifest last: the key items (v1 and
    /// v2 share `pushseal.key:`), the pinned sender keys, the legacy keyset items and their
    /// generation counters (which only the emulation ever wrote), the key manifest.
    public static func leftoverServices(appID: String) -> [String] {
        [DeviceKeyKind.v1Key.service(appID: appID), DeviceKeyKind.senderKey.service(appID: appID),
         KeychainNames.service(appID: appID), KeychainNames.generationService(appID: appID), DeviceKeyManifest.service(appID: appID)]
    }

    /// Checks the marker of the identity's first application group; on a first run removes the
    /// app's leftover PushSeal items in `accessGroup` (every group of the identity when nil) and
    /// writes the marker (0600). Does nothing for an identity without an application group.
    /// - Returns: how many leftover items were removed.
    /// - Throws: `KeychainError`; `KeysError` `.io` when the marker cannot be written.
    public static func prepare(_ keychain: Keychain, accessGroup: String?, appID: String) throws -> Int {
        guard let appGroup = keychain.entitlements.applicationGroups.first else { return 0 }
        let container = try keychain.appGroupContainer(for: appGroup)
        let marker = container.appendingPathComponent(fileName)
        if FileManager.default.fileExists(atPath: marker.path) { return 0 }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: container.path)) ?? []
        var removed = 0
        if !names.contains(where: { earlierRunFiles.contains($0) }) {
            removed = try removeLeftovers(keychain, accessGroup: accessGroup, appID: appID)
        }
        do {
            try PrivateFile.createExclusive(marker.path, contents)
        } catch let e as SystemError where e.code == .alreadyExists {
            // another first run wrote it meanwhile
        } catch {
            throw KeysError(.io, "cannot write the install marker \(marker.path): \(error)")
        }
        return removed
    }

    /// Deletes the app's PushSeal items of ``leftoverServices(appID:)`` (attributes only read;
    /// each delete names its group), the key manifest last.
    /// - Returns: how many items were deleted.
    /// - Throws: `KeychainError`.
    public static func removeLeftovers(_ keychain: Keychain, accessGroup: String?, appID: String) throws -> Int {
        var removed = 0
        for service in leftoverServices(appID: appID) {
            let items: [KeychainItem]
            do {
                items = try keychain.copyMatching(ItemQuery(service: service, accessGroup: accessGroup), limit: .all)
            } catch let e as KeychainError where e.code == .itemNotFound {
                continue
            }
            for item in items {
                let a = item.attributes
                removed += try keychain.delete(ItemQuery(itemClass: a.itemClass, service: a.service, account: a.account, accessGroup: a.accessGroup))
            }
        }
        return removed
    }
}
