import PushSealCLI
import PushSealJSON
import PushSealKeychain
import Testing

/// The one keychain error → CLI error map (`CLIError(keychain:)`), used by push-keys (keychain and
/// key commands) and push-open alike.
@Suite struct KeychainErrorMapTests {
    @Test func osStatusIsAnIntegerWithItsName() {
        let e = CLIError(keychain: KeychainError(.interactionNotAllowed, "item is not accessible while the device is locked"))
        #expect(e.code == "errSecInteractionNotAllowed")
        #expect(e.exitCode == .noPermission)
        #expect(e.message == "item is not accessible while the device is locked: errSecInteractionNotAllowed (-25308)")
        #expect(e.jsonDetails.map(\.key) == ["osStatus", "statusName"])
        #expect(e.jsonDetails.first?.value == .integer(-25308))
        #expect(e.details.isEmpty)
    }

    @Test func storeErrorsMapToSysexits() {
        let cases: [(KeychainError.Code, ExitCode, String)] = [
            (.keychainMissing, .noInput, "keychainMissing"), (.alreadyExists, .cannotCreate, "alreadyExists"),
            (.insecurePermissions, .noPermission, "insecurePermissions"), (.corrupt, .dataError, "corrupt"),
            (.io, .ioError, "ioError"), (.symbolicLink, .ioError, "symbolicLink"),
            (.itemNotFound, .failure, "errSecItemNotFound"), (.decode, .dataError, "errSecDecode"),
            (.deviceSecretMissing, .noInput, "deviceSecretMissing"), (.passcodeBackoff, .failure, "passcodeBackoff"),
        ]
        for (code, exit, name) in cases {
            let e = CLIError(keychain: KeychainError(code, "reason"))
            #expect(e.exitCode == exit, "\(code)")
            #expect(e.code == name, "\(code)")
            #expect(e.jsonDetails.isEmpty == (KeychainError(code, "").osStatus == nil), "\(code)")
        }
    }

    @Test func theErrorsOwnSuggestionIsTheHint() {
        let e = CLIError(keychain: KeychainError(.insecurePermissions, "loose", suggestion: "chmod 600 /kc/x"))
        #expect(e.hint == "chmod 600 /kc/x")
        #expect(CLIError(keychain: KeychainError(.insecurePermissions, "loose")).hint == KeychainHint.permissions)
    }
}
