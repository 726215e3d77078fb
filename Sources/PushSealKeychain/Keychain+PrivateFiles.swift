// Files other modules keep in the keychain directory (PushSealKeys: `keys.lock`,
// `keys-audit.log`), held to the keychain's own rules.

extension Keychain {
    /// Checks a file another module keeps in the keychain directory, when it exists, by the rules
    /// of item files: not a symbolic link, a regular file, owned by the caller, mode 0600.
    /// - Parameter name: the file name, one path component (e.g. `keys.lock`).
    /// - Throws: `KeychainError` `.symbolicLink`, `.insecurePermissions` (its suggestion is the
    ///   `chmod 600 PATH` that fixes it), `.corrupt` (not a regular file), `.param` (a name that is
    ///   not one path component), `.io`.
    package func checkPrivateFile(named name: String) throws {
        try Posix.checkPrivateFile(try privatePath(name))
    }

    /// Opens a file another module keeps in the keychain directory (created 0600 when `flags`
    /// hold `O_CREAT`) under the rules of ``checkPrivateFile(named:)``, checked again on the open
    /// descriptor. `O_CLOEXEC | O_NOFOLLOW` are added to `flags`.
    /// - Parameters:
    ///   - name: the file name, one path component.
    ///   - flags: `open(2)` flags, e.g. `O_RDWR | O_CREAT`.
    ///   - what: the file's role in error messages, e.g. `lock file`.
    /// - Returns: the open file descriptor; the caller closes it.
    /// - Throws: as ``checkPrivateFile(named:)``.
    package func openPrivateFile(named name: String, flags: Int32, what: String) throws -> Int32 {
        try Posix.openPrivateFile(try privatePath(name), flags: flags, what: what)
    }

    private func privatePath(_ name: String) throws -> String {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else {
            throw KeychainError(.param, "\"\(name)\" is not a file name inside the keychain")
        }
        return paths.root + "/" + name
    }
}
