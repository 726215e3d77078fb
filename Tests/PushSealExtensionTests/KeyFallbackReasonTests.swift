import PushSealWire
import PushSealKeyRecords
import PushSealKeychain
@testable import PushSealExtension
import Testing

/// The fallback reason tokens of key lookup failures come from the keys side
/// (PushSealDeviceKeyProviders' `FallbackReasonProviding` conformances); the extension core maps only
/// the protocol. The tokens are docs/fallback.md's, unchanged.
@Suite struct KeyFallbackReasonTests {
    struct PlainError: Error {}

    @Test func keychainAndKeyErrorsGiveTheDocumentedTokens() {
        let cases: [(any Error, String)] = [
            (KeychainError(.interactionNotAllowed, "locked"), "keychain:errSecInteractionNotAllowed(-25308)"),
            (KeychainError(.missingEntitlement, "no group"), "keychain:errSecMissingEntitlement(-34018)"),
            (KeychainError(.itemNotFound, "none"), "keychain:errSecItemNotFound(-25300)"),
            (KeychainError(.corrupt, "damaged"), "keychain:corrupt"),
            (KeychainError(.io, "eio"), "keychain:io"),
            (KeysError(.unknownKey, "k"), "unknownKey"),
            (KeysError(.keyDestroyed, "k"), "keyDestroyed"),
            (KeysError(.keyDisabled, "k"), "keyDisabled"),
            (KeysError(.keyExpired, "k"), "keyExpired"),
            (KeysError(.corruptKey, "k"), "corruptKey"),
            (PlainError(), "keyUnavailable"),
        ]
        for (error, token) in cases {
            #expect(FallbackReason.key(error) == token, "\(error)")
        }
    }
}
