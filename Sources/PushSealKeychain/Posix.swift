#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCrypto
import PushSealSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The keychain's file store on PushSealSystem's private-file rules (``PrivateFile``): whole-file
/// reads with permission checks, atomic durable writes, flock, directories. Every failure becomes
/// a `KeychainError` naming the path and the errno text (never data), with the keychain's own
/// suggestions (`chmod 600 FILE`, `chmod 700 DIR`).
enum Posix {
    static func errnoText(_ e: Int32 = errno) -> String { String(cString: strerror(e)).lowercased() }

    /// The keychain's error for a failure of PushSealSystem: its wording and suggestions.
    /// - Parameter isDirectory: the path is a directory (the suggestion is then `chmod 700`).
    static func keychainError(_ e: SystemError, isDirectory: Bool = false) -> KeychainError {
        switch e.code {
        case .symbolicLink:
            // ELOOP from O_NOFOLLOW is a link only when lstat confirms it (else a loop above).
            var st = stat()
            if e.errno == 0 || (lstat(e.path, &st) == 0 && st.st_mode & S_IFMT == S_IFLNK) { return linkInsideError(e.path) }
            return KeychainError(.io, e.reason)
        case .wrongOwner:
            return KeychainError(.insecurePermissions, e.reason,
                                 suggestion: "use the keychain as its owner (uid \(e.fileOwner ?? 0)); it must be owned by the user that opens it")
        case .insecureMode:
            return KeychainError(.insecurePermissions, e.reason,
                                 suggestion: "chmod \(isDirectory ? "700" : "600") \(shellQuoted(e.path))  # a keychain's files must be 0600, its directories 0700")
        case .notRegularFile, .tooLarge: return KeychainError(.corrupt, e.reason)
        case .alreadyExists: return KeychainError(.alreadyExists, e.reason)
        case .permissionDenied: return KeychainError(.insecurePermissions, e.reason)
        default:
            if isDiskFull(e.errno) { return KeychainError(.diskFull, e.reason, suggestion: diskFullSuggestion) }
            return KeychainError(.io, e.reason)
        }
    }

    /// ENOSPC or EDQUOT: the keychain's file system has no room for the write.
    static func isDiskFull(_ e: Int32) -> Bool { e == ENOSPC || e == EDQUOT }

    /// The hint for ``KeychainError`` `.diskFull`.
    static let diskFullSuggestion = "free space on the keychain's file system (or raise the quota) and retry: nothing was written"

    /// Runs `body`, turning a ``SystemError`` into the keychain's error (``keychainError(_:isDirectory:)``).
    static func mapped<R>(isDirectory: Bool = false, _ body: () throws -> R) throws -> R {
        do { return try body() } catch let e as SystemError { throw keychainError(e, isDirectory: isDirectory) }
    }

    static func ioError(_ what: String, _ path: String, _ e: Int32 = errno) -> KeychainError {
        if e == EACCES || e == EPERM {
            return KeychainError(.insecurePermissions, "cannot \(what) \(path): \(errnoText(e))")
        }
        if isDiskFull(e) { return KeychainError(.diskFull, "cannot \(what) \(path): \(errnoText(e))", suggestion: diskFullSuggestion) }
        return KeychainError(.io, "cannot \(what) \(path): \(errnoText(e))")
    }

    /// Refuses a file or directory that is owned by another user or group/world-accessible; the
    /// error's suggestion names the fix for that one path (`chmod 600 FILE`, `chmod 700 DIR`).
    static func checkOwnership(_ st: PrivateFile.Status, _ path: String) throws {
        try mapped(isDirectory: isDirectory(st)) { try PrivateFile.checkOwnership(st, path) }
    }

