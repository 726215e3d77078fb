#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCLI
import PushSealKeychain
import PushSealKeyRecords
import PushSealDeviceKeys
import PushSealSystem

/// The first run after a reinstall (docs/keychain.md "Reinstall"): on iOS keychain items outlive
/// an uninstall, the App Group container does not. Before the app makes a key, the toolkit's
/// install marker in the container tells a first run apart: without it, PushSeal's own leftover
/// items of the app (key items, pins, key manifest, legacy keysets and their counters; services
/// `pushseal.…:APP`) are removed — never another service's items of the same group — so the app
/// ends with exactly one current key. A container that already holds PushSeal's files (the
/// replay guard, media) is an app updated from before the marker: nothing is removed.
enum DeviceReinstall {
    /// The marker's file name in the App Group container.
    static let markerName = "pushseal-install.marker"

    /// The container files that show an earlier run of this install (no reinstall).
    static let earlierRunFiles = ["pushseal-replay-guard.json", "pushseal-replay-guard.lock", "Attachments"]

    /// Checks the marker of the identity's first application group; on a first run removes the
    /// app's leftover PushSeal items in `accessGroup` (every group of the identity when nil) and
    /// writes the marker. Does nothing for an identity without an application group.
    /// - Returns: how many leftover items were removed.
    /// - Throws: `KeychainError`; `CLIError` 74 when the marker cannot be written.
    static func prepare(_ keychain: Keychain, accessGroup: String?, appID: String) throws -> Int {
        guard let appGroup = keychain.entitlements.applicationGroups.first else { return 0 }
        let container = try keychain.appGroupContainer(for: appGroup)
        let marker = container.appendingPathComponent(markerName)
        if FileManager.default.fileExists(atPath: marker.path) { return 0 }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: container.path)) ?? []
        var removed = 0
        if !names.contains(where: { earlierRunFiles.contains($0) }) {
            removed = try removeLeftovers(keychain, accessGroup: accessGroup, appID: appID)
        }
        do {
            try PrivateFile.createExclusive(marker.path, Array("PushSeal install marker\n".utf8))
        } catch let e as SystemError where e.code == .alreadyExists {
            // another first run wrote it meanwhile
        } catch {
            throw CLIError(code: "ioError", "cannot write the install marker \(marker.path): \(error)", exitCode: .ioError)
        }
        return removed
    }

    /// Deletes the app's PushSeal items (attributes only read; each delete names its group), the
    /// key manifest last.
    static func removeLeftovers(_ keychain: Keychain, accessGroup: String?, appID: String) throws -> Int {
        let services = [DeviceKeyKind.v1Key.service(appID: appID), DeviceKeyKind.senderKey.service(appID: appID),
                        KeychainNames.service(appID: appID), KeychainNames.generationService(appID: appID),
                        DeviceKeyManifest.service(appID: appID)]
        var removed = 0
        for service in services {
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

    /// ``prepare(_:accessGroup:appID:)`` for a command's write as the app, with a warning on
    /// stderr when it removed a reinstall's leftovers.
    /// - Throws: `CLIError` (keychain errors mapped; 74 when the marker cannot be written).
    static func prepareRun(_ keychain: Keychain, accessGroup: String?, appID: String, _ c: CommandContext) throws {
        let removed = try KeychainCommands.mapping { try prepare(keychain, accessGroup: accessGroup, appID: appID) }
        if removed > 0 {
            c.warn("removed \(removed) leftover PushSeal items of \(appID) (a reinstall: the App Group container had no install marker, \(markerName))")
        }
    }
}
