package import PushSealSystem

// Files other modules keep in the keychain directory (PushSealServerKeys: `keys.lock`,
// `keys-audit.log`), held to the keychain's own rules.

extension Keychain {
    /// Checks a file another module keeps in the keychain directory, when it exists, by the rules
    /// of item files: not a symbolic link, a regular file, owned by the caller, mode 0600.
    /// - Parameter name: the file name, one path component (e.g. `keys.lock`).
    /// - Throws: `KeychainError` `.symbolicLink`, `.insecurePermissions` (its suggestion is the
    ///   `chmod 600 PATH` that fixes it), `.corrupt` (not a regular file), `.param` (a name that is
    ///   not one path component), `.io`.
    package func checkPrivateFile(named name: String) throws {
        try Posix.checkPrivateFile(try checkedName(name), in: directories.root)
    }

    /// Opens a file another module keeps in the keychain directory (created 0600 with
    /// `.create`) under the rules of ``checkPrivateFile(named:)``, checked again on the open
    /// descriptor. `O_CLOEXEC | O_NOFOLLOW` are added.
    /// - Parameters:
    ///   - name: the file name, one path component.
    ///   - options: e.g. `[.writeOnly, .append, .create]`.
    ///   - what: the file's role in error messages, e.g. `audit log`.
    /// - Returns: the open file (closed when released).
    /// - Throws: as ``checkPrivateFile(named:)``.
    package func openPrivateFile(named name: String, options: FileDescriptor.Options, what: String) throws -> FileDescriptor {
        try Posix.openPrivateFile(try checkedName(name), in: directories.root, options: options, what: what)
    }

    /// Runs `body` holding an exclusive `flock` on the file `name` in the keychain directory
    /// (created 0600; held to the rules of ``checkPrivateFile(named:)``). The kernel releases the
    /// lock when the holder exits or is killed.
    /// - Throws: as ``checkPrivateFile(named:)``; `KeychainError` `.io` when the lock fails;
    ///   what `body` throws.
    package func withExclusiveLock<R>(named name: String, _ body: () throws -> R) throws -> R {
        try Posix.withExclusiveLock(try checkedName(name), in: directories.root, body)
    }

    /// ``withExclusiveLock(named:_:)`` without waiting: returns `nil`, `body` not run, while
    /// another holder (a live writer) has the lock.
    /// - Throws: as ``withExclusiveLock(named:_:)``.
    package func withExclusiveLockIfFree<R>(named name: String, _ body: () throws -> R) throws -> R? {
        try Posix.withExclusiveLockIfFree(try checkedName(name), in: directories.root, body)
    }

    private func checkedName(_ name: String) throws -> String {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else {
            throw KeychainError(.param, "\"\(name)\" is not a file name inside the keychain")
        }
        return name
    }
}
