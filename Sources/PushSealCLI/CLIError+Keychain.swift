public import PushSealSystem
import PushSealJSON

extension CLIError {
    /// The one map from a keychain error (`KeychainError`, domain `keychain`) to a tool's error,
    /// used by every command of push-keys, push-open and push-seal's keychain paths:
    ///
    /// | keychain code | exit | hint |
    /// |---|---|---|
    /// | `keychainMissing` | 66 | `create one with 'push-keys keychain init --keychain DIR'` |
    /// | `deviceSecretMissing` | 66 | the error's suggestion |
    /// | `alreadyExists` | 73 | |
    /// | `insecurePermissions` | 77 | the error's suggestion, else ``KeychainHint/permissions`` |
    /// | `interactionNotAllowed` (-25308) | 77 | ``KeychainHint/unlock`` |
    /// | `missingEntitlement` (-34018) | 1 | add the group to the caller's groups |
    /// | `passcodeBackoff` | 1 | the error's suggestion (the reason says how long to wait) |
    /// | `corrupt`, `decode` (-26275) | 65 | |
    /// | `io`, `symbolicLink` | 74 | |
    /// | any other | 1 | |
    ///
    /// The code is the OSStatus name when there is one (`errSecItemNotFound`), `ioError` for
    /// `io`, else the keychain code name; the message is the error's description (the reason,
    /// then `: errSecX (N)` when an OSStatus exists); the error's own suggestion, when it has
    /// one, is the hint. With `--json`, an OSStatus adds `"osStatus": N` (an integer) and
    /// `"statusName": "errSecX"`.
    /// - Parameter error: a keychain error.
    public init(keychain error: some StatusCodedError) {
        let exit: ExitCode
        var hint: String?
        switch error.code.description {
        case "keychainMissing": exit = .noInput; hint = "create one with 'push-keys keychain init --keychain DIR'"
        case "deviceSecretMissing": exit = .noInput
        case "alreadyExists": exit = .cannotCreate
        case "insecurePermissions": exit = .noPermission; hint = KeychainHint.permissions
        case "interactionNotAllowed": exit = .noPermission; hint = KeychainHint.unlock
        case "missingEntitlement": exit = .failure; hint = "add the group to the caller's keychain-access-groups or application-groups"
        case "corrupt", "decode": exit = .dataError
        case "io", "symbolicLink", "diskFull": exit = .ioError
        case "passcodeBackoff": exit = .failure
        default: exit = .failure
        }
        let name = error.code.description
        self.init(code: error.statusName ?? (name == "io" ? "ioError" : name), error.description,
                  hint: error.suggestion ?? hint, exitCode: exit)
        if let status = error.osStatus, let statusName = error.statusName {
            jsonDetails = [("osStatus", .integer(Int64(status))), ("statusName", .string(statusName))]
        }
    }
}
