import PushSealCLI
import PushSealKeychain
import PushSealKeyRecords
import PushSealDeviceKeys

/// The first run after a reinstall, for the commands that write as the app (docs/keychain.md
/// "Reinstall"): PushSealDeviceKeys' ``DeviceInstallMarker`` with the tool's error mapping.
enum DeviceReinstall {
    /// The marker's file name in the App Group container.
    static let markerName = DeviceInstallMarker.fileName

    /// ``DeviceInstallMarker/prepare(_:accessGroup:appID:)``.
    /// - Returns: how many leftover items were removed.
    /// - Throws: `KeychainError`; `CLIError` 74 when the marker cannot be written.
    static func prepare(_ keychain: Keychain, accessGroup: String?, appID: String) throws -> Int {
        do {
            return try DeviceInstallMarker.prepare(keychain, accessGroup: accessGroup, appID: appID)
        } catch let e as KeysError where e.code == .io {
            throw CLIError(code: "ioError", e.reason, exitCode: .ioError)
        }
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

    /// ``DeviceKeyItem/writeGroupCheck(appID:in:accessGroup:)`` for a command writing the app's
    /// key items into `accessGroup` (`nil`: the identity's first group): refused (65) before
    /// anything changes, with the way out. Every writer of device key items runs it first
    /// (import, generate, rotate --device-keychain, device generate/import/rotate/promote,
    /// pin-sender). `option` names the command's group option in the hint.
    /// - Throws: `CLIError` 65 `accessGroupMismatch`; keychain errors mapped.
    static func checkWriteGroup(_ keychain: Keychain, accessGroup: String?, appID: String, option: String = "--access-group") throws {
        let (target, others) = try KeychainCommands.mapping { try DeviceKeyItem.writeGroupCheck(appID: appID, in: keychain, accessGroup: accessGroup) }
        guard let held = others.first else { return }
        throw CLIError(code: "accessGroupMismatch",
                       "\(appID)'s key items and key manifest are in access group \(others.joined(separator: ", ")), not \(target): a key written there would not be covered by the manifest the extension reads; nothing was changed",
                       hint: "write into \(held) (\(option) \(held)), or move the app's items first: push-keys keychain migrate --keychain DIR --from \(held) --to \(target) --app-id \(appID)",
                       exitCode: .dataError)
    }

    /// A write as the app: ``checkWriteGroup(_:accessGroup:appID:)``, then
    /// ``prepareRun(_:accessGroup:appID:_:)`` (the first run after a reinstall).
    /// - Throws: `CLIError` 65 `accessGroupMismatch` (nothing changed), 74; keychain errors mapped.
    static func prepareWrite(_ keychain: Keychain, accessGroup: String?, appID: String, _ c: CommandContext) throws {
        try checkWriteGroup(keychain, accessGroup: accessGroup, appID: appID)
        try prepareRun(keychain, accessGroup: accessGroup, appID: appID, c)
    }
}
