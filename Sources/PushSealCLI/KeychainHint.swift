/// `hint:` lines the tools share for keychain errors whose library error has no exact
/// suggestion (`KeychainError.suggestion`, `SenderError.suggestion` name the path when known).
public enum KeychainHint {
    /// For refused permissions without a known path: the rule, and the one command that applies it.
    public static let permissions = "a keychain must be yours, its directories 0700 and its files 0600: chmod -R go-rwx DIR"
    /// For errSecInteractionNotAllowed (-25308): the keychain's emulated device state (locked, or
    /// before first unlock) does not allow reading the item; the command that unlocks it.
    public static let unlock = "unlock the keychain: push-keys keychain device-state --keychain DIR unlocked (add --passcode-file F if it has a passcode)"
}
