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
}