    /// `path` as one shell word: as it is when it holds only `A-Z a-z 0-9 _ . / - + : @ % , =`,
    /// else in single quotes (a `'` inside written `'\''`).
    static func shellQuoted(_ path: String) -> String {
        let plain = !path.isEmpty && path.unicodeScalars.allSatisfy { c in
            c.isASCII && (("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || "_./-+:@%,=".unicodeScalars.contains(c))
        }
        return plain ? path : "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    static func isSymbolicLink(_ st: PrivateFile.Status) -> Bool { st.kind == .symbolicLink }

    /// The error for a keychain directory given as a symbolic link: the keychain directory
    /// itself and everything inside it must not be links (the link's target could be changed
    /// under a running tool); directories above it may be. Suggests the link's target, if it
    /// resolves.
    static func symbolicLinkError(_ path: String, _ code: KeychainError.Code) -> KeychainError {
        var suggestion: String?
        if let resolved = resolvedPath(path) {
            suggestion = "give the keychain's real path: \(shellQuoted(resolved))"
        }
        return KeychainError(code,
            "\(path) is a symbolic link: the keychain directory itself and everything inside it must not be links (directories above it may be)",
            suggestion: suggestion)
    }

    /// The error for a file or directory inside a keychain that is a symbolic link
    /// (`.symbolicLink`): such links are refused, never followed. Names the link's target, if it
    /// resolves.
    static func linkInsideError(_ path: String) -> KeychainError {
        let target = resolvedPath(path).map { " (\(shellQuoted($0)))" } ?? ""
        return KeychainError(.symbolicLink, "\(path) is a symbolic link: links inside a keychain are refused, never followed",
                             suggestion: "replace the link with the file or directory it points to\(target): a keychain holds only real files and directories")
    }

    /// `realpath(3)` of `path`, or `nil` when it does not resolve.
    static func resolvedPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `lstat`, or `nil` when the path does not exist.
    static func status(_ path: String) throws -> PrivateFile.Status? {
        try mapped { try PrivateFile.status(path) }
    }

    static func isDirectory(_ st: PrivateFile.Status) -> Bool { st.kind == .directory }

    /// Refuses a keychain whose parent directories someone else could change, as ssh's
    /// `StrictModes` does (F21): each directory above `path` (links followed, as the kernel does)
    /// must be owned by the caller or root, and not group- or world-writable unless it has the
    /// sticky bit (`/tmp`). Otherwise another user could swap the keychain between two opens.
    /// - Throws: `.insecurePermissions` naming the directory, with a `chmod` suggestion; `.io`.
    static func checkParents(of path: String) throws {
        var dir = path
        while let slash = dir.lastIndex(of: "/") {
            dir = slash == dir.startIndex ? "/" : String(dir[..<slash])
            var st = stat()
            guard stat(dir, &st) == 0 else { throw ioError("stat", dir) }
            if st.st_uid != 0 && st.st_uid != geteuid() {
                throw KeychainError(.insecurePermissions, "\(dir), a parent of the keychain, is owned by another user (uid \(st.st_uid))",
                                    suggestion: "keep the keychain below directories owned by you or root (as ssh's StrictModes asks)")
            }
            if st.st_mode & 0o022 != 0, st.st_mode & S_ISVTX == 0 {
                throw KeychainError(.insecurePermissions,
                    "\(dir), a parent of the keychain, is writable by group or others (mode \(String(st.st_mode & 0o7777, radix: 8))) without the sticky bit",
                    suggestion: "chmod go-w \(shellQuoted(dir))  # or move the keychain: others could replace it (as ssh's StrictModes refuses)")
            }
            if dir == "/" { break }
        }
    }

    /// Reads a whole regular file after checking owner and mode.
    /// - Returns: `nil` when the file does not exist.
    /// - Throws: `.symbolicLink`, `.insecurePermissions`, `.corrupt` (not a regular file, over
    ///   `maxByteCount`), `.io`.
    static func readFile(_ path: String, maxByteCount: Int) throws -> [UInt8]? {
        try mapped { try PrivateFile.read(path, maxByteCount: maxByteCount) }
    }

    /// Creates `path` with `bytes`, mode 0600, failing if it exists (`O_EXCL`), then fsyncs it.
    static func createExclusive(_ path: String, _ bytes: [UInt8]) throws {
        try mapped { try PrivateFile.createExclusive(path, bytes) }
    }

    /// Names in `directory` (not `.`/`..`), by path (before it is opened as the keychain's root).
    static func list(_ directory: String) throws -> [String] {
        do {
            return try PrivateDirectory.names(atPath: directory)
        } catch let e as SystemError where e.code == .notFound {
            throw KeychainError(.corrupt, "\(directory) is missing")
        } catch let e as SystemError {
            throw keychainError(e)
        }
    }

    // MARK: Below an open directory (F21: openat, never a path walk)

    /// Opens the directory `path` (not a link) by the rules: owned by the caller, 0700.
    /// - Returns: `nil` when it does not exist.
    /// - Throws: `.symbolicLink`, `.corrupt` (not a directory), `.insecurePermissions`, `.io`.
    static func openDirectory(_ path: String) throws -> PrivateDirectory? {
        try mapped(isDirectory: true) { try PrivateDirectory.open(path) }
    }

    /// Opens the subdirectory `name` of `directory` as ``openDirectory(_:)``.
    static func openDirectory(_ name: String, in directory: PrivateDirectory) throws -> PrivateDirectory? {
        try mapped(isDirectory: true) { try directory.openDirectory(name) }
    }

    /// Creates (0700) or opens the subdirectory `name` of `directory`, checked as ``openDirectory(_:)``.
    static func makeDirectory(_ name: String, in directory: PrivateDirectory) throws -> PrivateDirectory {
        try mapped(isDirectory: true) { try directory.makeDirectory(name) }
    }

    /// `fstatat` of `name` in `directory` (a link reported as a link), `nil` when absent.
    static func status(_ name: String, in directory: PrivateDirectory) throws -> PrivateFile.Status? {
        try mapped { try directory.status(name) }
    }

    /// Reads the whole private file `name` of `directory`; `nil` when absent. Throws `.symbolicLink`, `.insecurePermissions`, `.corrupt`, `.io`.
    static func readFile(_ name: String, in directory: PrivateDirectory, maxByteCount: Int) throws -> [UInt8]? {
        try mapped { try directory.read(name, maxByteCount: maxByteCount) }
    }

    /// Creates `name` in `directory` with `bytes`, 0600, `O_EXCL`, synced.
    static func createExclusive(_ name: String, in directory: PrivateDirectory, _ bytes: [UInt8]) throws {
        try mapped { try directory.createExclusive(name, bytes) }
    }

    /// Atomic, durable replace of `name` in `directory` through a unique temp file in `temp`.
    static func writeAtomically(_ bytes: [UInt8], named name: String, in directory: PrivateDirectory, temp: PrivateDirectory) throws {
        let unique = ".tmp-\(getpid())-\(Hex.encode(SecureRandom.bytes(8)))"
        try mapped { try directory.replaceAtomically(bytes, named: name, tempDirectory: temp, uniqueName: unique) }
    }

    /// Removes `name` from `directory` (nothing when absent).
    static func remove(_ name: String, in directory: PrivateDirectory) throws {
        try mapped { _ = try directory.remove(name) }
    }

    /// Removes every entry of `directory` (left-over temp files of killed writers). Call only
    /// while holding the writer lock: then no live writer owns one.
    static func removeAll(in directory: PrivateDirectory) throws {
        for name in try names(in: directory) { _ = try? directory.remove(name) }
    }

    /// The names in `directory` (not `.`/`..`).
    static func names(in directory: PrivateDirectory) throws -> [String] {
        try mapped { try directory.names() }
    }

    /// Flushes `directory` to storage.
    static func synchronize(_ directory: PrivateDirectory) throws {
        try mapped { try directory.synchronize() }
    }

    /// Checks the file `name` of `directory`, when present, by the rules of item files: not a link, a regular file, owned by the caller, 0600.
    static func checkPrivateFile(_ name: String, in directory: PrivateDirectory) throws {
        try mapped { if let st = try directory.status(name) { try PrivateFile.check(st, directory.child(name)) } }
    }

    /// Opens the file `name` of `directory` under the rules of ``checkPrivateFile(_:in:)``, checked before the open and on the open descriptor.
    static func openPrivateFile(_ name: String, in directory: PrivateDirectory, options: FileDescriptor.Options, what: String) throws -> FileDescriptor {
        try mapped { try directory.open(name, options, what: what) }
    }

    /// Runs `body` holding an exclusive `flock` on the file `name` of `directory` (created 0600),
    /// refused when it is a link, not a regular file, or group- or world-accessible. The kernel
    /// releases the lock when the holder exits or is killed, so a dead holder never blocks.
    static func withExclusiveLock<R>(_ name: String, in directory: PrivateDirectory, _ body: () throws -> R) throws -> R {
        let file = try openPrivateFile(name, in: directory, options: [.readWrite, .create], what: "lock file")
        do { try file.lockExclusive() } catch let e as SystemError { throw keychainError(e) }
        defer { file.unlock() }
        return try body()
    }

    /// ``withExclusiveLock(_:in:_:)`` without waiting: `nil` (body not run) while another holder has the lock.
    static func withExclusiveLockIfFree<R>(_ name: String, in directory: PrivateDirectory, _ body: () throws -> R) throws -> R? {
        let file = try openPrivateFile(name, in: directory, options: [.readWrite, .create], what: "lock file")
        let taken: Bool
        do { taken = try file.tryLockExclusive() } catch let e as SystemError { throw keychainError(e) }
        guard taken else { return nil }
        defer { file.unlock() }
        return try body()
    }
}
